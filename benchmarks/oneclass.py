"""SparseOneClassSVM against scikit-learn's OneClassSVM at equal ν and γ.

Trained on one class only; outliers are the other class(es) of the test set:

- banana, split 1: the +1 training points; inliers = +1 test points, outliers = −1 test points;
- USPS (2·X − 1): one digit's training points; inliers = that digit's test points,
  outliers = the other digits' test points.

Reported per task: agreement of the two machines' predictions on the test set
(fraction equal), ROC AUC of the decision functions on inliers vs outliers,
kernel evaluations per prediction (the full machine's NSV vs Nz), fit times.

Usage::

    python benchmarks/oneclass.py --data-dir /work/shared/data --out docs/results

``--banana-nu 0.1,0.5`` adds one banana row per ν to the main table (USPS keeps
``--nu``); ``--nu-sweep 0.05,0.1,0.2,0.3,0.5`` adds a banana ν sweep at ``--ratio``.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

import harness
import numpy as np
from numpy.typing import NDArray
from sklearn.metrics import roc_auc_score
from sklearn.svm import OneClassSVM

from sparsify.algorithms.oneclass.estimator import SparseOneClassSVM
from sparsify.kernels import resolve_gamma

Array = NDArray[np.float64]
FIELDS = [
    "task", "n_train", "n_inliers", "n_outliers", "nu", "gamma", "nsv", "nz", "n_init",
    "agreement", "auc_full", "auc_sparse", "auc_gap", "outlier_frac_train_full",
    "outlier_frac_train_sparse", "fit_s_full", "fit_s_sparse", "n_iter",
]


def tasks(data_dir: Path, digits: list[int]) -> list[tuple[str, Array, Array, Array]]:
    """(name, training inliers, test points, test truth with 1 = inlier) for each task."""
    out = []
    d = harness.load_set(data_dir, "banana")
    X, y = d["X"].astype(float), d["y"].astype(int)
    tr, te = d["train_idx"][0], d["test_idx"][0]
    out.append(("banana-split1", X[tr][y[tr] == 1], X[te], (y[te] == 1).astype(int)))
    d = harness.load_set(data_dir, "usps")
    X, y = 2 * d["X"].astype(float) - 1, d["y"].astype(int)
    tr, te = d["train_idx"].ravel(), d["test_idx"].ravel()
    for digit in digits:
        out.append((f"usps-digit{digit}", X[tr][y[tr] == digit], X[te],
                    (y[te] == digit).astype(int)))
    return out


def run_task(name: str, X: Array, X_test: Array, truth: Array, nu: float, gamma: str | float,
             ratio: float, n_init: int, seed: int) -> dict[str, Any]:
    """Fit both machines on ``X`` and compare them on ``X_test``."""
    g = resolve_gamma(gamma, X) if isinstance(gamma, str) else float(gamma)
    t0 = time.perf_counter()
    full = OneClassSVM(nu=nu, gamma=g).fit(X)
    t_full = time.perf_counter() - t0
    t0 = time.perf_counter()
    sparse = SparseOneClassSVM(n_expansion=ratio, nu=nu, gamma=g, n_init=n_init,
                               random_state=seed).fit(X)
    t_sparse = time.perf_counter() - t0
    auc_full = roc_auc_score(truth, full.decision_function(X_test))
    auc_sparse = roc_auc_score(truth, sparse.decision_function(X_test))
    return {
        "task": name,
        "n_train": len(X),
        "n_inliers": int(truth.sum()),
        "n_outliers": int(len(truth) - truth.sum()),
        "nu": nu,
        "gamma": round(g, 6),
        "nsv": len(full.support_),
        "nz": int(sparse.n_expansion_[0]),
        "n_init": n_init,
        "agreement": round(float(np.mean(full.predict(X_test) == sparse.predict(X_test))), 4),
        "auc_full": round(auc_full, 4),
        "auc_sparse": round(auc_sparse, 4),
        "auc_gap": round(auc_full - auc_sparse, 4),
        "outlier_frac_train_full": round(float(np.mean(full.predict(X) == -1)), 4),
        "outlier_frac_train_sparse": round(float(np.mean(sparse.predict(X) == -1)), 4),
        "fit_s_full": round(t_full, 3),
        "fit_s_sparse": round(t_sparse, 2),
        "n_iter": int(sparse.n_iter_[0]),
    }


def _table(rows: list[dict[str, Any]]) -> list[str]:
    lines = [
        "| task | ν | N train | NSV | Nz | n_init | agreement | AUC full | AUC sparse | gap | "
        "train outliers full / sparse | fit s full / sparse | L-BFGS iters |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['task']} | {r['nu']:g} | {r['n_train']} | {r['nsv']} | {r['nz']} | "
            f"{r['n_init']} | "
            f"{r['agreement']:.4f} | {r['auc_full']:.4f} | {r['auc_sparse']:.4f} | "
            f"{r['auc_gap']:+.4f} | "
            f"{r['outlier_frac_train_full']:.3f} / {r['outlier_frac_train_sparse']:.3f} | "
            f"{r['fit_s_full']:.3f} / {r['fit_s_sparse']:.1f} | {r['n_iter']} |"
        )
    return lines


def write(rows: list[dict[str, Any]], sweep: list[dict[str, Any]], out: Path, command: str,
          args: argparse.Namespace, nu_sweep: list[dict[str, Any]] | None = None) -> None:
    """Write oneclass.md and the CSV files (main table, banana sweeps) under ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    harness.write_csv(out / "oneclass.csv", rows, FIELDS)
    if sweep:
        harness.write_csv(out / "oneclass_banana_sweep.csv", sweep, FIELDS)
    if nu_sweep:
        harness.write_csv(out / "oneclass_banana_nu_sweep.csv", nu_sweep, FIELDS)
    gaps = [r["auc_gap"] for r in rows]
    met = sum(g <= 0.01 for g in gaps)
    lines = [
        "Both machines trained on one class at equal ν and γ; the sparse one has",
        f"Nz = round({args.ratio} × NSV) free expansion vectors (NSV = the full machine's",
        "number of support vectors), optimised by L-BFGS on W(Z) from random training points",
        f"(best of n_init = {args.n_init} starts by training objective, random_state = "
        f"{args.seed}).",
        f"ν = {args.nu} (banana: ν in {args.banana_nu}, one row each); γ = {args.gamma!r} "
        "(scikit-learn's 1 / (d · Var(X)) on the training inliers, when 'scale'); no tuning "
        "on test data.",
        "",
        "- banana, split 1: train on the +1 training points; inliers = +1 test points, "
        "outliers = −1 test points.",
        "- USPS (2·X − 1, standard 7291/2007 split): train on one digit's training points; "
        "inliers = that digit's test points, outliers = all other test digits.",
        "",
        "agreement = fraction of test points where both predict the same ±1; AUC = ROC AUC of",
        "the decision function on inliers vs outliers; kernel evaluations per prediction are",
        "NSV (full) and Nz (sparse); fit times in seconds on a shared 2-core machine.",
        "",
    ]
    lines += _table(rows)
    lines += [
        "",
        f"Target (AUC within 0.01 of OneClassSVM at Nz = {args.ratio} × NSV): met on {met} of "
        f"{len(rows)} rows; mean gap {np.mean(gaps):+.4f}, worst {max(gaps):+.4f} "
        "(gap = AUC full − AUC sparse).",
        "",
    ]
    if nu_sweep:
        lines += [
            "## Banana: ν",
            "",
            f"The banana task at Nz = round({args.ratio} × NSV), n_init = {args.n_init}, for "
            f"ν in {args.nu_sweep} (oneclass_banana_nu_sweep.csv). ν is the user's "
            "hyperparameter, equal for both machines; NSV ≥ ν·N, so Nz grows with ν.",
            "",
            *_table(nu_sweep),
            "",
        ]
    if sweep:
        lines += [
            "## Banana: Nz and restarts",
            "",
            f"The same banana task (ν = {args.nu}) at Nz = round(ratio × NSV) for ratios "
            f"{args.sweep_ratios} and n_init in {args.sweep_n_init} "
            "(oneclass_banana_sweep.csv).",
            "",
            *_table(sweep),
            "",
        ]
    if args.notes:
        lines += harness.notes_sections(args.notes)
    shows = ("The sparse one-class SVM (SparseOneClassSVM, Nz = "
             f"{args.ratio} × the full machine's support vectors) beside scikit-learn's "
             "OneClassSVM at equal ν and γ, on Banana and on each USPS digit against the "
             "others: how often the two agree and the ROC AUC of each against the target"
             + ("; on Banana, how ν, Nz and restarts move the gap" if nu_sweep or sweep
                else "") + ".")
    machine = (f"Generated by `benchmarks/oneclass.py`. Machine: {harness.machine_line()}; "
               f"{time.strftime('%Y-%m-%d')}, load average {harness.load_average()} when "
               "written.")
    harness.write_atomic(out / "oneclass.md", harness.result_page(
        "SparseOneClassSVM vs scikit-learn's OneClassSVM", shows, command, lines, [machine]))


