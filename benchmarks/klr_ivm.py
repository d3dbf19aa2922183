"""Compare full KLR, the import vector machine, IVM + refinement, sparse KLR and Nystroem.

Usage::

    python benchmarks/klr_ivm.py --data-dir /work/shared/data --out docs/results

Each method gets the same number of import/expansion vectors (``--n-vectors``
per data set). Hyperparameters are a documented fixed choice, not tuned:
γ = "scale" (1 / (d · Var X)) and λ below. USPS is subsampled to
``--usps-train`` training points (the full 7291 × 10-class exponential-cone
problem does not fit the time budget through cvxpy); the test set is complete.
"""

from __future__ import annotations

import argparse
import csv
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.kernel_approximation import Nystroem
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import log_loss
from sklearn.pipeline import make_pipeline

from sparsify.ivm import ImportVectorMachine
from sparsify.logistic import SparseKernelLogisticRegression

LAM = {"banana": 1e-3, "german": 1e-2, "usps": 1e-3}


def load(data_dir: Path, name: str, split: int, usps_train: int, seed: int):
    d = np.load(data_dir / name / f"{name}.npz")
    X, y = d["X"].astype(float), d["y"]
    if name == "usps":
        X = 2 * X - 1
        tr, te = d["train_idx"][0], d["test_idx"][0]  # the one standard split
        tr = np.sort(np.random.default_rng(seed).choice(tr, min(usps_train, len(tr)),
                                                        replace=False))
    else:
        tr, te = d["train_idx"][split], d["test_idx"][split]
    return X[tr], y[tr], X[te], y[te]


def methods(n: int, lam: float, n_train: int, full: bool, seed: int):
    if full:
        yield "full KLR", lambda X: SparseKernelLogisticRegression(
            len(np.unique(X, axis=0)), lam=lam, init=np.unique(X, axis=0), max_iter=0)
    yield "IVM", lambda X: ImportVectorMachine(lam, max_import_points=n, eta=0.0,
                                               n_candidates=200, random_state=seed)
    yield "IVM + refine", lambda X: ImportVectorMachine(
        lam, max_import_points=n, eta=0.0, n_candidates=200, refine=True, refine_max_iter=30,
        random_state=seed)
    yield "sparse KLR (k-means)", lambda X: SparseKernelLogisticRegression(
        n, lam=lam, init="kmeans", max_iter=30, random_state=seed)
    yield "Nystroem + LR", lambda X: make_pipeline(
        Nystroem(gamma=1.0 / (X.shape[1] * X.var()), n_components=n, random_state=seed),
        LogisticRegression(C=1.0 / (lam * n_train), max_iter=5000))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--data-dir", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--datasets", nargs="+", default=["banana", "german", "usps"])
    ap.add_argument("--splits", type=int, default=10)
    ap.add_argument("--n-vectors", nargs="+", type=int, default=[20, 20, 50])
    ap.add_argument("--usps-train", type=int, default=1000)
    ap.add_argument("--no-full", nargs="*", default=["usps"],
                    help="data sets on which the full KLR is skipped")
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    args.out.mkdir(parents=True, exist_ok=True)
    rows = []
    for name, n in zip(args.datasets, args.n_vectors, strict=True):
        for split in range(1 if name == "usps" else args.splits):
            X, y, Xt, yt = load(args.data_dir, name, split, args.usps_train, split)
            for method, make in methods(n, LAM[name], len(X), name not in args.no_full, split):
                model = make(X)
                start = time.perf_counter()
                model.fit(X, y)
                seconds = time.perf_counter() - start
                proba = model.predict_proba(Xt)
                vectors = (len(model.expansion_vectors_) if hasattr(model, "expansion_vectors_")
                           else n)
                row = {"dataset": name, "split": split, "method": method, "n_train": len(X),
                       "n_vectors": vectors, "test_error": float(np.mean(model.predict(Xt) != yt)),
                       "log_loss": float(log_loss(yt, proba, labels=np.unique(y))),
                       "fit_seconds": seconds}
                rows.append(row)
                print(row, flush=True)
            with open(args.out / "klr_ivm.csv", "w", newline="") as fh:
                writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
                writer.writeheader()
                writer.writerows(rows)
    usps = "usps" in args.datasets
    command = ("python benchmarks/klr_ivm.py --data-dir /work/shared/data --out docs/results "
               f"--datasets {' '.join(args.datasets)} --splits {args.splits} "
               f"--n-vectors {' '.join(map(str, args.n_vectors))}"
               + (f" --usps-train {args.usps_train}" if usps else "")
               + (f" --no-full {' '.join(args.no_full)}" if args.no_full else " --no-full"))
    lam = {name: LAM[name] for name in args.datasets}
    lines = ["# KLR, IVM and sparse KLR", "", f"Command: `{command}`", "",
             f"γ = 1/(d·Var X); λ = {lam} (fixed, not tuned)."
             + (f" USPS: one random subsample of {args.usps_train} training points, full "
                "2007-point test set." if usps else "")
             + (f" Full KLR skipped on {args.no_full}." if args.no_full else ""), "",
             "| data | method | splits | N train | vectors | test error | log-loss | fit s |",
             "|---|---|---|---|---|---|---|---|"]
    for name in args.datasets:
        for method in dict.fromkeys(r["method"] for r in rows if r["dataset"] == name):
            sel = [r for r in rows if r["dataset"] == name and r["method"] == method]
            err = np.array([r["test_error"] for r in sel])
            ll = np.array([r["log_loss"] for r in sel])
            sec = np.array([r["fit_seconds"] for r in sel])
            lines.append(f"| {name} | {method} | {len(sel)} | {sel[0]['n_train']} | "
                         f"{np.mean([r['n_vectors'] for r in sel]):.0f} | "
                         f"{100 * err.mean():.2f} ± {100 * err.std():.2f} % | "
                         f"{ll.mean():.4f} | {sec.mean():.2f} |")
    (args.out / "klr_ivm.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
