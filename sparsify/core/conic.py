"""The generic path in O(N·Nz) memory: the formulation compiled once, the link added by hand.

cvxpy's DPP path (`sparsify.core.marginal.CvxpyMarginal`) makes K_XZ an N × Nz
Parameter, and compiling it densifies cvxpy's parameter tensor: about N·(N·Nz)
numbers, 24 GiB at N = 8000, Nz = 50. Here cvxpy compiles only the formulation's
own problem, over f and u as plain variables, once per backend
(`cvxpy.Problem.get_problem_data`). Its conic data (A, b, c, P and the cones)
then gets, as equality rows of its own, the link in whitened coordinates
(the paper's §3.4)::

    f − Φ u = 0,   Φ = K_XZ T,   T = V Λ^(−1/2)   (K_ZZ + jitter·I = V Λ Vᵀ)

so that w = Σ_j β_j φ(z_j) with β = T u and ‖w‖² = ‖u‖²: u is the formulation's
own u, whose norm it already sees. Φ's columns are the training points' coordinates
in an orthonormal basis of span φ(Z), bounded whatever K_ZZ's condition number, so
XVs that nearly coincide leave the conic problem well scaled (with K_XZ and K_ZZ^½
in two links, 50 XVs on 2-D data made every backend fail).

The link's u columns hold a dense N × Nz block per output, stored once with its
sparsity pattern; each evaluation overwrites its values and calls the backend
(Clarabel, ECOS, SCS or OSQP) directly. Memory is O(N·Nz), and an evaluation costs
the backend's own solve of that conic problem plus the kernel blocks and the
gradient. The duals ν of the link rows follow each backend's convention
Px + c + Aᵀz = 0, which is cvxpy's sign for ν; stationarity in u, which the
formulation sees only through its norms, gives Φᵀν = 2c·u, so c = ∂L/∂‖w‖² =
fᵀν / (2‖u‖²), and Lemma 1 (`sparsify.core.marginal.DeclaredMarginal`) reads the
gradient off ν, β and c.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass
from typing import Any

import cvxpy as cp
import numpy as np
import scipy.sparse as sp
from cvxpy.reductions.solution import Solution
from numpy.typing import NDArray

from sparsify.core.formulation import Formulation
from sparsify.core.marginal import DeclaredMarginal, _LinkSolution, whitening
from sparsify.core.memory import check_memory
from sparsify.core.solvers import (
    _OSQP_POLISH,
    Attempt,
    SolverBackend,
    Unsolved,
    solve_with_attempts,
)
from sparsify.kernels import Kernel

__all__ = ["ConicMarginal", "estimate_memory"]

Array = NDArray[np.float64]

#: The backends this path calls directly, by cvxpy name.
DIRECT = (cp.CLARABEL, cp.ECOS, cp.SCS, cp.OSQP)


def estimate_memory(n_samples: int, n_expansion: int, n_outputs: int = 1) -> int:
    """Bytes one evaluation of the generic path needs, to within a small factor.

    The link block holds N·Nz·K numbers; sparsify keeps it, the backend copies
    it into its KKT system and factorises it (the u columns last, so the
    factor's fill is about the block again): about five copies at 12 bytes (a
    value and a row index). The kernel blocks, Φ and the gradients add about
    five dense N × Nz arrays, and the formulation's own conic data grows with N
    (about 200 bytes per point for the built-in formulations). The SCS refinement
    of an interior point's answer (`_refine`) factorises the same system after the
    backend's factor is freed: it adds no copy at the peak.

    Examples
    --------
    >>> estimate_memory(8000, 50) / 2**20 < 100  # MiB: the 24 GiB of cvxpy's DPP path
    True
    """
    link = n_samples * n_expansion * n_outputs
    return int(5 * 12 * link + 5 * 8 * n_samples * n_expansion + 200 * n_samples * n_outputs
               + 2**20)


@dataclass
class _Linked:
    """A backend's conic data of the formulation with the link rows added."""

    backend: SolverBackend
    n: int  # variables of the formulation's own data (u's columns may follow)
    off_u: int  # u's first column
    data: dict[str, Any]  # the backend's matrices, already linked
    phi: NDArray[np.intp]  # where Φ's values sit in the linked equality matrix's .data
    var_id: int
    offset: float
    chain: Any
    inverse_data: Any
    objective: tuple[sp.csc_matrix | None, Array]  # P (symmetric) and c of the formulation