def main(argv: list[str] | None = None) -> int:
    parser = harness.benchmark_parser(__doc__)
    parser.add_argument("--nu", type=float, default=0.1)
    parser.add_argument("--gamma", default="scale")
    parser.add_argument("--ratio", type=float, default=0.1, help="Nz / NSV")
    parser.add_argument("--n-init", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--digits", default="0,1,2,3,4,5,6,7,8,9")
    parser.add_argument("--sweep-ratios", default="0.1,0.2,0.3,0.5",
                        help="Nz / NSV values for the banana sweep (empty: no sweep)")
    parser.add_argument("--sweep-n-init", default="1,5")
    parser.add_argument("--banana-nu", default=None,
                        help="ν values of the banana rows of the main table (default: --nu)")
    parser.add_argument("--nu-sweep", default="",
                        help="ν values for a banana sweep at --ratio (empty: no sweep)")
    parser.add_argument("--notes", type=Path, default=None,
                        help="a Markdown page whose sections (from its first '## ' heading "
                             "on) are added to oneclass.md")
    args = parser.parse_args(argv)
    gamma: str | float = args.gamma if args.gamma in ("scale", "auto") else float(args.gamma)
    digits = [int(d) for d in args.digits.split(",") if d]
    command = harness.command(__file__, argv)
    if args.banana_nu is None:
        args.banana_nu = str(args.nu)
    rows: list[dict[str, Any]] = []
    sweep: list[dict[str, Any]] = []
    nu_sweep: list[dict[str, Any]] = []
    all_tasks = tasks(args.data_dir, digits)
    for name, X, X_test, truth in all_tasks:
        nus = [float(v) for v in args.banana_nu.split(",")] if name.startswith("banana") \
            else [args.nu]
        for nu in nus:
            rows.append(run_task(name, X, X_test, truth, nu, gamma, args.ratio, args.n_init,
                                 args.seed))
            print(rows[-1], flush=True)
            write(rows, sweep, args.out, command, args)  # partial results survive a stop
    name, X, X_test, truth = all_tasks[0]
    for nu in [float(v) for v in args.nu_sweep.split(",") if v]:
        nu_sweep.append(run_task(name, X, X_test, truth, nu, gamma, args.ratio, args.n_init,
                                 args.seed))
        print(nu_sweep[-1], flush=True)
        write(rows, sweep, args.out, command, args, nu_sweep)
    for ratio in [float(r) for r in args.sweep_ratios.split(",") if r]:
        for n_init in [int(n) for n in args.sweep_n_init.split(",") if n]:
            sweep.append(run_task(name, X, X_test, truth, args.nu, gamma, ratio, n_init,
                                  args.seed))
            print(sweep[-1], flush=True)
            write(rows, sweep, args.out, command, args, nu_sweep)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
