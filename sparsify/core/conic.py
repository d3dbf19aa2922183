"""The generic path in O(N·Nz) memory: the formulation compiled once, the link added by hand.

cvxpy's DPP path (`sparsify.core.declared.CvxpyMarginal`) makes K_XZ an N × Nz
Parameter, and compiling it densifies cvxpy's parameter tensor: about N·(N·Nz)
numbers, 24 GiB at N = 8000, Nz = 50. Here cvxpy compiles only the formulation's
own problem, over f and u as plain variables, once per data layout a backend
reads (`cvxpy.Problem.get_problem_data`, then
`sparsify.core.conic_data.read_problem_data`). The link is added in whitened
coordinates (the paper's §3.4)::

    f − Φ u = 0,   Φ = K_XZ T,   T = V Λ^(−1/2)   (K_ZZ + jitter·I = V Λ Vᵀ)

so that w = Σ_j β_j φ(z_j) with β = T u and ‖w‖² = ‖u‖²: u is the formulation's
own u, whose norm it already sees. Φ's columns are the training points'
coordinates in an orthonormal basis of span φ(Z), bounded whatever K_ZZ's
condition number, so XVs that nearly coincide leave the conic problem well
scaled (with K_XZ and K_ZZ^½ in two links, 50 XVs on 2-D data made every
backend fail).

Each evaluation hands the backend the linked problem at the new Φ
(`sparsify.core.conic_data.LinkedProblem`): the structured backend (the
default) solves it with Φ and the layout of f and u; the general ones take the
link written out in their equality rows. The duals ν of the link rows follow
Clarabel's convention Px + c + Aᵀz = 0, which is cvxpy's sign for ν;
stationarity in u, which the formulation sees only through its norms, gives
Φᵀν = 2c·u, so c = ∂L/∂‖w‖² = fᵀν / (2‖u‖²), and Lemma 1
(`sparsify.core.declared.DeclaredMarginal`) reads the gradient off ν, β and c.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass
from typing import Any

import cvxpy as cp
import numpy as np
from cvxpy.reductions.solution import Solution
from numpy.typing import NDArray

from sparsify.core.conic_data import ConicData, LinkedProblem, LinkLayout, read_problem_data
from sparsify.core.declared import (
    DeclaredMarginal,
    LinkSolution,
    formulation_label,
    n_outputs,
)
from sparsify.core.formulation import Formulation
from sparsify.core.kernel_blocks import whitening
from sparsify.core.marginal import Evaluation, Marginal
from sparsify.core.memory import check_memory
from sparsify.core.norm_shift import NormShift, shift_norm_epigraph
from sparsify.core.solvers import Attempt, SolverBackend, Unsolved, solve_with_attempts
from sparsify.kernels import Kernel
from sparsify.plugins.plugin_code import is_plugin, plugin_code

__all__ = ["ConicMarginal", "check_finite_data", "compile_linked", "estimate_memory",
           "make_marginal", "unpack"]

Array = NDArray[np.float64]


def estimate_memory(n_samples: int, n_expansion: int, n_outputs: int = 1) -> int:
    """Bytes one evaluation of the generic path needs at least, before compiling.

    The kernel blocks, Φ and the gradient's pieces are about four dense
    N × Nz arrays, the structured backend's Φᵀ H Φ one more, and the formulation's
    own conic data grows with N (about 200 bytes per point and output for the
    built-in formulations). After compiling, each backend estimates its own need
    from the compiled problem's size (`SolverBackend.memory`) and is passed over
    where it would not fit.

    Examples
    --------
    >>> estimate_memory(8000, 50) / 2**20 < 100  # MiB: the 24 GiB of cvxpy's DPP path
    True
    """
    return int(5 * 8 * n_samples * n_expansion + 200 * n_samples * n_outputs + 2**20)


@dataclass
class _Compiled:
    """A layout's compiled problem: the linked data and what maps its solution back to cvxpy."""

    problem: LinkedProblem
    n_own: int  # cvxpy's columns (u's may follow)
    var_id: int
    chain: Any
    inverse_data: Any
    offsets: dict[int, int]  # each cvxpy variable's first column
    shift: NormShift | None = None  # ‖w‖² moved out of the constraints (`shift_norm_epigraph`)


