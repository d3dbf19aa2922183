"""The generic path at the speed of its structure: declared formulations, the structured
backend beside Clarabel and beside the built-in solvers, in one run.

Five formulations a plugin author declares (examples/declared_formulations.py): the ε-SVR
(C = 1, ε = 0.1) and kernel ridge regression (λ = 1) on make_friedman1, the Huber SVM
(C = 1, h = 0.5), the LS-SVM (γ = 1), LapRLS (an 8-NN graph over all points, 10 % of them
labelled; γ_A = 1e-2, γ_I = 1) and the Crammer–Singer SVM (3 classes, C = 1) on
make_classification; 10 standardised features, RBF with γ = 1/d, solver accuracy 1e-8.
Each point runs in a fresh process, so its peak memory (Linux VmHWM above what the data
took) is its own, under a time limit (``--timeout``; Clarabel's own ``--clarabel-timeout``).

Parts (``--parts``):

- ``evaluation``: N = 20 000, Nz = 50, the five formulations with the structured backend and
  with Clarabel: the first evaluation (compiling included) and the median of 2 more at moved
  XVs; W and ∇W of the two backends at the first XVs compared where both answered;
- ``agreement``: the same at N = 2000, where Clarabel answers every formulation in time;
- ``handwritten``: the declared ε-SVR against SparseSVR's own solver and the declared kernel
  ridge against SparseKernelRidge's closed form, same data, N = 20 000, Nz = 50;
- ``large``: the declared ε-SVR at N = 10⁵, Nz = 100 (one evaluation, both backends) and a
  whole fit (``minimize_marginal``, max_iter = 200) with the structured backend;
- ``scaling``: the declared Huber SVM at Nz = 50, N = 10⁴ … 10⁶, both backends (Clarabel
  within its time limit), and the slope of log-time against log-N;
- ``cliff``: the declared LapRLS and ε-SVR at N = 5000 … 50 000 in steps of 10 %, the
  structured backend;
- ``warm``: five evaluations along L-BFGS-sized moves of the XVs from a cold start and from
  the previous solution (``settings={"warm_start": True}``), ε-SVR and Huber SVM,
  N = 20 000, Nz = 50.

Usage::

    OPENBLAS_NUM_THREADS=1 python benchmarks/generic_path.py --out docs/results

writes ``generic_path.md`` and ``generic_path.csv`` under ``--out`` at the end of the run;
``--quick`` runs tiny sizes (the smoke test).
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.datasets import make_classification, make_friedman1
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).resolve().parent))
import harness
from harness import fmt, row, table

from sparsify import RBF, ConicMarginal
from sparsify.core.backends import StructuredBackend
from sparsify.core.formulation import make_formulation
from sparsify.core.optimize import initial_expansion_vectors, minimize_marginal

REPO = Path(__file__).resolve().parents[1]
FIVE = ("svr", "huber_svm", "ls_svm", "laprls", "crammer_singer")
PARTS = ("evaluation", "agreement", "handwritten", "large", "scaling", "cliff", "warm")
TOL = 1e-8


def _declared() -> Any:
    """examples/declared_formulations.py, imported by path (it is not a package)."""
    spec = importlib.util.spec_from_file_location(
        "declared_formulations", REPO / "examples" / "declared_formulations.py")
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def make_data(name: str, n: int, seed: int) -> tuple[np.ndarray, np.ndarray, Any]:
    """Standardised data for ``name`` and its declared formulation."""
    declared = _declared()
    rng = np.random.default_rng(seed)
    if name in ("svr", "kridge"):
        X, y = make_friedman1(n, n_features=10, noise=0.5, random_state=seed)
        y = (y - y.mean()) / y.std()
        form = (declared.EpsilonSVR(C=1.0, epsilon=0.1) if name == "svr"
                else declared.KernelRidgeRegression(lam=1.0))
    else:
        classes = 3 if name == "crammer_singer" else 2
        X, y = make_classification(n, n_features=10, n_informative=6, n_clusters_per_class=2,
                                   n_classes=classes, flip_y=0.02, random_state=seed)
        if name == "crammer_singer":
            form = declared.CrammerSinger(C=1.0)
        else:
            y = np.where(y == 1, 1.0, -1.0)
            form = {"huber_svm": declared.HuberSVM(C=1.0, h=0.5),
                    "ls_svm": declared.LSSVM(gamma_reg=1.0),
                    "laprls": declared.LapRLS(gamma_a=1e-2, gamma_i=1.0, n_neighbors=8)}[name]
            if name == "laprls":
                y[rng.permutation(n)[:n - n // 10]] = np.nan  # 10 % labelled
    X = (X - X.mean(0)) / X.std(0)
    return X, y, form


def _moves(Z: np.ndarray, count: int, seed: int) -> list[np.ndarray]:
    """``count`` XVs moved as L-BFGS moves them early on: steps of 5 % of the data's scale."""
    rng = np.random.default_rng(seed + 1)
    out, current = [], Z
    for _ in range(count):
        current = current + 0.05 * rng.normal(size=Z.shape)
        out.append(current)
    return out


