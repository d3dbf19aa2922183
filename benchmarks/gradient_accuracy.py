"""How accurate ∇W(Z) is, per formulation, kernel and backend: the table behind the tolerances.

For every registered formulation (and, with ``--declared PATH``, those a plugin module
declares, e.g. examples/declared_formulations.py, on the data its ``example_data`` gives),
kernel and backend (the generic path through Clarabel, ECOS, OSQP and SCS, and the
formulation's own exact solver where it has one), on
``--seeds`` small random problems (`sparsify.core.gradcheck.random_problem`, N = 40, d = 3,
Nz = 4), `sparsify.core.gradcheck.check_gradient` compares ∇W(Z) from the duals with
noise-aware finite differences (Richardson-extrapolated, step chosen from the measured
noise of W). Where the finite differences are accurate to far better than the gradient
(``fd_error`` ≪ ``rel_error``), ``rel_error`` is the gradient's own error: the accuracy a
backend's duals give at ``solver_tol = 1e-9``. The tests' thresholds
(`sparsify.core.solvers.SolverBackend.gradient_accuracy`) come from this table.

Usage::

    python benchmarks/gradient_accuracy.py --out docs/results \
        --declared examples/declared_formulations.py

writes ``gradient_accuracy.md`` and ``gradient_accuracy.csv`` (every check).
"""

from __future__ import annotations

import importlib.util
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import harness
import numpy as np
from threadpoolctl import threadpool_limits

import sparsify
from sparsify.core.gradcheck import check_gradient, random_problem
from sparsify.core.solvers import SolverError
from sparsify.plugins.registry import get_registry

KERNELS = ("rbf", "poly", "linear", "rbf+linear")
BACKENDS = ("structured", "clarabel", "ecos", "osqp", "scs", "auto")
#: formulation name -> example_data(formulation, seed=...) of a --declared module
DATA: dict[str, Any] = {}


def _declared(path: Path) -> list[str]:
    """Register the plugin module at ``path``; the names of the formulations it declares."""
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    sparsify.register_plugin(module, name=path.stem)
    for cls in module.FORMULATIONS:
        if hasattr(module, "example_data"):
            DATA[cls.name] = lambda seed, cls=cls: module.example_data(cls(), seed=seed)
    return [cls.name for cls in module.FORMULATIONS]


def _check(formulation: str, kernel: str, solver: str, seed: int) -> dict[str, Any]:
    X, y = (DATA[formulation](seed) if formulation in DATA
            else random_problem(40, 3, random_state=seed))
    if formulation == "oneclass":
        # off the origin: with a linear or odd polynomial kernel on centred data the
        # origin lies in the reduced convex hull and W ≡ 0 (tests/test_oneclass.py)
        X, y = X + 1.0, None
    row: dict[str, Any] = {"formulation": formulation, "kernel": kernel, "solver": solver,
                           "seed": seed}
    start = time.perf_counter()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = check_gradient(formulation, kernel, solver=solver, X=X, y=y, tol=1e-9,
                                    random_state=seed)
    except (ValueError, SolverError) as exc:
        return {**row, "status": " ".join(str(exc).split())[:160]}
    return {**row, "status": "ok", "backend": result.solver, "rel_error": result.rel_error,
            "fd_error": result.fd_error, "noise": result.noise, "step": result.step,
            "seconds": time.perf_counter() - start}


