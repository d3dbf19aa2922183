"""``sparsify search``: choose Nz, C and γ by a warm-started cross-validated grid search.

Runs `sparsify.SparseSearchCV` over the grid the options give (an expansion path
of Nz by default, with C and γ around γ = "scale"), with a progress bar, then
reports a table of the cross-validated error against Nz (each Nz at its best C
and γ), the choice (the smallest Nz within one standard error of the best, or
the best with ``--select best``), the full SVM's cross-validated error where it
is affordable, and the chosen model's test error. ``--plot`` draws the error
and the fit time against Nz; ``--out`` saves the refitted model.
"""

from __future__ import annotations

import argparse
import io
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

import sparsify
from sparsify.cli.data import _load_fit_data
from sparsify.cli.files import _check_paths, _write_atomically
from sparsify.cli.lookup import _check_solver, _estimator_class
from sparsify.cli.output import _label, _print_json, _stdout_to_stderr
from sparsify.cli.plot_file import _plot_format
from sparsify.cli.progress import _isatty

#: The full SVM's cross-validated error is reported (and drawn) up to this many points: its
#: fit grows as N² and beyond.
FULL_SVM_LIMIT = 20_000
#: γ around "scale" (1 / (d · Var X)) when --gamma is not given.
GAMMA_FACTORS = (0.25, 1.0, 4.0)
#: C when --C is not given.
DEFAULT_C = (0.1, 1.0, 10.0, 100.0)
#: The expansion path's largest Nz when neither --n-expansion nor --expansion-path is given.
DEFAULT_PATH = 32