def _evaluate(name: str, n: int, nz: int, solver: str, seed: int, moved: int = 2,
              warm: bool = False) -> dict[str, Any]:
    """One (formulation, N, Nz, backend) measurement, meant for a fresh process."""
    X, y, form = make_data(name, n, seed)
    kernel = RBF(1.0 / X.shape[1])  # standardised X: Var X = 1
    base = harness.reset_peak_rss()
    with threadpool_limits(1):
        start = time.perf_counter()
        marginal = ConicMarginal(form, X, y, kernel, nz, solver=solver, tol=TOL)
        if warm:
            marginal.backends = [StructuredBackend("structured", settings={"warm_start": True})]
        compile_s = time.perf_counter() - start
        Z = initial_expansion_vectors(X, nz, "random", seed)
        ev = marginal.evaluate(Z)
        first = time.perf_counter() - start
        times, solves = [], []
        for Zk in _moves(Z, moved, seed):
            t = time.perf_counter()
            marginal.evaluate(Zk)
            times.append(time.perf_counter() - t)
            solves.append(marginal.last_solve_seconds)
    return {"formulation": name, "backend": solver, "N": n, "Nz": nz, "compile_s": compile_s,
            "first_eval_s": first, "eval_s": float(np.median(times)) if times else np.nan,
            "eval_min_s": min(times) if times else np.nan, "evals_s": times,
            "solve_s": float(np.median(solves)) if solves else np.nan,
            "peak_mb": (harness.peak_rss() - base) / 1024, "W": ev.value, "grad": ev.grad,
            "answered": ev.solver}


def _handwritten(name: str, n: int, nz: int, seed: int) -> dict[str, Any]:
    """The declared formulation (structured) and the built-in one's own solver, same data."""
    X, y, form = make_data(name, n, seed)
    builtin = (make_formulation("svr", C=1.0, epsilon=0.1) if name == "svr"
               else make_formulation("kernel_ridge", alpha=1.0))
    kernel = RBF(1.0 / X.shape[1])
    Z = initial_expansion_vectors(X, nz, "random", seed)
    out: dict[str, Any] = {"formulation": name, "N": n, "Nz": nz}
    with threadpool_limits(1):
        for label, marginal in (
                ("declared", ConicMarginal(form, X, y, kernel, nz, solver="structured", tol=TOL)),
                ("builtin", builtin.marginal(X, y, kernel, nz, "auto", TOL))):
            ev = marginal.evaluate(Z)
            times = []
            for Zk in _moves(Z, 3, seed):
                t = time.perf_counter()
                marginal.evaluate(Zk)
                times.append(time.perf_counter() - t)
            out[f"{label}_eval_s"] = float(np.median(times))
            out[f"{label}_W"] = ev.value
            out[f"{label}_solver"] = ev.solver
    out["ratio"] = out["declared_eval_s"] / out["builtin_eval_s"]
    return out


def _fit(name: str, n: int, nz: int, max_iter: int, seed: int) -> dict[str, Any]:
    """A whole fit of the declared formulation with the structured backend."""
    X, y, form = make_data(name, n, seed)
    kernel = RBF(1.0 / X.shape[1])
    base = harness.reset_peak_rss()
    with threadpool_limits(1):
        start = time.perf_counter()
        marginal = ConicMarginal(form, X, y, kernel, nz, solver="structured", tol=TOL)
        res = minimize_marginal(marginal, initial_expansion_vectors(X, nz, "random", seed),
                                max_iter=max_iter)
        seconds = time.perf_counter() - start
    return {"formulation": name, "backend": "structured", "N": n, "Nz": nz,
            "fit_s": seconds, "n_iter": res.n_iter, "n_evaluations": res.n_evaluations,
            "W": res.evaluation.value, "W0": float(res.history[0]), "stop": res.stop,
            "peak_mb": (harness.peak_rss() - base) / 1024}


