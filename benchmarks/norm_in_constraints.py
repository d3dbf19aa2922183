"""‖w‖² inside constraints: the literal SVDD beside its shifted form, per evaluation of W(Z).

SVDD written as its paper states it, k(x_i, x_i) − 2 f_i + ‖w‖² ≤ R² + ξ_i, puts ‖w‖² in
every constraint; the shifted form (ρ = R² − ‖w‖²) has it in the objective. The core moves
it there itself where a free variable (R²) shares the rows (`sparsify.core.norm_shift`), so
both forms are solved by the default backend, the structured interior point. Side by side,
both forms' marginals are built in one fresh process and ``--pairs`` evaluations of W(Z) and
∇W(Z) alternate between them (at XVs moved a little each time, as L-BFGS moves them), so
that both see the same load. Per evaluation, each form alone in a fresh process: its build
time, ``--evals`` evaluations and its peak memory. Two more rows show what the literal form
costs without the core's change of variable (its second-order cone on the structured
backend, and on Clarabel with the link written out).

Usage::

    OPENBLAS_NUM_THREADS=1 python benchmarks/norm_in_constraints.py --out docs/results

writes ``norm_in_constraints.md`` and ``.csv``; ``--quick`` runs tiny sizes.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import cvxpy as cp
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import harness
from harness import fmt, row, table

from sparsify import Declaration, Formulation


class LiteralSVDD(Formulation):
    """ν-SVDD as its paper writes it: ‖φ(x_i) − a‖² ≤ R² + ξ_i, scaled by νN."""

    name = "bench_svdd_literal"

    def __init__(self, nu: float = 0.2) -> None:
        self.nu = nu

    def declare(self, out: Any) -> Declaration:
        r2, xi = cp.Variable(), cp.Variable(out.n_samples)
        inside = [out.kernel_diagonal - 2 * out.f + out.norm_w2 <= r2 + xi, xi >= 0]
        return Declaration(cp.Minimize(self.nu * out.n_samples * r2 + cp.sum(xi)), inside,
                           intercept=(r2 - out.norm_w2) / 2, diagonal_coef=-0.5)


class ShiftedSVDD(LiteralSVDD):
    """The same problem with ‖w‖² moved into the objective by hand: ρ = R² − ‖w‖²."""

    name = "bench_svdd_shifted"

    def declare(self, out: Any) -> Declaration:
        rho = cp.Variable()
        outside = cp.sum(cp.pos(out.kernel_diagonal - 2 * out.f - rho))
        return Declaration(cp.Minimize(self.nu * out.n_samples * (out.norm_w2 + rho) + outside),
                           [], intercept=rho / 2, diagonal_coef=-0.5)


FORMS = {"literal": LiteralSVDD, "shifted": ShiftedSVDD}


def _kernel(name: str, d: int) -> Any:
    from sparsify import RBF, Polynomial

    return RBF(1.0 / d) if name == "rbf" else Polynomial(gamma=1.0 / d, degree=2, coef0=1.0)


def measure(form: str, kernel_name: str, n: int, nz: int, solver: str, shift: bool,
            n_evals: int, seed: int) -> dict[str, Any]:
    """One row: the marginal built, then ``n_evals`` evaluations with ∇W (fresh process)."""
    from threadpoolctl import threadpool_limits

    import sparsify.core.conic as conic
    from sparsify.core.optimize import initial_expansion_vectors

    if not shift:  # the literal form as the backends got it before the core's change
        conic.shift_norm_epigraph = lambda own, layout: None  # type: ignore[assignment]
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    kernel = _kernel(kernel_name, X.shape[1])
    Z0 = initial_expansion_vectors(X, nz, "random", seed)
    step = 0.02 * rng.normal(size=Z0.shape)
    harness.reset_peak_rss()
    with threadpool_limits(1):
        marginal, build = harness.timed(lambda: conic.ConicMarginal(
            FORMS[form](), X, None, kernel, nz, solver=solver, tol=1e-8))
        seconds, first = [], None
        for k in range(n_evals):
            ev, s = harness.timed(lambda k=k: marginal.evaluate(Z0 + k * step))
            seconds.append(s)
            first = ev if first is None else first
    assert first is not None and first.grad is not None
    return {"form": form, "kernel": kernel_name, "N": n, "Nz": nz, "solver": solver,
            "core_shift": shift, "backend": first.solver, "build_s": build,
            "eval_s": float(np.median(seconds)), "evals": n_evals,
            "peak_mb": harness.peak_rss() / 1024, "W": first.value,
            "grad": first.grad.ravel().tolist(), "b": float(first.intercept)}


def measure_paired(kernel_name: str, n: int, nz: int, n_evals: int, seed: int
                   ) -> dict[str, Any]:
    """Both forms side by side in one process: their evaluations alternate (each XVs solved
    by both, in turns of order), so that both see the same load; the ratio of each pair's
    times, and how far the two forms' W and ∇W differ at any XVs."""
    from threadpoolctl import threadpool_limits

    from sparsify.core.conic import ConicMarginal
    from sparsify.core.optimize import initial_expansion_vectors

    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    kernel = _kernel(kernel_name, X.shape[1])
    Z0 = initial_expansion_vectors(X, nz, "random", seed)
    step = 0.02 * rng.normal(size=Z0.shape)
    harness.reset_peak_rss()
    times: dict[str, list[float]] = {"shifted": [], "literal": []}
    dW = dG = 0.0
    with threadpool_limits(1):
        marginals = {form: ConicMarginal(FORMS[form](), X, None, kernel, nz, tol=1e-8)
                     for form in times}
        for k in range(n_evals):
            evs = {}
            for form in (("shifted", "literal") if k % 2 == 0 else ("literal", "shifted")):
                evs[form], seconds = harness.timed(
                    lambda form=form, k=k: marginals[form].evaluate(Z0 + k * step))
                times[form].append(seconds)
            a, b = evs["literal"], evs["shifted"]
            dW = max(dW, abs(a.value - b.value) / max(1.0, abs(b.value)))
            dG = max(dG, float(np.linalg.norm(a.grad - b.grad) / np.linalg.norm(b.grad)))
    ratios = np.array(times["literal"]) / np.array(times["shifted"])
    return {"N": n, "Nz": nz, "kernel": kernel_name, "evals": n_evals,
            "shifted_s": float(np.median(times["shifted"])),
            "literal_s": float(np.median(times["literal"])),
            "ratio_median": float(np.median(ratios)), "ratio_max": float(ratios.max()),
            "W_rel_diff_max": dW, "grad_rel_diff_max": dG,
            "peak_mb": harness.peak_rss() / 1024, "backend": evs["literal"].solver}


