"""Solver backends: the interface, the attempts at an accuracy, and cvxpy's own solve.

Each backend (`SolverBackend`) is a small immutable object that says which cones
it handles, how a common tolerance maps to the solver's own options, and how it
solves the generic path's conic data (`sparsify.core.conic_data`); the built-in
ones are in `sparsify.core.backends`. ``solver="auto"`` tries `AUTO_CHAIN` in
turn: the structured interior point (the linked problem's structure, O(N·Nz²)
per iteration), then Clarabel, OSQP with polishing for quadratic programs, and
ECOS; each was chosen by measurement (``docs/solvers.md``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import cvxpy as cp
import numpy as np
from numpy.typing import NDArray

from sparsify.core.errors import SolverError
from sparsify.plugins.registry import get_registry

if TYPE_CHECKING:
    from sparsify.core.conic_data import LinkedProblem

__all__ = [
    "AUTO_CHAIN",
    "DOCUMENTED_ACCURACY",
    "Attempt",
    "ConicResult",
    "Solved",
    "SolverBackend",
    "SolverError",
    "Unsolved",
    "resolve_backends",
    "solve_problem",
    "solve_with_attempts",
    "status_hint",
]

#: ``solver="auto"`` tries these backends in order, skipping those that cannot take
#: the problem (the structured interior point: no exponential, semidefinite or power
#: cones, and a formulation whose own variables split into small blocks; OSQP:
#: quadratic programs only); the next one is used only when the previous one did
#: not return an optimal status.
AUTO_CHAIN = ("structured", "clarabel", "osqp", "ecos")


#: The accuracy each backend documents for its default settings (relative duality gap
#: and feasibility): Clarabel's ``tol_gap_rel``/``tol_feas`` and ECOS's
#: ``reltol``/``feastol`` are 1e-8. When a backend stalls above a tighter ``tol`` (it
#: happens on exponential cones, whose barrier is badly conditioned near the optimum),
#: its last attempt accepts this accuracy, and says so (`Attempt.accuracy`).
DOCUMENTED_ACCURACY = 1e-8


@dataclass(frozen=True)
class Attempt:
    """One solve a backend tries: its options and the accuracy an accepted answer has.

    Attributes
    ----------
    options : dict
        Keyword options for ``cvxpy.Problem.solve``.
    accuracy : float
        Relative accuracy of W guaranteed by an ``optimal`` status with these
        options: the duality gap divided by max(1, |W|).
    inaccurate : float or None
        The same for cvxpy's ``optimal_inaccurate`` status (the solver's "reduced
        accuracy" stop); None when that status is refused.
    label : str
        What differs from the first attempt, for messages.
    objective_scale : float
        The objective is multiplied by this for the solve (W, and the duals,
        are divided by it afterwards); 1 leaves it alone.
    """

    options: dict[str, Any]
    accuracy: float
    inaccurate: float | None
    label: str
    objective_scale: float = 1.0


@dataclass(frozen=True)
class ConicResult:
    """What a backend returns for a linked conic problem (`SolverBackend.solve`).

    Attributes
    ----------
    status : str
        cvxpy's status name ("optimal", "optimal_inaccurate", "infeasible", ...) or a
        text starting with "error".
    x : ndarray or None
        The primal solution (the linked problem's columns).
    z : ndarray or None
        The duals of the linked problem's rows (the link's first), in Clarabel's
        sign convention: P x + c + Aᵀ z = 0.
    """

    status: str
    x: NDArray[np.float64] | None = None
    z: NDArray[np.float64] | None = None


@dataclass(frozen=True)
class SolverBackend:
    """A solver backend: its capabilities, its tolerances, and its call on conic data.

    A backend is a small immutable object; a subclass per solver sets the class
    attributes below and implements `solve` (and, for cvxpy's own solve, the DPP
    reference path, names `cvxpy_name`). An instance registered through the
    ``register_solvers`` hook is usable by name (``solver="..."``) wherever sparsify
    solves a formulation.

    Parameters
    ----------
    name : str
        Name users pass (``solver="clarabel"``).
    settings : mapping, optional
        Solver keyword options that override those `options` derives from
        the tolerance (for example ``{"max_iter": 50}``); register such a backend
        under a name of its own to use it.
    gradient_accuracy : float, default=1e-6
        The relative accuracy of ∇W(Z) its duals give at ``tol = 1e-9``, as
        measured by ``benchmarks/gradient_accuracy.py`` over every built-in
        formulation and kernel (docs/results/gradient_accuracy.md) with a margin
        for other processors; the gradient tests hold each backend to it.

    Attributes
    ----------
    layout : str
        The cvxpy solver whose problem data (``get_problem_data``) the generic path
        compiles the formulation to, read into Clarabel's layout
        (`sparsify.core.conic_data.read_problem_data`).
    cvxpy_name : str or None
        The solver cvxpy's own ``solve`` calls for this backend (the DPP
        reference path, `sparsify.core.declared.CvxpyMarginal`); None where
        cvxpy has no such solver.
    cones : frozenset of str
        The kinds of cone it takes ("zero", "nonneg", "soc", "exp", "psd", "power").
    warm_start : bool
        Whether a solve may start from the previous evaluation's solution.

    Examples
    --------
    A Clarabel backend with a lower iteration limit:

    >>> from sparsify.core.backends import ClarabelBackend
    >>> short = ClarabelBackend("clarabel_short", settings={"max_iter": 50})
    >>> short.options(1e-8)["max_iter"]
    50
    >>> [a.label for a in short.attempts(1e-9)]  # doctest: +NORMALIZE_WHITESPACE
    ['aim tol/100', 'aim tol/100, less regularisation', 'aim tol/100, shorter steps',
     'aim tol/100, more regularisation', 'tol', 'documented accuracy 1e-08']
    """

    name: str
    # a dict is not hashable: leave it out of the generated __hash__
    settings: Mapping[str, Any] = field(default_factory=dict, hash=False)
    gradient_accuracy: float = 1e-6

    layout: ClassVar[str] = cp.CLARABEL
    cvxpy_name: ClassVar[str | None] = None
    cones: ClassVar[frozenset[str]] = frozenset({"zero", "nonneg"})
    warm_start: ClassVar[bool] = False

    @property
    def quadratic_only(self) -> bool:
        """True when it takes quadratic programs only (no cone beyond the orthant)."""
        return self.cones <= {"zero", "nonneg"}

    def options(self, tol: float, aim: float = 1e-2) -> dict[str, Any]:
        """Solver keyword options that guarantee accuracy ``tol`` (gap and feasibility).

        Interior-point backends aim ``aim`` × ``tol`` on the gap and take ``tol``
        as their "reduced accuracy" threshold, so their inaccurate status still
        meets ``tol``: their duals, and so the gradients, are then as accurate as
        the primal values. ``aim=1`` asks for ``tol`` only. `settings` override
        these options.
        """
        return {**self._tolerance_options(tol, aim), **self.settings}

    def _tolerance_options(self, tol: float, aim: float) -> dict[str, Any]:
        """The solver's own options for accuracy ``tol`` (aiming at ``aim`` × ``tol``)."""
        return {}

    def attempts(self, tol: float) -> tuple[Attempt, ...]:
        """The solves to try in turn until one is accepted, most accurate first.

        One attempt at ``tol`` unless a backend says otherwise.
        """
        return (Attempt(self.options(tol, 1.0), tol, None, "tol"),)

    def _interior_point_attempts(self, tol: float,
                                 retries: tuple[tuple[str, dict[str, Any], float], ...] = ()
                                 ) -> tuple[Attempt, ...]:
        """An interior point's attempts: aim at tol/100, the ``retries`` (label, options,
        objective scale), then ``tol``, then the documented accuracy."""
        aim = 1e-2
        tries = [Attempt(self.options(tol, aim), aim * tol, tol, "aim tol/100")]
        for label, change, scale in retries:
            tries.append(Attempt({**self._tolerance_options(tol, aim), **change,
                                  **self.settings}, aim * tol, tol,
                                 f"aim tol/100, {label}", objective_scale=scale))
        tries.append(Attempt(self.options(tol, 1.0), tol, tol, "tol"))
        if tol < DOCUMENTED_ACCURACY:
            loose = DOCUMENTED_ACCURACY
            tries.append(Attempt(self.options(loose, 1.0), loose, loose,
                                 f"documented accuracy {loose:g}"))
        return tuple(tries)

    def available(self) -> bool:
        """Whether the solver is installed."""
        return self.cvxpy_name is None or self.cvxpy_name in cp.installed_solvers()

    def prepare(self, problem: LinkedProblem) -> str | None:
        """Get ready for ``problem`` (per-problem state goes into ``problem.cache``).

        Returns None, or why this backend cannot take the problem (a cone it does
        not handle, a structure it cannot use).
        """
        missing = problem.own.cones.kinds - self.cones
        if missing:
            return (f"it handles {'/'.join(sorted(self.cones))} cones only, and the problem "
                    f"has {'/'.join(sorted(missing))} ones")
        return None

    def memory(self, problem: LinkedProblem) -> int:
        """Bytes a solve of ``problem`` needs beyond the evaluation's own (after `prepare`).

        A backend that takes the link written out holds Φ's N·Nz·K entries in its
        equality rows; it and the solver copy them, and the solver's sparse
        factor fills in around those dense columns (about the block again): five
        copies at 12 bytes (a value and an index), plus the formulation's own
        data, copied and factored (about eight copies of its nonzeros).
        """
        layout, own = problem.layout, problem.own
        link = layout.N * layout.Nz * layout.K
        own_nnz = own.A.nnz + (own.P.nnz if own.P is not None else 0) + own.n + len(own.b)
        return int(5 * 12 * link + 8 * 12 * own_nnz)

    def solve(self, problem: LinkedProblem, attempt: Attempt) -> ConicResult:
        """Solve the linked problem at its current Φ with ``attempt``'s options."""
        raise NotImplementedError(f"The solver backend {self.name!r} has no generic-path "
                                  "interface: implement SolverBackend.solve.")


