"""KMRA against a full Gaussian SVM on Pima and Wisconsin breast cancer (seed 002's set-up).

Usage::

    python benchmarks/kmra.py --data-dir /work/shared/data --out docs/results

Per data set and random partition (two thirds train, one third test, features
scaled to [−1, 1] on the training part):

* full SVM: scikit-learn ``SVC`` with the RBF kernel, (C, γ) by 10-fold
  cross-validation on the training part (the seed uses LIBSVM the same way);
* KMRA (:class:`sparsify.kmra.KernelMatchingReduction`): p = 2, C by 5-fold
  cross-validation (v = 5), the seed's δ (0.97 for Wisconsin, 0.8 for Pima), the
  test set passed as ``eval_set`` only to record the test accuracy along the
  deletion path (it never trains or selects the final model).

"KMRA final" is the model the algorithm outputs (the smallest dictionary whose
training accuracy is still ≥ δ); "KMRA best" is the best test accuracy along the
path, the seed's own "best performance during the iterative process" (an oracle
choice on the test set, reported as the seed does). Wisconsin's 16 rows with a
missing value are dropped (683 rows left); Pima's disguised zeros are kept as
they are, as in the seed and most of the literature.

Writes ``kmra.md`` (table, command, machine), ``kmra.csv`` (one row per
partition), ``kmra_path.csv`` (every round of every path) and one
``kmra_<data set>.png`` per data set.
"""

from __future__ import annotations

import argparse
import csv
import os
import platform
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.model_selection import GridSearchCV
from sklearn.preprocessing import MinMaxScaler
from sklearn.svm import SVC
from threadpoolctl import threadpool_limits

from sparsify.kmra import KernelMatchingReduction

DATASETS = ("uci_breast_cancer_wisconsin", "uci_pima")
DELTA = {"uci_breast_cancer_wisconsin": 0.97, "uci_pima": 0.8}  # seed 002, slide 35
LABEL = {"uci_breast_cancer_wisconsin": "Wisconsin breast cancer", "uci_pima": "Pima diabetes"}
SVM_GRID = {"C": 2.0 ** np.arange(-6, 13, 2), "gamma": 2.0 ** np.arange(-10, 3, 2)}
# capped at 2^8: libsvm slows down badly at large C on a small, non-separable dictionary
KMRA_CS = 2.0 ** np.arange(-6, 9, 2)


def load(data_dir: Path, name: str) -> tuple[np.ndarray, np.ndarray]:
    with np.load(data_dir / name / f"{name}.npz") as z:
        X, y = z["X"].astype(float), z["y"].astype(int)
    keep = ~np.isnan(X).any(axis=1)  # Wisconsin: 16 rows with a missing value
    return X[keep], y[keep]