def _table(rows: list[dict[str, Any]]) -> list[str]:
    lines = ["| formulation | solver= (answered) | checks | median rel_error | max rel_error | "
             "max fd_error | stated accuracy | met | finite differences too coarse | "
             "refused or failed |", "|---" * 10 + "|"]
    registry = get_registry()
    for formulation, solver in sorted({(r["formulation"], r["solver"]) for r in rows}):
        group = [r for r in rows if (r["formulation"], r["solver"]) == (formulation, solver)]
        ok = [r for r in group if r["status"] == "ok"]
        bad = len(group) - len(ok)
        if not ok:
            reason = group[0]["status"].split(";")[0][:90]
            lines.append(f"| {formulation} | {solver} | 0 | | | | | | | {bad}: {reason} |")
            continue
        # where the finite differences themselves err by more than 1e-6 (a kink of W
        # within every usable step), the check says nothing about the gradient
        sharp = [r for r in ok if r["fd_error"] <= 1e-6]
        coarse = len(ok) - len(sharp)
        errors = np.array([r["rel_error"] for r in sharp] or [np.nan])
        answered = sorted({r["backend"] for r in ok})
        # a backend states its accuracy; the fast paths are held to 1e-6
        stated = max(float(registry.get("solver", b).gradient_accuracy)
                     if b in registry.names("solver") else 1e-6 for b in answered)
        met = "yes" if sharp and errors.max() <= stated else "no"
        lines.append(f"| {formulation} | {solver} ({', '.join(answered)}) | {len(sharp)} | "
                     f"{np.median(errors):.1e} | {errors.max():.1e} | "
                     f"{max(r['fd_error'] for r in sharp) if sharp else float('nan'):.1e} | "
                     f"{stated:.0e} | {met} | {coarse or ''} | {bad or ''} |")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = harness.benchmark_parser(__doc__, data_required=False)
    parser.add_argument("--seeds", type=int, default=5, help="random problems per cell")
    parser.add_argument("--formulations", nargs="+", default=None,
                        help="registered formulations (default: all)")
    parser.add_argument("--solvers", nargs="+", default=list(BACKENDS), choices=BACKENDS)
    parser.add_argument("--declared", type=Path, default=None,
                        help="a plugin module (a .py file with FORMULATIONS and the "
                             "register_formulations hook) whose formulations join the table")
    args = parser.parse_args(argv)
    if args.declared is not None and not args.declared.is_file():
        parser.error(f"--declared {args.declared}: no such file")
    registry = get_registry()
    extra = _declared(args.declared) if args.declared is not None else []
    names = [*(args.formulations or registry.names("formulation")),
             *(n for n in extra if args.formulations is None)]
    names = list(dict.fromkeys(names))
    unknown = sorted(set(names) - set(registry.names("formulation")))
    if unknown:
        parser.error(f"unknown formulations {unknown}; choose from "
                     f"{registry.names('formulation')}")
    rows = []
    start = time.perf_counter()
    with threadpool_limits(1):
        for name in names:
            for solver in args.solvers:
                for kernel in KERNELS:
                    for seed in range(args.seeds):
                        rows.append(_check(name, kernel, solver, seed))
                print(f"{name} {solver}: done", file=sys.stderr, flush=True)
    wall = time.perf_counter() - start
    shows = (
        "∇W(Z) from the duals (Lemma 1) against noise-aware finite differences "
        "(`sparsify.core.gradcheck.check_gradient`: central differences extrapolated over the "
        "steps h, h/2, h/4, h chosen from the measured noise of W), per formulation and "
        "backend: the accuracy each backend states (`SolverBackend.gradient_accuracy`) comes "
        "from this table. `rel_error` is ‖g − g_fd‖ / max(‖g‖, ‖g_fd‖); `fd_error` is the "
        "finite differences' own estimated error, so where it is far below `rel_error` the "
        f"latter is the gradient's error. Kernels {', '.join(KERNELS)}; {args.seeds} random "
        "problems each (N = 40, d = 3, Nz = 4, solver_tol = 1e-9); `auto` is the "
        "formulation's own exact solver where it has one.")
    page = harness.result_page("Gradient accuracy per formulation and backend", shows,
                               harness.command(__file__, argv), _table(rows),
                               [harness.provenance(wall, "one thread")])
    args.out.mkdir(parents=True, exist_ok=True)
    harness.write_csv(args.out / "gradient_accuracy.csv", rows,
                      ["formulation", "kernel", "solver", "seed", "status", "backend", "rel_error",
                       "fd_error", "noise", "step", "seconds"])
    harness.write_atomic(args.out / "gradient_accuracy.md", page)
    print(f"wrote {args.out / 'gradient_accuracy.md'}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