@dataclass
class Solved:
    """Which backend and attempt answered `solve_problem`, and the accuracy reached.

    Attributes
    ----------
    backend : SolverBackend
    attempt : Attempt
    accuracy : float
        Relative accuracy of the optimal value (gap / max(1, |W|)) guaranteed by
        the status the solver returned.
    objective_scale : float
        What the objective was multiplied by (divide the value and duals by it).
    """

    backend: SolverBackend
    attempt: Attempt
    accuracy: float
    objective_scale: float = 1.0


class Unsolved(Exception):
    """No backend's attempts were accepted; ``statuses`` holds each backend's last status."""

    def __init__(self, statuses: list[tuple[SolverBackend, str]], cause: Exception | None):
        super().__init__("; ".join(f"{b.name}: {s}" for b, s in statuses))
        self.statuses = statuses
        self.cause = cause


def solve_with_attempts(
    backends: list[SolverBackend],
    tol: float,
    run: Callable[[SolverBackend, Attempt], str],
    rescalable: bool = True,
) -> Solved:
    """Try each backend's `SolverBackend.attempts` in turn until one is accepted.

    Parameters
    ----------
    backends : list of SolverBackend
        Tried in order; a backend's next attempt, then the next backend, is tried
        only when the previous one was not accepted.
    tol : float
        The accuracy asked for.
    run : callable
        ``run(backend, attempt)`` solves once and returns cvxpy's status name
        (``"optimal"``, ``"optimal_inaccurate"``, ``"infeasible"``, ...) or a
        text starting with ``"error"``.
    rescalable : bool, default=True
        Whether ``run`` honours `Attempt.objective_scale`; if not, such
        attempts are skipped.

    Returns
    -------
    Solved

    Raises
    ------
    Unsolved
        With each backend's last status, when no attempt was accepted.
    """
    statuses: list[tuple[SolverBackend, str]] = []
    for backend in backends:
        status, fallback = "not tried", None
        inaccurate = 0.0  # fallback.inaccurate as a float: set with fallback, never None
        for attempt in backend.attempts(tol):
            if attempt.objective_scale != 1.0 and not rescalable:
                continue
            if fallback is not None and attempt.accuracy >= inaccurate:
                break  # no attempt left that would be more accurate than the one in hand
            status = run(backend, attempt)
            if status == cp.OPTIMAL:
                return Solved(backend, attempt, attempt.accuracy, attempt.objective_scale)
            if status == cp.OPTIMAL_INACCURATE and attempt.inaccurate is not None:
                # accepted, but a later attempt may reach the aim: keep looking first
                if fallback is None:
                    fallback, inaccurate = attempt, attempt.inaccurate
        if fallback is not None:
            again = run(backend, fallback)
            if again in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE):
                accuracy = fallback.accuracy if again == cp.OPTIMAL else inaccurate
                return Solved(backend, fallback, float(accuracy), fallback.objective_scale)
        statuses.append((backend, status))
    raise Unsolved(statuses, None)


