"""The report of ``sparsify fit``: comparisons with the full machine and the text report.

The sparse model is compared with the full SVM (`sklearn.svm.SVC`, same
kernel and C) or, for an outlier detector, with the full
`sklearn.svm.OneClassSVM` (same kernel and ν); a regressor is reported by its
RMSE, MAE and R². `_print_fit_report` prints the result that ``--json``
prints as one object.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import numpy as np

from sparsify.cli.output import _label

if TYPE_CHECKING:
    from sparsify.cli.data import _Data


def _kernel_gamma(kernel: Any) -> float | None:
    """The resolved gamma of a kernel (the first one of a sum that has one), or None."""
    if hasattr(kernel, "gamma"):
        return float(kernel.gamma)
    for part in getattr(kernel, "kernels", ()):
        gamma = _kernel_gamma(part)
        if gamma is not None:
            return gamma
    return None


def _compare_classifier(estimator: Any, p: dict[str, Any], X: Any, y: Any, data: _Data,
                        C_arg: float | None) -> dict[str, Any]:
    """Errors of the sparse classifier and of the full SVM with the same kernel and C."""
    from sparsify.core.classifier import full_svm

    C = float(p["C"]) if "C" in p else (C_arg if C_arg is not None else 1.0)
    start = time.perf_counter()
    full = full_svm(estimator.kernel_, C).fit(X, y)
    seconds = time.perf_counter() - start
    has_test = data.X_test is not None
    # the full machine is scikit-learn's SVC, whose loss is the hinge: said where they differ
    loss = getattr(estimator, "loss", "hinge")
    other_loss = {} if loss == "hinge" else {"loss": loss, "full_machine": "SVM (hinge loss)"}
    return {
        **other_loss,
        "test_error": _error(estimator, data.X_test, data.y_test) if has_test else None,
        "train_error": _error(estimator, X, y),
        "full_svm_n_support": int(np.sum(full.n_support_)),
        "full_svm_test_error": _error(full, data.X_test, data.y_test) if has_test else None,
        "full_svm_fit_seconds": seconds,
        "C": C,
    }


def _compare_detector(estimator: Any, p: dict[str, Any], X: Any, data: _Data,
                      inlier: Any) -> dict[str, Any]:
    """Errors and ROC AUC of the sparse detector and of the full OneClassSVM (same ν, kernel).

    ``X`` holds the training inliers; test rows labelled ``inlier`` are +1, others −1.
    """
    from sklearn.metrics import roc_auc_score

    from sparsify.algorithms.oneclass.estimator import full_oneclass_svm

    start = time.perf_counter()
    full = full_oneclass_svm(estimator.kernel_, p["nu"]).fit(X)
    seconds = time.perf_counter() - start
    out: dict[str, Any] = {
        "train_error": float(np.mean(estimator.predict(X) != 1)),
        "full_svm_n_support": len(full.support_),
        "full_svm_fit_seconds": seconds,
        "full_machine": "OneClassSVM",
        "nu": p["nu"],
        "inlier_label": _label(inlier),
        "test_error": None, "full_svm_test_error": None, "test_auc": None, "full_test_auc": None,
    }
    if data.X_test is not None:
        truth = np.where(np.asarray(data.y_test == inlier), 1, -1)
        out["test_error"] = float(np.mean(estimator.predict(data.X_test) != truth))
        out["full_svm_test_error"] = float(np.mean(full.predict(data.X_test) != truth))
        if len(np.unique(truth)) == 2:
            out["test_auc"] = float(roc_auc_score(truth, estimator.decision_function(data.X_test)))
            out["full_test_auc"] = float(roc_auc_score(truth, full.decision_function(data.X_test)))
    return out


def _regression_metrics(y: Any, predicted: Any) -> dict[str, float | None]:
    """RMSE, MAE and R² of real predictions (R² None when the targets are all equal)."""
    y = np.asarray(y, dtype=np.float64)
    residual = y - np.asarray(predicted, dtype=np.float64)
    total = float(np.sum((y - y.mean()) ** 2))
    return {
        "rmse": float(np.sqrt(np.mean(residual**2))),
        "mae": float(np.mean(np.abs(residual))),
        "r2": 1.0 - float(residual @ residual) / total if total > 0 else None,
    }


def _format_regression(metrics: dict[str, float | None]) -> str:
    """'RMSE 0.1, MAE 0.08, R² 0.97' (R² n/a when the targets are all equal)."""
    r2 = "n/a" if metrics["r2"] is None else f"{metrics['r2']:.4f}"
    return f"RMSE {metrics['rmse']:.4g}, MAE {metrics['mae']:.4g}, R² {r2}"


def _compare_regressor(estimator: Any, X: Any, y: Any, data: _Data) -> dict[str, Any]:
    """RMSE, MAE and R² of the sparse regressor on the training and the test data."""
    out: dict[str, Any] = {"full_machine": None, "test_error": None, "full_svm_test_error": None}
    sets = {"train": (X, y), "test": (data.X_test, data.y_test)}
    for part, (Xp, yp) in sets.items():
        if Xp is None:
            out.update({f"{part}_rmse": None, f"{part}_mae": None, f"{part}_r2": None})
            continue
        metrics = _regression_metrics(yp, estimator.predict(Xp))
        out.update({f"{part}_{name}": value for name, value in metrics.items()})
    return out


def _error(clf: Any, X: Any, y: Any) -> float:
    return float(np.mean(clf.predict(X) != y))


def _fmt(value: float | None, spec: str = ".4f") -> str:
    return "n/a (no test data)" if value is None else format(value, spec)


def _count(n: int, noun: str) -> str:
    """'1 feature', '2 features'."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _print_fit_report(r: dict[str, Any]) -> None:
    """The report after the fit; its first line, `sparsify.cli.fit._announce`'s, came before."""
    gamma = "" if r["gamma"] is None else f", gamma={r['gamma']:.4g}"
    hyper = f", C={r['C']:g}" if "C" in r else f", nu={r['nu']:g}" if "nu" in r else ""
    hyper += f", loss={r['loss']}" if "loss" in r else ""
    print(f"estimator: {r['estimator']} ({r['formulation']}), kernel {r['kernel']}{gamma}{hyper}")
    print(f"data:      {r['data']}: {_count(r['n_train'], 'training point')}, "
          f"{_count(r['n_test'], 'test point')}, {_count(r['n_features'], 'feature')}")
    for path, notes in r["reading"].items():
        print(f"read:      {path}: {'; '.join(notes)}")
    n_iter = int(np.sum(r["n_iter"]))
    if "train_rmse" in r:  # a regressor
        for part in ("train", "test"):
            if r[f"{part}_rmse"] is not None:
                metrics = {name: r[f"{part}_{name}"] for name in ("rmse", "mae", "r2")}
                print(f"{part + ':':10s} {_format_regression(metrics)}")
        print(f"sparse:    Nz = {r['n_expansion']} expansion vectors, fit "
              f"{r['fit_seconds']:.2f} s ({n_iter} L-BFGS iterations)")
    else:
        print(f"sparse:    Nz = {r['n_expansion']} expansion vectors, test error "
              f"{_fmt(r['test_error'])}, train error {r['train_error']:.4f}, "
              f"fit {r['fit_seconds']:.2f} s ({n_iter} L-BFGS iterations)")
        full = f"full {r.get('full_machine', 'SVM')}:"
        print(f"{full:<10} NSV = {r['full_svm_n_support']} support vectors, test error "
              f"{_fmt(r['full_svm_test_error'])}")
        if r.get("test_auc") is not None:
            print(f"ROC AUC:   sparse {r['test_auc']:.4f}, full {r['full_test_auc']:.4f} "
                  f"(inliers: label {r['inlier_label']})")
    if r["model"] is not None:
        print(f"model saved to {r['model']}")
    if r["plot"] is not None:
        print(f"plot saved to {r['plot']}")