def _link_pattern(off_f: int, off_u: int, n: int, N: int, Nz: int, K: int,
                  tail: sp.csc_matrix, blocks: int = 1
                  ) -> tuple[sp.csc_matrix, NDArray[np.intp], int]:
    """The equality matrix with the link rows f − Φ u = 0 on top of ``tail``, as one CSC.

    Row i + k·N is f[i, k] − Σ_a Φ[i, a] u[a, k]: a 1 at f's column and an
    explicit entry at each of output k's u columns, so that Φ can be written in
    place. ``tail`` (the formulation's own equality rows) has ``n`` columns and
    u's columns may lie beyond them (then they are new). With ``blocks`` > 1
    the points are split into that many row blocks, each linked to a copy of u
    of its own (new columns after the first ``n``), and equality rows
    copy − u = 0 follow the link rows (`_link_blocks` says why). Returns the
    matrix, the positions in its ``.data`` of the Φ entries in the order of
    ``Φ.ravel(order="F")`` repeated for each output, and the number of link
    and copy rows, which come first.
    """
    n_f = N * K
    point = np.arange(N)
    # every entry once, as coordinates; Φ's in the order (output k, XV a, point i)
    phi_rows = (np.arange(K)[:, None, None] * N + point).repeat(Nz, 1)
    if blocks > 1:
        block = point * blocks // N  # balanced: sizes differ by at most one
        copy = (np.arange(blocks)[:, None, None] * K + np.arange(K)[:, None]) * Nz \
            + np.arange(Nz)  # copy of XV a of output k in block g, numbered (g, k, a)
        n_copy = copy.size
        phi_cols = n + copy[block].transpose(1, 2, 0)  # (k, a, i) as phi_rows
        copy_rows = n_f + copy.ravel()
        extra = (np.concatenate([copy_rows, copy_rows]),
                 np.concatenate([n + copy.ravel(), off_u + np.tile(np.arange(K * Nz), blocks)]),
                 np.concatenate([np.ones(n_copy), -np.ones(n_copy)]))
    else:
        n_copy = 0
        phi_cols = np.broadcast_to(off_u + (np.arange(K)[:, None] * Nz
                                            + np.arange(Nz))[:, :, None], phi_rows.shape)
        extra = (np.zeros(0, int), np.zeros(0, int), np.zeros(0))
    tail = tail.tocoo()
    n_head = n_f + n_copy
    rows = np.concatenate([np.arange(n_f), phi_rows.ravel(), extra[0], n_head + tail.row])
    cols = np.concatenate([off_f + np.arange(n_f), phi_cols.ravel(), extra[1], tail.col])
    n_phi = phi_rows.size
    values = np.concatenate([np.ones(n_f), np.ones(n_phi), extra[2], tail.data])
    del phi_rows, phi_cols  # N·Nz·K each: freed before the CSC is built
    # the entries are numbered so that their place in the CSC's .data can be found
    matrix = sp.csc_matrix((np.arange(1, len(rows) + 1, dtype=float), (rows, cols)),
                           shape=(n_head + tail.shape[0], n + n_copy))
    matrix.sort_indices()
    order = matrix.data.astype(np.intp) - 1
    matrix.data = values[order]
    place = np.empty_like(order)
    place[order] = np.arange(len(order))
    return matrix, place[n_f:n_f + n_phi], n_head


