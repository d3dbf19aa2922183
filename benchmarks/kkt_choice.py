"""How the generic path solves its KKT systems: the structured solve beside sparse LDL
factorisations of the whole linked matrix, and its interior point beside CVXOPT's.

The linked problem's KKT matrix ::

    [ P + δI     Aᵀ      ]      A = [link rows f − Φu = 0; the formulation's rows],
    [ A       −(D + δI)  ]      D = 0 on equality rows, W² on cone rows

at one interior-point iterate (the fifth of the structured backend's iterations, so
that W² is far from the identity) of the declared ε-SVR and Huber SVM
(benchmarks/generic_path.py's data, Nz = 50), factored and solved by:

- ``structured``: `sparsify.core.structured.kkt` (f eliminated by the link, a Schur
  complement on u and the dense unknowns, small blocks inverted in C);
- ``qdldl``: QDLDL (Clarabel's and OSQP's LDLᵀ, with its AMD ordering) on the whole matrix,
  static regularisation δ = 1e-9;
- ``cholmod``: CHOLMOD's simplicial LDLᵀ (through CVXOPT, which ships it; scikit-sparse needs
  SuiteSparse ≥ 7 to build) on the same matrix;

and the whole interior point: the structured backend's own against CVXOPT's ``coneqp``
with the structured solve as its ``kktsolver`` (iterations, time, W). Each solve's relative
residual against the unregularised matrix is reported.

Usage::

    OPENBLAS_NUM_THREADS=1 python benchmarks/kkt_choice.py --out docs/results

writes ``kkt_choice.md`` and ``kkt_choice.csv``; ``--quick`` runs tiny sizes.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).resolve().parent))
import harness
from generic_path import make_data
from harness import fmt, row, table

from sparsify import RBF, ConicMarginal
from sparsify.core.kernel_blocks import whitening
from sparsify.core.optimize import initial_expansion_vectors
from sparsify.core.structured import ipm
from sparsify.core.structured.cones import Cones, Scaling

DELTA = 1e-9


def _iterate(problem: Any, structure: Any, cones: Cones, iterations: int) -> Scaling:
    """The NT scaling at the structured interior point's iterate after ``iterations``."""
    settings = ipm.IPMSettings(max_iter=iterations, tol_gap_abs=1e-300, tol_gap_rel=1e-300,
                               tol_feas=1e-300, reduced_tol=1e-300)
    result = ipm.solve(structure, problem.own.c, problem.own.b, problem.Phi, settings)
    point = result.point
    return cones.scaling(point.s, point.y[structure.zero:])


def _full_kkt(problem: Any, scaling: Scaling, cones: Cones) -> tuple[sp.csc_matrix, Any]:
    """The whole linked KKT matrix, regularised, and the unregularised one's matvec."""
    data = problem.linked()
    n, m = data.n, data.A.shape[0]
    zero = data.cones.zero
    D = np.zeros(m)
    W2 = sp.csr_matrix(np.column_stack([scaling.squared(e) for e in np.eye(cones.size)])) \
        if cones.size <= 2000 else _sparse_w2(scaling, cones)
    D_mat = sp.block_diag([sp.csr_matrix((zero, zero)), W2], format="csc")
    P = data.P if data.P is not None else sp.csc_matrix((n, n))
    exact = sp.bmat([[P, data.A.T], [data.A, -D_mat]], format="csc")
    reg = exact + sp.diags(np.concatenate([np.full(n, DELTA), -np.full(m, DELTA)]))
    del D
    return reg.tocsc(), exact


def _sparse_w2(scaling: Scaling, cones: Cones) -> sp.csr_matrix:
    """W² as a sparse matrix: a diagonal on the orthant, a dense block per second-order cone."""
    rows, cols, vals = [np.arange(cones.nonneg)], [np.arange(cones.nonneg)], [scaling.w ** 2]
    for (idx, blocks) in scaling.soc_blocks():
        q = idx.shape[1]
        rows.append(np.repeat(idx, q, axis=1).ravel())
        cols.append(np.tile(idx, (1, q)).ravel())
        vals.append(blocks.ravel())
    return sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                         shape=(cones.size, cones.size))


def _residual(exact: sp.csc_matrix, x: np.ndarray, rhs: np.ndarray) -> float:
    return float(np.abs(exact @ x - rhs).max() / np.abs(rhs).max())