def partition(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    perm = np.random.default_rng(seed).permutation(n)
    n_train = round(2 * n / 3)
    return np.sort(perm[:n_train]), np.sort(perm[n_train:])


def run_one(X: np.ndarray, y: np.ndarray, name: str, part: int, seed: int,
            args: argparse.Namespace) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    tr, te = partition(len(X), seed)
    scaler = MinMaxScaler(feature_range=(-1, 1)).fit(X[tr])
    Xtr, Xte, ytr, yte = scaler.transform(X[tr]), scaler.transform(X[te]), y[tr], y[te]

    start = time.perf_counter()
    grid = GridSearchCV(SVC(kernel="rbf"), SVM_GRID, cv=10).fit(Xtr, ytr)
    svm_seconds = time.perf_counter() - start
    svm = grid.best_estimator_

    start = time.perf_counter()
    kmra = KernelMatchingReduction(
        delta=DELTA[name], p=2, Cs=KMRA_CS, cv=5, cv_every=args.cv_every,
        n_delete=args.n_delete, random_state=seed,
    ).fit(Xtr, ytr, eval_set=(Xte, yte))
    kmra_seconds = time.perf_counter() - start
    path = kmra.path_
    best = int(np.flatnonzero(path["eval_accuracy"] == path["eval_accuracy"].max())[-1])
    row = {
        "dataset": name, "partition": part, "seed": seed, "n_train": len(tr), "n_test": len(te),
        "svm_C": grid.best_params_["C"], "svm_gamma": grid.best_params_["gamma"],
        "svm_n_sv": int(svm.n_support_.sum()), "svm_accuracy": svm.score(Xte, yte),
        "svm_seconds": svm_seconds, "delta": DELTA[name],
        "kmra_rounds": len(path["n_functions"]),
        "kmra_start_train_accuracy": path["train_accuracy"][0],
        "kmra_final_n": kmra.n_functions_, "kmra_final_accuracy": kmra.score(Xte, yte),
        "kmra_final_train_accuracy": path["train_accuracy"][kmra.best_index_],
        "kmra_final_C": kmra.C_,
        "kmra_best_n": int(path["n_functions"][best]),
        "kmra_best_accuracy": path["eval_accuracy"][best],
        "kmra_seconds": kmra_seconds,
    }
    rounds = [{"dataset": name, "partition": part, "round": r,
               "n_functions": int(path["n_functions"][r]),
               "train_accuracy": path["train_accuracy"][r],
               "test_accuracy": path["eval_accuracy"][r], "C": path["C"][r]}
              for r in range(len(path["n_functions"]))]
    return row, rounds


def write_csv(path: Path, rows: list[dict[str, Any]]) -> None:
    with open(path, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def plot(name: str, rows: list[dict[str, Any]], rounds: list[dict[str, Any]], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_test, ax_train) = plt.subplots(1, 2, figsize=(11, 4), sharex=True)
    for part in sorted({r["partition"] for r in rows}):
        sel = [r for r in rounds if r["partition"] == part]
        n = [r["n_functions"] for r in sel]
        ax_test.plot(n, [r["test_accuracy"] for r in sel], lw=0.8, alpha=0.6)
        ax_train.plot(n, [r["train_accuracy"] for r in sel], lw=0.8, alpha=0.6)
        final = next(r for r in rows if r["partition"] == part)
        ax_test.plot(final["kmra_final_n"], final["kmra_final_accuracy"], "k.", ms=6)
    svm = np.mean([r["svm_accuracy"] for r in rows])
    ax_test.axhline(svm, color="k", lw=2.5, label=f"full SVM, mean test accuracy {svm:.3f}")
    ax_train.axhline(rows[0]["delta"], color="r", lw=1.5, ls="--", label=f"δ = {rows[0]['delta']}")
    for ax, what in ((ax_test, "test"), (ax_train, "training")):
        ax.set_xscale("log")
        ax.invert_xaxis()  # as in the seed: the dictionary shrinks from left to right
        ax.set_xlabel("number of kernel functions in the dictionary")
        ax.set_ylabel(f"{what} accuracy")
        ax.grid(alpha=0.3)
        ax.legend(loc="lower left", fontsize=8)
    ax_test.set_title(f"{LABEL[name]}: KMRA paths ({len(rows)} partitions; dots = final)")
    ax_train.set_title("training accuracy along the path")
    fig.tight_layout()
    fig.savefig(out / f"kmra_{name}.png", dpi=110)
    plt.close(fig)


def ms(values: list[float], digits: int = 1, scale: float = 1.0, median: bool = False) -> str:
    """'mean ± std', optionally with the median (counts are skewed across partitions)."""
    v = scale * np.asarray(values, dtype=float)
    text = f"{v.mean():.{digits}f} ± {v.std():.{digits}f}"
    return text + f" (median {np.median(v):g})" if median else text


def report(rows: list[dict[str, Any]], args: argparse.Namespace, seconds: float) -> str:
    command = ("python benchmarks/kmra.py --data-dir /work/shared/data "
               f"--out {args.out} --partitions {args.partitions} --seed {args.seed} "
               f"--n-delete {args.n_delete} --cv-every {args.cv_every} "
               f"--datasets {' '.join(args.datasets)}")
    load = " / ".join(f"{x:.1f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "?"
    lines = [
        "# KMRA (kernel matching reduction) against the full SVM",
        "",
        f"Command: `{command}`",
        "",
        f"Machine: {os.cpu_count()} CPUs ({platform.machine()}, {platform.platform()}), Python "
        f"{sys.version.split()[0]}; shared with other jobs (load average at the end {load}); "
        f"total {seconds / 60:.1f} min.",
        "",
        "Set-up as in seed 002: per partition two thirds of the rows train and one third test "
        "(random, seeds `seed + partition`), features scaled to [−1, 1] on the training part. "
        "Full SVM: `SVC(kernel='rbf')`, (C, γ) by 10-fold CV over C ∈ 2^{−6, −4, …, 12}, "
        "γ ∈ 2^{−10, −8, …, 2}. KMRA: p = 2, C by 5-fold CV over C ∈ 2^{−6, −4, …, 8}, re-chosen "
        f"every {args.cv_every} rounds, "
        + (f"{args.n_delete} function(s) deleted per round" if args.n_delete >= 1 else
           f"{100 * args.n_delete:g} % of the dictionary (at least one function) deleted per "
           "round")
        + ", δ = 0.97 (Wisconsin) and 0.8 (Pima), the seed's values. Wisconsin: the 16 rows "
        "with a missing value are dropped (683 left). Pima: disguised zeros kept.",
        "",
        "**KMRA final** is the algorithm's output (smallest dictionary with training accuracy "
        "≥ δ). **KMRA best** is the best test accuracy along the deletion path, as the seed's "
        "Table 2 reports it: an oracle choice on the test set, not a usable model selection.",
        "",
        "| data | partitions | N train | method | test accuracy (%) | kernel functions | "
        "fit s |",
        "|---|---|---|---|---|---|---|",
    ]
    for name in args.datasets:
        sel = [r for r in rows if r["dataset"] == name]
        if not sel:
            continue
        head = f"| {LABEL[name]} | {len(sel)} | {sel[0]['n_train']} |"
        lines += [
            f"{head} full SVM (NSV) | {ms([r['svm_accuracy'] for r in sel], 2, 100)} | "
            f"{ms([r['svm_n_sv'] for r in sel], median=True)} | "
            f"{ms([r['svm_seconds'] for r in sel])} |",
            f"{head} KMRA final | {ms([r['kmra_final_accuracy'] for r in sel], 2, 100)} | "
            f"{ms([r['kmra_final_n'] for r in sel], median=True)} | "
            f"{ms([r['kmra_seconds'] for r in sel])} |",
            f"{head} KMRA best (oracle) | {ms([r['kmra_best_accuracy'] for r in sel], 2, 100)} | "
            f"{ms([r['kmra_best_n'] for r in sel], median=True)} | |",
        ]
    lines += [
        "",
        "Per data set, the training accuracy of the first (full) dictionary, the partitions "
        "where it is already below δ (KMRA then keeps all N functions), the rounds run and the "
        "chosen SVM hyperparameters:",
        "",
        "| data | KMRA train acc. at start (%) | start below δ | rounds | "
        "KMRA final train acc. (%) | SVM C (median) | SVM γ (median) |",
        "|---|---|---|---|---|---|---|",
    ]
    for name in args.datasets:
        sel = [r for r in rows if r["dataset"] == name]
        if not sel:
            continue
        lines.append(
            f"| {LABEL[name]} | {ms([r['kmra_start_train_accuracy'] for r in sel], 2, 100)} | "
            f"{sum(r['kmra_start_train_accuracy'] < r['delta'] for r in sel)} of {len(sel)} | "
            f"{ms([r['kmra_rounds'] for r in sel])} | "
            f"{ms([r['kmra_final_train_accuracy'] for r in sel], 2, 100)} | "
            f"{np.median([r['svm_C'] for r in sel]):g} | "
            f"{np.median([r['svm_gamma'] for r in sel]):g} |")
    lines += ["", "Final dictionary sizes per partition (KMRA final / full SVM NSV):", ""]
    for name in args.datasets:
        sel = [r for r in rows if r["dataset"] == name]
        if sel:
            sizes = ", ".join(f"{r['kmra_final_n']}/{r['svm_n_sv']}" for r in sel)
            lines.append(f"- {LABEL[name]}: {sizes}")
    lines += [
        "",
        "The seed's figures: the slides' Tables 1-2 and Fig. 1 are images that the text "
        "extraction lost, so its accuracies and counts cannot be set beside ours; the text "
        "gives only the δ values, that KMRA is \"much sparser\" than the SVM at \"comparable\" "
        "accuracy, that on Pima the test accuracy rises as functions are deleted (early "
        "over-fitting) and that on breast cancer it fluctuates around the SVM's.",
        "",
        "Figures: " + ", ".join(f"`kmra_{name}.png`" for name in args.datasets)
        + " (test and training accuracy against the number of kernel functions along every "
        "path; thick line: the full SVM's mean test accuracy). Numbers: `kmra.csv` (one row per "
        "partition), `kmra_path.csv` (every round).",
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", type=Path, default=Path("../shared/data"))
    ap.add_argument("--out", type=Path, default=Path("docs/results"))
    ap.add_argument("--partitions", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--datasets", nargs="+", default=list(DATASETS), choices=DATASETS)
    ap.add_argument("--n-delete", type=float, default=0.02,
                    help="functions deleted per round: a count (>= 1) or a fraction (< 1)")
    ap.add_argument("--cv-every", type=int, default=5,
                    help="re-choose KMRA's C by cross-validation every this many rounds")
    args = ap.parse_args()
    if args.n_delete >= 1:
        args.n_delete = int(args.n_delete)
    warnings.simplefilter("ignore", UserWarning)
    args.out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    rows: list[dict[str, Any]] = []
    rounds: list[dict[str, Any]] = []
    for name in args.datasets:
        X, y = load(args.data_dir, name)
        for part in range(args.partitions):
            # one BLAS thread: the machine is shared, and threaded BLAS crawls when it is busy
            with threadpool_limits(limits=1, user_api="blas"):
                row, path = run_one(X, y, name, part, args.seed + part, args)
            rows.append(row)
            rounds += path
            print({k: (round(float(v), 4) if isinstance(v, float) else v)
                   for k, v in row.items()}, flush=True)
            write_csv(args.out / "kmra.csv", rows)
            write_csv(args.out / "kmra_path.csv", rounds)
        plot(name, [r for r in rows if r["dataset"] == name],
             [r for r in rounds if r["dataset"] == name], args.out)
    text = report(rows, args, time.perf_counter() - start)
    (args.out / "kmra.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
