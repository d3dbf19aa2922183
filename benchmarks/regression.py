"""Sparse kernel ridge regression beside its peers on the UCI regression sets.

For every regression set in ``--data-dir`` (real-valued ``y`` with predefined splits: in
../shared/data boston, concrete, energy, kin8nm, naval, protein and yacht with the standard 20
splits, 5 for protein), side by side in one run, with X and y standardised by the training
part's statistics and the test RMSE reported on the original scale of y:

- full ``KernelRidge`` and ``SVR`` (scikit-learn) where N ≤ ``--full-max``;
- ``Nystroem(M)`` + ``Ridge`` (the sampled basis);
- Titsias's SGPR with M learned inducing points (GPyTorch, benchmarks/sgpr_peer.py, in the
  separate environment given by ``--gp-python``; it learns its own hyperparameters by the
  marginal likelihood, started at the kernel width below);
- ``SparseKernelRidge`` with Nz = M optimised XVs;
- ``SparseSVR`` with Nz = M optimised XVs, where N ≤ ``--sparse-svr-max-n``, M ≤
  ``--sparse-svr-max-m`` and the set is not in ``--no-sparse-svr``;

for M in ``--sizes`` (and ``--large-sizes`` on ``--large-sets``). One RBF kernel family: the
kernel ridge's (α, γ) come from a 5-fold cross-validation of ``KernelRidge`` on the training
part of split 1 (at most ``--cv-max`` points of it) and serve the full KernelRidge, Nystroem +
Ridge and SparseKernelRidge; the SVR's (C, ε) from its own 5-fold cross-validation at that γ,
for the full SVR and SparseSVR.
Also measured: kernel evaluations per predicted point (N, the number of support vectors, or M)
and the prediction time per 1000 points, and this process's peak memory.

Usage, from the repository root::

    python benchmarks/regression.py --data-dir ../shared/data --out docs/results \\
        --gp-python /path/to/gp-env/bin/python --split-limit kin8nm=5 naval=5 protein=1

writes ``regression.csv`` (one row per set, split, method and M) and ``regression.md``.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

import harness
import numpy as np
from sklearn.kernel_approximation import Nystroem
from sklearn.kernel_ridge import KernelRidge
from sklearn.linear_model import Ridge
from sklearn.model_selection import GridSearchCV, KFold
from sklearn.svm import SVR
from threadpoolctl import threadpool_limits

from sparsify import SparseKernelRidge, SparseSVR

Array = np.ndarray

# the cross-validation grids (defaults of --alphas etc.): wide enough that no set of
# ../shared/data picks an edge (a nearly noiseless set such as yacht wants α ≈ 1e-5)
ALPHAS = [1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0]
GAMMA_FACTORS = [1 / 32, 1 / 16, 0.125, 0.25, 0.5, 1.0, 2.0, 4.0]  # × 1/d on standardised X
SVR_CS = [1.0, 10.0, 100.0, 1000.0]
SVR_EPSILONS = [0.001, 0.01, 0.1, 0.3]
FIELDS = ["set", "split", "N", "d", "method", "M", "rmse", "fit_s", "predict_ms_per_1000",
          "evals_per_point", "n_iter", "alpha", "gamma", "C", "epsilon", "cv_points",
          "cv_seconds"]
HP = ("alpha", "gamma", "C", "epsilon", "cv_points", "cv_seconds")


def regression_sets(data_dir: Path) -> list[str]:
    """The sets of ``data_dir`` with real-valued targets and predefined splits."""
    out = []
    for name in harness.available_datasets(data_dir):
        with np.load(data_dir / name / f"{name}.npz", allow_pickle=False) as z:
            if {"X", "y", "train_idx", "test_idx"} <= set(z.files) and z["y"].dtype.kind == "f":
                out.append(name)
    return out


def check_sets(parser: argparse.ArgumentParser, data_dir: Path, names: list[str]) -> None:
    """Usage errors for sets that are missing or are not regression sets with splits."""
    harness.check_data_dir(parser, data_dir, names)
    usable = set(regression_sets(data_dir))
    for name in names:
        if name not in usable:
            parser.error(f"{data_dir / name / (name + '.npz')} is not a regression set with "
                         "splits (real-valued y, train_idx and test_idx); the ones here are: "
                         f"{', '.join(sorted(usable)) or 'none'}.")


def standardise(X: Array, y: Array, X_test: Array) -> tuple[Array, Array, Array, float, float]:
    """X and y scaled by the training part's mean and standard deviation (1 where it is 0)."""
    mu, sd = X.mean(0), X.std(0)
    sd[sd == 0] = 1.0
    y_mu, y_sd = float(y.mean()), float(y.std()) or 1.0
    return (X - mu) / sd, (y - y_mu) / y_sd, (X_test - mu) / sd, y_mu, y_sd