def _problem(name: str, n: int, nz: int, seed: int) -> tuple[Any, Any, Cones]:
    """The declared formulation's linked problem at random XVs, its KKT structure and cones."""
    X, y, form = make_data(name, n, seed)
    kernel = RBF(1.0 / X.shape[1])
    marginal = ConicMarginal(form, X, y, kernel, nz, solver="structured", tol=1e-8)
    problem = marginal._compiled["CLARABEL"].problem
    Z = initial_expansion_vectors(X, nz, "random", seed)
    problem.set_phi(kernel(X, Z) @ whitening(kernel(Z, Z) + marginal.jitter * np.eye(nz)))
    own = problem.own
    return problem, problem.cache["structured"]["structure"], Cones(own.cones.nonneg,
                                                                    own.cones.soc)


def measure_factorisations(name: str, n: int, nz: int, seed: int) -> list[dict[str, Any]]:
    problem, structure, cones = _problem(name, n, nz, seed)
    own = problem.own
    scaling = _iterate(problem, structure, cones, 5)
    reg, exact = _full_kkt(problem, scaling, cones)
    rng = np.random.default_rng(seed)
    rhs = rng.normal(size=exact.shape[0])
    n_x, n_f = own.n, problem.link_rows
    rows: list[dict[str, Any]] = []
    base = {"formulation": name, "N": n, "Nz": nz, "kkt_size": exact.shape[0],
            "kkt_nnz": exact.nnz}

    start = time.perf_counter()
    factor = structure.factor(problem.Phi, scaling)
    factor_s = time.perf_counter() - start
    start = time.perf_counter()
    x, nu, yy = factor.solve(rhs[:n_x], rhs[n_x:n_x + n_f], rhs[n_x + n_f:])
    solve_s = time.perf_counter() - start
    rows.append({**base, "method": "structured", "factor_s": factor_s, "solve_s": solve_s,
                 "residual": _residual(exact, np.concatenate([x, nu, yy]), rhs),
                 "factor_nnz": structure.block_entries})

    import qdldl

    start = time.perf_counter()
    solver = qdldl.Solver(reg)
    factor_s = time.perf_counter() - start
    start = time.perf_counter()
    sol = solver.solve(rhs)
    solve_s = time.perf_counter() - start
    L = solver.factors()[0]
    rows.append({**base, "method": "qdldl", "factor_s": factor_s, "solve_s": solve_s,
                 "residual": _residual(exact, sol, rhs), "factor_nnz": L.nnz})
    del solver, L

    from cvxopt import cholmod, matrix, spmatrix

    coo = reg.tocoo()
    A = spmatrix(coo.data.tolist(), coo.row.tolist(), coo.col.tolist(), reg.shape)
    cholmod.options["supernodal"] = 0  # simplicial LDLᵀ: quasi-definite, no pivoting
    start = time.perf_counter()
    F = cholmod.symbolic(A)
    cholmod.numeric(A, F)
    factor_s = time.perf_counter() - start
    b = matrix(rhs)
    start = time.perf_counter()
    cholmod.solve(F, b)
    solve_s = time.perf_counter() - start
    rows.append({**base, "method": "cholmod", "factor_s": factor_s, "solve_s": solve_s,
                 "residual": _residual(exact, np.array(b).ravel(), rhs)})
    return rows


def _cvxopt_kktsolver(structure: Any, Phi: np.ndarray, cones: Cones, n_f: int) -> Any:
    """CVXOPT's ``kktsolver`` on the structured solve (its W dict as a `Scaling`)."""
    from cvxopt import matrix

    zero = structure.zero

    def factor(W: dict[str, Any]) -> Any:
        w = np.array(W["d"]).ravel()
        betas = np.array(list(W["beta"]), dtype=float)
        vs = [np.array(v).ravel() for v in W["v"]]
        socs = [(rows, betas[which], np.array([vs[c] for c in which]))
                for which, (_, rows) in zip(cones.group_cones, cones.groups, strict=True)]
        scaling = Scaling(cones, w, socs, np.zeros(cones.size))
        kkt = structure.factor(Phi, scaling)

        def solve(x: Any, y: Any, z: Any) -> None:
            bx, by, bz = (np.array(v).ravel() for v in (x, y, z))
            ux, nu, rows = kkt.solve(bx, by[:n_f], np.concatenate([by[n_f:], bz]))
            x[:] = matrix(ux)
            y[:] = matrix(np.concatenate([nu, rows[:zero]]))
            z[:] = matrix(scaling.apply(rows[zero:]))

        return solve

    return factor


