"""``sparsify predict``: predict the labels of a data file with a saved model file.

Predictions go to stdout one per line (the rest of the report to stderr), to
``--out`` as CSV, or into one JSON object with ``--json``. A regressor's
predictions are real numbers, and on data with targets the report gives their
RMSE, MAE and R² instead of an error rate.

A model file is data, and numpy is enough to predict from it: the model is read
as `sparsify.io.ModelContents` and the command imports neither scikit-learn
nor cvxpy (a LIBSVM data file is read with scikit-learn's reader).
"""

from __future__ import annotations

import argparse
import sys
import warnings
from typing import Any

import numpy as np

from sparsify.cli.data import _check_reading_options, _finite, _indexing, _read
from sparsify.cli.files import _check_paths, _write_atomically
from sparsify.cli.output import _csv_column, _label, _print_json
from sparsify.cli.report import _format_regression, _regression_metrics


def _cmd_predict(args: argparse.Namespace) -> int:
    _check_paths({"--model": args.model, "--data": args.data}, {"--out": args.out})
    from sparsify.io import read_model

    model = read_model(args.model)  # data only: nothing in the file can run
    n_features = model.n_features_in

    data = _read(args.data, args.split, args, labels=args.labels, n_features=n_features,
                 feature_names=model.feature_names_in)
    _check_reading_options(args, data)
    X, y = data.X, data.y
    if data.X_test is not None:  # an .npz with splits: predict its held-out part
        X, y = data.X_test, data.y_test
    X, y = _finite(X, y, f"data {args.data}")
    if X.shape[1] != n_features:
        raise ValueError(f"{args.data} has {X.shape[1]} features but the model {args.model} "
                         f"was trained on {n_features} (read with {'; '.join(data.notes)}).")

    regressor = model.is_regressor
    if regressor and y is not None:
        try:
            y = np.asarray(y, dtype=np.float64)
        except ValueError:
            raise ValueError(f"The model {args.model} is a regressor: the targets of {args.data} "
                             "must be numbers (or pass --no-labels).") from None
    predictions = model.predict(X)
    # a regressor's values in full (shortest round-trip repr); labels as plain JSON values
    values = [float(v) for v in predictions] if regressor else [_label(v) for v in predictions]
    obj: dict[str, Any] = {
        "model": args.model, "data": args.data, "n_samples": len(values), "error": None,
        "labelled": data.labelled, "reading": list(data.notes), "csv_header": data.header,
        "libsvm_indexing": _indexing(data),
        "formulation": model.formulation,
        "sparsify_version": model.sparsify_version, "out": args.out,
    }
    report = f"{len(values)} predictions"
    if model.is_outlier_detector:
        # +1 inlier, -1 outlier; an error rate needs to know which label meant "inlier".
        n_in = int(np.sum(predictions == 1))
        inlier = model.metadata.get("inlier_label")
        obj.update(n_inliers=n_in, n_outliers=len(values) - n_in, inlier_label=inlier)
        report += f": {n_in} inliers (+1), {len(values) - n_in} outliers (-1)"
        if y is not None and inlier is not None:
            truth = np.where(np.asarray(y == inlier), 1, -1)
            obj["error"] = float(np.mean(predictions != truth))
            report += f", error {obj['error']:.4f} (inliers: label {_label(inlier)})"
        elif y is not None:
            report += ("; no error rate: the model file does not say which label was the "
                       "inlier class (refit it with 'sparsify fit --out')")
    elif regressor:
        metrics: dict[str, float | None] = {"rmse": None, "mae": None, "r2": None}
        if y is not None:
            metrics = _regression_metrics(y, predictions)
            report += f", {_format_regression(metrics)}"
        obj.update(metrics)
    elif y is not None:
        obj["error"] = float(np.mean(predictions != y))
        report += f", error {obj['error']:.4f}"
        classes = model.classes
        if classes is not None and not np.isin(np.unique(y), classes).all():
            warnings.warn(f"{args.data} has labels the model never saw (it knows "
                          f"{[_label(c) for c in classes]}); the error counts them as "
                          "wrong.", UserWarning, stacklevel=1)

    if args.out is not None:
        _write_atomically([(args.out, _csv_column("prediction", values).encode())])

    if args.json:
        if args.out is None:
            obj["predictions"] = values
        _print_json(obj)
        return 0
    reading = f"read {args.data}: {'; '.join(data.notes)}"
    if args.out is not None:
        print(reading)
        print(f"{report}; written to {args.out}")
    else:
        # stdout stays one prediction per line; the rest goes to stderr
        print(reading, file=sys.stderr)
        sys.stdout.write(_csv_column(None, values, guard=False))
        print(report, file=sys.stderr)
    return 0
