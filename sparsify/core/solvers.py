"""Solver backends: which cvxpy solver, its capabilities, and common tolerances.

Each backend is a small immutable object that says which cones it handles and
how a common tolerance maps to the solver's own options. The default
(``solver="auto"``) is Clarabel; it was
chosen by measurement (accuracy of the duals and speed, see
``benchmarks/solver_choice.py`` and ``docs/solvers.md``); its fallbacks are OSQP
with polishing for quadratic programs (slower, but the most accurate duals), then
ECOS.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from importlib.metadata import version
from typing import Any

import cvxpy as cp

from sparsify.core.errors import SolverError
from sparsify.core.hookspecs import hookimpl

__all__ = [
    "AUTO_CHAIN",
    "DOCUMENTED_ACCURACY",
    "Attempt",
    "Solved",
    "SolverBackend",
    "SolverError",
    "Unsolved",
    "solve_problem",
    "solve_with_attempts",
]

# OSQP 1.0 renamed "polish" to "polishing".
_OSQP_POLISH = "polishing" if version("osqp").split(".")[0] not in ("0",) else "polish"

#: ``solver="auto"`` tries these backends in order, skipping those that cannot take
#: the problem (OSQP: quadratic programs only); the next one is used only when the
#: previous one did not return an optimal status.
AUTO_CHAIN = ("clarabel", "osqp", "ecos")


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
class SolverBackend:
    """A cvxpy solver and how sparsify drives it.

    Parameters
    ----------
    name : str
        Name users pass (``solver="osqp"``).
    cvxpy_name : str
        The solver's name in cvxpy.
    quadratic_only : bool
        True when the solver handles quadratic programs only (no cones beyond
        the nonnegative orthant), like OSQP.
    warm_start : bool
        Whether re-solves with new parameter values start from the last solution.
    settings : mapping, optional
        Solver keyword options that override those `options` derives from
        the tolerance (for example ``{"max_iter": 50}``); register such a backend
        under a name of its own to use it.
    gradient_accuracy : float, default=1e-6
        The relative accuracy of ∇W(Z) its duals give at ``tol = 1e-9``, as
        measured by ``benchmarks/gradient_accuracy.py`` over every built-in
        formulation and kernel (docs/results/gradient_accuracy.md) with a margin
        for other processors; the gradient tests hold each backend to it.

    Examples
    --------
    A Clarabel backend with a lower iteration limit:

    >>> short = SolverBackend("clarabel_short", cp.CLARABEL, settings={"max_iter": 50})
    >>> short.options(1e-8)["max_iter"]
    50
    >>> [a.label for a in short.attempts(1e-9)]  # doctest: +NORMALIZE_WHITESPACE
    ['aim tol/100', 'aim tol/100, less regularisation', 'aim tol/100, shorter steps',
     'aim tol/100, more regularisation', 'tol', 'documented accuracy 1e-08']
    """

    name: str
    cvxpy_name: str
    quadratic_only: bool = False
    warm_start: bool = False
    # a dict is not hashable: leave it out of the generated __hash__
    settings: Mapping[str, Any] = field(default_factory=dict, hash=False)
    gradient_accuracy: float = 1e-6

    def options(self, tol: float, aim: float = 1e-2) -> dict[str, Any]:
        """Solver keyword options that guarantee accuracy ``tol`` (gap and feasibility).

        The interior-point backends aim ``aim`` × ``tol`` on the gap and take
        ``tol`` as their "reduced accuracy" threshold, so their inaccurate status
        still meets ``tol``: their duals, and so the gradients, are then as
        accurate as the primal values. ``aim=1`` asks for ``tol`` only.
        `settings` override these options.
        """
        return {**self._tolerance_options(tol, aim), **self.settings}

    def attempts(self, tol: float) -> tuple[Attempt, ...]:
        """The solves to try in turn until one is accepted, most accurate first.

        Interior-point backends (Clarabel, ECOS) first aim at ``tol``/100. Where
        they stall there (it happens on exponential cones), Clarabel retries with
        a smaller static regularisation, then with shorter steps, then with a
        larger static regularisation (for a singular K_ZZ); then both ask
        for ``tol`` itself, and last for their documented accuracy
        (`DOCUMENTED_ACCURACY`) when ``tol`` is tighter. OSQP makes one attempt:
        polishing gives exact duals or nothing.
        """
        if self.cvxpy_name in (cp.OSQP, cp.SCS):
            return (Attempt(self.options(tol), tol, None, "tol"),)
        if self.cvxpy_name not in (cp.CLARABEL, cp.ECOS):
            return (Attempt(self.options(tol), tol, None, "tol"),)
        aim = 1e-2
        tries = [Attempt(self.options(tol, aim), aim * tol, tol, "aim tol/100")]
        if self.cvxpy_name == cp.CLARABEL:
            # Where Clarabel stalls at the aim (about 8 % of the solves of small KLR
            # problems with polynomial kernels), the first two retries reached it in every
            # case measured (benchmarks/gradient_accuracy.py, docs/solvers.md): a smaller
            # static regularisation of its KKT systems, then shorter steps. Where K_ZZ is
            # singular (a cubic kernel at Z = X, 30 points in 3-D: rank 10), its KKT
            # factorisation fails instead, on 3 to 8 % of round-off perturbations of the
            # data whatever the first two; a larger regularisation (undone by its iterative
            # refinement) solved 120 of 120 (docs/reliability.md).
            retries = (("less regularisation", {"static_regularization_constant": 1e-12}),
                       ("shorter steps", {"max_step_fraction": 0.9}),
                       ("more regularisation", {"static_regularization_constant": 1e-7}))
            for label, change in retries:
                tries.append(Attempt({**self._tolerance_options(tol, aim), **change,
                                      **self.settings}, aim * tol, tol,
                                     f"aim tol/100, {label}"))
        if self.cvxpy_name == cp.ECOS:
            # ECOS's line search on exponential cones can fail at its first iterations;
            # the same problem with the objective times 10 went through in 176 of 186
            # such stalls measured (docs/solvers.md), most of them to the aim.
            tries.append(Attempt(self.options(tol, aim), aim * tol, tol,
                                 "aim tol/100, objective x 10", objective_scale=10.0))
        tries.append(Attempt(self.options(tol, 1.0), tol, tol, "tol"))
        if tol < DOCUMENTED_ACCURACY:
            loose = DOCUMENTED_ACCURACY
            tries.append(Attempt(self.options(loose, 1.0), loose, loose,
                                 f"documented accuracy {loose:g}"))
        return tuple(tries)

    def _tolerance_options(self, tol: float, aim: float) -> dict[str, Any]:
        aim = max(tol * aim, 1e-15)
        if self.cvxpy_name == cp.CLARABEL:
            return {
                "tol_gap_abs": aim,
                "tol_gap_rel": aim,
                "tol_feas": tol,
                # the κ/τ test is for infeasibility, not accuracy; the retry
                # (aim ≥ 1) relaxes it to Clarabel's default
                "tol_ktratio": tol if aim < tol else 1e-6,
                "reduced_tol_gap_abs": tol,
                "reduced_tol_gap_rel": tol,
                "reduced_tol_feas": tol,
                "reduced_tol_ktratio": tol if aim < tol else 1e-4,
                "max_iter": 500,
            }
        if self.cvxpy_name == cp.ECOS:
            return {
                "abstol": aim,
                "reltol": aim,
                "feastol": tol,
                "abstol_inacc": tol,
                "reltol_inacc": tol,
                "feastol_inacc": tol,
                "max_iters": 500,
            }
        if self.cvxpy_name == cp.OSQP:
            # First-order duals are noisy: tight tolerances plus polishing (an
            # active-set refinement) give exact duals when polishing succeeds.
            return {"eps_abs": tol, "eps_rel": tol, _OSQP_POLISH: True, "max_iter": 200_000}
        if self.cvxpy_name == cp.SCS:
            # first-order too, without polishing: only tight tolerances, and time
            return {"eps_abs": tol, "eps_rel": tol, "eps_infeas": tol, "max_iters": 200_000}
        return {}

    def available(self) -> bool:
        """Whether cvxpy can find this solver in the current environment."""
        return self.cvxpy_name in cp.installed_solvers()


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
    >>> x = cp.Variable()
    >>> problem = cp.Problem(cp.Minimize(cp.square(x - 1)))
    >>> solved = solve_problem(problem, [SolverBackend("clarabel", cp.CLARABEL)], 1e-9)
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


@hookimpl
def register_solvers(register: Callable[[SolverBackend], None]) -> None:
    register(SolverBackend("clarabel", cp.CLARABEL))
    # ECOS's own duals gave gradients off by up to 2e-5 (kernel ridge); refined by SCS from
    # its answer (sparsify.core.conic._refine) within 1e-6 in the table, stated with a margin
    # for what it does not cover (nearly coinciding XVs: 1.0e-6 measured)
    register(SolverBackend("ecos", cp.ECOS, gradient_accuracy=3e-6))
    register(SolverBackend("osqp", cp.OSQP, quadratic_only=True, warm_start=True))
    # SCS: first-order, so not in the auto chain; for large cone problems where an
    # interior point's factorisation would not fit
    register(SolverBackend("scs", cp.SCS, gradient_accuracy=1e-5))