class ConicMarginal(DeclaredMarginal):
    """W(Z) and ∇W(Z) of any declared formulation, in O(N·Nz) memory (the default generic path).

    The formulation is compiled once per data layout with f and u as plain
    variables; each evaluation hands the backend the linked problem at the new
    whitened rows Φ (module docstring). Before anything is compiled, the memory
    the evaluations need is estimated (`estimate_memory`), and after compiling each
    backend estimates its own from the compiled problem's size; a problem that
    would not fit is refused with `sparsify.core.errors.MemoryEstimateError`.

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
        A registered backend name, or "auto": `sparsify.core.solvers.AUTO_CHAIN`
        (the structured interior point, then Clarabel, OSQP and ECOS), each
        backend that cannot take the problem passed over with its reason.
    tol : float, default=1e-9
        Solver accuracy (gap and feasibility).
    jitter : float, default=1e-10
        Added to the diagonal of K_ZZ, relative to the mean kernel diagonal on X.
    max_memory : int, optional
        Bytes the problem may take; by default the memory available now.

    Attributes
    ----------
    backends : list of SolverBackend
        The backends tried in turn at each evaluation.
    last_solve_seconds : float
        Time the backends spent in the last `evaluate` (their solves of the
        linked problem, every attempt), the rest being sparsify's.
    last_backend : str
        The backend that answered the last evaluation.

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
    ((3, 2), (3,), 'structured')
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
        K = n_outputs(formulation, y)
        self._what = (f"The generic path for the {self.formulation_name!r} formulation with "
                      f"N={N}, Nz={Nz}" + (f", K={K} outputs" if K > 1 else ""))
        self._advice = ("Use fewer XVs or a subsample of the training points, or the "
                        "formulation's exact fast path where it has one (solver='auto').")
        self.max_memory = max_memory
        check_memory(estimate_memory(N, Nz, K), self._what, self._advice, max_memory)
        decl = self._declare()
        self.problem = cp.Problem(decl.objective, list(decl.constraints))
        self._compiled: dict[str, _Compiled | str] = {}
        self._reasons: dict[str, str | None] = {}
        self.last_solve_seconds = 0.0
        self.last_backend = ""
        # The first backend that can take the problem is made ready now (so that a
        # problem no backend takes fails here, with each one's reason); the later
        # ones of a chain when they are needed.
        for backend in self.backends:
            if self._ready(backend) is None:
                break
        else:
            reasons = "; ".join(f"{b.name}: {self._reasons[b.name]}" for b in self.backends)
            if all("would need about" in str(self._reasons[b.name]) for b in self.backends):
                from sparsify.core.errors import MemoryEstimateError

                raise MemoryEstimateError(f"{self._what}: no backend fits: {reasons}. "
                                          f"{self._advice}")
            tried = {b.name for b in self.backends}
            hint = ("Use solver='clarabel' (it takes every cone cvxpy produces)."
                    if "clarabel" not in tried else
                    "Clarabel, which takes every cone cvxpy produces, cannot either: the "
                    "declaration uses something no conic solver takes (cvxpy's reason above).")
            raise ValueError(f"No solver given can take the {self.formulation_name!r} "
                             f"formulation: {reasons}. {hint}")

    # -- construction -------------------------------------------------------------------------

    def _compile(self, layout: str) -> _Compiled | str:
        """The problem compiled for ``layout`` (a cvxpy solver name), or why cvxpy cannot."""
        if layout not in self._compiled:
            self._compiled[layout] = compile_linked(self.problem, self.f, self.u, len(self.X),
                                                    self.n_expansion, self.n_outputs, layout,
                                                    formulation_label(self.formulation))
        return self._compiled[layout]

    def _ready(self, backend: SolverBackend) -> str | None:
        """Prepare ``backend`` for this problem; None, or why it cannot take it."""
        if backend.name in self._reasons:
            return self._reasons[backend.name]
        compiled = self._compile(backend.layout)
        if isinstance(compiled, str):
            reason: str | None = compiled
            if backend.quadratic_only:
                reason = (f"it handles quadratic programs only, and cvxpy cannot reduce this "
                          f"one to one ({compiled})")
        else:
            reason = backend.prepare(compiled.problem)
            if reason is None:
                need = backend.memory(compiled.problem)
                limit = self.max_memory
                try:
                    check_memory(need, "it", "", limit)
                except Exception as exc:  # MemoryEstimateError: this backend would not fit
                    reason = str(exc).split(";")[0] + f" (N={len(self.X)}, " \
                        f"Nz={self.n_expansion})"
        self._reasons[backend.name] = reason
        return reason

    # -- evaluation ---------------------------------------------------------------------------

    def _solve_links(self, K_xz: Array, K_zz: Array) -> LinkSolution:
        self.last_solve_seconds = 0.0
        T = whitening(K_zz)
        Phi = K_xz @ T
        result: dict[str, Any] = {}

        def run(backend: SolverBackend, attempt: Attempt) -> str:
            reason = self._ready(backend)
            if reason is not None:
                return f"error (cannot take this problem: {reason})"
            compiled = self._compiled[backend.layout]
            assert not isinstance(compiled, str)
            compiled.problem.set_phi(Phi)
            start = time.perf_counter()
            try:
                answer = backend.solve(compiled.problem, attempt)
            except Exception as exc:  # the solver's own crash is this attempt's failure
                result["cause"] = exc
                return f"error ({type(exc).__name__}: {exc})"
            finally:
                self.last_solve_seconds += time.perf_counter() - start
            x, z = answer.x, answer.z
            if answer.status in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE):
                if x is None or z is None or not (np.isfinite(x).all() and np.isfinite(z).all()):
                    return f"{answer.status} without a finite solution"
                result.update(compiled=compiled, x=x, z=z)
            return answer.status

        try:
            solved = solve_with_attempts(self.backends, self.tol, run)
        except Unsolved as failed:
            raise self._report(Unsolved(failed.statuses, result.get("cause")),
                               self.backends) from result.get("cause")
        compiled, x, z = result["compiled"], result["x"], result["z"]
        own, layout = compiled.problem.own, compiled.problem.layout
        scale = solved.objective_scale
        N, Nz, K = len(self.X), self.n_expansion, self.n_outputs
        x = x[:own.n]
        value = float(own.c @ x + (0.5 * x @ (own.P @ x) if own.P is not None else 0.0)
                      + own.offset)
        self._unpack(compiled, x[:compiled.n_own], value)
        u = x[layout.u].reshape((Nz, K), order="F")
        nu = z[:N * K].reshape((N, K), order="F") / scale
        # stationarity in u: Φᵀν_k = 2 c_k u_k, so c_k = (Φu_k)ᵀν_k / (2‖u_k‖²)
        uu = (u * u).sum(0)
        c_k = np.where(uu > 0, ((Phi @ u) * nu).sum(0) / (2 * np.where(uu > 0, uu, 1.0)), 0.0)
        beta = T @ u
        shape = (lambda a: a.ravel()) if K == 1 else (lambda a: a)
        self.last_backend = solved.backend.name
        return LinkSolution(value=value, beta=shape(beta), nu=shape(nu), c=c_k,
                             backend=solved.backend.name, accuracy=solved.accuracy)

    def _unpack(self, compiled: _Compiled, x: Array, value: float) -> None:
        unpack(self.problem, compiled, x, value)


def compile_linked(problem: cp.Problem, f: cp.Variable, u: cp.Variable, N: int, Nz: int,
                   K: int, layout: str, label: str = "declared formulation") -> _Compiled | str:
    """The declared ``problem`` over f and u compiled for ``layout`` (a cvxpy solver name)
    as a `LinkedProblem`, or why cvxpy cannot compile it for that layout.

    ‖w‖² written inside constraints is moved into the objective where an exact change
    of variable allows it (`sparsify.core.norm_shift`) and the layout's solver takes a
    quadratic objective (ECOS does not: its problem keeps the cone).

    Data that are not finite once compiled (constants that overflow when cvxpy
    multiplies them out) are a ValueError naming the formulation (``label``),
    before any backend sees them.
    """
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # cvxpy's notes about its own reductions
            data, chain, inverse_data = problem.get_problem_data(layout)
    except cp.error.SolverError as exc:
        return " ".join(str(exc).split()).rstrip(".")
    offsets = next(dict(inv.var_offsets) for inv in reversed(inverse_data)
                   if hasattr(inv, "var_offsets"))
    own = read_problem_data(layout, data)
    del data
    check_finite_data(own, label)
    # cvxpy keeps its parametrised program for re-solves, which this path never asks
    # for: about as large again as the problem's data
    cache = getattr(problem, "_cache", None)
    if cache is not None and hasattr(cache, "param_prog"):
        cache.param_prog = None
    n_own = own.n
    # u: the formulation's own columns, or new ones when it never uses ‖w‖
    off_u = offsets.get(u.id, n_own)
    n = max(n_own, off_u + Nz * K)
    solver_inverse = inverse_data[-1].inverse_data
    own = own.widened(n)
    own.offset = float(solver_inverse["offset"])
    layout_ = LinkLayout(n, offsets[f.id], off_u, N, Nz, K)
    shifted = shift_norm_epigraph(own, layout_) if _takes_quadratic_objective(layout) else None
    shift = None
    if shifted is not None:
        own, shift = shifted
    return _Compiled(LinkedProblem(own, layout_), n_own, solver_inverse["var_id"], chain,
                     inverse_data, offsets, shift)


def _takes_quadratic_objective(layout: str) -> bool:
    """Whether cvxpy's solver ``layout`` takes an objective ½xᵀPx + cᵀx (ECOS: a linear one)."""
    from cvxpy.reductions.solvers.defines import SOLVER_MAP_CONIC, SOLVER_MAP_QP

    solver = SOLVER_MAP_CONIC.get(layout) or SOLVER_MAP_QP.get(layout)
    return solver is None or bool(solver.supports_quad_obj())