def solve_problem(
    problem: cp.Problem,
    backends: list[SolverBackend],
    tol: float,
    has_solution: Any = None,
    objective_scale: cp.Parameter | None = None,
) -> Solved:
    """Solve a cvxpy ``problem`` with each backend's `SolverBackend.attempts` in turn.

    Parameters
    ----------
    problem : cvxpy.Problem
    backends : list of SolverBackend
        Tried in order (`solve_with_attempts`).
    tol : float
        The accuracy asked for.
    has_solution : callable, optional
        Called after an accepted status; False refuses it (for example: no duals).
    objective_scale : cvxpy.Parameter, optional
        A nonnegative scalar Parameter that multiplies the problem's objective;
        `solve_problem` sets it for each attempt (`Attempt.objective_scale`).
        Without it, attempts that rescale the objective are skipped.

    Returns
    -------
    Solved

    Raises
    ------
    Unsolved
        With each backend's last status, when no attempt was accepted.

    Examples
    --------
    >>> from sparsify.core.backends import ClarabelBackend
    >>> x = cp.Variable()
    >>> problem = cp.Problem(cp.Minimize(cp.square(x - 1)))
    >>> solved = solve_problem(problem, [ClarabelBackend("clarabel")], 1e-9)
    >>> solved.backend.name, round(float(x.value), 6), solved.accuracy <= 1e-9
    ('clarabel', 1.0, True)
    """
    import warnings

    cause: list[Exception] = []

    def run(backend: SolverBackend, attempt: Attempt) -> str:
        if objective_scale is not None:
            objective_scale.value = attempt.objective_scale
        try:
            with warnings.catch_warnings():
                # an inaccurate status is judged by the caller, by the attempt's own rule
                warnings.filterwarnings("ignore", "Solution may be inaccurate")
                problem.solve(solver=backend.cvxpy_name, warm_start=backend.warm_start,
                              **attempt.options)
        except Exception as exc:
            # cvxpy's SolverError or the solver's own crash: this attempt failed
            cause[:] = [exc]
            return (f"error ({exc})" if isinstance(exc, cp.error.SolverError)
                    else f"error ({type(exc).__name__}: {exc})")
        if problem.status in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE) and has_solution is not None \
                and not has_solution():
            return f"{problem.status} without duals"
        return str(problem.status)

    try:
        return solve_with_attempts(backends, tol, run, rescalable=objective_scale is not None)
    except Unsolved as failed:
        raise Unsolved(failed.statuses, cause[0] if cause else None) from None