def _agreement(rows: list[dict[str, Any]]) -> None:
    """Each literal row's W and ∇W against the shifted form's at the same size and kernel."""
    for r in rows:
        ref = next((s for s in rows if s.get("form") == "shifted" and s.get("N") == r.get("N")
                    and s.get("kernel") == r.get("kernel") and "W" in s), None)
        if ref is None or "W" not in r:
            continue
        r["W_rel_diff"] = abs(r["W"] - ref["W"]) / max(1.0, abs(ref["W"]))
        g, g_ref = np.asarray(r["grad"]), np.asarray(ref["grad"])
        r["grad_rel_diff"] = float(np.linalg.norm(g - g_ref) / max(np.linalg.norm(g_ref), 1e-300))
        r["ratio"] = r["eval_s"] / ref["eval_s"]


def report(rows: list[dict[str, Any]], paired: list[dict[str, Any]], command: str,
           wall: float) -> str:
    shows = ("SVDD written literally (‖w‖² inside each of its N constraints) beside its "
             "shifted form (‖w‖² in the objective): seconds per evaluation of W(Z) and ∇W(Z) "
             "on the default backend, the ratio literal / shifted, and how far the two forms' "
             "W and ∇W differ. The core moves ‖w‖² out of the literal form's constraints "
             "(`sparsify.core.norm_shift`); the last rows are the literal form without that "
             "change, as it was solved before.")
    lines = ["## Side by side", "",
             *table("N", "Nz", "kernel", "backend", "evaluations", "shifted s", "literal s",
                    "literal / shifted (median)", "(largest)", "W rel. diff", "∇W rel. diff",
                    "peak MB (both)", "note")]
    lines += [row(r.get("N", "—"), r.get("Nz", "—"), r.get("kernel", "—"), r.get("backend", "—"),
                  r.get("evals", "—"), fmt(r.get("shifted_s")), fmt(r.get("literal_s")),
                  fmt(r.get("ratio_median")), fmt(r.get("ratio_max")),
                  fmt(r.get("W_rel_diff_max"), 2), fmt(r.get("grad_rel_diff_max"), 2),
                  fmt(r.get("peak_mb")), r.get("note", "")) for r in paired]
    lines += ["", "Both forms in one process, their evaluations alternating (the same XVs "
              "for both, moved a little after each pair, the order of each pair swapped), so "
              "that both see the same load: the ratio is the median of the pairs' ratios. The "
              "differences are the largest over the pairs, relative as below.", "",
              "## Per evaluation", "",
             *table("N", "Nz", "kernel", "form", "backend", "s / evaluation", "literal / shifted",
                    "W rel. diff", "∇W rel. diff", "build s", "peak MB", "note")]
    for r in rows:
        lines.append(row(r.get("N", "—"), r.get("Nz", "—"), r.get("kernel", "—"),
                         r.get("form", "—") + ("" if r.get("core_shift", True)
                                               else ", no core shift"),
                         r.get("backend", "—"), fmt(r.get("eval_s")), fmt(r.get("ratio")),
                         fmt(r.get("W_rel_diff"), 2), fmt(r.get("grad_rel_diff"), 2),
                         fmt(r.get("build_s")), fmt(r.get("peak_mb")), r.get("note", "")))
    lines += ["", "s / evaluation is the median over the row's evaluations, each at XVs moved "
              "a little from the last (one solve with its gradient; the structured backend "
              "starts each from the last solution). Peak MB is the process's resident peak "
              "after the data were made (the marginal, its compiled problem and the solves). "
              "W rel. diff is |W − W_shifted| / max(1, |W_shifted|) at the first XVs, ∇W rel. "
              "diff ‖∇W − ∇W_shifted‖ / ‖∇W_shifted‖."]
    return harness.result_page("‖w‖² inside constraints: the literal SVDD", shows,
                               "OPENBLAS_NUM_THREADS=1 " + command, lines,
                               [harness.provenance(wall)])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("docs/results"))
    parser.add_argument("--quick", action="store_true", help="tiny sizes, for the smoke test")
    parser.add_argument("--sizes", type=int, nargs="+", default=[2000, 20_000])
    parser.add_argument("--nz", type=int, default=50)
    parser.add_argument("--evals", type=int, default=5, help="evaluations per row")
    parser.add_argument("--pairs", type=int, default=15,
                        help="alternating pairs of evaluations side by side")
    parser.add_argument("--timeout", type=float, default=900.0)
    parser.add_argument("--seed", type=int, default=0)
    args = harness.ready(parser.parse_args(argv), __file__, argv)
    sizes, nz, evals = ([300], 5, 2) if args.quick else (args.sizes, args.nz, args.evals)
    start = time.perf_counter()
    rows: list[dict[str, Any]] = []
    plan = [(form, kernel, n, "auto", True, evals) for n in sizes for kernel in ("rbf", "poly")
            for form in ("shifted", "literal")]
    # the literal form without the core's change: its cone on the structured backend alone,
    # then on Clarabel (the auto chain's next backend), at the largest size
    plan += [("literal", "rbf", sizes[-1], solver, False, min(evals, 2))
             for solver in ("structured", "clarabel")]
    paired = []
    for n in sizes:
        for kernel in ("rbf", "poly"):
            result = harness.fresh_row(args.timeout, measure_paired, kernel, n, nz,
                                       args.pairs if not args.quick else 2, args.seed)
            paired.append({"N": n, "Nz": nz, "kernel": kernel, **result})
            print(f"[norm_in_constraints] side by side {kernel} N={n}: ratio "
                  f"{fmt(result.get('ratio_median'))} {result.get('note', '')}", flush=True)
    for form, kernel, n, solver, shift, n_evals in plan:
        base = {"form": form, "kernel": kernel, "N": n, "Nz": nz, "solver": solver,
                "core_shift": shift}
        result = harness.fresh_row(args.timeout, measure, form, kernel, n, nz, solver, shift,
                                   n_evals, args.seed)
        rows.append({**base, **result})
        print(f"[norm_in_constraints] {form} {kernel} N={n} {solver} shift={shift}: "
              f"{fmt(result.get('eval_s'))} s {result.get('note', '')}", flush=True)
    _agreement(rows)
    for r in rows:
        r.pop("grad", None)
    text = report(rows, paired, args.command, time.perf_counter() - start)
    harness.write_results(args.out, "norm_in_constraints", text,
                          [{"part": "side by side", **r} for r in paired]
                          + [{"part": "per evaluation", **r} for r in rows],
                          ("part", "N", "kernel", "form"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