def check_finite_data(data: ConicData, label: str) -> None:
    """Refuse compiled conic data (P, c, A, b) holding NaN or infinity, naming the formulation.

    The declaration's constants are checked when it is made
    (`sparsify.core.declared.check_declaration`); this catches what overflows
    when cvxpy multiplies them out, which every backend would otherwise be
    handed (and some "solve").

    Examples
    --------
    >>> import scipy.sparse as sp
    >>> from sparsify.core.conic_data import ConeDims
    >>> data = ConicData(None, np.array([np.inf]), sp.csc_matrix((0, 1)), np.zeros(0),
    ...                  ConeDims(0))
    >>> check_finite_data(data, "'x' formulation")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: The 'x' formulation compiles to a problem whose linear objective c holds ...
    """
    parts = {"quadratic objective P": None if data.P is None else data.P.data,
             "linear objective c": data.c, "constraint matrix A": data.A.data,
             "constraint bounds b": data.b}
    for where, values in parts.items():
        if values is None or np.isfinite(values).all():
            continue
        kind = "NaN" if np.isnan(values).any() else "infinity"
        raise ValueError(f"The {label} compiles to a problem whose {where} holds "
                         f"{kind}: a constant of its declaration overflows float64 once cvxpy "
                         "multiplies it out (1e200 · 1e200, say). Rescale the constants (the "
                         "targets or the hyperparameters) that declare() uses.")