#: What to change when every backend that answered gave the same certain verdict. A
#: badly scaled problem (a linear kernel on features of size 1e8) can draw either
#: verdict from a solver, so each hint names that cause too.
_HINTS = {
    cp.INFEASIBLE: (
        "The solver finds the problem infeasible at these XVs: its constraints cannot all "
        "hold. Check the formulation's constraints and the data (identical inputs in "
        "different classes cannot be told apart; XVs far from the data make K(X, Z) "
        "underflow to 0), or rescale the data if it is badly scaled."
    ),
    cp.UNBOUNDED: (
        "The solver finds the objective unbounded below: every variable of the formulation "
        "must be bounded by its objective or its constraints (a loss on f, a ||w||^2 term); "
        "if it is, the problem is badly scaled: rescale the data."
    ),
    cp.USER_LIMIT: (
        "The solver hit its iteration or time limit: raise max_iter in the backend's "
        "settings, loosen solver_tol, or rescale the data."
    ),
}


def status_hint(statuses: list[str]) -> str:
    """What to change, from the statuses of the backends that did not solve a problem.

    The hint for a certificate (infeasible or unbounded) that no other backend
    contradicts, or for a unanimous verdict; else the general advice.

    Examples
    --------
    >>> status_hint(["infeasible", "infeasible"])[:45]
    'The solver finds the problem infeasible at th'
    >>> status_hint(["infeasible", "unbounded"])
    'Try another solver=, a looser tol, or rescale the data.'
    >>> status_hint(["error (stalled)", "unbounded", "user_limit"])[:44]
    'The solver finds the objective unbounded bel'
    """
    # A crashed backend says nothing about the problem, and an inaccurate verdict is
    # no certificate (OSQP calls an ill-conditioned SVM "unbounded_inaccurate").
    verdicts = {s for s in statuses if not s.startswith("error")}
    # a certificate (infeasible, unbounded) outweighs backends that only stalled or stopped
    certificates = verdicts & {"infeasible", "unbounded"}
    if len(certificates) == 1:
        return _HINTS[certificates.pop()]
    if len(verdicts) == 1 and (verdict := verdicts.pop()) in _HINTS:
        return _HINTS[verdict]
    return "Try another solver=, a looser tol, or rescale the data."


def resolve_backends(solver: str, cvxpy_only: bool = False) -> list[SolverBackend]:
    """The registered backends ``solver`` names: one, or `AUTO_CHAIN`'s installed ones for "auto".

    ``cvxpy_only`` keeps those cvxpy's own solve can call (the DPP path).
    """
    registry = get_registry()
    if solver == "auto":
        chain = [registry.get("solver", name) for name in AUTO_CHAIN]
        chain = [b for b in chain if b.available() and not (cvxpy_only and b.cvxpy_name is None)]
        if not chain:
            raise SolverError(f"None of the default solvers {AUTO_CHAIN} is installed.")
        return chain
    backend: SolverBackend = registry.get("solver", solver)
    if not backend.available():
        raise SolverError(f"The solver {solver!r} is registered but is not installed; install "
                          "it or choose another solver.")
    if cvxpy_only and backend.cvxpy_name is None:
        raise ValueError(f"The solver {solver!r} works on sparsify's generic path only "
                         "(ConicMarginal), not through cvxpy's own solve; choose one of "
                         "'clarabel', 'ecos', 'osqp', 'scs' for CvxpyMarginal.")
    return [backend]