def _link_blocks(N: int, Nz: int, backend: str) -> int:
    """Row blocks of the link for ``backend``: each gets its own copy of u (`_link_pattern`).

    One dense N × Nz block of u columns is the one part of the conic problem
    whose factorisation grows with N·Nz², and Clarabel's (QDLDL's) up-looking
    factor of it was the solve's main cost: 60 % of Clarabel's time at
    N = 8000, Nz = 50. Split into B = 2 Nz row blocks with copies of u tied by
    B·Nz equality rows, the same solve took 0.78 s against 1.21 s (ε-SVR) and
    0.94 s against 4.53 s (Huber SVM), to the same answer (ν within 1e-11), and
    2.0-4.0 s against 4.2-5.7 s at Nz = 100. Blocks of fewer than 16 points
    gained nothing (N = 2000, Nz = 50: 0.23 s against 0.21 s), blocks of 250
    points or more lost (N = 50 000, Nz = 100: 129 s against 109 s; at
    Nz = 50, 8.5 s against 7.9 s), and fewer blocks than about 0.7 Nz made
    AMD's ordering eliminate the copies first and fill the factor (10-150×
    slower; docs/theory.md). So Clarabel gets 2 Nz blocks where they hold
    16 to 249 points each, and one block elsewhere; the other backends (not
    measured) one.
    """
    blocks = 2 * Nz
    return blocks if backend == cp.CLARABEL and 16 <= N // blocks < 250 else 1


def _pad(matrix: sp.spmatrix | None, rows: int, cols: int) -> sp.csc_matrix:
    """``matrix`` (or nothing) with zero rows and columns added to the given shape."""
    if matrix is None:
        return sp.csc_matrix((rows, cols))
    matrix = sp.csc_matrix(matrix)
    return sp.csc_matrix((matrix.data, matrix.indices,
                          np.concatenate([matrix.indptr, np.full(cols - matrix.shape[1],
                                                                 matrix.indptr[-1])])),
                         shape=(rows, cols))


