"""Class imbalance 1:100: SparseSVC with and without class_weight="balanced", beside SVC.

Two-class data with one minority point per 100 majority points, several seeds,
each split in halves stratified by class (train, test). On each split, with the
same RBF kernel (γ = 1 / (d · Var(X_train)), "scale") and the same C, four fits
side by side in one process (BLAS on one thread):

- ``SparseSVC`` at Nz = ``--n-expansion`` XVs, ``class_weight=None`` and
  ``class_weight="balanced"`` (the minority's cost is then 100 times the
  majority's);
- scikit-learn's ``SVC`` with the same two settings (the full SVM: NSV XVs).

Reported per data set and model: minority recall and balanced accuracy on the
test half (mean ± standard error over seeds), median fit time, and the number
of kernel expansions (Nz or NSV). Data sets: ``classification``
(``make_classification``, two Gaussian clusters, class_sep = 0.7), ``moons``
(``make_moons``, noise 0.25, class 1 thinned to 1 %) and, with ``--data-dir``,
``banana`` (all points of banana/banana.npz, class +1 thinned to 1 % of class −1).

Usage::

    python benchmarks/imbalance.py --data-dir ../shared/data --out docs/results

writes ``imbalance.md`` (the table, the command) and ``imbalance.csv`` (every
fit) at the end, so an interrupted run leaves nothing half-written.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import harness
import numpy as np
from numpy.typing import NDArray
from performance import load_compiled_solver
from sklearn.datasets import make_classification, make_moons
from sklearn.metrics import balanced_accuracy_score, recall_score
from sklearn.model_selection import train_test_split
from sklearn.svm import SVC
from threadpoolctl import threadpool_limits

from sparsify import SparseSVC
from sparsify.core.errors import SolverError
from sparsify.kernels import resolve_gamma

Array = NDArray[np.float64]
RATIO = 100  # majority points per minority point
MODELS = (("SparseSVC", None), ("SparseSVC", "balanced"), ("SVC", None), ("SVC", "balanced"))


def _thin(X: Array, y: NDArray[np.int_], minority: int, n_majority: int,
          rng: np.random.Generator) -> tuple[Array, NDArray[np.int_]]:
    """``n_majority`` points of the other class and 1/RATIO as many of ``minority``."""
    major = rng.choice(np.flatnonzero(y != minority), n_majority, replace=False)
    minor = rng.choice(np.flatnonzero(y == minority), n_majority // RATIO, replace=False)
    rows = np.concatenate([major, minor])
    return X[rows], (y[rows] == minority).astype(int)


def make_data(name: str, seed: int, n_majority: int,
              data_dir: Path | None) -> tuple[Array, NDArray[np.int_]]:
    """X and y (1 = minority) of one seed of data set ``name``."""
    rng = np.random.default_rng(seed)
    if name == "classification":
        n = n_majority + n_majority // RATIO
        X, y = make_classification(n, n_features=2, n_informative=2, n_redundant=0,
                                   n_clusters_per_class=1, weights=[RATIO / (RATIO + 1)],
                                   class_sep=0.7, flip_y=0.0, random_state=seed)
        return X, y
    if name == "moons":
        X, y = make_moons(2 * n_majority, noise=0.25, random_state=seed)
        return _thin(X, y, 1, n_majority, rng)
    assert data_dir is not None
    d = harness.load_set(data_dir, "banana")
    X, y = d["X"].astype(float), d["y"]
    return _thin(X, y, 1, min(n_majority, int(np.sum(y != 1))), rng)


def fit_all(name: str, seed: int, X: Array, y: NDArray[np.int_], C: float,
            n_expansion: int) -> list[dict[str, Any]]:
    """The four models on one stratified half split of (X, y)."""
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.5, stratify=y,
                                              random_state=seed)
    gamma = resolve_gamma("scale", X_tr)
    rows = []
    for model, class_weight in MODELS:
        if model == "SparseSVC":
            clf: Any = SparseSVC(n_expansion, C=C, gamma=gamma, class_weight=class_weight,
                                 random_state=seed)
        else:
            clf = SVC(C=C, gamma=gamma, class_weight=class_weight)
        row = {"dataset": name, "seed": seed, "model": model,
               "class_weight": class_weight or "none", "n_train": len(y_tr),
               "n_minority_train": int(y_tr.sum()), "n_minority_test": int(y_te.sum()),
               "C": C, "gamma": gamma, "status": "ok"}
        start = time.perf_counter()
        try:
            clf.fit(X_tr, y_tr)
        except SolverError as exc:  # recorded and counted in the table, not hidden
            rows.append({**row, "status": f"failed: {exc}", "n_expansions": n_expansion,
                         "minority_recall": np.nan, "balanced_accuracy": np.nan,
                         "fit_seconds": time.perf_counter() - start})
            continue
        seconds = time.perf_counter() - start
        pred = clf.predict(X_te)
        rows.append({
            **row,
            "n_expansions": int(clf.n_expansion_[0] if model == "SparseSVC"
                                else clf.n_support_.sum()),
            "minority_recall": float(recall_score(y_te, pred)),
            "balanced_accuracy": float(balanced_accuracy_score(y_te, pred)),
            "fit_seconds": seconds,
        })
    return rows


def _mean_se(values: list[float]) -> str:
    v = np.asarray(values, dtype=float)
    se = v.std(ddof=1) / np.sqrt(len(v)) if len(v) > 1 else 0.0
    return f"{v.mean():.3f} ± {se:.3f}"


def report(rows: list[dict[str, Any]], wall: float, seeds: int) -> str:
    first = rows[0]
    lines = [
        f"{seeds} seeds per data set; each seed draws the data and splits it in "
        f"halves stratified by class (about {first['n_train']} training points, "
        f"{first['n_minority_train']} of them in the minority class). Same RBF kernel "
        "(γ = 1 / (d · Var(X_train))) and C for all four models; SparseSVC at a fixed Nz, "
        "SVC with NSV support vectors. Recall and balanced accuracy on the test half, "
        "mean ± standard error over seeds; fit time is the median.", "",
        "| data set | model | class_weight | fits | minority recall | balanced accuracy | "
        "fit time (s), median / max | Nz or NSV |",
        "|---|---|---|---|---|---|---|---|",
    ]
    failures = [r for r in rows if r["status"] != "ok"]
    for name in dict.fromkeys(r["dataset"] for r in rows):
        for model, class_weight in MODELS:
            group = [r for r in rows if r["dataset"] == name and r["model"] == model
                     and r["class_weight"] == (class_weight or "none")]
            ok = [r for r in group if r["status"] == "ok"]
            times = [r["fit_seconds"] for r in group]
            lines.append(
                f"| {name} | {model} | {class_weight or 'none'} | {len(ok)} of {len(group)} | "
                f"{_mean_se([r['minority_recall'] for r in ok]) if ok else '–'} | "
                f"{_mean_se([r['balanced_accuracy'] for r in ok]) if ok else '–'} | "
                f"{np.median(times):.2f} / {np.max(times):.2f} | "
                f"{np.mean([r['n_expansions'] for r in group]):.0f} |")
    if failures:
        lines += ["", "Failed fits (recall and accuracy above are over the others):", ""]
        lines += [f"- {r['dataset']} seed {r['seed']}, {r['model']} class_weight="
                  f"{r['class_weight']}: {r['status']}" for r in failures]
        lines += ["", "Where this was looked into (classification, seed 2), the fast path "
                  "stalled at the initial XVs: several pairs of the 20 random XVs lie 0.07 to "
                  "0.13 apart, a tenth of the kernel's length 1/√γ = 1.24 or less, K_ZZ has "
                  "a condition number near 1e9, and with the minority's "
                  "cost C_i = 50.5 neither the interior point nor the generic fallback's "
                  "backends reach solver_tol. Weights are not the cause: the same data "
                  "without weights at C = 50 fail the same way (seed 0) or take minutes "
                  "(seed 2, 250 s). The slow balanced fits above are evaluations answered "
                  "by the generic fallback."]
    lines += [
        "",
        "Unweighted, both machines trade the minority away for the majority's accuracy; with "
        "`class_weight=\"balanced\"` each minority point costs 100 times a majority point "
        "(C_i = C · class_weight[y_i]), as in SVC. Every fit is in `imbalance.csv`.",
        "",
    ]
    shows = ("SparseSVC and scikit-learn's SVC on data sets with one minority point per 100, "
             "unweighted and with `class_weight=\"balanced\"`: the minority class's recall, "
             "the balanced accuracy and the fit time.")
    return harness.result_page("Class imbalance 1:100: class_weight=\"balanced\"", shows,
                               harness.command(__file__), lines, [harness.provenance(wall)])


def main(argv: list[str] | None = None) -> int:
    parser = harness.benchmark_parser(__doc__, "optional: a folder in the ../shared/data format; "
                                       "adds banana/ thinned to 1:100")
    for action in parser._actions:  # the generated data sets need no folder
        if action.dest == "data_dir":
            action.required = False
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--n-majority", type=int, default=4000,
                        help="majority points per seed, before the half split")
    parser.add_argument("--n-expansion", type=int, default=20, help="Nz of SparseSVC")
    parser.add_argument("--C", type=float, default=1.0)
    args = parser.parse_args(argv)
    names = ["classification", "moons"]
    if args.data_dir is not None:
        harness.check_data_dir(parser, args.data_dir, ["banana"])
        names.append("banana")
    if args.n_majority < 2 * RATIO:
        parser.error(f"--n-majority must be at least {2 * RATIO}, so that each half has a "
                     f"minority point; got {args.n_majority}.")
    args.out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    rows: list[dict[str, Any]] = []
    with threadpool_limits(1):
        load_compiled_solver()  # the fast path's one-off loads stay out of the fit times
        for name in names:
            for seed in range(args.seeds):
                X, y = make_data(name, seed, args.n_majority, args.data_dir)
                rows += fit_all(name, seed, X, y, args.C, args.n_expansion)
            print(f"[imbalance] {name} done {time.perf_counter() - start:.0f}s", flush=True)
    harness.write_results(args.out, "imbalance",
                          report(rows, time.perf_counter() - start, args.seeds), rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