def measure_interior_points(name: str, n: int, nz: int, seed: int) -> list[dict[str, Any]]:
    from cvxopt import matrix, solvers, spmatrix

    problem, structure, cones = _problem(name, n, nz, seed)
    own, data = problem.own, problem.linked()
    out: list[dict[str, Any]] = []
    start = time.perf_counter()
    result = ipm.solve(structure, own.c, own.b, problem.Phi,
                       ipm.IPMSettings(tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-8))
    x = result.point.x
    value = own.c @ x + (0.5 * x @ (own.P @ x) if own.P is not None else 0.0) + own.offset
    out.append({"formulation": name, "N": n, "Nz": nz, "method": "structured ipm",
                "seconds": time.perf_counter() - start, "iterations": result.iterations,
                "status": result.status, "W": value})

    def cvx(M: sp.spmatrix) -> Any:
        c = sp.coo_matrix(M)
        return spmatrix(c.data.tolist(), c.row.tolist(), c.col.tolist(), M.shape)

    zero = data.cones.zero
    A_csr = data.A.tocsr()
    P = data.P if data.P is not None else sp.csc_matrix((data.n, data.n))
    solvers.options.update({"show_progress": False, "abstol": 1e-10, "reltol": 1e-10,
                            "feastol": 1e-8, "maxiters": 100})
    start = time.perf_counter()
    try:
        answer = solvers.coneqp(
            cvx(P), matrix(data.c), cvx(A_csr[zero:]), matrix(data.b[zero:]),
            {"l": cones.nonneg, "q": list(cones.soc), "s": []}, cvx(A_csr[:zero]),
            matrix(data.b[:zero]),
            kktsolver=_cvxopt_kktsolver(structure, problem.Phi, cones, problem.link_rows))
        xc = np.array(answer["x"]).ravel()
        value = data.c @ xc + 0.5 * xc @ (P @ xc) + own.offset
        out.append({"formulation": name, "N": n, "Nz": nz, "method": "cvxopt coneqp",
                    "seconds": time.perf_counter() - start, "iterations": answer["iterations"],
                    "status": answer["status"], "W": value})
    except Exception as exc:  # recorded, not hidden
        out.append({"formulation": name, "N": n, "Nz": nz, "method": "cvxopt coneqp",
                    "note": f"{type(exc).__name__}: {exc}"})
    return out


def report(rows: list[dict[str, Any]], command: str, wall: float) -> str:
    fac = [r for r in rows if "factor_s" in r]
    ipms = [r for r in rows if "iterations" in r or r.get("method") == "cvxopt coneqp"]
    shows = ("One KKT system of the linked problem (declared ε-SVR and Huber SVM, Nz = 50, "
             "the structured interior point's fifth iterate) factored and solved by the "
             "structured solve, by QDLDL and by CHOLMOD on the whole matrix; then the whole "
             "interior point, the structured backend's beside CVXOPT's coneqp driving the "
             "same structured solve.")
    lines = ["## One factorisation and one solve", "",
             *table("formulation", "N", "KKT size", "KKT nnz", "method", "factor s", "solve s",
                    "factor entries", "residual")]
    lines += [row(r["formulation"], r["N"], r["kkt_size"], r["kkt_nnz"], r["method"],
                  fmt(r["factor_s"]), fmt(r["solve_s"]), fmt(r.get("factor_nnz")),
                  fmt(r["residual"], 2)) for r in fac]
    lines += ["", "## The whole interior point", "",
              *table("formulation", "N", "method", "iterations", "s", "status", "W", "note")]
    lines += [row(r["formulation"], r["N"], r["method"], fmt(r.get("iterations")),
                  fmt(r.get("seconds")), r.get("status", "—"), fmt(r.get("W"), 10),
                  r.get("note", "")) for r in ipms]
    return harness.result_page("Solving the linked problem's KKT systems", shows,
                               "OPENBLAS_NUM_THREADS=1 " + command, lines,
                               [harness.provenance(wall)])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("docs/results"))
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    sizes = [300] if args.quick else [2000, 8000, 20_000]
    nz = 5 if args.quick else 50
    start = time.perf_counter()
    rows: list[dict[str, Any]] = []
    with threadpool_limits(1):
        for name in ("svr", "huber_svm"):
            for n in sizes:
                rows += measure_factorisations(name, n, nz, args.seed)
                rows += measure_interior_points(name, n, nz, args.seed)
                print(f"[kkt_choice] {name} N={n} done", flush=True)
    text = report(rows, harness.command(__file__, argv), time.perf_counter() - start)
    harness.write_results(args.out, "kkt_choice", text, rows, ("formulation",))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