class ConicMarginal(DeclaredMarginal):
    """W(Z) and ∇W(Z) of any declared formulation, in O(N·Nz) memory (the default generic path).

    The formulation is compiled once per backend with f and u as plain
    variables; each evaluation writes K_XZ and R into the link rows of that
    conic data and calls the backend directly (module docstring). Before
    anything is compiled, the memory it needs is estimated
    (`estimate_memory`); a problem that would not fit is refused with
    `sparsify.core.errors.MemoryEstimateError`.

    Parameters
    ----------
    formulation : Formulation
        The convex kernel learning algorithm.
    X : ndarray of shape (N, d)
        Training inputs.
    y : ndarray of shape (N,) or None
        Targets as the formulation expects them.
    kernel : Kernel
        Kernel with vector-Jacobian products.
    n_expansion : int
        Number of XVs Nz.
    solver : str, default="auto"
        A registered backend name, or "auto": Clarabel, falling back to OSQP
        (problems cvxpy can give it) and then ECOS.
    tol : float, default=1e-9
        Solver accuracy (gap and feasibility).
    jitter : float, default=1e-10
        Added to the diagonal of K_ZZ, relative to the mean kernel diagonal on X.
    max_memory : int, optional
        Bytes the problem may take; by default the memory available now.

    Attributes
    ----------
    last_solve_seconds : float
        Time the backends spent in the last `evaluate` (their setup and solve
        of the linked conic problem, every attempt), the rest being sparsify's.

    Examples
    --------
    >>> import numpy as np, cvxpy as cp
    >>> from sparsify import Formulation, Declaration, RBF
    >>> class Ridge(Formulation):
    ...     name = "ridge"
    ...     def declare(self, out):
    ...         return Declaration(cp.Minimize(cp.sum_squares(out.f - out.y) + out.norm_w2))
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(20, 2)); y = np.sin(X[:, 0])
    >>> ev = ConicMarginal(Ridge(), X, y, RBF(0.5), n_expansion=3).evaluate(X[:3])
    >>> ev.grad.shape, ev.coef.shape, ev.solver
    ((3, 2), (3,), 'clarabel')
    """

    def __init__(
        self,
        formulation: Formulation,
        X: Array,
        y: NDArray[Any] | None,
        kernel: Kernel,
        n_expansion: int,
        solver: str = "auto",
        tol: float = 1e-9,
        jitter: float = 1e-10,
        max_memory: int | None = None,
    ) -> None:
        super().__init__(formulation, X, y, kernel, n_expansion, solver, tol, jitter)
        N, Nz = len(self.X), self.n_expansion
        K = int(formulation.n_outputs(y))
        check_memory(estimate_memory(N, Nz, K),
                     f"The generic path for the {self.formulation_name!r} formulation with "
                     f"N={N}, Nz={Nz}" + (f", K={K} outputs" if K > 1 else ""),
                     "Use fewer XVs or a subsample of the training points, or the "
                     "formulation's exact fast path where it has one (solver='auto').",
                     max_memory)
        decl = self._declare()
        self.problem = cp.Problem(decl.objective, list(decl.constraints))
        unknown = [b.name for b in self.backends if b.cvxpy_name not in DIRECT]
        if unknown:
            raise ValueError(f"The solver {unknown[0]!r} has no direct interface in sparsify's "
                             f"generic path; use one of the backends {list(DIRECT)} it calls, "
                             "or sparsify.core.marginal.CvxpyMarginal.")
        self._linked: dict[str, _Linked | str] = {}
        self.last_solve_seconds = 0.0
        # capability, not cvxpy's is_qp(): a backend that cvxpy cannot give this problem
        # (OSQP and an exponential cone) is left out with cvxpy's reason. The first capable
        # one is compiled now; the later ones of a chain when they are needed.
        for backend in self.backends:
            if not isinstance(self._link(backend), str):
                break
        else:
            reasons = "; ".join(f"{b.name}: {self._linked[b.name]}" for b in self.backends)
            raise ValueError(f"No solver given can take the {self.formulation_name!r} "
                             f"formulation: {reasons}. Use solver='clarabel' or 'ecos' (they "
                             "take every cone cvxpy produces but semidefinite ones).")
        self.backends = [b for b in self.backends if not isinstance(self._linked.get(b.name),
                                                                     str)]

    # -- construction -------------------------------------------------------------------------

    def _link(self, backend: SolverBackend) -> _Linked | str:
        """The backend's linked data, compiled on first use; or why it cannot take it."""
        if backend.name in self._linked:
            return self._linked[backend.name]
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # cvxpy's notes about its own reductions
                data, chain, inverse_data = self.problem.get_problem_data(backend.cvxpy_name)
        except cp.error.SolverError as exc:
            reason = " ".join(str(exc).split()).rstrip(".")
            if backend.quadratic_only:
                reason = (f"it handles quadratic programs only, and cvxpy cannot reduce this "
                          f"one to one ({reason})")
            self._linked[backend.name] = reason
            return reason
        linked = self._build(backend, data, chain, inverse_data)
        self._linked[backend.name] = linked
        return linked

    def _offsets(self, inverse_data: Any) -> dict[int, int]:
        for inv in reversed(inverse_data):
            if hasattr(inv, "var_offsets"):
                return dict(inv.var_offsets)
        raise RuntimeError("cvxpy's compilation gave no variable offsets")  # pragma: no cover

    def _build(self, backend: SolverBackend, data: dict[str, Any], chain: Any,
               inverse_data: Any) -> _Linked:
        N, Nz, K = len(self.X), self.n_expansion, self.n_outputs
        offsets = self._offsets(inverse_data)
        off_f = offsets[self.f.id]
        solver_inverse = inverse_data[-1].inverse_data
        name = backend.cvxpy_name
        c = np.asarray(data["q"] if name == cp.OSQP else data["c"], dtype=float)
        n_own = len(c)
        # u: the formulation's own, or new columns when it never uses ‖w‖
        off_u = offsets.get(self.u.id, n_own)
        n = max(n_own, off_u + Nz * K)
        P = data.get("P")
        P_sym = None
        if P is not None:
            upper = sp.triu(sp.csc_matrix(P), format="csc")
            P_sym = (upper + sp.triu(upper, 1).T).tocsc()
        if name == cp.OSQP:  # l ≤ A x ≤ u, equalities first
            tail = sp.vstack([sp.csc_matrix(data["A"]), sp.csc_matrix(data["F"])], format="csc")
        elif name == cp.ECOS and data.get("A") is None:
            tail = sp.csc_matrix((0, n_own))
        else:
            tail = sp.csc_matrix(data["A"])
        A, phi, n_head = _link_pattern(off_f, off_u, n, N, Nz, K, tail,
                                       _link_blocks(N, Nz, name))
        n_all = A.shape[1]  # with the copies of u, if any
        head = np.zeros(n_head)
        linked: dict[str, Any] = {"A": A, "c": np.concatenate([c, np.zeros(n_all - n_own)])}
        P_upper = _pad(sp.triu(P_sym) if P_sym is not None else None, n_all, n_all)
        if name in (cp.CLARABEL, cp.SCS):
            dims = data["dims"]
            linked.update(b=np.concatenate([head, data["b"]]), P=P_upper,
                          zero=dims.zero + n_head, dims=dims)
        elif name == cp.ECOS:
            b_eq = data.get("b")
            G = data.get("G")
            linked.update(b=np.concatenate([head, np.zeros(0) if b_eq is None else b_eq]),
                          G=_pad(G, 0 if G is None else G.shape[0], n_all),
                          h=np.zeros(0) if G is None else data["h"], dims=data["dims"])
        else:
            linked.update(l=np.concatenate([head, data["b"], np.full(len(data["G"]), -np.inf)]),
                          u=np.concatenate([head, data["b"], data["G"]]), P=P_upper)
        return _Linked(backend, n_own, off_u, linked, phi, solver_inverse["var_id"],
                       float(solver_inverse["offset"]), chain, inverse_data, (P_sym, c))

    # -- evaluation ---------------------------------------------------------------------------

    def _solve_links(self, K_xz: Array, K_zz: Array) -> _LinkSolution:
        self.last_solve_seconds = 0.0
        T = whitening(K_zz)
        Phi = K_xz @ T
        result: dict[str, Any] = {}

        def run(backend: SolverBackend, attempt: Attempt) -> str:
            link = self._link(backend)
            if isinstance(link, str):
                return f"error (cannot take this problem: {link})"
            # the u columns, XV a of output k: −Φ[:, a] in output k's link rows
            link.data["A"].data[link.phi] = np.tile(-Phi.ravel(order="F"), self.n_outputs)
            start = time.perf_counter()
            try:
                status, x, z = _call(link, attempt)
            except Exception as exc:  # the solver's own crash is this attempt's failure
                result["cause"] = exc
                return f"error ({type(exc).__name__}: {exc})"
            finally:
                self.last_solve_seconds += time.perf_counter() - start
            if status in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE):
                if x is None or z is None or not (np.isfinite(x).all() and np.isfinite(z).all()):
                    return f"{status} without a finite solution"
                result.update(link=link, x=x, z=z)
            return status

        try:
            solved = solve_with_attempts(self.backends, self.tol, run)
        except Unsolved as failed:
            raise self._report(Unsolved(failed.statuses, result.get("cause")),
                               self.backends) from result.get("cause")
        link, x, z = result["link"], result["x"], result["z"]
        scale = solved.objective_scale
        N, Nz, K = len(self.X), self.n_expansion, self.n_outputs
        x_own = x[:link.n]
        P, c = link.objective
        value = float(c @ x_own + (0.5 * x_own @ (P @ x_own) if P is not None else 0.0)
                      + link.offset)
        self._unpack(link, x_own, value)
        u = x[link.off_u:link.off_u + Nz * K].reshape((Nz, K), order="F")
        nu = z[:N * K].reshape((N, K), order="F") / scale
        # stationarity in u: Φᵀν_k = 2 c_k u_k, so c_k = (Φu_k)ᵀν_k / (2‖u_k‖²)
        uu = (u * u).sum(0)
        c_k = np.where(uu > 0, ((Phi @ u) * nu).sum(0) / (2 * np.where(uu > 0, uu, 1.0)), 0.0)
        beta = T @ u
        shape = (lambda a: a.ravel()) if K == 1 else (lambda a: a)
        return _LinkSolution(value=value, beta=shape(beta), nu=shape(nu), c=c_k,
                             backend=solved.backend.name, accuracy=solved.accuracy)

    def _unpack(self, link: _Linked, x: Array, value: float) -> None:
        """Set the formulation's variables (the intercept's among them) from the solution."""
        solution = Solution(cp.OPTIMAL, value - link.offset, {link.var_id: x}, {}, {})
        for reduction, inverse in reversed(list(zip(link.chain.reductions[:-1],
                                                    link.inverse_data[:-1], strict=True))):
            solution = reduction.invert(solution, inverse)
        self.problem.unpack(solution)


