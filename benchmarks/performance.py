"""Performance of SLMC: the exact fast path, the generic cvxpy path and scikit-learn's SVC.

Four parts, each run side by side with its peer in one process (BLAS limited
to one thread per process so that timings compare like with like):

- ``banana``: Banana split 1, Nz = 10 % of the full SVM's NSV, (C, γ) = the
  cross-validated values of docs/results/banana.md. Median fit time over
  ``--repeats`` seeds of SparseSVC by the fast path (solver="auto") and the
  generic path (solver="clarabel"), and the fit time of sklearn's SVC.
- ``usps``: the paper's USPS set-up (X scaled 2X − 1, γ = 1/128, C = 10), 10
  one-vs-rest SLMCs at Nz = 10 % of each binary SVM's NSV, ``--n-jobs`` jobs,
  once for each of ``--usps-repeats`` seeds and each initial-XV method of
  ``--usps-init`` (the first is the one judged against the targets): total fit
  time (the 10 full SVMs that give the NSVs included) and test error.
- ``predict``: the USPS test set, SLMC against SVC with the same (C, γ): kernel
  evaluations per point, median prediction time, test error.
- ``scaling``: USPS digit 0 against the rest, random subsets of N points,
  Nz random XVs: for each path, the first evaluation (compile for cvxpy), the
  median of later W(Z) evaluations, the solver's own time (cvxpy path: time
  inside Clarabel, so the ratio is cvxpy's overhead), a fit of ``--scaling-iter``
  L-BFGS iterations and the peak memory of a fresh process doing it.

Usage::

    python benchmarks/performance.py --data-dir ../shared/data --out docs/results

writes ``performance.md`` (tables, the command, the machine), ``performance.csv``
(every measurement), ``performance_scaling.png``; figures are written at the
end, so an interrupted run leaves nothing half-written.
"""

from __future__ import annotations

import argparse
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray
from sklearn.svm import SVC
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).resolve().parent))
import harness

from sparsify import CvxpyMarginal, SparseSVC
from sparsify.core.formulation import make_formulation
from sparsify.core.optimize import initial_expansion_vectors, minimize_marginal
from sparsify.kernels import RBF

Array = NDArray[np.float64]
PARTS = ("banana", "usps", "predict", "scaling")
BANANA_C = BANANA_GAMMA = 10**0.5  # 5-fold CV on split 1, docs/results/banana.md
USPS_C, USPS_GAMMA = 10.0, 1 / 128  # the paper's §5.1
PAPER = {"banana_fit_s": 1.5, "usps_fit_h": 6.9, "usps_error": 4.7}


def load_usps(data_dir: Path) -> tuple[Array, Array, Array, Array]:
    d = harness.load_set(data_dir, "usps")
    X, y = 2 * d["X"].astype(float) - 1, d["y"].astype(int)
    tr, te = d["train_idx"].ravel(), d["test_idx"].ravel()
    return X[tr], y[tr], X[te], y[te]


def banana(data_dir: Path, repeats: int) -> list[dict[str, Any]]:
    d = harness.load_set(data_dir, "banana")
    tr, te = d["train_idx"][0], d["test_idx"][0]
    X, y, Xt, yt = d["X"][tr], d["y"][tr], d["X"][te], d["y"][te]
    svc, t_svc = harness.timed(lambda: SVC(C=BANANA_C, gamma=BANANA_GAMMA).fit(X, y))
    nz = max(1, round(0.1 * svc.n_support_.sum()))
    rows = [{"part": "banana", "method": "SVC", "N": len(X), "Nz": int(svc.n_support_.sum()),
             "seconds": t_svc, "error": 1 - svc.score(Xt, yt), "repeat": 0}]
    # The fast path's first fit in a process pays one-off costs (first calls into its C
    # extension, numpy and scipy): timed apart, outside the medians.
    for attempt in ("first", "second"):
        short = SparseSVC(nz, C=BANANA_C, gamma=BANANA_GAMMA, max_iter=1, random_state=0)
        _, seconds = harness.timed(lambda short=short: short.fit(X, y))
        rows.append({"part": "banana", "method": f"SLMC fast path, 1 iteration, {attempt} fit "
                     "in the process", "N": len(X), "Nz": nz, "seconds": seconds, "repeat": 0})
    for solver, method in (("auto", "SLMC fast path"), ("clarabel", "SLMC generic path")):
        for seed in range(repeats):
            clf = SparseSVC(nz, C=BANANA_C, gamma=BANANA_GAMMA, solver=solver, random_state=seed)
            _, seconds = harness.timed(lambda clf=clf: clf.fit(X, y))
            rows.append({"part": "banana", "method": method, "N": len(X), "Nz": nz,
                         "seconds": seconds, "error": 1 - clf.score(Xt, yt), "repeat": seed,
                         "n_iter": int(clf.n_iter_[0]), "objective": float(clf.objective_[0])})
    return rows