def select(X: Array, y: Array, cv_max: int, seed: int, args: argparse.Namespace
           ) -> dict[str, Any]:
    """5-fold CV on (a subsample of) split 1's training part: KRR's (α, γ), then SVR's (C, ε)."""
    rng = np.random.default_rng(seed)
    if len(X) > cv_max:
        keep = rng.choice(len(X), cv_max, replace=False)
        X, y = X[keep], y[keep]
    folds = KFold(5, shuffle=True, random_state=seed)
    gammas = [f / X.shape[1] for f in args.gamma_factors]
    start = time.perf_counter()
    krr = GridSearchCV(KernelRidge(kernel="rbf"), {"alpha": args.alphas, "gamma": gammas},
                       cv=folds, scoring="neg_root_mean_squared_error").fit(X, y)
    alpha, gamma = krr.best_params_["alpha"], krr.best_params_["gamma"]
    svr = GridSearchCV(SVR(kernel="rbf", gamma=gamma),
                       {"C": args.svr_cs, "epsilon": args.svr_epsilons},
                       cv=folds, scoring="neg_root_mean_squared_error").fit(X, y)
    return {"alpha": alpha, "gamma": gamma, "C": svr.best_params_["C"],
            "epsilon": svr.best_params_["epsilon"], "cv_points": len(X),
            "cv_rmse_std_units": -krr.best_score_, "cv_seconds": time.perf_counter() - start}


def _predict_ms(predict: Any, X_test: Array) -> tuple[Array, float]:
    """Predictions and the milliseconds per 1000 points (best of 3 calls)."""
    best, out = np.inf, None
    for _ in range(3):
        out, seconds = harness.timed(lambda: predict(X_test))
        best = min(best, seconds)
    return np.asarray(out, dtype=float), 1000.0 * best / len(X_test) * 1000.0


def sgpr(gp_python: str, X: Array, y: Array, X_test: Array, M: int, gamma: float, iters: int,
         lr: float, seed: int) -> tuple[Array, float]:
    """SGPR's predictive mean and training seconds, from benchmarks/sgpr_peer.py."""
    Z0 = X[np.random.default_rng(seed).choice(len(X), M, replace=False)]
    with tempfile.TemporaryDirectory() as tmp:
        data, result = Path(tmp) / "data.npz", Path(tmp) / "result.npz"
        np.savez(data, X=X, y=y, X_test=X_test, Z0=Z0, gamma=gamma, iters=iters, lr=lr,
                 seed=seed)
        env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
               "MKL_NUM_THREADS": "1"}
        subprocess.run([gp_python, str(Path(__file__).parent / "sgpr_peer.py"), str(data),
                        str(result)], check=True, capture_output=True, text=True, env=env)
        with np.load(result) as r:
            return r["mean"], float(r["seconds"])