def _call(link: _Linked, attempt: Attempt) -> tuple[str, Array | None, Array | None]:
    """One solve of the linked data by the backend itself: (cvxpy status, x, equality duals)."""
    name = link.backend.cvxpy_name
    data, scale = link.data, attempt.objective_scale
    options = dict(attempt.options)
    if name == cp.CLARABEL:
        return _clarabel(data, scale, options)
    if name == cp.ECOS:
        return _ecos(data, scale, options)
    if name == cp.SCS:
        return _scs(data, scale, options)
    return _osqp(data, scale, options)


_CLARABEL_STATUS = {
    "Solved": cp.OPTIMAL, "AlmostSolved": cp.OPTIMAL_INACCURATE,
    "PrimalInfeasible": cp.INFEASIBLE, "AlmostPrimalInfeasible": cp.INFEASIBLE_INACCURATE,
    "DualInfeasible": cp.UNBOUNDED, "AlmostDualInfeasible": cp.UNBOUNDED_INACCURATE,
    "MaxIterations": cp.USER_LIMIT, "MaxTime": cp.USER_LIMIT,
}


def _clarabel(data: dict[str, Any], scale: float, options: dict[str, Any]
              ) -> tuple[str, Array | None, Array | None]:
    import clarabel
    from cvxpy.reductions.solvers.conic_solvers.clarabel_conif import dims_to_solver_cones

    dims = data["dims"]
    cones = dims_to_solver_cones(dims)
    # the link rows join the formulation's zero cone, which comes first
    if dims.zero > 0:
        cones[0] = clarabel.ZeroConeT(data["zero"])
    else:
        cones.insert(0, clarabel.ZeroConeT(data["zero"]))
    settings = clarabel.DefaultSettings()
    settings.verbose = False
    for key, value in options.items():
        setattr(settings, key, value)
    solver = clarabel.DefaultSolver(scale * data["P"], scale * data["c"], data["A"], data["b"],
                                    cones, settings)
    solution = solver.solve()
    status = _CLARABEL_STATUS.get(str(solution.status), f"error ({solution.status})")
    x, z = np.asarray(solution.x), np.asarray(solution.z)
    del solver, solution  # Clarabel's factor, freed before SCS builds its own
    if status in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE) and dims.soc:
        x, z = _refine(_scs_problem(data, scale), x, z, settings.tol_feas / 10)
    return status, x, z