def _point(part: str, timeout: float, name: str, n: int, nz: int, solver: str, seed: int,
           **kwargs: Any) -> dict[str, Any]:
    result = harness.in_fresh_process(timeout, _evaluate, name, n, nz, solver, seed, **kwargs)
    row = result if isinstance(result, dict) else {
        "formulation": name, "backend": solver, "N": n, "Nz": nz, "note": result}
    row["part"] = part
    print(f"[generic_path] {part} {name} N={n} Nz={nz} {solver}: "
          f"{row.get('eval_s', row.get('note'))}", flush=True)
    return row


def _compare(rows: list[dict[str, Any]]) -> None:
    """W and ∇W of the structured backend against Clarabel's, where both answered."""
    answered = {(r["part"], r["formulation"], r["N"], r["backend"]): r
                for r in rows if "note" not in r and "W" in r}
    for r in rows:
        ref = answered.get((r["part"], r["formulation"], r["N"], "clarabel"))
        if r.get("backend") == "structured" and "note" not in r and ref is not None:
            r["dW"] = abs(r["W"] - ref["W"]) / max(1.0, abs(ref["W"]))
            r["dgrad"] = float(np.linalg.norm(r["grad"] - ref["grad"])
                               / max(np.linalg.norm(ref["grad"]), 1e-300))


def _slope(ns: list[int], ts: list[float]) -> float:
    return float(np.polyfit(np.log(ns), np.log(ts), 1)[0])


def run(args: argparse.Namespace) -> list[dict[str, Any]]:
    q = args.quick
    rows: list[dict[str, Any]] = []
    parts, seed = set(args.parts), args.seed
    clarabel_timeout = min(args.timeout, args.clarabel_timeout)
    if "evaluation" in parts or "agreement" in parts:
        for part, n in (("evaluation", 300 if q else 20_000), ("agreement", 120 if q else 2000)):
            if part not in parts:
                continue
            for name in FIVE:
                for solver in ("structured", "clarabel"):
                    rows.append(_point(part, args.timeout if solver == "structured"
                                       else clarabel_timeout, name, n, 5 if q else 50, solver,
                                       seed))
    if "handwritten" in parts:
        for name in ("svr", "kridge"):
            n, nz = (300, 5) if q else (20_000, 50)
            result = harness.in_fresh_process(args.timeout, _handwritten, name, n, nz, seed)
            entry = result if isinstance(result, dict) else {"formulation": name, "N": n, "Nz": nz,
                                                           "note": result}
            entry["part"] = "handwritten"
            rows.append(entry)
            print(f"[generic_path] handwritten {entry}", flush=True)
    if "large" in parts:
        n, nz = (500, 6) if q else (100_000, 100)
        for solver in ("structured", "clarabel"):
            rows.append(_point("large", args.timeout if solver == "structured"
                               else clarabel_timeout, "svr", n, nz, solver, seed))
        result = harness.in_fresh_process(args.fit_timeout, _fit, "svr", n, nz,
                                          5 if q else 200, seed)
        entry = result if isinstance(result, dict) else {"formulation": "svr", "N": n, "Nz": nz,
                                                       "note": result}
        entry["part"] = "fit"
        rows.append(entry)
        print(f"[generic_path] fit {entry}", flush=True)
    if "scaling" in parts:
        ns = [200, 400, 800] if q else [10_000, 30_000, 100_000, 300_000, 1_000_000]
        for n in ns:
            for solver in ("structured", "clarabel"):
                rows.append(_point("scaling", args.timeout if solver == "structured"
                                   else clarabel_timeout, "huber_svm", n, 5 if q else 50,
                                   solver, seed, moved=1 if n >= 300_000 else 2))
    if "cliff" in parts:
        lo, hi = (200, 300) if q else (5000, 50_000)
        ns = [round(lo * 1.1 ** k) for k in range(200) if lo * 1.1 ** k <= hi * 1.0001]
        for name in ("laprls", "svr"):
            for n in ns:
                rows.append(_point("cliff", args.timeout, name, n, 5 if q else 50, "structured",
                                   seed, moved=5))
    if "warm" in parts:
        for name in ("svr", "huber_svm"):
            for warm in (False, True):
                entry = _point("warm", args.timeout, name, 300 if q else 20_000, 5 if q else 50,
                             "structured", seed, moved=5, warm=warm)
                entry["warm"] = warm
                rows.append(entry)
    _compare(rows)
    return rows


def _row_text(r: dict[str, Any]) -> str:
    return row(r["formulation"], r["backend"], r["N"], r["Nz"], fmt(r.get("first_eval_s")),
               fmt(r.get("eval_s")), fmt(r.get("peak_mb")), fmt(r.get("dW"), 2),
               fmt(r.get("dgrad"), 2), r.get("note", ""))