def usps(data_dir: Path, n_jobs: int, seeds: list[int], max_iter: int, inits: list[str]
         ) -> tuple[list[dict[str, Any]], SparseSVC, SVC]:
    """The 10 one-vs-rest SLMCs once per seed and initial-XV method (the random
    start moves the error by about ±0.1 points), and the full SVM; the first
    model is returned for the prediction timings."""
    X, y, Xt, yt = load_usps(data_dir)
    rows, models = [], []
    for init in inits:
        for seed in seeds:
            # to max_iter, as the page's figures were measured (fit_speed.py has the default)
            clf = SparseSVC(0.1, C=USPS_C, gamma=USPS_GAMMA, init=init, n_jobs=n_jobs,
                            random_state=seed, max_iter=max_iter, n_iter_no_change=None)
            _, t_fit = harness.timed(lambda clf=clf: clf.fit(X, y))
            models.append(clf)
            rows.append({"part": "usps", "method": "SLMC fast path (10 one-vs-rest)",
                         "init": init, "N": len(X), "Nz": int(clf.n_expansion_.sum()),
                         "nsv_sum": int(clf.full_n_support_.sum()), "seconds": t_fit,
                         "error": 1 - clf.score(Xt, yt), "n_jobs": n_jobs, "repeat": seed,
                         "n_iter": int(np.max(clf.n_iter_)), "W_sum": float(clf.objective_.sum())})
            print(f"[performance] usps init={init} seed={seed}: {t_fit:.0f} s, error "
                  f"{100 * rows[-1]['error']:.2f} %", flush=True)
    svc, t_svc = harness.timed(lambda: SVC(C=USPS_C, gamma=USPS_GAMMA).fit(X, y))
    rows.append({"part": "usps", "method": "SVC (one-vs-one, libsvm)", "N": len(X),
                 "Nz": int(svc.n_support_.sum()), "seconds": t_svc,
                 "error": 1 - svc.score(Xt, yt), "n_jobs": 1})
    return rows, models[0], svc


def predict(data_dir: Path, clf: SparseSVC, svc: SVC, repeats: int) -> list[dict[str, Any]]:
    _, _, Xt, yt = load_usps(data_dir)
    rows = []
    for method, model, n_kernel in (
        ("SLMC", clf, len(clf.expansion_vectors_)),
        ("SVC", svc, int(svc.n_support_.sum())),
    ):
        times = [harness.timed(lambda m=model: m.predict(Xt))[1] for _ in range(repeats)]
        rows.append({"part": "predict", "method": method, "N": len(Xt), "Nz": n_kernel,
                     "seconds": float(np.median(times)), "error": 1 - model.score(Xt, yt)})
    return rows


def load_compiled_solver() -> float:
    """Run the fast path once on 4 points, so its one-off loads are done; the MB they took."""
    before = harness.status_kb("VmRSS")
    X, y = np.array([[0.0, 0.0], [0.1, 0.2], [1.0, 1.0], [0.9, 1.1]]), np.array([-1, -1, 1, 1])
    marginal = make_formulation("svm", C=1.0).marginal(X, y, RBF(1.0), 2, "auto", 1e-8)
    for Z in (X[[0, 2]], X[[1, 3]]):  # the second evaluation is warm-started: the active set
        marginal.evaluate(Z)
    return (harness.status_kb("VmRSS") - before) / 1024