def run_split(name: str, d: dict[str, Any], split: int, hp: dict[str, Any],
              args: argparse.Namespace) -> list[dict[str, Any]]:
    tr, te = d["train_idx"][split], d["test_idx"][split]
    X, y, X_test, y_mu, y_sd = standardise(d["X"][tr], d["y"][tr], d["X"][te])
    y_test = d["y"][te]
    sizes = list(args.sizes) + (list(args.large_sizes) if name in args.large_sets else [])
    sizes = [m for m in sizes if m < len(X)]
    seed = args.seed + 1000 * split
    rows: list[dict[str, Any]] = []

    def add(method: str, M: int | None, evals: int, pred: Array, fit_s: float,
            pred_ms: float, **extra: Any) -> None:
        rmse = float(np.sqrt(np.mean((y_mu + y_sd * pred - y_test) ** 2)))
        rows.append({"set": name, "split": split + 1, "N": len(X), "d": X.shape[1],
                     "method": method, "M": M, "rmse": rmse, "fit_s": fit_s,
                     "predict_ms_per_1000": pred_ms, "evals_per_point": evals, **extra,
                     **{k: hp[k] for k in HP}})

    if len(X) <= args.full_max:
        krr, t = harness.timed(lambda: KernelRidge(alpha=hp["alpha"], kernel="rbf",
                                            gamma=hp["gamma"]).fit(X, y))
        pred, ms = _predict_ms(krr.predict, X_test)
        add("KernelRidge (full)", None, len(X), pred, t, ms)
        svr, t = harness.timed(lambda: SVR(C=hp["C"], epsilon=hp["epsilon"], gamma=hp["gamma"])
                        .fit(X, y))
        pred, ms = _predict_ms(svr.predict, X_test)
        add("SVR (full)", None, len(svr.support_), pred, t, ms)
    for M in sizes:
        def nystroem(M: int = M) -> Any:
            features = Nystroem(gamma=hp["gamma"], n_components=M, random_state=seed)
            ridge = Ridge(alpha=hp["alpha"])
            Phi = features.fit_transform(X)
            ridge.fit(Phi, y)
            return lambda A: ridge.predict(features.transform(A))
        predict, t = harness.timed(nystroem)
        pred, ms = _predict_ms(predict, X_test)
        add("Nystroem + Ridge", M, M, pred, t, ms)
        if args.gp_python:
            pred, t = sgpr(args.gp_python, X, y, X_test, M, hp["gamma"], args.gp_iters,
                           args.gp_lr, seed)
            add("SGPR", M, M, pred, t, float("nan"))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # max_iter reached is recorded as n_iter
            skr, t = harness.timed(lambda M=M: SparseKernelRidge(
                M, alpha=hp["alpha"], gamma=hp["gamma"], max_iter=args.max_iter,
                n_iter_no_change=args.n_iter_no_change, random_state=seed).fit(X, y))
        pred, ms = _predict_ms(skr.predict, X_test)
        add("SparseKernelRidge", M, M, pred, t, ms, n_iter=int(skr.n_iter_[0]))
        if (len(X) <= args.sparse_svr_max_n and M <= args.sparse_svr_max_m
                and name not in args.no_sparse_svr):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                ssvr, t = harness.timed(lambda M=M: SparseSVR(
                    M, C=hp["C"], epsilon=hp["epsilon"], gamma=hp["gamma"],
                    max_iter=args.max_iter, n_iter_no_change=args.n_iter_no_change,
                    random_state=seed).fit(X, y))
            pred, ms = _predict_ms(ssvr.predict, X_test)
            add("SparseSVR", M, M, pred, t, ms, n_iter=int(ssvr.n_iter_[0]))
    return rows


def _stopping(args: argparse.Namespace) -> str:
    """How SparseKernelRidge's and SparseSVR's L-BFGS stopped, for the page."""
    plateau = getattr(args, "n_iter_no_change", None)
    rule = ("no plateau test (n_iter_no_change=None)" if plateau is None
            else f"n_iter_no_change={plateau!r} (the estimators' plateau test)")
    return (f"SparseKernelRidge and SparseSVR: L-BFGS to max_iter = "
            f"{getattr(args, 'max_iter', 200)} or tol, {rule}.")


def _plateau_arg(text: str) -> int | str | None:
    """--n-iter-no-change: "none", "auto" or a positive int."""
    if text in ("none", "auto"):
        return None if text == "none" else text
    if text.isdigit() and int(text) > 0:
        return int(text)
    raise argparse.ArgumentTypeError(f'expected "none", "auto" or a positive int, got {text!r}')


def _edge_note(hp: dict[str, Any], args: argparse.Namespace) -> str:
    """A warning when a cross-validated value lies on the edge of its grid."""
    grids = {"α": (hp["alpha"], getattr(args, "alphas", ALPHAS)),
             "C": (hp["C"], getattr(args, "svr_cs", SVR_CS)),
             "ε": (hp["epsilon"], getattr(args, "svr_epsilons", SVR_EPSILONS))}
    edges = [name for name, (value, grid) in grids.items()
             if np.isclose(value, min(grid)) or np.isclose(value, max(grid))]
    return f" **On the edge of its grid: {', '.join(edges)}.**" if edges else ""


def _mean_std(values: list[float]) -> str:
    a = np.asarray(values, dtype=float)
    return f"{a.mean():.4g} ± {a.std():.2g}" if len(a) > 1 else f"{a.mean():.4g}"