def _scs_problem(data: dict[str, Any], scale: float) -> tuple[dict[str, Any], dict[str, Any]]:
    """SCS's problem and cones from the linked conic data of Clarabel or SCS."""
    from cvxpy.reductions.solvers.conic_solvers.scs_conif import dims_to_solver_dict

    cones = dims_to_solver_dict(data["dims"])
    cones["z"] = data["zero"]
    problem = {"A": data["A"], "b": data["b"], "c": scale * data["c"]}
    if data.get("P") is not None:
        problem["P"] = scale * data["P"]
    return problem, cones


def _refine(scs_data: tuple[dict[str, Any], dict[str, Any]], x: Array, y: Array, eps: float
            ) -> tuple[Array, Array]:
    """An interior point's answer refined by SCS started from it (primal x, dual y).

    An interior-point answer is accurate to ~√gap, not the gap, along directions
    where the objective is nearly flat: on the minimax probability machine (a shift
    of f common to both classes moves only ρ‖w‖²) Clarabel's gradients were off by
    up to 2.7e-5 with W itself exact to 1e-11, ECOS's on kernel ridge by 2e-5. SCS's
    first-order iterations from that point drive the residuals themselves to ``eps``
    (75 iterations at N = 40); where they do not get there, the answer stands.
    """
    import scs

    problem, cones = scs_data
    solver = scs.SCS(problem, cones, eps_abs=eps, eps_rel=eps, eps_infeas=eps,
                     max_iters=5000, verbose=False)
    result = solver.solve(warm_start=True, x=x, y=y, s=problem["b"] - problem["A"] @ x)
    if int(result["info"]["status_val"]) != 1:
        return x, y
    return np.asarray(result["x"]), np.asarray(result["y"])


