"""SparseSVR's fit time beside Nyström + Ridge at equal Nz, and against an earlier commit's.

For each regression set of the data folder (first predefined split, X and y standardised by
the training part): `sparsify.SparseSVR` at Nz XVs for ``--max-iter`` L-BFGS iterations and
Nyström(Nz) + Ridge, the issue's peer, each fitted ``--repeats`` times alone (one BLAS
thread; the median time), with W (SparseSVR's objective), the test RMSE (standardised
units) and the peak memory. The setting is the regression page's cross-validated one where
``--hyperparameters`` names its CSV (C, ε, γ for SparseSVR, α for Ridge), else C = 1,
ε = 0.1, γ = 1/d and α = 1e-3. ``--before`` takes this benchmark's CSV from an earlier
commit: its SparseSVR rows are shown beside these, with whether W is the same to the last
bit (a change that should only make the fit faster).

Usage::

    python benchmarks/svr_speed.py --data-dir ../shared/data --out docs/results \
        --hyperparameters docs/results/regression.csv --before BEFORE.csv \
        --before-label "the same command at COMMIT"

writes ``svr_speed.md`` and ``svr_speed.csv``.
"""

from __future__ import annotations

import csv
import os
import statistics
import time
from pathlib import Path
from typing import Any

import harness
import numpy as np
from regression import check_sets, regression_sets, standardise

DEFAULTS = {"C": 1.0, "epsilon": 0.1, "alpha": 1e-3}


def setting(table: list[dict[str, str]], name: str, d: int) -> dict[str, float]:
    """C, ε, γ and Ridge's α for a set: the regression page's rows for it, else the defaults."""
    svr = next((r for r in table if r["set"] == name and r["method"] == "SparseSVR"), None)
    ridge = next((r for r in table if r["set"] == name and r["method"] == "Nystroem + Ridge"),
                 None)
    out = {**DEFAULTS, "gamma": 1.0 / d}
    if svr is not None:
        out.update(C=float(svr["C"]), epsilon=float(svr["epsilon"]), gamma=float(svr["gamma"]))
    if ridge is not None:
        out["alpha"] = float(ridge["alpha"])
    return out


def one_set(data_dir: Path, name: str, nz: int, max_iter: int, repeats: int,
            table: list[dict[str, str]]) -> list[dict[str, Any]]:
    from sklearn.kernel_approximation import Nystroem
    from sklearn.linear_model import Ridge
    from sklearn.pipeline import make_pipeline

    from sparsify import SparseSVR

    d = harness.load_set(data_dir, name)
    tr, te = d["train_idx"][0], d["test_idx"][0]
    X, y, X_test, y_mu, y_sd = standardise(d["X"][tr].astype(float), d["y"][tr],
                                           d["X"][te].astype(float))
    y_test = (d["y"][te] - y_mu) / y_sd
    hp = setting(table, name, X.shape[1])
    makers = {
        "SparseSVR": lambda: SparseSVR(nz, C=hp["C"], epsilon=hp["epsilon"], gamma=hp["gamma"],
                                       max_iter=max_iter, random_state=0),
        "Nystroem + Ridge": lambda: make_pipeline(
            Nystroem(gamma=hp["gamma"], n_components=nz, random_state=0),
            Ridge(alpha=hp["alpha"])),
    }
    rows = []
    for method, make in makers.items():
        times, peaks = [], []
        for _ in range(repeats):
            estimator = make()
            seconds, peak = harness.fit_alone(estimator, X, y)
            times.append(seconds)
            peaks.append(peak)
        rmse = float(np.sqrt(np.mean((estimator.predict(X_test) - y_test) ** 2)))
        rows.append({"set": name, "N": len(X), "d": X.shape[1], "method": method, "Nz": nz,
                     "max_iter": max_iter if method == "SparseSVR" else "",
                     "fit_s": statistics.median(times), "repeats": repeats,
                     # repr: the W of an earlier commit is compared to the last bit
                     "W": repr(float(np.sum(estimator.objective_)))
                     if method == "SparseSVR" else "",
                     "test_rmse": rmse, "peak_mb": max(peaks), **hp})
        print(f"[svr_speed] {rows[-1]}", flush=True)
    return rows


