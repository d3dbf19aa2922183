"""The generic path at scale: memory and time of one W(Z) evaluation for declared formulations.

Two formulations a plugin author declares (examples/declared_formulations.py), the
ε-SVR (C = 1, ε = 0.1; make_friedman1, 10 features, X and y standardised) and the Huber
SVM (C = 1, h = 0.5; make_classification, 10 features, 2 clusters per class), RBF with
γ = 1 / (d · Var X), on `sparsify.ConicMarginal` (the default generic path: the
formulation compiled once, the whitened link written into the conic data, Clarabel
called directly). Each (formulation, N, Nz) point runs in a fresh process, so its peak
memory is its own (Linux VmHWM after a reset, above what the data took):

- the memory estimate `ConicMarginal` checks before compiling, and the measured peak;
- the first evaluation (compiling included), then the median of 2 more at moved XVs,
  beside Clarabel's own solve time of those evaluations (``last_solve_seconds``) and
  their ratio (the issue's target: ≤ 2);
- the DPP path (`sparsify.CvxpyMarginal`, cvxpy's parameterised problem, the reference)
  where its estimate fits (N ≤ 2000 with the defaults), else its estimate.

Sweeps: N = 500 … 50 000 at Nz = 50, Nz = 10 … 200 at N = 8000, and N = 50 000 at
Nz = 100. Then an ε-SVR fit at N = 8000, Nz = 50, 50 L-BFGS iterations
(`minimize_marginal`), its test RMSE beside scikit-learn's full SVR with the same (C, ε,
γ); and the SVM's fast-path fallback, the generic path of the built-in ``svm``
formulation, at N = 8000, Nz = 50 on make_moons (2-D), where cvxpy's path asked for
24 GiB, with a `SparseSVC(n_expansion=50)` fit on the same data (its fallback count).
Usage::

    OPENBLAS_NUM_THREADS=1 python benchmarks/generic_path.py --out docs/results

writes ``generic_path.md`` and ``generic_path.csv`` under ``--out`` at the end of the run.
``--quick`` runs tiny sizes (the smoke test).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import platform
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import cvxpy as cp
import numpy as np
import sklearn
from sklearn.datasets import make_classification, make_friedman1, make_moons
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).resolve().parent))
from performance import _peak_rss, _reset_peak_rss, _write_atomic, cpu_name, write_csv

from sparsify import RBF, ConicMarginal, CvxpyMarginal, SparseSVC
from sparsify.core.conic import estimate_memory
from sparsify.core.formulation import make_formulation
from sparsify.core.memory import available_memory
from sparsify.core.optimize import initial_expansion_vectors, minimize_marginal

REPO = Path(__file__).resolve().parents[1]
FORMULATIONS = ("svr", "huber_svm")


def _declared() -> Any:
    """examples/declared_formulations.py, imported by path (it is not a package)."""
    spec = importlib.util.spec_from_file_location(
        "declared_formulations", REPO / "examples" / "declared_formulations.py")
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def make_data(name: str, n: int, seed: int) -> tuple[np.ndarray, np.ndarray, Any]:
    """Standardised data for ``name`` and its formulation."""
    declared = _declared()
    if name == "svr":
        X, y = make_friedman1(n, n_features=10, noise=0.5, random_state=seed)
        y = (y - y.mean()) / y.std()
        form = declared.EpsilonSVR(C=1.0, epsilon=0.1)
    else:
        X, y = make_classification(n, n_features=10, n_informative=6, n_clusters_per_class=2,
                                   flip_y=0.02, random_state=seed)
        y = np.where(y == 1, 1, -1)
        form = declared.HuberSVM(C=1.0, h=0.5)
    X = (X - X.mean(0)) / X.std(0)
    return X, y, form


def dpp_bytes(n: int, nz: int) -> int:
    """What cvxpy's DPP path needs for its parameter tensor (its own estimate's formula)."""
    return 8 * n * (n * nz + nz * nz + 1)


def _point(name: str, n: int, nz: int, path: str, seed: int) -> dict[str, Any]:
    """One (formulation, N, Nz, path) measurement, meant for a fresh process."""
    X, y, form = make_data(name, n, seed)
    kernel = RBF(1.0 / X.shape[1])  # standardised X: Var X = 1
    rng = np.random.default_rng(seed)
    base = _reset_peak_rss()
    with threadpool_limits(1):
        cls = ConicMarginal if path == "conic" else CvxpyMarginal
        start = time.perf_counter()
        marginal = cls(form, X, y, kernel, nz, solver="clarabel", tol=1e-8)
        Z = initial_expansion_vectors(X, nz, "random", seed)
        marginal.evaluate(Z)
        first = time.perf_counter() - start
        evals, solves = [], []
        for k in range(2):
            Zk = Z + 0.05 * (k + 1) * rng.normal(size=Z.shape)
            t = time.perf_counter()
            marginal.evaluate(Zk)
            evals.append(time.perf_counter() - t)
            solves.append(marginal.last_solve_seconds if path == "conic"
                          else marginal.problem.solver_stats.solve_time)
    peak = (_peak_rss() - base) / 1024
    evaluation, solve = float(np.median(evals)), float(np.median(solves))
    return {"part": "scaling", "formulation": name, "path": path, "N": n, "Nz": nz,
            "estimate_mb": (estimate_memory(n, nz) if path == "conic" else dpp_bytes(n, nz))
            / 2**20, "first_eval_s": first, "eval_s": evaluation, "solve_s": solve,
            "ratio": evaluation / solve, "peak_mb": peak}


def _in_process(timeout: float, fn: Any, *args: Any) -> dict[str, Any] | str:
    """``fn(*args)`` in a fresh spawned process, or why it gave no result."""
    with ProcessPoolExecutor(1, mp_context=get_context("spawn")) as pool:
        job = pool.submit(fn, *args)
        try:
            return job.result(timeout=timeout)
        except FutureTimeout:
            for proc in pool._processes.values():  # stop the stuck solve
                proc.kill()
            return f"over {timeout:.0f} s"
        except Exception as exc:  # a failure is a finding: recorded, not hidden
            return f"{type(exc).__name__}: {exc}"


def scaling(ns: list[int], nzs: list[int], n_fixed: int, nz_fixed: int,
            extra: list[tuple[int, int]], dpp_limit_mb: float, timeout: float,
            seed: int) -> list[dict[str, Any]]:
    points = sorted({*((n, nz_fixed) for n in ns), *((n_fixed, nz) for nz in nzs), *extra})
    rows: list[dict[str, Any]] = []
    for name in FORMULATIONS:
        for n, nz in points:
            for path in ("conic", "dpp"):
                if path == "dpp" and dpp_bytes(n, nz) / 2**20 > dpp_limit_mb:
                    rows.append({"part": "scaling", "formulation": name, "path": path, "N": n,
                                 "Nz": nz, "estimate_mb": dpp_bytes(n, nz) / 2**20,
                                 "note": f"not run: estimate above {dpp_limit_mb:.0f} MB"})
                    continue
                result = _in_process(timeout, _point, name, n, nz, path, seed)
                rows.append(result if isinstance(result, dict) else
                            {"part": "scaling", "formulation": name, "path": path, "N": n,
                             "Nz": nz, "note": result})
                print(f"[generic_path] {rows[-1]}", flush=True)
    return rows


def _svr_fit(n: int, nz: int, max_iter: int, seed: int) -> dict[str, Any]:
    from sklearn.svm import SVR

    X, y, form = make_data("svr", 2 * n, seed)
    X_test, y_test, X, y = X[n:], y[n:], X[:n], y[:n]
    kernel = RBF(1.0 / X.shape[1])
    base = _reset_peak_rss()
    with threadpool_limits(1):
        start = time.perf_counter()
        marginal = ConicMarginal(form, X, y, kernel, nz, solver="clarabel", tol=1e-8)
        res = minimize_marginal(marginal, initial_expansion_vectors(X, nz, "random", seed),
                                max_iter=max_iter)
        seconds = time.perf_counter() - start
        peak = (_peak_rss() - base) / 1024
        pred = kernel(X_test, res.Z) @ res.evaluation.coef + res.evaluation.intercept
        start = time.perf_counter()
        svr = SVR(C=1.0, epsilon=0.1, gamma=1.0 / X.shape[1]).fit(X, y)
        svr_seconds = time.perf_counter() - start
    return {"part": "fit", "formulation": "svr", "path": "conic", "N": n, "Nz": nz,
            "seconds": seconds, "n_iter": res.n_iter, "n_evaluations": res.n_evaluations,
            "W": res.evaluation.value, "peak_mb": peak,
            "rmse": float(np.sqrt(np.mean((pred - y_test) ** 2))),
            "svr_rmse": float(np.sqrt(np.mean((svr.predict(X_test) - y_test) ** 2))),
            "svr_seconds": svr_seconds, "svr_n_support": len(svr.support_)}


def _svm_fallback(n: int, nz: int, seed: int) -> dict[str, Any]:
    X, y = make_moons(2 * n, noise=0.3, random_state=seed)
    X_test, y_test, X, y = X[n:], y[n:], X[:n], y[:n]
    signs = np.where(y == 1, 1, -1)
    kernel = RBF(1.0 / (X.shape[1] * X.var()))
    base = _reset_peak_rss()
    with threadpool_limits(1):
        start = time.perf_counter()
        marginal = ConicMarginal(make_formulation("svm", C=1.0), X, signs, kernel, nz,
                                 tol=1e-8)
        Z = initial_expansion_vectors(X, nz, "random", seed)
        marginal.evaluate(Z)
        first = time.perf_counter() - start
        start = time.perf_counter()
        marginal.evaluate(Z + 0.01)
        evaluation = time.perf_counter() - start
        peak = (_peak_rss() - base) / 1024
        start = time.perf_counter()
        clf = SparseSVC(n_expansion=nz, random_state=seed).fit(X, y)
        fit = time.perf_counter() - start
    return {"part": "fallback", "formulation": "svm", "path": "conic", "N": n, "Nz": nz,
            "first_eval_s": first, "eval_s": evaluation, "solve_s": marginal.last_solve_seconds,
            "peak_mb": peak, "estimate_mb": estimate_memory(n, nz) / 2**20,
            "seconds": fit, "error": 1 - clf.score(X_test, y_test), "n_iter": int(clf.n_iter_[0]),
            "dpp_estimate_mb": dpp_bytes(n, nz) / 2**20}


def _fmt(value: Any, digits: int = 3) -> str:
    if value == "" or value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.{digits}g}"
    return str(value)


def report(rows: list[dict[str, Any]], wall: float, load: tuple[float, float]) -> str:
    cpu = cpu_name()
    lines = ["# The generic path at scale", "",
             "Produced by `benchmarks/generic_path.py` (written to a scratch folder, then copied "
             "here):", "", "    OPENBLAS_NUM_THREADS=1 python " + " ".join(sys.argv), "",
             f"Machine: {os.cpu_count()} CPUs ({cpu}), {available_memory() / 2**30:.0f} GiB "
             f"available, Python {platform.python_version()}, numpy {np.__version__}, cvxpy "
             f"{cp.__version__}, scikit-learn {sklearn.__version__}; BLAS limited to 1 thread; "
             f"{time.strftime('%Y-%m-%d')}; load average {load[0]:.1f} at the start and "
             f"{load[1]:.1f} at the end (other jobs shared the machine). Total "
             f"{wall / 60:.1f} min.", "",
             "Formulations declared as a plugin author would (examples/declared_formulations.py):"
             " ε-SVR (C = 1, ε = 0.1) on make_friedman1 and the Huber SVM (C = 1, h = 0.5) on "
             "make_classification, 10 standardised features, RBF γ = 1/d. `ConicMarginal` with "
             "Clarabel at tol 1e-8. Each point in a fresh process; peak = Linux VmHWM above "
             "what the data took. eval = median of 2 evaluations at moved XVs after the first "
             "(first = compile + first solve); solve = Clarabel's own time in those "
             "evaluations; ratio = eval / solve.", ""]
    scal = [r for r in rows if r["part"] == "scaling"]
    if scal:
        lines += ["## One evaluation", "",
                  "| formulation | path | N | Nz | estimate MB | peak MB | first eval s | "
                  "eval s | solve s | ratio | note |", "|---" * 11 + "|"]
        for r in scal:
            lines.append(f"| {r['formulation']} | {r['path']} | {r['N']} | {r['Nz']} | "
                         f"{_fmt(r.get('estimate_mb'))} | {_fmt(r.get('peak_mb'))} | "
                         f"{_fmt(r.get('first_eval_s'))} | {_fmt(r.get('eval_s'))} | "
                         f"{_fmt(r.get('solve_s'))} | {_fmt(r.get('ratio'))} | "
                         f"{r.get('note', '')} |")
        conic = [r for r in scal if r["path"] == "conic" and "ratio" in r]
        if conic:
            worst = max(conic, key=lambda r: r["ratio"])
            lines += ["", f"Per-evaluation time over the backend's own solve: at most "
                      f"{worst['ratio']:.2f}× ({worst['formulation']}, N = {worst['N']}, "
                      f"Nz = {worst['Nz']}); target ≤ 2×: "
                      f"{'met' if worst['ratio'] <= 2 else 'not met'}."]
        for n, nz, target in ((8000, 50, 1024.0), (50000, 100, None)):
            hits = [r for r in conic if r["N"] == n and r["Nz"] == nz]
            for r in hits:
                met = "met" if target and r["peak_mb"] <= target else "not met"
                verdict = f"; target ≤ {target:.0f} MB: {met}" if target else " (it runs)"
                lines.append(f"{r['formulation']} at N = {n}, Nz = {nz}: peak {r['peak_mb']:.0f} "
                             f"MB, {r['eval_s']:.2f} s per evaluation{verdict}.")
        lines.append("")
    for r in (r for r in rows if r["part"] == "fit"):
        verdict = "met" if r["seconds"] <= 60 else "not met"
        lines += ["## A declared ε-SVR fit", "",
                  f"N = {r['N']}, Nz = {r['Nz']}, at most 50 L-BFGS iterations: "
                  f"{r['seconds']:.1f} s ({r['n_iter']} iterations, {r['n_evaluations']} "
                  f"evaluations, W = {r['W']:.6g}, peak {r['peak_mb']:.0f} MB); target ≤ 60 s: "
                  f"{verdict}. Test RMSE on {r['N']} held-out points (standardised y): "
                  f"{r['rmse']:.4f}, against {r['svr_rmse']:.4f} for scikit-learn's full SVR "
                  f"(same C, ε, γ; {r['svr_n_support']} support vectors, "
                  f"{r['svr_seconds']:.1f} s).", ""]
    for r in (r for r in rows if r["part"] == "fallback"):
        lines += ["## The SVM fast path's fallback", "",
                  f"The generic path of the built-in `svm` formulation (what the fast path falls "
                  f"back to) on make_moons, N = {r['N']}, Nz = {r['Nz']}: first evaluation "
                  f"{r['first_eval_s']:.2f} s, then {r['eval_s']:.2f} s (Clarabel "
                  f"{r['solve_s']:.2f} s), peak {r['peak_mb']:.0f} MB (estimate "
                  f"{r['estimate_mb']:.0f} MB); cvxpy's DPP path would need "
                  f"{r['dpp_estimate_mb'] / 1024:.1f} GiB (refused before it allocates where that "
                  f"exceeds the memory available). "
                  f"`SparseSVC(n_expansion={r['Nz']})` on the same data: {r['seconds']:.1f} s, "
                  f"{r['n_iter']} iterations, test error {100 * r['error']:.2f} %.", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("docs/results"))
    parser.add_argument("--quick", action="store_true", help="tiny sizes (the smoke test)")
    parser.add_argument("--timeout", type=float, default=600.0,
                        help="seconds allowed to one point")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    if args.quick:
        ns, nzs, n_fixed, nz_fixed, extra = [60], [3], 60, 3, []
        fit, fallback, dpp_limit = (100, 4, 3), (100, 4), 64.0
    else:
        ns, nzs, n_fixed, nz_fixed = [500, 2000, 8000, 20000, 50000], [10, 50, 100, 200], 8000, 50
        extra, fit, fallback, dpp_limit = [(50000, 100)], (8000, 50, 50), (8000, 50), 4096.0
    load = os.getloadavg()[0]
    start = time.perf_counter()
    rows = scaling(ns, nzs, n_fixed, nz_fixed, extra, dpp_limit, args.timeout, args.seed)
    for part, fn, params in (("fit", _svr_fit, (*fit, args.seed)),
                             ("fallback", _svm_fallback, (*fallback, args.seed))):
        result = _in_process(args.timeout, fn, *params)
        rows.append(result if isinstance(result, dict) else
                    {"part": part, "formulation": "svr" if part == "fit" else "svm",
                     "N": params[0], "Nz": params[1], "note": result})
        print(f"[generic_path] {rows[-1]}", flush=True)
    wall = time.perf_counter() - start
    fields = sorted({k for r in rows for k in r},
                    key=lambda k: (k != "part", k != "formulation", k != "path", k))
    text = report([r for r in rows if "note" not in r or r["part"] == "scaling"], wall,
                  (load, os.getloadavg()[0]))
    failed = [r for r in rows if r["part"] != "scaling" and "note" in r]
    if failed:
        text += "\n## Parts that gave no result\n\n" + "\n".join(
            f"- {r['part']} (N = {r['N']}, Nz = {r['Nz']}): {r['note']}" for r in failed) + "\n"
    write_csv(args.out / "generic_path.csv", rows, fields)
    _write_atomic(args.out / "generic_path.md", text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