_ECOS_STATUS = {0: cp.OPTIMAL, 10: cp.OPTIMAL_INACCURATE, 1: cp.INFEASIBLE,
                11: cp.INFEASIBLE_INACCURATE, 2: cp.UNBOUNDED, 12: cp.UNBOUNDED_INACCURATE,
                -1: cp.USER_LIMIT}


def _ecos(data: dict[str, Any], scale: float, options: dict[str, Any]
          ) -> tuple[str, Array | None, Array | None]:
    import ecos
    from cvxpy.reductions.solvers.conic_solvers.ecos_conif import dims_to_solver_dict

    options.setdefault("verbose", False)
    result = ecos.solve(scale * data["c"], data["G"], data["h"],
                        dims_to_solver_dict(data["dims"]), data["A"], data["b"], **options)
    flag = int(result["info"]["exitFlag"])
    status = _ECOS_STATUS.get(flag, f"error (ECOS exit flag {flag})")
    x, y = np.asarray(result["x"]), np.asarray(result["y"])
    if status in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE):
        # SCS takes the equalities and the cone rows stacked, with their duals; cvxpy gives
        # ECOS each exponential cone's rows in the order (x, z, y), SCS in (x, y, z)
        n_eq, dims = len(data["b"]), data["dims"]
        order = np.arange(n_eq + len(data["h"]))
        first = n_eq + dims.nonneg + sum(dims.soc)
        for k in range(dims.exp):
            order[first + 3 * k + 1], order[first + 3 * k + 2] = (first + 3 * k + 2,
                                                                  first + 3 * k + 1)
        A = sp.vstack([data["A"], data["G"]], format="csr")[order].tocsc()
        problem, cones = _scs_problem({"A": A, "b": np.concatenate([data["b"], data["h"]])[order],
                                       "c": data["c"], "dims": dims, "zero": n_eq}, scale)
        x, y_all = _refine((problem, cones), x, np.concatenate([y, result["z"]])[order],
                           float(options.get("feastol", 1e-8)) / 10)
        y = y_all[:n_eq]
    return status, x, y


_SCS_STATUS = {1: cp.OPTIMAL, 2: cp.OPTIMAL_INACCURATE, -1: cp.UNBOUNDED,
               -6: cp.UNBOUNDED_INACCURATE, -2: cp.INFEASIBLE, -7: cp.INFEASIBLE_INACCURATE}


def _scs(data: dict[str, Any], scale: float, options: dict[str, Any]
         ) -> tuple[str, Array | None, Array | None]:
    import scs

    problem, cones = _scs_problem(data, scale)
    options.setdefault("verbose", False)
    result = scs.solve(problem, cones, **options)
    flag = int(result["info"]["status_val"])
    status = _SCS_STATUS.get(flag, f"error (SCS status {result['info']['status']})")
    return status, np.asarray(result["x"]), np.asarray(result["y"])


def _osqp(data: dict[str, Any], scale: float, options: dict[str, Any]
          ) -> tuple[str, Array | None, Array | None]:
    import osqp

    options.setdefault("verbose", False)
    model = osqp.OSQP()
    model.setup(P=scale * data["P"], q=scale * data["c"], A=data["A"], l=data["l"],
                u=data["u"], **options)
    try:
        result = model.solve(raise_error=False)
    except TypeError:  # OSQP < 1.0 has no raise_error
        result = model.solve()
    status = str(result.info.status).lower()
    polish = options.get(_OSQP_POLISH, False)
    if status == "solved" and polish and getattr(result.info, "status_polish", 1) != 1:
        # without the polish's active-set solve the duals are first-order only: gradients
        # off by up to 1e-5 where the polished ones are within 1e-8 (ε-SVR, ν-SVM measured)
        status = "unpolished (OSQP's polishing failed, so its duals are not accurate)"
    elif status == "solved":
        status = cp.OPTIMAL
    elif status == "solved inaccurate":
        status = cp.OPTIMAL_INACCURATE
    elif "infeasible" in status:
        status = cp.INFEASIBLE if "dual" not in status else cp.UNBOUNDED
    elif "maximum iterations" in status or "time limit" in status:
        status = cp.USER_LIMIT
    else:
        status = f"error (OSQP: {result.info.status})"
    return status, np.asarray(result.x), np.asarray(result.y)