def report(rows: list[dict[str, Any]], before: list[dict[str, Any]], before_label: str,
           wall: float, command: str) -> str:
    lines = harness.table("set", "N", "Nz", "method", "fit s (median)", "W", "test RMSE",
                          "peak MB", "C, ε, γ (α)")
    for r in rows:
        hp = (f"{r['C']:g}, {r['epsilon']:g}, {r['gamma']:.4g}" if r["method"] == "SparseSVR"
              else f"α = {r['alpha']:g}")
        lines.append(harness.row(r["set"], r["N"], r["Nz"], r["method"],
                                 f"{r['fit_s']:.2f}", r["W"] and f"{float(r['W']):.10g}",
                                 f"{r['test_rmse']:.4f}", f"{r['peak_mb']:.0f}", hp))
    body = ["## Fit time at equal Nz", "", *lines]
    if before:
        body += ["", f"## Against {before_label}", "",
                 *harness.table("set", "fit s before", "fit s now", "now / before",
                                "W the same to the last bit")]
        for r in (r for r in rows if r["method"] == "SparseSVR"):
            old = next((b for b in before if b["set"] == r["set"]
                        and b["method"] == "SparseSVR"), None)
            if old is not None:
                body.append(harness.row(r["set"], f"{float(old['fit_s']):.2f}",
                                        f"{r['fit_s']:.2f}",
                                        f"{r['fit_s'] / float(old['fit_s']):.2f}",
                                        "yes" if old["W"] == r["W"] else "no"))
    setup = ["### Set-up", "",
             "The first predefined split of each set; X and y standardised by the training "
             "part (the test RMSE is in units of y's standard deviation). SparseSVR: random "
             "initial XVs (seed 0), the given L-BFGS iterations, no plateau test. Nyström + "
             "Ridge: scikit-learn's, seed 0. Each fit alone, one BLAS thread, the median of "
             "the repeats; peak MB: the process's resident peak during a fit above what it "
             "held before."]
    shows = ("SparseSVR's fit time at equal Nz beside Nyström + Ridge's, with its W and test "
             "error, and against an earlier commit's run of the same command.")
    return harness.result_page("SparseSVR's fit time", shows, command,
                               [*setup, "", *body], [harness.provenance(wall)])


def main(argv: list[str] | None = None) -> int:
    parser = harness.benchmark_parser(__doc__)
    parser.add_argument("--sets", nargs="+", help="regression sets (default: every one)")
    parser.add_argument("--nz", type=int, default=50)
    parser.add_argument("--max-iter", type=int, default=30)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--hyperparameters", type=Path,
                        help="the regression page's CSV: its cross-validated settings")
    parser.add_argument("--before", type=Path, help="this benchmark's CSV from an earlier run")
    parser.add_argument("--before-label", default="the earlier commit",
                        help="what --before is, for the page (e.g. the same command at d35192c)")
    args = parser.parse_args(argv)
    names = args.sets or regression_sets(args.data_dir)
    check_sets(parser, args.data_dir, names)
    for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[name] = "1"
    harness.ready(args, __file__, argv)
    table, before = [], []
    if args.hyperparameters:
        with open(args.hyperparameters, newline="") as f:
            table = list(csv.DictReader(f))
    if args.before:
        with open(args.before, newline="") as f:
            before = list(csv.DictReader(f))
    start = time.perf_counter()
    rows = [r for name in names
            for r in one_set(args.data_dir, name, args.nz, args.max_iter, args.repeats, table)]
    page = report(rows, before, args.before_label, time.perf_counter() - start, args.command)
    harness.write_results(args.out, "svr_speed", page, rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
