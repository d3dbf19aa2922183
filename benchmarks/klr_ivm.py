"""Compare full KLR, the import vector machine, IVM + refinement, sparse KLR and Nystroem + LR.

Usage::

    OPENBLAS_NUM_THREADS=1 nice -n 10 python benchmarks/klr_ivm.py \\
        --data-dir /work/shared/data --out docs/results

All methods minimise the same KLR objective H = (λ/2) Σ_k ‖w_k‖² + mean log-loss
(binary logistic, or multi-class softmax) with the same (λ, γ) and, except the
full KLR, the same number of import/expansion vectors per data set:

* full KLR: the Newton fast path on Z = all distinct training points, Z kept
  fixed (``SparseKernelLogisticRegression(init=X, max_iter=0)``), i.e. exact KLR
  in Cholesky-whitened coordinates;
* IVM: greedy import-vector selection (Zhu & Hastie 2005), η = 0 so that it
  stops at the given number of vectors; on USPS a random subset of candidates
  per round (``--candidates``);
* IVM + refine: the import vectors moved by L-BFGS on W(Z) (the direct sparse
  method), exactly what ``ImportVectorMachine(refine=True)`` does; its fit time
  is the IVM's plus the refinement's (the selection is run once for both rows);
* sparse KLR (k-means): the direct sparse method from k-means centres;
* Nystroem + LR: scikit-learn's LogisticRegression (C = 1/(λN)) on Nystroem
  features with as many random landmarks, the same objective restricted to
  the span of random training points.

(λ, γ) are chosen once per data set by stratified K-fold cross-validation on
the first training split: the KLR on as many random training points as the
compared models have vectors, kept fixed (``max_iter=0``), scored by held-out
log-loss. γ is searched as multiples of γ_scale = 1/(d · Var X).
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path
from typing import Any

import harness
import numpy as np
from sklearn.kernel_approximation import Nystroem
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import log_loss
from sklearn.model_selection import StratifiedKFold
from sklearn.pipeline import make_pipeline

from sparsify.algorithms.klr.estimator import SparseKernelLogisticRegression
from sparsify.baselines.ivm import ImportVectorMachine


def load(data_dir: Path, name: str, split: int, max_train: int | None, seed: int):
    """Training and test data of one split; USPS is scaled to [-1, 1] (2X − 1)."""
    d = harness.load_set(data_dir, name)
    X, y = d["X"].astype(float), d["y"]
    if name == "usps":
        X = 2 * X - 1
    tr, te = d["train_idx"][split], d["test_idx"][split]
    if max_train is not None and max_train < len(tr):
        tr = np.sort(np.random.default_rng(seed).choice(tr, max_train, replace=False))
    return X[tr], y[tr], X[te], y[te]


def gamma_scale(X: np.ndarray) -> float:
    return 1.0 / (X.shape[1] * X.var())


def select_hyperparameters(X, y, n: int, folds: int, lams, gammas, seed: int):
    """(λ, γ) with the lowest mean held-out log-loss of KLR on n fixed random training points."""
    scores = {}
    cv = StratifiedKFold(folds, shuffle=True, random_state=seed)
    labels = np.unique(y)
    for lam in lams:
        for mult in gammas:
            losses = []
            for tr, va in cv.split(X, y):
                clf = SparseKernelLogisticRegression(
                    n, lam=lam, gamma=mult * gamma_scale(X[tr]), max_iter=0, random_state=seed
                ).fit(X[tr], y[tr])
                losses.append(log_loss(y[va], clf.predict_proba(X[va]), labels=labels))
            scores[(lam, mult)] = float(np.mean(losses))
            print(f"  cv lam={lam:g} gamma={mult:g}*scale: log-loss {scores[(lam, mult)]:.4f}",
                  flush=True)
    lam, mult = min(scores, key=scores.get)
    return lam, mult, scores


def objective(model: Any, X: np.ndarray, y: np.ndarray, lam: float) -> float:
    """H = mean training log-loss + (λ/2) Σ_k ‖w_k‖², the objective every method minimises."""
    loss = log_loss(y, model.predict_proba(X), labels=np.unique(y))
    if hasattr(model, "expansion_vectors_"):
        Z, B = model.expansion_vectors_, model.expansion_coef_
        norm2 = float(np.sum((B @ model.kernel_(Z, Z)) * B))
    else:  # Nystroem + LR: w lives in the Nystroem feature space, ‖w‖² = ‖coef‖²
        norm2 = float(np.sum(model[-1].coef_ ** 2))
    return float(loss + 0.5 * lam * norm2)


def run_split(name, split, X, y, Xt, yt, n, lam, gamma, candidates, max_iter, full, seed):
    """Fit every method on one split; yield (method, fitted model, fit seconds, n_vectors)."""
    ivm = ImportVectorMachine(lam, gamma=gamma, max_import_points=n, eta=0.0,
                              n_candidates=candidates, random_state=seed)
    start = time.perf_counter()
    ivm.fit(X, y)
    t_ivm = time.perf_counter() - start
    yield "IVM", ivm, t_ivm, ivm.n_import_
    # the refinement ImportVectorMachine(refine=True) runs, on the same selection
    refined = SparseKernelLogisticRegression(lam=lam, kernel=ivm.kernel_,
                                             init=ivm.import_vectors_, max_iter=max_iter)
    start = time.perf_counter()
    refined.fit(X, y)
    yield "IVM + refine", refined, t_ivm + time.perf_counter() - start, ivm.n_import_
    model = SparseKernelLogisticRegression(n, lam=lam, gamma=gamma, init="kmeans",
                                           max_iter=max_iter, random_state=seed)
    start = time.perf_counter()
    model.fit(X, y)
    yield "sparse KLR (k-means)", model, time.perf_counter() - start, n
    model = make_pipeline(
        Nystroem(gamma=gamma, n_components=n, random_state=seed),
        LogisticRegression(C=1.0 / (lam * len(X)), tol=1e-8, max_iter=10_000))
    start = time.perf_counter()
    model.fit(X, y)
    yield "Nystroem + LR", model, time.perf_counter() - start, n
    # last: on USPS it is by far the longest fit
    if full:
        Zall = np.unique(X, axis=0)
        # W to ~1e-12 relative (Newton decrement² ≤ tol²·W) is plenty for a reference
        model = SparseKernelLogisticRegression(len(Zall), lam=lam, gamma=gamma, init=Zall,
                                               max_iter=0, solver_tol=1e-6)
        start = time.perf_counter()
        model.fit(X, y)
        yield "full KLR", model, time.perf_counter() - start, len(Zall)


def write_markdown(path: Path, rows, chosen, args, command: str) -> None:
    lines = [
        "Every method minimises the same KLR objective H = (λ/2) Σ_k ‖w_k‖² + mean "
        "log-loss (softmax over the 10 USPS classes, one joint problem) with the same "
        "(λ, γ); all but the full KLR use the same number of vectors. See the module "
        "docstring of `benchmarks/klr_ivm.py` for each method.", "",
        "- **full KLR**: Newton fast path (`NewtonKLRMarginal`) on Z = all distinct training "
        "points, Z fixed (`max_iter=0`), solver_tol 1e-6 (W to about 1e-12 relative): "
        "exact KLR, not a kernel-space Newton.",
        "- **IVM**: greedy selection with η = 0 (stops at the given number of vectors); "
        "all remaining points are candidates unless a candidate count is given.",
        "- **IVM + refine**: the import vectors refined by L-BFGS on W(Z) "
        f"(max {args.max_iter} iterations, Newton fast path); fit time includes the IVM's.",
        f"- **sparse KLR (k-means)**: direct sparse method from k-means centres, max "
        f"{args.max_iter} L-BFGS iterations.",
        "- **Nystroem + LR**: `LogisticRegression(C=1/(λN))` on `Nystroem` features with as "
        "many random landmarks.", "",
        "Hyperparameters: stratified K-fold CV on the first training split of KLR on n fixed "
        "random training points (`max_iter=0`, n = the number of vectors), lowest held-out "
        f"log-loss over λ ∈ {args.lam_grid} and γ ∈ {args.gamma_grid} × γ_scale, "
        "γ_scale = 1/(d·Var X) of the CV training part.", "",
        "| data | folds | λ | γ / γ_scale | γ | CV log-loss |", "|---|---|---|---|---|---|",
    ]
    short = [f"{name}: IVM scores {c} random candidates per round" for name, c in
             zip(args.datasets, args.candidates, strict=True) if c]
    if args.max_train:
        short.append(f"REDUCED RUN: every training set subsampled to {args.max_train} points")
    if args.no_full:
        short.append(f"full KLR skipped on {', '.join(args.no_full)}")
    if short:
        lines[0:0] = ["**Short of the full protocol:** " + "; ".join(short) + ".", ""]
    for name, (lam, mult, gamma, score, folds) in chosen.items():
        lines.append(f"| {name} | {folds} | {lam:g} | {mult:g} | {gamma:.4g} | {score:.4f} |")
    lines += ["", "Mean over splits (± standard deviation of the test error); *train H* is the "
              "objective reached on the training set (lower is better optimisation); fit "
              "seconds are wall-clock on a 2-core machine shared with other jobs "
              "(OpenBLAS single-threaded, `nice`), so compare them only roughly.", "",
              "| data | method | splits | N train | vectors | test error | log-loss | train H | "
              "fit s |", "|---|---|---|---|---|---|---|---|---|"]
    for name in dict.fromkeys(r["dataset"] for r in rows):
        methods = dict.fromkeys(r["method"] for r in rows if r["dataset"] == name)
        for method in sorted(methods, key=lambda m: m != "full KLR"):  # the reference first
            sel = [r for r in rows if r["dataset"] == name and r["method"] == method]
            err = np.array([r["test_error"] for r in sel])
            lines.append(
                f"| {name} | {method} | {len(sel)} | {sel[0]['n_train']} | "
                f"{np.mean([r['n_vectors'] for r in sel]):.0f} | "
                f"{100 * err.mean():.2f} ± {100 * err.std():.2f} % | "
                f"{np.mean([r['log_loss'] for r in sel]):.4f} | "
                f"{np.mean([r['train_objective'] for r in sel]):.4f} | "
                f"{np.mean([r['fit_seconds'] for r in sel]):.2f} |")
    shows = ("Kernel logistic regression's sparse approximations at the same number of vectors "
             "(the import vector machine, the IVM's vectors refined by the direct method, "
             "sparse KLR from k-means centres, Nystroem + logistic regression) beside the full "
             f"KLR on {', '.join(args.datasets)}, all on one objective with the same (λ, γ): "
             "test error, log-loss, the training objective reached, and fit time.")
    machine = (f"Generated by `benchmarks/klr_ivm.py`; {time.strftime('%Y-%m-%d')}. Machine: "
               f"{harness.machine_line()}; load average {harness.load_average()} when written.")
    harness.write_atomic(path, harness.result_page(
        "KLR, IVM, refined IVM, sparse KLR and Nystroem + LR (issue 3 §4)", shows, command,
        lines, [machine]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--datasets", nargs="+", default=["banana", "german", "usps"])
    ap.add_argument("--splits", type=int, default=10, help="splits of the IDA sets (USPS has 1)")
    ap.add_argument("--n-vectors", nargs="+", type=int, default=[20, 20, 100],
                    help="import/expansion vectors per data set")
    ap.add_argument("--candidates", nargs="+", type=int, default=[0, 0, 100],
                    help="IVM candidates scored per round per data set (0: all)")
    ap.add_argument("--cv-folds", nargs="+", type=int, default=[5, 5, 3])
    ap.add_argument("--lam-grid", nargs="+", type=float, default=[1e-5, 1e-4, 1e-3, 1e-2])
    ap.add_argument("--gamma-grid", nargs="+", type=float, default=[0.5, 1.0, 2.0, 4.0],
                    help="multiples of gamma_scale = 1 / (d Var X)")
    ap.add_argument("--max-iter", type=int, default=50, help="L-BFGS iterations of the "
                    "refinement and of sparse KLR")
    ap.add_argument("--max-train", type=int, default=None,
                    help="subsample every training set to this size (a reduced run)")
    ap.add_argument("--no-full", nargs="*", default=[],
                    help="data sets on which the full KLR is skipped")
    ap.add_argument("--name", default="klr_ivm", help="stem of the output files")
    args = ap.parse_args()
    n_sets = len(args.datasets)
    for opt in ("n_vectors", "candidates", "cv_folds"):
        if len(getattr(args, opt)) != n_sets:
            ap.error(f"--{opt.replace('_', '-')} needs one value per data set ({n_sets}).")
    warnings.simplefilter("ignore")
    args.out.mkdir(parents=True, exist_ok=True)
    command = (
        "OPENBLAS_NUM_THREADS=1 nice -n 10 python benchmarks/klr_ivm.py --data-dir "
        f"/work/shared/data --out docs/results --datasets {' '.join(args.datasets)} "
        f"--splits {args.splits} --n-vectors {' '.join(map(str, args.n_vectors))} "
        f"--candidates {' '.join(map(str, args.candidates))} "
        f"--cv-folds {' '.join(map(str, args.cv_folds))} "
        f"--lam-grid {' '.join(f'{v:g}' for v in args.lam_grid)} "
        f"--gamma-grid {' '.join(f'{v:g}' for v in args.gamma_grid)} --max-iter {args.max_iter}"
        + (f" --max-train {args.max_train}" if args.max_train else "")
        + (f" --no-full {' '.join(args.no_full)}" if args.no_full else "")
        + (f" --name {args.name}" if args.name != "klr_ivm" else ""))
    rows: list[dict[str, Any]] = []
    chosen: dict[str, tuple] = {}
    for name, n, cand, folds in zip(args.datasets, args.n_vectors, args.candidates,
                                    args.cv_folds, strict=True):
        X, y, _, _ = load(args.data_dir, name, 0, args.max_train, 0)
        start = time.perf_counter()
        lam, mult, scores = select_hyperparameters(X, y, n, folds, args.lam_grid,
                                                   args.gamma_grid, seed=0)
        gamma = float(mult * gamma_scale(X))
        chosen[name] = (lam, mult, gamma, scores[(lam, mult)], folds)
        print(f"{name}: lam={lam:g} gamma={gamma:.4g} ({mult:g}*scale), CV "
              f"{time.perf_counter() - start:.1f}s", flush=True)
        n_splits = 1 if name == "usps" else args.splits
        for split in range(n_splits):
            X, y, Xt, yt = load(args.data_dir, name, split, args.max_train, split)
            # one γ per data set (from split 0), as the CV chose it
            for method, model, seconds, vectors in run_split(
                    name, split, X, y, Xt, yt, n, lam, gamma, cand or None, args.max_iter,
                    name not in args.no_full, split):
                proba = model.predict_proba(Xt)
                row = {"dataset": name, "split": split, "method": method, "n_train": len(X),
                       "n_vectors": vectors, "lam": lam, "gamma": float(gamma),
                       "test_error": float(np.mean(model.predict(Xt) != yt)),
                       "log_loss": float(log_loss(yt, proba, labels=np.unique(y))),
                       "train_objective": objective(model, X, y, lam),
                       "fit_seconds": seconds}
                rows.append(row)
                print(row, flush=True)
                harness.write_csv(args.out / f"{args.name}.csv", rows)
                write_markdown(args.out / f"{args.name}.md", rows, chosen, args, command)


if __name__ == "__main__":
    main()