def report(rows: list[dict[str, Any]], hps: dict[str, dict[str, Any]],
           args: argparse.Namespace, wall: float, peak_mb: float, command: str) -> str:
    lines = ["Test RMSE on the original scale of y, mean ± standard deviation over the splits "
             "run; fit seconds are medians; *evals* is the kernel evaluations per predicted "
             "point; *predict* the milliseconds per 1000 test points (best of 3). X and y are "
             "standardised with the training part's statistics. " + _stopping(args), ""]
    checks = []
    for name in dict.fromkeys(r["set"] for r in rows):
        sub = [r for r in rows if r["set"] == name]
        hp = hps[name]
        n_splits = len({r["split"] for r in sub})
        lines += [f"## {name}", "",
                  f"N = {sub[0]['N']} training points, d = {sub[0]['d']}, {n_splits} split(s). "
                  f"Kernel ridge α = {hp['alpha']:g}, γ = {hp['gamma']:.4g} (5-fold CV on "
                  f"{hp['cv_points']} points of split 1, {hp['cv_seconds']:.0f} s); SVR C = "
                  f"{hp['C']:g}, ε = {hp['epsilon']:g} (standardised units)."
                  + _edge_note(hp, args), "",
                  "| method | M | splits | test RMSE | fit s | evals | predict ms / 1000 | "
                  "L-BFGS its |", "|---|---|---|---|---|---|---|---|"]
        keys = list(dict.fromkeys((r["method"], r["M"]) for r in sub))
        keys.sort(key=lambda k: (k[1] or 0, k[0]))
        means = {}
        for method, M in keys:
            rs = [r for r in sub if (r["method"], r["M"]) == (method, M)]
            means[(method, M)] = (float(np.mean([r["rmse"] for r in rs])),
                                  float(np.median([r["fit_s"] for r in rs])))
            its = [r.get("n_iter") for r in rs if r.get("n_iter") is not None]
            pred = np.median([r["predict_ms_per_1000"] for r in rs])
            lines.append(f"| {method} | {M if M else '–'} | {len(rs)} "
                         f"| {_mean_std([r['rmse'] for r in rs])} "
                         f"| {means[(method, M)][1]:.3g} "
                         f"| {int(np.median([r['evals_per_point'] for r in rs]))} "
                         f"| {'–' if np.isnan(pred) else f'{pred:.3g}'} "
                         f"| {int(np.median(its)) if its else '–'} |")
        lines.append("")
        for M in sorted({m for _, m in keys if m}):
            skr = means.get(("SparseKernelRidge", M))
            if skr is None:
                continue
            nys = means.get(("Nystroem + Ridge", M))
            gp = means.get(("SGPR", M))
            if nys:
                checks.append((name, M, "RMSE ≤ Nystroem + Ridge", skr[0] <= nys[0],
                               f"{skr[0]:.4g} vs {nys[0]:.4g}"))
            if gp:
                checks.append((name, M, "RMSE ≤ 1.05 × SGPR", skr[0] <= 1.05 * gp[0],
                               f"{skr[0]:.4g} vs {gp[0]:.4g} ({skr[0] / gp[0]:.3f}×)"))
                checks.append((name, M, "fit time ≤ SGPR's", skr[1] <= gp[1],
                               f"{skr[1]:.3g} s vs {gp[1]:.3g} s"))
    svr_lines = _sparse_svr_lines(rows)
    lines += ["## Targets", "", "| set | M | target | met | figures |", "|---|---|---|---|---|"]
    lines += [f"| {s} | {m} | {what} | {'yes' if ok else '**no**'} | {fig} |"
              for s, m, what, ok, fig in checks]
    lines += ["", f"{sum(ok for *_, ok, _ in checks)} of {len(checks)} met.", ""]
    shows = ("SparseKernelRidge and SparseSVR with M optimised XVs on the UCI regression sets, "
             "beside the full kernel ridge and SVR, Nystroem + Ridge and SGPR (M learned "
             "inducing points) at equal M: test RMSE, fit time, kernel evaluations and "
             "prediction time per set, the targets against Nystroem and SGPR, and SparseSVR "
             "beside its peers.")
    machine = (f"Machine: {harness.machine_line(('sparsify', 'numpy', 'scikit-learn'))}, "
               f"shared with other work (load average at the end "
               f"{harness.load_average().split(' / ')[0]}); BLAS and torch single-threaded. "
               + (f"Total run time {wall:.0f} s; peak memory of this process {peak_mb:.0f} MB "
                  "(SGPR runs in its own process)." if np.isfinite(wall) else ""))
    provenance = [machine, "", *([args.note, ""] if getattr(args, "note", None) else []),
                  "Generated by `benchmarks/regression.py`; do not edit by hand."]
    return harness.result_page(
        "Sparse kernel regression (ridge and ε-SVR) on the UCI regression sets", shows, command,
        lines + svr_lines, provenance)


