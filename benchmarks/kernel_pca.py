"""Sparse kernel PCA beside the full kernel PCA and Nystroem + PCA: feature-space reconstruction.

For one data set in the ../shared/data format (default: USPS; its first predefined split,
else a seeded 3:1 split; ``y`` is not used, so any set works) and the RBF kernel
(γ = 1 / (d · Var X) unless ``--gamma``), k principal components (``--k``, default 16) by

- `sparsify.SparseKernelPCA` with Nz = M free XVs moved by L-BFGS (``--max-iter``);
- the same with ``max_iter=0``: the M random initial XVs, not moved (what L-BFGS adds);
- `sklearn.kernel_approximation.Nystroem` (M random landmarks) + `sklearn.decomposition.PCA`;
- `sklearn.decomposition.KernelPCA`, the full kernel PCA (ARPACK), on at most ``--full-max``
  training points (a random subsample above that; the page says so).

The measure is the feature-space reconstruction error on the test points,
mean ‖φ(x) − Pφ(x)‖², where Pφ(x) = m̂ + Σ_l s_l(x) w_l is each method's own affine
reconstruction: its k unit directions w_l, the scores s_l(x) = ⟨w_l, φ(x) − m̂⟩ it
computes, and the mean m̂ it keeps (the full kernel PCA: the mean of the points it was fitted
on; Nystroem + PCA: the training mean projected onto the landmarks' span, PCA's mean of the
features; SparseKernelPCA: the training mean projected onto span φ(Z), ``mean_coef_``). All
three are computable by kernels: for a reconstruction Σ_j c_j φ(u_j), ‖φ(x) − Pφ(x)‖² =
k(x, x) − 2 Σ_j c_j k(x, u_j) + cᵀK_UU c, and for orthonormal w_l it is ‖φ(x) − m̂‖² − ‖s(x)‖².
Beside it: the variance captured on the training points (the objective, Σ of the k
variances along the directions), fit seconds and peak memory. Every fit runs in a fresh
process with one BLAS thread (peak = Linux VmHWM above what the data took). Usage::

    OPENBLAS_NUM_THREADS=1 python benchmarks/kernel_pca.py --data-dir ../shared/data \\
        --out docs/results

writes ``kernel_pca.md`` and ``kernel_pca.csv`` under ``--out`` (``--name`` changes the stem)
at the end of the run.
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.decomposition import PCA, KernelPCA
from sklearn.exceptions import ConvergenceWarning
from sklearn.kernel_approximation import Nystroem
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).resolve().parent))
import harness

from sparsify import RBF, SparseKernelPCA

METHODS = ("SparseKernelPCA", "SparseKernelPCA, initial XVs", "Nystroem + PCA")
FULL = "KernelPCA (full)"
FIELDS = ["method", "M", "n_fit", "k", "gamma", "seconds", "peak_mb", "test_error",
          "over_full_pct", "train_captured", "n_iter", "converged", "warnings", "note"]
#: rows of the test × training kernel block computed at a time
BLOCK = 1024


def load(data_dir: Path, name: str, n_train: int, n_test: int,
         seed: int) -> tuple[np.ndarray, np.ndarray, str]:
    """Training and test inputs of ``name`` and how they were drawn (``y`` is not read)."""
    with np.load(data_dir / name / f"{name}.npz", allow_pickle=False) as z:
        X = np.asarray(z["X"], dtype=np.float64)
        split = ({"train_idx", "test_idx"} <= set(z.files))
        if split:
            train, test = np.ravel(z["train_idx"][0]), np.ravel(z["test_idx"][0])
    rng = np.random.default_rng(seed)
    if split:
        how = "its first predefined split"
    else:
        perm = rng.permutation(len(X))
        n_te = max(1, len(X) // 4)
        test, train = perm[:n_te], perm[n_te:]
        how = f"a random 3:1 split (seed {seed}; the set has no predefined splits)"
    if 0 < n_train < len(train):
        train = rng.choice(train, n_train, replace=False)
        how += f", a random subsample of {n_train} training points"
    if 0 < n_test < len(test):
        test = rng.choice(test, n_test, replace=False)
        how += f", a random subsample of {n_test} test points"
    return X[train], X[test], how


def full_subset(n: int, full_max: int, seed: int) -> np.ndarray | None:
    """Rows the full kernel PCA is fitted on: all (None), or a seeded subsample of full_max."""
    if n <= full_max:
        return None
    return np.sort(np.random.default_rng(seed + 1).choice(n, full_max, replace=False))


def mean_kernel(kernel: RBF, A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """mean_j k(a_i, b_j) for each row of A, in blocks."""
    out = np.empty(len(A))
    for start in range(0, len(A), BLOCK):
        out[start:start + BLOCK] = kernel(A[start:start + BLOCK], B).mean(axis=1)
    return out


def _fit(method: str, spec: tuple[Any, ...], m: int, k: int, gamma: float, max_iter: int,
         full_max: int, seed: int) -> dict[str, Any]:
    """One fit in this (fresh) process: seconds, peak memory, test reconstruction error."""
    X, X_test, _ = load(*spec)
    kernel = RBF(gamma)
    base = harness.reset_peak_rss()
    with threadpool_limits(1), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        start = time.perf_counter()
        if method == FULL:
            rows = full_subset(len(X), full_max, seed)
            X_fit = X if rows is None else X[rows]
            model: Any = KernelPCA(k, kernel="rbf", gamma=gamma, eigen_solver="arpack",
                                   random_state=seed).fit(X_fit)
        elif method == "Nystroem + PCA":
            X_fit = X
            nys = Nystroem(gamma=gamma, n_components=m, random_state=seed).fit(X)
            features = nys.transform(X)
            pca = PCA(k, random_state=seed).fit(features)
        else:
            X_fit = X
            model = SparseKernelPCA(m, n_components=k, gamma=gamma, random_state=seed,
                                    max_iter=max_iter if method == "SparseKernelPCA" else 0
                                    ).fit(X)
        seconds = time.perf_counter() - start
    peak = (harness.peak_rss() - base) / 1024
    n_fit, extra = len(X_fit), {}
    diag = kernel.diag(X_test)
    if method == FULL:
        s = model.transform(X_test)
        dist = diag - 2 * mean_kernel(kernel, X_test, X_fit) + mean_kernel(kernel, X_fit,
                                                                           X_fit).mean()
        error = dist - (s * s).sum(axis=1)
        captured = model.eigenvalues_.sum() / n_fit
    elif method == "Nystroem + PCA":
        psi = nys.transform(X_test)
        r = pca.inverse_transform(pca.transform(psi))  # m̂ + Σ s_l w_l, orthonormal coordinates
        error = diag - 2 * (psi * r).sum(axis=1) + (r * r).sum(axis=1)
        captured = pca.explained_variance_.sum() * (len(X) - 1) / len(X)
    else:
        Z = model.expansion_vectors_
        coef = model.mean_coef_ + model.transform(X_test) @ model.components_  # (n_test, Nz)
        error = (diag - 2 * (kernel(X_test, Z) * coef).sum(axis=1)
                 + ((coef @ kernel(Z, Z)) * coef).sum(axis=1))
        captured = model.eigenvalues_.sum()
        stopped = any(issubclass(w.category, ConvergenceWarning) for w in caught)
        extra = {"n_iter": int(model.n_iter_[0]), "converged": not stopped}
    return {"method": method, "M": m if method != FULL else n_fit, "n_fit": n_fit, "k": k,
            "gamma": gamma, "seconds": seconds, "peak_mb": peak,
            "test_error": float(np.mean(error)), "train_captured": float(captured),
            "warnings": len(caught), **extra}


def test_variance(X: np.ndarray, X_test: np.ndarray, gamma: float) -> float:
    """Mean ‖φ(x) − m‖² over the test points, m the training mean: the error of k = 0."""
    kernel = RBF(gamma)
    dist = (kernel.diag(X_test) - 2 * mean_kernel(kernel, X_test, X)
            + mean_kernel(kernel, X, X).mean())
    return float(dist.mean())


def _fmt(value: Any, spec: str) -> str:
    return "—" if value in ("", None) else format(value, spec)


def report(rows: list[dict[str, Any]], args: argparse.Namespace, info: dict[str, Any],
           wall: float) -> str:
    full = next((r for r in rows if r["method"] == FULL and "test_error" in r), None)
    subsample = (f"a random subsample of {full['n_fit']} of the {info['n_train']} training "
                 f"points (above --full-max {args.full_max})"
                 if full and full["n_fit"] < info["n_train"] else "all the training points")
    machine = ("Produced by `benchmarks/kernel_pca.py`. "
               + harness.provenance(wall, "one BLAS thread per process"))
    shows = (f"SparseKernelPCA on {args.dataset} with M optimised XVs beside the same XVs not "
             "moved, Nystroem + PCA with M landmarks and the full kernel PCA: each method's "
             "reconstruction error of the test points in feature space, the training variance "
             f"it captures along k = {args.k} directions, its fit time and peak memory.")
    lines = [
        "Each fit in a fresh process; peak = Linux VmHWM above what the data took.", "",
        f"Data: {args.dataset}, {info['n_train']} training and {info['n_test']} test points, "
        f"{info['d']} features, from {info['how']}. RBF kernel, γ = {info['gamma']:.5g}"
        f"{' (1 / (d · Var X))' if args.gamma == 'scale' else ''}; k = {args.k} components; "
        f"SparseKernelPCA with up to {args.max_iter} L-BFGS iterations (seed {args.seed}); "
        f"the full kernel PCA (ARPACK) on {subsample}.", "",
        "**Measure.** The test points' feature-space reconstruction error "
        "mean ‖φ(x) − Pφ(x)‖², with Pφ(x) = m̂ + Σ_l s_l(x) w_l each method's own affine "
        "reconstruction from k unit directions w_l, its scores s_l(x) = ⟨w_l, φ(x) − m̂⟩ and "
        "the mean m̂ it keeps (full kernel PCA: the mean of its fitted points; Nystroem + "
        "PCA: the training mean projected onto the landmarks' span; SparseKernelPCA: the "
        "training mean projected onto span φ(Z)), computed by kernels. For scale: with k = 0 "
        f"(Pφ(x) = the training mean) it is {info['variance']:.4f}, the test points' "
        "variance in feature space. *Captured* is the variance of the training points along "
        "the k directions, each method's objective (the full kernel PCA: Σ eigenvalues_ / N).",
        "",
        "## Reconstruction error on the test points", "",
        "| M (= Nz) | SparseKernelPCA | initial XVs, not moved | Nystroem + PCA | "
        "full kernel PCA |", "|---|---|---|---|---|"]
    ms = sorted({r["M"] for r in rows if r["method"] != FULL})

    def get(method: str, m: int | None) -> dict[str, Any] | None:
        return next((r for r in rows if r["method"] == method
                     and (m is None or r["M"] == m)), None)

    def cell(r: dict[str, Any] | None) -> str:
        if r is None:
            return "—"
        if "test_error" not in r:
            return r.get("note", "—")
        over = (f" (+{r['over_full_pct']:.1f} %)" if r.get("over_full_pct") not in ("", None)
                and r["method"] != FULL else "")
        return f"{r['test_error']:.4f}{over}"

    for m in ms:
        lines.append(f"| {m} | " + " | ".join(cell(get(name, m)) for name in METHODS)
                     + f" | {cell(full)} |")
    lines += ["", "In brackets: the error above the full kernel PCA's, in per cent.", "",
              "## Every fit", "",
              "| method | M | N fitted | fit s | peak MB | test error | captured (train) | "
              "L-BFGS iterations | note |", "|---" * 9 + "|"]
    for r in rows:
        lines.append(
            f"| {r['method']} | {r['M']} | {r.get('n_fit', '—')} | {_fmt(r.get('seconds'), '.2f')}"
            f" | {_fmt(r.get('peak_mb'), '.0f')} | {_fmt(r.get('test_error'), '.4f')} | "
            f"{_fmt(r.get('train_captured'), '.4f')} | {r.get('n_iter', '')} | "
            f"{r.get('note') or ('max_iter reached' if r.get('converged') is False else '')} |")
    lines += ["", "## Findings", ""]
    if full is not None:
        for m in ms:
            ours, start, nys = (get(name, m) for name in METHODS)
            if not (ours and start and nys and all("test_error" in r for r in
                                                   (ours, start, nys))):
                continue
            lines.append(
                f"- M = {m}: the test error is {ours['over_full_pct']:+.1f} % from the full "
                f"kernel PCA's for SparseKernelPCA ({ours['seconds']:.1f} s, "
                f"{ours.get('n_iter', '?')} L-BFGS iterations), {start['over_full_pct']:+.1f} % "
                f"for its initial XVs not moved, {nys['over_full_pct']:+.1f} % for Nystroem + "
                f"PCA ({nys['seconds']:.2f} s); captured training variance "
                f"{ours['train_captured']:.4f}, {start['train_captured']:.4f} and "
                f"{nys['train_captured']:.4f} against the full {full['train_captured']:.4f}.")
    return harness.result_page(f"Sparse kernel PCA on {args.dataset}", shows,
                               f"OPENBLAS_NUM_THREADS=1 python {args.command}", lines, [machine])


def main(argv: list[str] | None = None) -> int:
    parser = harness.benchmark_parser(__doc__,
                                      "folder in the ../shared/data format (usps/usps.npz)")
    parser.add_argument("--dataset", default="usps", help="set in --data-dir (default usps)")
    parser.add_argument("--k", type=int, default=16, help="principal components")
    parser.add_argument("--nz", type=int, nargs="+", default=[32, 64, 128, 256],
                        help="budgets M = Nz = Nystroem's landmarks")
    parser.add_argument("--n-train", type=int, default=0,
                        help="random subsample of the training points (0: all)")
    parser.add_argument("--n-test", type=int, default=0,
                        help="random subsample of the test points (0: all)")
    parser.add_argument("--full-max", type=int, default=10_000,
                        help="the full kernel PCA fits on a subsample of this many points "
                             "above it (its N × N kernel matrix must fit in memory)")
    parser.add_argument("--gamma", default="scale", help="'scale' (1 / (d · Var X)) or a float")
    parser.add_argument("--max-iter", type=int, default=200, help="L-BFGS iterations")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per fit")
    parser.add_argument("--name", default="kernel_pca", help="stem of the output files")
    args = parser.parse_args(argv)
    args.command = shlex.join(["benchmarks/kernel_pca.py",
                               *(sys.argv[1:] if argv is None else argv)])
    harness.check_data_dir(parser, args.data_dir, [args.dataset])
    if args.gamma != "scale":
        try:
            if not float(args.gamma) > 0:
                raise ValueError
        except ValueError:
            parser.error(f"--gamma must be 'scale' or a number > 0; got {args.gamma!r}")
    if args.k < 1 or min(args.nz) < args.k:
        parser.error(f"--k must be between 1 and the smallest --nz ({min(args.nz)}); "
                     f"got {args.k}")
    spec = (args.data_dir, args.dataset, args.n_train, args.n_test, args.seed)
    try:
        X, X_test, how = load(*spec)
    except (KeyError, ValueError, OSError) as exc:
        parser.error(f"cannot read {args.dataset} from {args.data_dir}: {exc}")
    if X.ndim != 2 or len(X) < max(args.nz) or not np.isfinite(X).all():
        parser.error(f"{args.dataset}: X must be a finite 2-D array with at least "
                     f"max(--nz) = {max(args.nz)} training rows; got shape {X.shape}")
    gamma = float(1.0 / (X.shape[1] * X.var()) if args.gamma == "scale" else args.gamma)
    args.out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    info = {"n_train": len(X), "n_test": len(X_test), "d": X.shape[1], "how": how,
            "gamma": gamma, "variance": test_variance(X, X_test, gamma)}
    rows: list[dict[str, Any]] = []
    common = (args.k, gamma, args.max_iter, args.full_max, args.seed)
    full = {"method": FULL, "M": "",
            **harness.fresh_row(args.timeout, _fit, FULL, spec, 0, *common)}
    print(f"{FULL}: {full}", flush=True)
    for m in args.nz:
        for method in METHODS:
            row = {"method": method, "M": m,
                   **harness.fresh_row(args.timeout, _fit, method, spec, m, *common)}
            print(f"{method}, M = {m}: {row}", flush=True)
            rows.append(row)
    rows.append(full)
    for r in rows:
        if "test_error" in r and "test_error" in full:
            r["over_full_pct"] = 100 * (r["test_error"] / full["test_error"] - 1)
    wall = time.perf_counter() - start
    harness.write_csv(args.out / f"{args.name}.csv", rows, FIELDS)
    text = report(rows, args, info, wall)
    harness.write_atomic(args.out / f"{args.name}.md", text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