def _grid(args: argparse.Namespace, accepted: dict[str, Any], X: Any) -> dict[str, list[Any]]:
    """The parameter grid of the options, with the defaults for what they leave out."""
    from sparsify.kernels import scale_gamma
    from sparsify.model_selection import expansion_sizes

    grid: dict[str, list[Any]] = {}
    if args.n_expansion is not None:
        grid["n_expansion"] = sorted(set(args.n_expansion))
    else:
        largest = args.expansion_path or min(DEFAULT_PATH, max(1, len(X) // 10))
        grid["n_expansion"] = expansion_sizes(largest)
    if "C" in accepted:
        grid["C"] = sorted(set(args.C)) if args.C is not None else list(DEFAULT_C)
    if "gamma" in accepted:
        if args.gamma is not None:
            grid["gamma"] = list(dict.fromkeys(args.gamma))
        else:
            scale = scale_gamma(np.var(X, axis=0).mean(), X.shape[1])
            grid["gamma"] = [float(f * scale) for f in GAMMA_FACTORS]
    for name, values in args.param:
        if name not in accepted:
            raise ValueError(f"--param {name}: the {args.formulation!r} estimator has no "
                             f"parameter {name!r}; it has {sorted(accepted)}.")
        if name in grid:
            raise ValueError(f"--param {name} repeats an option of its own (--"
                             f"{name.replace('_', '-')}); give the values there.")
        grid[name] = list(values)
    return grid


def _cmd_search(args: argparse.Namespace) -> int:
    if not args.json:
        data_name = args.data if args.data is not None else "banana (embedded, split 1)"
        print(f"sparsify {sparsify.__version__}: searching {args.formulation} with kernel "
              f"{args.kernel} on {data_name}", flush=True)
    from sklearn.base import is_classifier, is_regressor
    from sklearn.model_selection import KFold, StratifiedKFold

    from sparsify.model_selection import SparseSearchCV

    _check_paths({"--data": args.data, "--test": args.test},
                 {"--out": args.out, "--plot": args.plot})
    _, est_cls, est_params = _estimator_class(args.formulation)
    _check_solver(args.solver)
    if args.plot is not None:
        _plot_format(args.plot)
    data = _load_fit_data(args)
    X, y = data.X, data.y
    estimator = est_cls()
    if not (is_classifier(estimator) or is_regressor(estimator)):
        raise ValueError(f"The {args.formulation!r} estimator {est_cls.__name__} is neither a "
                         "classifier nor a regressor: sparsify search cross-validates their "
                         "errors. Use sparsify.SparseSearchCV from Python with a scoring.")
    regressor = is_regressor(estimator)
    if regressor:
        y = np.asarray(y, dtype=np.float64)
    accepted = estimator.get_params()
    fixed = {"kernel": args.kernel, "degree": args.degree, "coef0": args.coef0,
             "solver": args.solver, "max_iter": args.max_iter, "random_state": args.seed}
    estimator.set_params(**{k: v for k, v in fixed.items() if k in accepted and v is not None},
                         **est_params)
    grid = _grid(args, accepted, X)
    n_settings = int(np.prod([len(v) for v in grid.values()]))
    splitter = (KFold if regressor else StratifiedKFold)(args.cv, shuffle=True,
                                                         random_state=args.seed)
    search = SparseSearchCV(estimator, grid, cv=splitter, select=args.select,
                            n_jobs=args.n_jobs, verbose=args.verbose)
    with _stdout_to_stderr(args.json), _bar(args, n_settings * args.cv) as callback:
        search.set_params(callback=callback)
        start = time.perf_counter()
        search.fit(X, y)
        seconds = time.perf_counter() - start
        search.set_params(callback=None)
    result = _result(args, search, grid, X, y, data, seconds, regressor)
    outputs: list[tuple[Path, bytes]] = []
    if args.out is not None:
        from sparsify.io import dumps_model

        metadata = {"formulation": args.formulation, "kernel": args.kernel,
                    "n_features": int(X.shape[1]), "data": data.source,
                    "classes": [] if regressor else [_label(c) for c in search.classes_],
                    "test_error": result["test_error"], "search": result["chosen"]}
        outputs.append((args.out, dumps_model(search.best_estimator_, metadata=metadata)))
    if args.plot is not None:
        outputs.append((args.plot, _render(result, args.plot)))
    _write_atomically(outputs)
    if args.json:
        _print_json(result)
    else:
        _print_report(result)
    return 0


class _bar:
    """A tqdm bar over the search's fits on stderr (a terminal, no --json or -v), fed by the
    search's callback; a context manager giving that callback, or None."""

    def __init__(self, args: argparse.Namespace, total: int) -> None:
        self.args, self.total, self.bar = args, total, None

    def __enter__(self) -> Any:
        if self.args.json or self.args.verbose or not _isatty(sys.stderr):
            return None
        try:
            from tqdm import tqdm
        except ImportError:
            return None
        self.bar = tqdm(total=self.total, desc="search", unit="fit", file=sys.stderr,
                        leave=False, dynamic_ncols=True)
        return self

    def __call__(self, step: Any) -> None:
        assert self.bar is not None
        self.bar.update(1)
        self.bar.set_postfix_str(f"fold {step.fold + 1}, Nz {step.params.get('n_expansion')}",
                                 refresh=False)

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.close()


def _result(args: argparse.Namespace, search: Any, grid: dict[str, list[Any]], X: Any, y: Any,
            data: Any, seconds: float, regressor: bool) -> dict[str, Any]:
    """What the report and --json say: the path, the choice, the full SVM, the test error."""
    results = search.cv_results_
    error = 1.0 - results["mean_test_score"]  # accuracy or R² (the estimators' score)
    se = results["std_test_score"] / np.sqrt(search.n_splits_)
    path = []
    for nz in grid["n_expansion"]:
        rows = [i for i, p in enumerate(results["params"]) if p["n_expansion"] == nz]
        best = min(rows, key=lambda i: error[i])
        path.append({
            "n_expansion": nz, "cv_error": float(error[best]), "cv_error_se": float(se[best]),
            "params": {k: _label(v) for k, v in results["params"][best].items()
                       if k != "n_expansion"},
            "fit_seconds": float(np.mean([results["mean_fit_time"][i] for i in rows])),
        })
    chosen = {k: _label(v) for k, v in search.best_params_.items()}
    full = _full_svm(args, search, X, y, regressor)
    best_estimator = search.best_estimator_
    test_error = None
    if data.X_test is not None:
        score = best_estimator.score(data.X_test, np.asarray(data.y_test, dtype=float)
                                     if regressor else data.y_test)
        test_error = float(1.0 - score)
    n_fits = len(results["params"]) * search.n_splits_
    return {
        "formulation": args.formulation, "estimator": type(best_estimator).__name__,
        "kernel": args.kernel, "data": data.source, "n_train": len(X),
        "n_test": 0 if data.X_test is None else len(data.X_test),
        "error": "1 - R²" if regressor else "error rate",
        "grid": {k: [_label(v) for v in values] for k, values in grid.items()},
        "n_settings": len(results["params"]), "n_folds": search.n_splits_, "n_fits": n_fits,
        "n_warm": round(float(np.sum(results["warm_start"])) * search.n_splits_),
        "search_seconds": seconds, "refit_seconds": search.refit_time_,
        "select": args.select, "path": path, "chosen": chosen,
        "chosen_cv_error": float(error[search.best_index_]),
        "test_error": test_error, "full_svm": full, "model": args.out, "plot": args.plot,
        "sparsify_version": sparsify.__version__,
    }


def _full_svm(args: argparse.Namespace, search: Any, X: Any, y: Any,
              regressor: bool) -> dict[str, Any] | None:
    """The full SVM's cross-validated error at the chosen C and γ, on the same folds, where
    affordable (a classifier of the svm formulation, N ≤ `FULL_SVM_LIMIT`)."""
    if regressor or args.formulation != "svm" or len(X) > FULL_SVM_LIMIT:
        return None
    from sklearn.model_selection import cross_val_score

    from sparsify.core.classifier import full_svm

    best = search.best_estimator_
    C = float(search.best_params_.get("C", best.get_params().get("C", 1.0)))
    splitter = search.cv
    start = time.perf_counter()
    scores = cross_val_score(full_svm(best.kernel_, C), X, y, cv=splitter)
    svm = full_svm(best.kernel_, C).fit(X, y)
    return {"cv_error": float(1.0 - scores.mean()),
            "cv_error_se": float(scores.std() / np.sqrt(len(scores))),
            "n_support": int(np.sum(svm.n_support_)), "C": C,
            "seconds": time.perf_counter() - start}


def _print_report(r: dict[str, Any]) -> None:
    sizes = [row["n_expansion"] for row in r["path"]]
    others = ", ".join(f"{k} {len(v)}" for k, v in r["grid"].items() if k != "n_expansion")
    print(f"grid:      Nz {sizes[0]}..{sizes[-1]} ({len(sizes)} sizes)"
          f"{' × ' + others if others else ''} = {r['n_settings']} settings, {r['n_folds']} "
          f"folds: {r['n_fits']} fits ({r['n_warm']} warm-started) in "
          f"{r['search_seconds']:.1f} s")
    print(f"data:      {r['data']}: {r['n_train']} training points, {r['n_test']} test points")
    print()
    print(f"{'Nz':>5}  {'CV ' + r['error']:>18}  {'fit per fold':>12}  best other parameters")
    for row in r["path"]:
        mark = "  <- chosen" if row["n_expansion"] == r["chosen"].get("n_expansion") else ""
        params = ", ".join(f"{k}={_short(v)}" for k, v in row["params"].items())
        print(f"{row['n_expansion']:>5}  {row['cv_error']:>10.4f} ± {row['cv_error_se']:.4f}  "
              f"{row['fit_seconds']:>10.3f} s  {params}{mark}")
    print()
    rule = ("the smallest Nz within one standard error of the best" if r["select"] ==
            "one_standard_error" else "the best cross-validated error")
    chosen = ", ".join(f"{k}={_short(v)}" for k, v in r["chosen"].items())
    test = "" if r["test_error"] is None else f", test {r['error']} {r['test_error']:.4f}"
    print(f"chosen:    {chosen} ({rule}): CV {r['error']} {r['chosen_cv_error']:.4f}{test}; "
          f"refit {r['refit_seconds']:.2f} s")
    full = r["full_svm"]
    if full is not None:
        print(f"full SVM:  NSV = {full['n_support']} support vectors, CV error "
              f"{full['cv_error']:.4f} ± {full['cv_error_se']:.4f} (C={_short(full['C'])}, same "
              "kernel and folds)")
    if r["model"] is not None:
        print(f"model saved to {r['model']}")
    if r["plot"] is not None:
        print(f"plot saved to {r['plot']}")


def _short(value: Any) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def _render(r: dict[str, Any], path: Path) -> bytes:
    """The error and the fit time against Nz, the choice marked, the full SVM as a line."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = [row["n_expansion"] for row in r["path"]]
    errors = [row["cv_error"] for row in r["path"]]
    ses = [row["cv_error_se"] for row in r["path"]]
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(6.4, 6.4), sharex=True)
    top.errorbar(sizes, errors, yerr=ses, marker="o", capsize=3, label="sparse (CV, best C, γ)")
    chosen = r["chosen"].get("n_expansion")
    if chosen in sizes:
        top.plot([chosen], [errors[sizes.index(chosen)]], "s", ms=11, mfc="none", color="C3",
                 label=f"chosen: Nz = {chosen}")
    if r["full_svm"] is not None:
        top.axhline(r["full_svm"]["cv_error"], color="0.4", ls="--",
                    label=f"full SVM (NSV = {r['full_svm']['n_support']})")
    if r["test_error"] is not None:
        top.plot([chosen], [r["test_error"]], "x", color="C3", ms=9, label="chosen, test")
    top.set_ylabel(f"cross-validated {r['error']}")
    top.set_title(f"{r['formulation']} on {r['data']}")
    top.legend(fontsize=8)
    bottom.plot(sizes, [row["fit_seconds"] for row in r["path"]], marker="o", color="C2")
    bottom.set_ylabel("fit seconds per fold")
    bottom.set_xlabel("Nz (expansion vectors)")
    for ax in (top, bottom):
        ax.set_xscale("log", base=2)
        ax.set_xticks(sizes, [str(s) for s in sizes])
        ax.grid(alpha=0.3)
    fig.tight_layout()
    buf = io.BytesIO()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fig.savefig(buf, format=_plot_format(path), dpi=120)
    finally:
        plt.close(fig)
    return buf.getvalue()