def _scaling_point(data_dir: str, path: str, n: int, nz: int, n_iter: int,
                   seed: int) -> dict[str, Any]:
    """One (path, N, Nz) measurement in a fresh process, so its peak memory is its own.

    The fast path's compiled code is loaded first (a one-off per process, in
    ``runtime_mb``), so the time and memory columns show how the solve scales.
    """
    X, y, _, _ = load_usps(Path(data_dir))
    rng = np.random.default_rng(seed)
    idx = rng.choice(len(X), n, replace=False)
    X, y = X[idx], np.where(y[idx] == 0, 1, -1)
    kernel = RBF(USPS_GAMMA)
    runtime = load_compiled_solver() if path == "fast" else ""
    base = harness.reset_peak_rss()
    with threadpool_limits(1):
        form = make_formulation("svm", C=USPS_C)
        marginal = (form.marginal(X, y, kernel, nz, "auto", 1e-8) if path == "fast"
                    else CvxpyMarginal(form, X, y, kernel, nz, solver="clarabel", tol=1e-8))
        Z = initial_expansion_vectors(X, nz, "random", seed)
        _, first = harness.timed(lambda: marginal.evaluate(Z))
        evals, inside = [], []
        for k in range(5):
            Zk = Z + 0.01 * (k + 1) * rng.normal(size=Z.shape)
            evals.append(harness.timed(lambda Zk=Zk: marginal.evaluate(Zk))[1])
            if path == "generic":
                inside.append(marginal.problem.solver_stats.solve_time)
        res, fit = harness.timed(lambda: minimize_marginal(marginal, Z, max_iter=n_iter))
    peak = harness.peak_rss() - base
    per_eval = float(np.median(evals))
    return {"part": "scaling", "method": path, "N": n, "Nz": nz, "first_eval_s": first,
            "eval_s": per_eval, "solver_s": float(np.median(inside)) if inside else "",
            "overhead": per_eval / float(np.median(inside)) if inside else "",
            "seconds": fit, "n_evaluations": res.n_evaluations, "peak_mb": peak / 1024,
            "runtime_mb": runtime}


def scaling(data_dir: Path, ns: list[int], nzs: list[int], n_fixed: int, nz_fixed: int,
            n_iter: int, timeout: float, seed: int) -> list[dict[str, Any]]:
    sweeps = [[(n, nz_fixed) for n in sorted(ns)],
              [(n_fixed, nz) for nz in sorted(nzs) if nz != nz_fixed]]
    rows: list[dict[str, Any]] = []
    for path in ("fast", "generic"):
        for sweep in sweeps:
            over = False  # once a point times out, the larger ones of its sweep are skipped
            for n, nz in sweep:
                if over:
                    rows.append({"part": "scaling", "method": path, "N": n, "Nz": nz,
                                 "note": f"skipped (a smaller point took over {timeout:.0f} s)"})
                    continue
                with ProcessPoolExecutor(1, mp_context=get_context("spawn")) as pool:
                    job = pool.submit(_scaling_point, str(data_dir), path, n, nz, n_iter, seed)
                    try:
                        rows.append(job.result(timeout=timeout))
                    except TimeoutError:
                        for proc in pool._processes.values():  # stop the stuck solve
                            proc.kill()
                        rows.append({"part": "scaling", "method": path, "N": n, "Nz": nz,
                                     "note": f"over {timeout:.0f} s"})
                        over = True
                print(f"[performance] scaling {rows[-1]}", flush=True)
    return rows


def plot(rows: list[dict[str, Any]], path: Path, n_fixed: int, nz_fixed: int) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(10, 8))
    for method, style in (("fast", "o-"), ("generic", "s--")):
        pts = [r for r in rows if r["part"] == "scaling" and r["method"] == method
               and "seconds" in r]
        by_n = sorted((r["N"], r) for r in pts if r["Nz"] == nz_fixed)
        by_nz = sorted((r["Nz"], r) for r in pts if r["N"] == n_fixed)
        for col, series, label in ((0, by_n, "N"), (1, by_nz, "Nz")):
            xs = [x for x, _ in series]
            axes[0, col].loglog(xs, [r["seconds"] for _, r in series], style, label=method)
            axes[1, col].semilogx(xs, [r["peak_mb"] for _, r in series], style, label=method)
            axes[0, col].set_xlabel(label)
            axes[1, col].set_xlabel(label)
    axes[0, 0].set_title(f"fit time vs N (Nz = {nz_fixed})")
    axes[0, 1].set_title(f"fit time vs Nz (N = {n_fixed})")
    axes[1, 0].set_title("peak memory vs N")
    axes[1, 1].set_title("peak memory vs Nz")
    for ax in axes.ravel():
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
    axes[0, 0].set_ylabel("seconds")
    axes[1, 0].set_ylabel("MB above the loaded data")
    fig.tight_layout()
    harness.write_figure(fig, path, dpi=110)


def _median(rows: list[dict[str, Any]], method: str, key: str = "seconds") -> float:
    return float(np.median([r[key] for r in rows if r["method"] == method]))