EVAL_HEADER = table("formulation", "backend", "N", "Nz", "first eval s", "eval s", "peak MB",
                    "ΔW vs Clarabel", "Δ∇W vs Clarabel", "note")


def _verdict(finding: str, target: str, ok: bool) -> str:
    return f"{finding}; target {target}: {'met' if ok else 'not met'}."


def report(rows: list[dict[str, Any]], command: str, wall: float) -> str:
    def part(name: str) -> list[dict[str, Any]]:
        return [r for r in rows if r["part"] == name]

    lines: list[str] = []
    verdicts: list[str] = []
    evals = part("evaluation")
    if evals:
        lines += ["## One evaluation at N = 20 000, Nz = 50", "",
                  "first = compiling and the first solve; eval = median of 2 evaluations at "
                  "moved XVs; Δ = relative difference from Clarabel's W and ∇W at the first "
                  "XVs.", "", *EVAL_HEADER, *map(_row_text, evals), ""]
        verdicts += [_verdict(f"{r['formulation']} at N = {r['N']}: {r['eval_s']:.2f} s per "
                              "evaluation", "≤ 1 s", r["eval_s"] <= 1.0)
                     for r in evals if r["backend"] == "structured" and "note" not in r]
    agree = part("agreement")
    if agree:
        lines += ["## Agreement with Clarabel at N = 2000, Nz = 50", "", *EVAL_HEADER,
                  *map(_row_text, agree), ""]
        diffs = [max(r["dW"], r["dgrad"]) for r in agree + evals if "dW" in r]
        if diffs:
            verdicts.append(_verdict(f"W and ∇W against Clarabel's: at most {max(diffs):.1e} "
                                     f"(relative) over {len(diffs)} comparisons", "≤ 1e-6",
                                     max(diffs) <= 1e-6))
    hand = part("handwritten")
    if hand:
        lines += ["## Declared against hand-written", "",
                  *table("formulation", "N", "Nz", "declared (structured) s", "built-in s",
                         "built-in solver", "ratio", "W declared", "W built-in", "note")]
        lines += [row(r["formulation"], r["N"], r["Nz"], fmt(r.get("declared_eval_s")),
                      fmt(r.get("builtin_eval_s")), r.get("builtin_solver", "—"),
                      fmt(r.get("ratio")), fmt(r.get("declared_W"), 10),
                      fmt(r.get("builtin_W"), 10), r.get("note", "")) for r in hand]
        verdicts += [_verdict(f"declared {r['formulation']} at {r['ratio']:.2f}× the built-in "
                              "solver", "≤ 3×", r["ratio"] <= 3) for r in hand if "ratio" in r]
        lines.append("")
    large = part("large")
    if large:
        lines += ["## ε-SVR at N = 10⁵, Nz = 100", "", *EVAL_HEADER, *map(_row_text, large), ""]
        verdicts += [_verdict(f"ε-SVR at N = {r['N']}, Nz = {r['Nz']}: {r['eval_s']:.2f} s per "
                              f"evaluation, peak {r['peak_mb']:.0f} MB", "≤ 10 s and ≤ 2 GB",
                              r["eval_s"] <= 10 and r["peak_mb"] <= 2048)
                     for r in large if r["backend"] == "structured" and "note" not in r]
    for r in part("fit"):
        if "note" in r:
            lines += [f"A whole fit gave no result: {r['note']}.", ""]
            continue
        lines += [f"A whole fit (max_iter = 200, the structured backend): {r['fit_s']:.0f} s, "
                  f"{r['n_iter']} iterations, {r['n_evaluations']} evaluations, W from "
                  f"{r['W0']:.6g} to {r['W']:.6g} (stop: {r['stop']}), peak "
                  f"{r['peak_mb']:.0f} MB.", ""]
        verdicts.append(_verdict(f"whole ε-SVR fit at N = {r['N']}: {r['fit_s'] / 60:.1f} min",
                                 "≤ 30 min", r["fit_s"] <= 1800))
    scal = part("scaling")
    if scal:
        lines += ["## Huber SVM against N, Nz = 50", "",
                  "first = compiling and the first solve (`compile` is the first part); eval "
                  "= an evaluation at moved XVs (the median of 2 below N = 300 000, one above).",
                  "", *table("backend", "N", "compile s", "first eval s", "eval s", "peak MB",
                             "note")]
        lines += [row(r["backend"], r["N"], fmt(r.get("compile_s")), fmt(r.get("first_eval_s")),
                      fmt(r.get("eval_s")), fmt(r.get("peak_mb")), r.get("note", ""))
                  for r in scal]
        mine = [r for r in scal if r["backend"] == "structured" and "note" not in r]
        if len(mine) >= 2:
            slope = _slope([r["N"] for r in mine], [r["eval_s"] for r in mine])
            lines += ["", f"Slope of log(time per evaluation at moved XVs) against log N "
                      f"(structured): {slope:.2f}."]
            verdicts.append(_verdict(f"slope of the per-evaluation time against N: {slope:.2f}",
                                     "≤ 1.1", slope <= 1.1))
            top = max(mine, key=lambda r: r["N"])
            if top["N"] >= 1_000_000:
                verdicts.append(_verdict(
                    f"Huber SVM at N = {top['N']}, Nz = {top['Nz']}: one evaluation "
                    f"{top['first_eval_s']:.0f} s ({top['compile_s']:.0f} s of it compiling), "
                    f"peak {top['peak_mb']:.0f} MB", "≤ 120 s and ≤ 6 GB",
                    top["first_eval_s"] <= 120 and top["peak_mb"] <= 6144))
        lines.append("")
    cliff = part("cliff")
    if cliff:
        # the fastest of 5 evaluations: a shared machine's noise only ever adds time, and
        # LapRLS's one Newton step (tens of ms) is within that noise
        lines += ["## No cliff: time per evaluation against N (structured)", "",
                  "The fastest of 5 evaluations at moved XVs (the median beside it).", "",
                  *table("formulation", "N", "fastest eval s", "median eval s", "peak MB",
                         "note")]
        lines += [row(r["formulation"], r["N"], fmt(r.get("eval_min_s")), fmt(r.get("eval_s")),
                      fmt(r.get("peak_mb")), r.get("note", "")) for r in cliff]
        for name in sorted({r["formulation"] for r in cliff}):
            t = [r["eval_min_s"] for r in cliff if r["formulation"] == name and "note" not in r]
            if len(t) > 1:
                ratios = np.array(t[1:]) / np.array(t[:-1])
                verdicts.append(_verdict(
                    f"{name}: consecutive steps of 10 % in N change the time by "
                    f"×{ratios.min():.2f} to ×{ratios.max():.2f}",
                    "no drop below ×0.5 and no jump above ×2",
                    ratios.min() >= 0.5 and ratios.max() <= 2))
        lines.append("")
    warm = part("warm")
    if warm:
        lines += ["## Warm start across L-BFGS steps", "",
                  "Five evaluations along moves of the XVs (5 % of the data's scale each), each "
                  "from the interior point's own start or from the previous solution.", "",
                  *table("formulation", "warm", "eval s (median)", "evaluations s", "note")]
        lines += [row(r["formulation"], r.get("warm"), fmt(r.get("eval_s")),
                      " ".join(f"{v:.2f}" for v in r.get("evals_s", [])), r.get("note", ""))
                  for r in warm]
        lines.append("")
    shows = ("Declared formulations (examples/declared_formulations.py) on the generic path: "
             "the structured backend (`solver=\"structured\"`, the first of `solver=\"auto\"`'s "
             "chain) beside Clarabel on the same problems and, for the two that have one, "
             "beside the built-in exact solver: time per evaluation of W(Z) and ∇W(Z), peak "
             "memory, agreement of W and ∇W, scaling in N, a whole fit, and warm starts.")
    return harness.result_page("The generic path at the speed of its structure", shows,
                               "OPENBLAS_NUM_THREADS=1 " + command,
                               [*lines, "", "## Verdicts", "", *[f"- {v}" for v in verdicts]],
                               [harness.provenance(wall)])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("docs/results"))
    parser.add_argument("--quick", action="store_true", help="tiny sizes (the smoke test)")
    parser.add_argument("--parts", nargs="+", choices=PARTS, default=list(PARTS))
    parser.add_argument("--timeout", type=float, default=900.0,
                        help="seconds allowed to one point")
    parser.add_argument("--clarabel-timeout", type=float, default=600.0,
                        help="seconds allowed to one point with Clarabel")
    parser.add_argument("--fit-timeout", type=float, default=3600.0,
                        help="seconds allowed to the whole fit")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    rows = run(args)
    text = report(rows, harness.command(__file__, argv), time.perf_counter() - start)
    for r in rows:
        r.pop("grad", None)
        if "evals_s" in r:
            r["evals_s"] = " ".join(f"{v:.4g}" for v in r["evals_s"])
    harness.write_results(args.out, "generic_path", text, rows, ("part", "formulation", "backend"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