def _sparse_svr_lines(rows: list[dict[str, Any]]) -> list[str]:
    """SparseSVR beside the full SVR and SparseKernelRidge (mean test RMSE), per set and M,
    each mean over the splits SparseSVR ran on."""
    def mean(name: str, method: str, M: int | None, splits: set[int]) -> str:
        rs = [r["rmse"] for r in rows
              if (r["set"], r["method"], r["M"]) == (name, method, M) and r["split"] in splits]
        return f"{np.mean(rs):.4g}" if rs else "–"

    pairs = list(dict.fromkeys((r["set"], r["M"]) for r in rows if r["method"] == "SparseSVR"))
    if not pairs:
        return []
    lines = ["## SparseSVR", "",
             "Mean test RMSE of the sparse ε-SVR (same (C, ε, γ) as the full SVR) beside the "
             "full SVR, Nystroem + Ridge and SparseKernelRidge at equal M, over the splits "
             "SparseSVR ran on.", "",
             "| set | M | splits | SparseSVR | SVR (full) | Nystroem + Ridge | "
             "SparseKernelRidge |", "|---|---|---|---|---|---|---|"]
    for name, M in pairs:
        splits = {r["split"] for r in rows
                  if (r["set"], r["method"], r["M"]) == (name, "SparseSVR", M)}
        lines.append(f"| {name} | {M} | {len(splits)} | {mean(name, 'SparseSVR', M, splits)} "
                     f"| {mean(name, 'SVR (full)', None, splits)} "
                     f"| {mean(name, 'Nystroem + Ridge', M, splits)} "
                     f"| {mean(name, 'SparseKernelRidge', M, splits)} |")
    return [*lines, ""]


def _read_rows(path: Path) -> list[dict[str, Any]]:
    import csv

    def value(key: str, text: str) -> Any:
        if key in ("set", "method") or text == "":
            return None if text == "" and key not in ("set", "method") else text
        number = float(text)
        return int(number) if number.is_integer() and key not in ("rmse", "fit_s") else number

    with open(path, newline="") as fh:
        return [{k: value(k, v) for k, v in row.items()} for row in csv.DictReader(fh)]