def report(rows: list[dict[str, Any]], args: argparse.Namespace, wall: float) -> str:
    lines: list[str] = []
    ban = [r for r in rows if r["part"] == "banana"]
    if ban:
        fast, gen = _median(ban, "SLMC fast path"), _median(ban, "SLMC generic path")
        lines += [
            "## Banana split 1, Nz = 10 % of NSV", "",
            f"C = γ = 10^0.5 (cross-validated, docs/results/banana.md); median of "
            f"{args.repeats} seeds.", "",
            "| method | Nz | fit s (median) | test error (mean) | L-BFGS iterations (median) |",
            "|---|---|---|---|---|",
        ]
        for method in ("SLMC fast path", "SLMC generic path", "SVC"):
            sel = [r for r in ban if r["method"] == method]
            iters = np.median([r["n_iter"] for r in sel]) if "n_iter" in sel[0] else "—"
            lines.append(f"| {method} | {sel[0]['Nz']} | {_median(ban, method):.3f} | "
                         f"{100 * np.mean([r['error'] for r in sel]):.2f} % | {iters} |")
        verdict = "met" if fast <= 0.3 else f"missed by {fast - 0.3:.2f} s"
        lines += ["", f"Fast path {gen / fast:.1f}× faster than the generic path and "
                  f"{PAPER['banana_fit_s'] / fast:.1f}× faster than the paper's C++ "
                  f"({PAPER['banana_fit_s']} s). Target ≤ 0.3 s: {verdict}.", ""]
        once = [r["seconds"] for r in ban if r["method"].startswith("SLMC fast path, 1 iter")]
        if once:
            lines += [f"Once per process, the fast path pays one-off costs (its C extension, "
                      f"compiled at install, and numpy's and scipy's first calls): a 1-iteration "
                      f"fit took {once[0]:.2f} s the first time in the process and "
                      f"{once[1]:.3f} s the second; these are outside the medians above.", ""]
    us = [r for r in rows if r["part"] == "usps"]
    if us:
        sl = [r for r in us if r["method"].startswith("SLMC")]
        lines += [
            "## USPS, 10 one-vs-rest SLMCs (γ = 1/128, C = 10, Nz = 10 % of each NSV)", "",
            f"L-BFGS: at most {args.usps_max_iter} iterations per binary problem. Initial XVs: "
            "`balanced` = random distinct training points, half from the digit and half from "
            "the rest (what SparseSVC's default, init=\"auto\", does with more than two "
            "classes); `random` = the same regardless of class (the "
            "paper's Table 1); `kmeans` = k-means centres. ΣW = the 10 problems' final W(Z).",
            "", "| method | init | seed | kernel expansions | fit s | test error | ΣW | L-BFGS "
            "iterations (most of the 10) |", "|---|---|---|---|---|---|---|---|",
        ]
        for r in us:
            init, seed, iters, w = ((r["init"], r["repeat"], r["n_iter"], f"{r['W_sum']:.0f}")
                                    if "n_iter" in r else ("—",) * 4)
            lines.append(f"| {r['method']} | {init} | {seed} | {r['Nz']} | {r['seconds']:.1f} | "
                         f"{100 * r['error']:.2f} % | {w} | {iters} |")
        lines.append("")
        for i, init in enumerate(args.usps_init):
            runs = [r for r in sl if r["init"] == init]
            slowest = max(r["seconds"] for r in runs)
            errors = 100 * np.array([r["error"] for r in runs])
            verdict = (f" Target ≤ 5 min: {'met' if slowest <= 300 else 'missed'}; ≤ 4.8 %: "
                       f"{'met' if errors.mean() <= 4.8 else 'missed'}." if i == 0 else "")
            lines.append(
                f"SLMC, init={init}: at most {slowest / 60:.1f} min on {runs[0]['n_jobs']} jobs "
                f"(the 10 full SVMs that set Nz included; Σ NSV = {runs[0]['nsv_sum']}), paper "
                f"6.9 h; error {errors.mean():.2f} ± {errors.std():.2f} % over {len(runs)} seeds "
                f"(paper 4.7 %, one run).{verdict}")
        lines.append("")
    pr = [r for r in rows if r["part"] == "predict"]
    if pr:
        s, f = (next(r for r in pr if r["method"] == m) for m in ("SLMC", "SVC"))
        lines += [
            "## Prediction on the USPS test set (2007 points)", "",
            "| method | kernel evaluations per point | predict s (median) | test error |",
            "|---|---|---|---|",
            *(f"| {r['method']} | {r['Nz']} | {r['seconds']:.4f} | {100 * r['error']:.2f} % |"
              for r in (s, f)),
            "", f"SLMC predicts {f['seconds'] / s['seconds']:.1f}× faster with "
            f"{100 * (s['error'] - f['error']):+.2f} points of error (target ≥ 10× within 0.5 "
            "points).", "",
        ]
    sc = [r for r in rows if r["part"] == "scaling"]
    if sc:
        lines += [
            "## Scaling (USPS digit 0 vs rest, one process per point)", "",
            f"Fit = {args.scaling_iter} L-BFGS iterations; eval = median W(Z)+∇W time; solver = "
            "time inside Clarabel (generic path), overhead = eval / solver; peak memory of the "
            "point's own process above what it held once the data were loaded (Linux VmHWM after "
            "a reset). The fast path's compiled code is loaded before that, once per process: "
            "runtime MB is what loading it took.", "",
            "![scaling](performance_scaling.png)", "",
            "| path | N | Nz | first eval s | eval s | solver s | overhead | fit s | "
            "evaluations | peak MB | runtime MB |",
            "|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for r in sc:
            if "seconds" not in r:
                lines.append(f"| {r['method']} | {r['N']} | {r['Nz']} | {r['note']} "
                             "| | | | | | | |")
                continue
            solver = f"{r['solver_s']:.4f}" if r["solver_s"] != "" else "—"
            over = f"{r['overhead']:.2f}×" if r["overhead"] != "" else "—"
            runtime = f"{r['runtime_mb']:.0f}" if r["runtime_mb"] != "" else "—"
            lines.append(f"| {r['method']} | {r['N']} | {r['Nz']} | {r['first_eval_s']:.3f} | "
                         f"{r['eval_s']:.4f} | {solver} | {over} | {r['seconds']:.2f} | "
                         f"{r['n_evaluations']} | {r['peak_mb']:.0f} | {runtime} |")
        lines.append("")
    shows = ("How fast SLMC fits and predicts: the SVM fast path beside the generic path, "
             "scikit-learn's SVC and the paper's timings on Banana split 1 and on USPS (10 "
             "one-vs-rest problems, test error against the paper's 4.7 %), prediction on the "
             "USPS test set, and how one W(Z) evaluation's time and memory grow with N and Nz.")
    return harness.result_page("Performance", shows, harness.command(__file__), lines,
                               [harness.provenance(wall, "BLAS limited to 1 thread per process")])


def main(argv: list[str] | None = None) -> int:
    parser = harness.benchmark_parser(__doc__,
                                      "folder in the ../shared/data format (banana/, usps/)")
    parser.add_argument("--parts", nargs="+", choices=PARTS, default=list(PARTS))
    parser.add_argument("--repeats", type=int, default=5, help="seeds for the Banana fits")
    parser.add_argument("--n-jobs", type=int, default=2, help="jobs for USPS one-vs-rest")
    parser.add_argument("--usps-repeats", type=int, default=5, help="seeds for the USPS fits")
    parser.add_argument("--usps-init", nargs="+", default=["balanced", "random"],
                        choices=["balanced", "random", "kmeans"],
                        help="initial-XV methods of the USPS fits; the first is judged")
    parser.add_argument("--usps-max-iter", type=int, default=SparseSVC().max_iter,
                        help="L-BFGS iterations allowed to each binary USPS problem")
    parser.add_argument("--scaling-n", type=int, nargs="+",
                        default=[400, 1000, 2000, 4000, 7291])
    parser.add_argument("--scaling-nz", type=int, nargs="+", default=[5, 10, 20, 50, 100, 200])
    parser.add_argument("--scaling-iter", type=int, default=20,
                        help="L-BFGS iterations of each scaling fit")
    parser.add_argument("--timeout", type=float, default=300.0,
                        help="seconds allowed to one scaling point")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    harness.check_data_dir(parser, args.data_dir, ["banana", "usps"])
    args.out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    rows: list[dict[str, Any]] = []
    with threadpool_limits(1):
        if "banana" in args.parts:
            rows += banana(args.data_dir, args.repeats)
            print(f"[performance] banana done {time.perf_counter() - start:.0f}s", flush=True)
        if "usps" in args.parts or "predict" in args.parts:
            seeds = list(range(args.seed, args.seed + args.usps_repeats))
            usps_rows, clf, svc = usps(args.data_dir, args.n_jobs, seeds, args.usps_max_iter,
                                          args.usps_init)
            if "usps" in args.parts:
                rows += usps_rows
            if "predict" in args.parts:
                rows += predict(args.data_dir, clf, svc, args.repeats)
            print(f"[performance] usps done {time.perf_counter() - start:.0f}s", flush=True)
    n_fixed, nz_fixed = 2000, 20
    if "scaling" in args.parts:
        rows += scaling(args.data_dir, args.scaling_n, args.scaling_nz, n_fixed, nz_fixed,
                        args.scaling_iter, args.timeout, args.seed)
    wall = time.perf_counter() - start
    if "scaling" in args.parts:
        plot(rows, args.out / "performance_scaling.png", n_fixed, nz_fixed)
    harness.write_results(args.out, "performance", report(rows, args, wall), rows,
                          ("part", "method"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
