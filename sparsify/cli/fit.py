"""``sparsify fit``: train a sparse kernel machine and compare it with the full one.

Checks outputs, names, data and parameters first, fits with a progress bar
(`sparsify.cli.progress`), compares with the full machine
(`sparsify.cli.report`) and only then writes the model file and the plot.
"""

from __future__ import annotations

import argparse
import time
import warnings
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

import sparsify
from sparsify.cli.data import _load_fit_data
from sparsify.cli.files import _check_paths, _write_atomically
from sparsify.cli.lookup import _check_solver, _estimator_class, _warn_unused_kernel_options
from sparsify.cli.output import _label, _print_json, _stdout_to_stderr
from sparsify.cli.plot_file import _plot_format, _render_plot
from sparsify.cli.progress import _n_binary_problems, _progress
from sparsify.cli.report import (
    _compare_classifier,
    _compare_detector,
    _compare_regressor,
    _kernel_gamma,
    _print_fit_report,
)
from sparsify.core.distinct import count_distinct, has_distinct

#: Estimator parameters that have an option of their own: a --param may not set them behind the
#: option's back (the report and the model file read the options).
OWN_OPTIONS = {"n_expansion": "--n-expansion or --expansion-ratio", "kernel": "--kernel",
               "gamma": "--gamma", "degree": "--degree", "coef0": "--coef0", "C": "--C",
               "init": "--init", "n_init": "--n-init", "solver": "--solver",
               "max_iter": "--max-iter", "random_state": "--seed", "verbose": "-v/--verbose"}

def _announce(args: argparse.Namespace) -> None:
    """The report's first line, printed at once: importing scikit-learn and cvxpy takes seconds."""
    if args.json:
        return
    data = args.data if args.data is not None else "banana (embedded, split 1)"
    print(f"sparsify {sparsify.__version__}: fitting {args.formulation} with kernel "
          f"{args.kernel} on {data}", flush=True)


def _check_scale(params: dict[str, object], y: object, regressor: bool, source: str) -> None:
    """Refuse a C or targets too large for float64 solvers, saying which and what to do."""
    from sparsify.core.params import check_cost_scale, check_target_scale  # after the first line

    check_cost_scale(params)
    if regressor:
        check_target_scale(y, source)