def unpack(problem: cp.Problem, compiled: _Compiled, x: Array, value: float) -> None:
    """Set the declaration's variables (the intercept's among them) from the solution x."""
    if compiled.shift is not None:
        x = compiled.shift.restore(x)
    solution = Solution(cp.OPTIMAL, value - compiled.problem.own.offset,
                        {compiled.var_id: x}, {}, {})
    for reduction, inverse in reversed(list(zip(compiled.chain.reductions[:-1],
                                                compiled.inverse_data[:-1], strict=True))):
        solution = reduction.invert(solution, inverse)
    problem.unpack(solution)


def make_marginal(
    formulation: Formulation,
    X: Array,
    y: NDArray[Any] | None,
    kernel: Kernel,
    n_expansion: int,
    solver: str = "auto",
    tol: float = 1e-9,
) -> Marginal:
    """The W(Z) provider a fit uses: the formulation's own, else the generic path.

    With ``solver="auto"`` a formulation that has an exact fast path (or a W
    of its own, as the Rayleigh-quotient KFD) supplies it through
    `Formulation.marginal`; a backend name selects the generic path,
    `ConicMarginal` (O(N·Nz) memory; by default the structured interior point,
    the other backends called directly). cvxpy's DPP path,
    `sparsify.core.declared.CvxpyMarginal`, is its reference in the tests; it
    needs about N·(N·Nz) numbers to compile.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsify import RBF
    >>> from sparsify.core.formulation import make_formulation
    >>> X = np.array([[0.0], [1.0], [2.0], [3.0]]); y = np.array([-1, -1, 1, 1])
    >>> svm = make_formulation("svm")
    >>> type(make_marginal(svm, X, y, RBF(1.0), 2)).__name__
    'SVMDualMarginal'
    >>> type(make_marginal(svm, X, y, RBF(1.0), 2, solver="clarabel")).__name__
    'ConicMarginal'
    """
    with plugin_code(formulation, "marginal()"):
        own = formulation.marginal(X, y, kernel, n_expansion, solver, tol)
    if own is not None:
        return _PluginMarginal(own, formulation) if is_plugin(formulation) else own
    return ConicMarginal(formulation, X, y, kernel, n_expansion, solver=solver, tol=tol)


class _PluginMarginal(Marginal):
    """A plugin's own W(Z) (`Formulation.marginal`), each evaluation inside `plugin_code`."""

    def __init__(self, inner: Marginal, formulation: Formulation) -> None:
        self._inner, self._formulation = inner, formulation
        self.formulation_name = getattr(inner, "formulation_name", "") or formulation.name

    def evaluate(self, Z: Array, grad: bool = True) -> Evaluation:
        with plugin_code(self._formulation, "its own W(Z) (Formulation.marginal)"):
            return self._inner.evaluate(Z, grad)

    def __getattr__(self, name: str) -> Any:  # the wrapped marginal's attributes (n_generic)
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._inner, name)