def merge(args: argparse.Namespace, argv: list[str] | None) -> int:
    """The page and one CSV from the CSVs of several runs (no (set, method, M, split) twice).

    A ``--merge`` item ``PATH::METHOD,METHOD`` takes only those methods' rows of that CSV
    (a method another run re-measured is taken from that run).
    """
    rows = []
    for item in args.merge:
        path, _, only = str(item).partition("::")
        methods = set(only.split(",")) if only else None
        rows += [row for row in _read_rows(Path(path))
                 if methods is None or row["method"] in methods]
    seen: set[tuple[Any, ...]] = set()
    for row in rows:
        key = (row["set"], row["method"], row.get("M"), row.get("split"))
        if key in seen:
            raise SystemExit(f"--merge: {key} comes from more than one CSV; take each method "
                             "of a set from one run (PATH::METHOD,METHOD selects methods).")
        seen.add(key)
    hps = {r["set"]: {k: r[k] for k in HP} for r in rows}
    given = list(argv if argv is not None else sys.argv[1:])
    if "--note" in given:  # the note is on the page already; the command says where
        given[given.index("--note") + 1] = "..."
    command = harness.command(__file__, given)
    args.out.mkdir(parents=True, exist_ok=True)
    harness.write_csv(args.out / "regression.csv", rows, FIELDS)
    text = report(rows, hps, args, float("nan"), float("nan"), command)
    harness.write_atomic(args.out / "regression.md", text)
    print(text)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = harness.benchmark_parser(__doc__)
    parser.add_argument("--sets", nargs="+", default=None,
                        help="regression sets to run (default: every one in --data-dir)")
    parser.add_argument("--splits", type=int, default=20, help="splits per set (at most)")
    parser.add_argument("--first-split", type=int, default=1,
                        help="start at this split (1-based), to share a set's splits between "
                             "runs that --merge joins")
    parser.add_argument("--split-limit", nargs="*", default=[], metavar="SET=N",
                        help="fewer splits for the named sets, e.g. protein=1")
    parser.add_argument("--sizes", type=int, nargs="+", default=[50, 200])
    parser.add_argument("--large-sizes", type=int, nargs="*", default=[500])
    parser.add_argument("--large-sets", nargs="*", default=["kin8nm", "protein"])
    parser.add_argument("--full-max", type=int, default=10_000)
    parser.add_argument("--cv-max", type=int, default=2000)
    parser.add_argument("--alphas", type=float, nargs="+", default=ALPHAS)
    parser.add_argument("--gamma-factors", type=float, nargs="+", default=GAMMA_FACTORS,
                        help="γ candidates as multiples of 1/d")
    parser.add_argument("--svr-cs", type=float, nargs="+", default=SVR_CS)
    parser.add_argument("--svr-epsilons", type=float, nargs="+", default=SVR_EPSILONS)
    parser.add_argument("--max-iter", type=int, default=200)
    parser.add_argument("--n-iter-no-change", type=_plateau_arg, default=None,
                        help='"none" (the estimators\' default: to --max-iter or tol), "auto" '
                             "or an int: SparseKernelRidge's and SparseSVR's n_iter_no_change")
    parser.add_argument("--sparse-svr-max-n", type=int, default=1_000_000,
                        help="fit SparseSVR on the sets with at most this many training points "
                             "(its evaluations cost O(N·M²): protein at M = 500 is the slowest)")
    parser.add_argument("--sparse-svr-max-m", type=int, default=1_000_000,
                        help="fit SparseSVR for M up to this")
    parser.add_argument("--no-sparse-svr", nargs="*", default=[], metavar="SET",
                        help="sets on which SparseSVR is not fitted (say why with --note)")
    parser.add_argument("--gp-python", default=None,
                        help="python of an environment with torch and gpytorch (SGPR)")
    parser.add_argument("--gp-iters", type=int, default=300)
    parser.add_argument("--gp-lr", type=float, default=0.05)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--note", default=None,
                        help="a sentence for the page (the runs a --merge page comes from)")
    parser.add_argument("--merge", nargs="+", default=None, metavar="CSV[::METHODS]",
                        help="write the page from the regression.csv files of earlier runs "
                             "(run in parallel, say) instead of running anything; "
                             "PATH::SparseSVR,SVR takes only those methods of a file")
    args = parser.parse_args(argv)
    if args.merge:
        return merge(args, argv)
    names = args.sets or regression_sets(args.data_dir)
    if not names:
        parser.error(f"--data-dir {args.data_dir} holds no regression set with splits.")
    check_sets(parser, args.data_dir, names)
    limits = {}
    for item in args.split_limit:
        key, _, value = item.partition("=")
        if key not in names or not value.isdigit():
            parser.error(f"--split-limit {item!r}: use SET=N with SET among {names}.")
        limits[key] = int(value)
    args.out.mkdir(parents=True, exist_ok=True)
    command = harness.command(__file__, argv)
    start = time.perf_counter()
    rows: list[dict[str, Any]] = []
    hps: dict[str, dict[str, Any]] = {}
    with threadpool_limits(1):
        for name in names:
            d = harness.load_set(args.data_dir, name)
            d["X"], d["y"] = d["X"].astype(float), d["y"].astype(float)
            n_splits = min(args.splits, limits.get(name, args.splits), len(d["train_idx"]))
            tr, te = d["train_idx"][0], d["test_idx"][0]
            X, y, *_ = standardise(d["X"][tr], d["y"][tr], d["X"][te])
            hps[name] = select(X, y, args.cv_max, args.seed, args)
            for split in range(args.first_split - 1, n_splits):
                rows += run_split(name, d, split, hps[name], args)
                print(f"{name} split {split + 1}/{n_splits} done "
                      f"({time.perf_counter() - start:.0f} s)", flush=True)
                # after every split: a run stopped part-way keeps what it measured
                harness.write_csv(args.out / "regression.csv", rows, FIELDS)
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    text = report(rows, hps, args, time.perf_counter() - start, peak_mb, command)
    harness.write_atomic(args.out / "regression.md", text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