def _cmd_fit(args: argparse.Namespace) -> int:
    _announce(args)
    from sklearn.base import is_classifier, is_outlier_detector, is_regressor
    from sklearn.utils.multiclass import check_classification_targets

    from sparsify.core.labels import check_class_count, check_label_types
    from sparsify.kernels import make_kernel

    # Cheap checks first: outputs, names, data; the fit is the expensive part.
    _check_paths({"--data": args.data, "--test": args.test},
                 {"--out": args.out, "--plot": args.plot})
    _, est_cls, est_params = _estimator_class(args.formulation)
    _check_solver(args.solver)

    data = _load_fit_data(args)
    X, y = data.X, data.y

    estimator = est_cls()
    accepted = estimator.get_params()
    n_expansion: int | float = (args.n_expansion if args.n_expansion is not None
                                else args.expansion_ratio if args.expansion_ratio is not None
                                else 0.1)
    wanted = {
        "n_expansion": n_expansion, "kernel": args.kernel, "gamma": args.gamma,
        "degree": args.degree, "coef0": args.coef0, "C": args.C, "init": args.init,
        "n_init": args.n_init, "solver": args.solver, "max_iter": args.max_iter,
        "random_state": args.seed, "verbose": args.verbose,
    }
    # None means not given: keep the estimator's default
    optional = {"degree", "coef0", "C", "init", "n_init", "max_iter"}
    params = {k: v for k, v in wanted.items()
              if k in accepted and not (k in optional and v is None)}
    given = {k for k in optional if wanted[k] is not None}
    if args.gamma != "scale":
        given.add("gamma")
    for name in sorted(given - set(accepted)):
        warnings.warn(f"--{name.replace('_', '-')} is ignored: the {args.formulation!r} "
                      f"estimator {est_cls.__name__} has no parameter {name!r}.", UserWarning,
                      stacklevel=1)
    params.update(est_params)
    seen: set[str] = set()
    for name, value in args.param:
        if name not in accepted:
            raise ValueError(f"--param {name}: the {args.formulation!r} estimator "
                             f"{est_cls.__name__} has no parameter {name!r}; give one of "
                             f"{sorted(accepted)}.")
        if name in OWN_OPTIONS:
            raise ValueError(f"--param {name}={value}: {name} has an option of its own; give it "
                             f"as {OWN_OPTIONS[name]} (the fit, the report and the model file "
                             "read it there).")
        if name in est_params:
            raise ValueError(f"--param {name}={value}: the formulation {args.formulation!r} "
                             f"fixes {name}={est_params[name]!r}; choose the formulation that "
                             f"has the {name} you want (sparsify plugins lists them).")
        if name in seen:
            raise ValueError(f"--param {name} is given twice; give it once.")
        seen.add(name)
        params[name] = value
    if args.inlier_label is not None and not is_outlier_detector(estimator):
        warnings.warn(f"--inlier-label is ignored: the {args.formulation!r} estimator "
                      f"{est_cls.__name__} is not an outlier detector.", UserWarning,
                      stacklevel=1)
    kernel_name = params.get("kernel", args.kernel)
    if isinstance(kernel_name, str):
        _warn_unused_kernel_options(kernel_name, {"gamma": "gamma" in given,
                                                  "degree": args.degree is not None,
                                                  "coef0": args.coef0 is not None})
    estimator.set_params(**params)
    p = estimator.get_params()
    if not (is_classifier(estimator) or is_regressor(estimator)
            or is_outlier_detector(estimator)):
        raise ValueError(f"The {args.formulation!r} estimator {est_cls.__name__} is neither a "
                         "classifier, a regressor nor an outlier detector (a transformer, say), "
                         "so sparsify fit cannot report on it; use it from Python.")

    detector = is_outlier_detector(estimator)
    inlier_label = 1 if args.inlier_label is None else args.inlier_label
    if detector:
        inliers = np.asarray(y == inlier_label)
        if not inliers.any():
            raise ValueError(f"No training row has the inlier label {inlier_label!r}; pass "
                             f"--inlier-label with one of {sorted(map(_label, set(y)))}.")
        if args.plot is not None:
            raise ValueError("--plot draws classifiers and regressors, not outlier detectors; "
                             "drop it for an outlier detector.")
        X = X[inliers]
    regressor = is_regressor(estimator)
    if regressor:
        try:
            y = np.asarray(y, dtype=np.float64)
        except ValueError:
            raise ValueError(f"The {args.formulation!r} estimator {est_cls.__name__} is a "
                             f"regressor: the targets of {data.source} must be numbers.") from None
    _check_scale(p, y, regressor, data.source)
    if is_classifier(estimator):
        check_label_types(np.asarray(y, dtype=object), est_cls.__name__)
        check_classification_targets(y)
        classes = np.unique(y)
        check_class_count(est_cls.__name__, len(classes), len(y))
        if len(classes) < 2:
            raise ValueError(f"The training data {data.source} has only one class "
                             f"({_label(classes[0])!r}); a classifier needs at least 2.")
        if data.y_test is not None and not np.isin(np.unique(data.y_test), classes).all():
            unseen = [_label(c) for c in np.setdiff1d(np.unique(data.y_test), classes)]
            warnings.warn(f"The test data {data.test_source} has labels the training data "
                          f"never had ({unseen}; the training labels are "
                          f"{[_label(c) for c in classes]}): the test error counts them as "
                          "wrong. Code the labels of both files alike (-1/+1 or 0/1).",
                          UserWarning, stacklevel=1)
    if isinstance(n_expansion, int) and not has_distinct(X, n_expansion):
        raise ValueError(f"--n-expansion {n_expansion} asks for more expansion vectors than the "
                         f"{count_distinct(X)} distinct training points; lower it or use "
                         "--expansion-ratio.")
    # Resolves the kernel names (unknown ones fail here) exactly as the estimator will.
    kernel = make_kernel(p.get("kernel", args.kernel), X, p.get("gamma", args.gamma),
                         p.get("degree", 3), p.get("coef0", 0.0))
    if args.out is not None:
        from sparsify.io.saveable import check_saveable

        check_saveable(estimator, kernel)  # a model file holds data only: refuse before fitting
    if args.plot is not None:
        if regressor and X.shape[1] not in (1, 2):
            raise ValueError(f"--plot draws a regressor on data with 1 or 2 features (a curve "
                             f"or a filled contour); {data.source} has {X.shape[1]}. Drop "
                             "--plot.")
        if not regressor and X.shape[1] != 2:
            raise ValueError(f"--plot needs data with 2 features; {data.source} has "
                             f"{X.shape[1]}.")
        _plot_format(args.plot)

    n_problems = 1 if detector or regressor else _n_binary_problems(estimator, y)
    with _stdout_to_stderr(args.json), _progress(args, estimator, n_problems):
        start = time.perf_counter()
        estimator.fit(X, None if detector else y)
        fit_seconds = time.perf_counter() - start

    has_test = data.X_test is not None
    if detector:
        result = _compare_detector(estimator, p, X, data, inlier_label)
    elif regressor:
        result = _compare_regressor(estimator, X, y, data)
    else:
        result = _compare_classifier(estimator, p, X, y, data, args.C)
    result = {
        **result,
        "n_expansion": len(estimator.expansion_vectors_),
        "fit_seconds": fit_seconds,
        "formulation": args.formulation,
        "estimator": est_cls.__name__,
        "kernel": p.get("kernel", args.kernel),
        "gamma": _kernel_gamma(estimator.kernel_),
        "n_expansion_requested": n_expansion,
        "n_expansion_per_problem": np.asarray(
            getattr(estimator, "n_expansion_", len(estimator.expansion_vectors_))).tolist(),
        "n_iter": np.asarray(getattr(estimator, "n_iter_", [])).tolist(),
        "init": p.get("init"),
        "solver": p.get("solver", args.solver),
        "seed": args.seed,
        "classes": ([] if regressor
                    else [_label(c) for c in getattr(estimator, "classes_", [-1, 1])]),
        "data": data.source,
        "test_data": data.test_source,
        "reading": data.reading,
        "csv_header": data.csv_header,
        "libsvm_indexing": data.libsvm_indexing,
        "n_train": len(X),
        "n_test": len(data.X_test) if has_test else 0,
        "n_features": int(X.shape[1]),
        "model": args.out,
        "plot": args.plot,
        "sparsify_version": sparsify.__version__,
    }

    # Render everything in memory, then write all files at once.
    outputs: list[tuple[Path, bytes]] = []
    if args.out is not None:
        from sparsify.io import dumps_model

        metadata = {
            "formulation": args.formulation,
            "kernel": result["kernel"],
            "n_features": result["n_features"],
            "classes": result["classes"],
            "data": data.source,
            "test_error": result["test_error"],  # null for a regressor: its test_rmse, ...
            "inlier_label": result.get("inlier_label"),  # predict's error rate for detectors
            "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        }
        if regressor:
            metadata.update({key: result[key] for key in ("test_rmse", "test_mae", "test_r2")})
        columns = data.columns
        named = columns is not None and len(set(columns)) == len(columns)
        if named:  # the file records them: predict matches a data file's columns by name
            estimator.feature_names_in_ = np.asarray(columns, dtype=object)
        try:
            outputs.append((args.out, dumps_model(estimator, metadata=metadata)))
        finally:  # the plot below predicts on bare arrays
            if named:
                del estimator.feature_names_in_
    if args.plot is not None:
        outputs.append((args.plot, _render_plot(estimator, data, args.plot, result)))
    _write_atomically(outputs)

    if args.json:
        _print_json(result)
    else:
        _print_fit_report(result)
    return 0
