"""The conformance suite for formulations: what any plugin author runs on a new algorithm.

`check_formulation` runs every check on one formulation and returns a
`ConformanceReport`; `formulation_checks` gives the same checks
one by one for ``pytest.mark.parametrize`` (like scikit-learn's
``parametrize_with_checks``). The checks:

``declaration``
    The core's own build checks pass: ``declare`` returns a `Declaration`
    with a ``cp.Minimize`` objective, the problem is DCP and DPP, it creates
    no cvxpy Parameters of its own, and it uses the outputs ``f``.
``full_problem[kernel-solver]``
    With the XVs on the training points (Z = X, Nz = N) W(Z) equals a direct
    solve of the formulation with the full kernel matrix: ``f = K β`` and
    ``‖w‖² = βᵀKβ = ‖Rβ‖²`` with ``RᵀR = K``, built here without the core's
    Parameters and links.
``gradient[kernel-solver]``
    ∇W(Z) of the generic path (Lemma 1, from the duals) against central
    finite differences of W (`sparsify.core.gradcheck.check_gradient`).
``own_value[kernel]``, ``own_gradient[kernel]``
    Only for a formulation that supplies W and ∇W itself (`marginal`):
    its W(Z) equals the generic path's, its reference, and its gradient
    matches finite differences.
``estimator``
    scikit-learn's ``check_estimator`` on the formulation's estimator
    (`sparsify.core.estimator.estimator_for`: the registered one, or the one its
    ``task`` makes) with small, fast settings, when it has one.

A failed check raises an `AssertionError` that names the check, gives
the figures and says what to fix. A check that did not test anything is
never a pass: it "could not run" (a reference that cannot be solved, finite
differences too noisy to judge, a problem too large for memory, a solver not
installed), which fails the report unless ``expected_skips`` declares why, or
it is "not applicable" (no W of its own, OSQP on a problem that is not a QP,
no estimator, ``skip=``), which is reported and never fails.
"""

from __future__ import annotations

import re
import unittest
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import cvxpy as cp
import numpy as np
from numpy.typing import ArrayLike, NDArray

from sparsify.core.conic import ConicMarginal
from sparsify.core.declared import CvxpyMarginal, n_outputs, point_data
from sparsify.core.errors import MemoryEstimateError, PluginError
from sparsify.core.formulation import Formulation, Outputs, make_formulation
from sparsify.core.gradcheck import (
    check_gradient,
    example_point_data,
    example_problem,
    with_point_data,
)
from sparsify.core.kernel_blocks import expansion_factor
from sparsify.core.marginal import Marginal, NonDifferentiableWarning
from sparsify.core.solvers import SolverBackend, SolverError, Unsolved, solve_problem
from sparsify.kernels import Kernel, make_kernel
from sparsify.plugins.plugin_code import plugin_code
from sparsify.plugins.registry import get_registry

__all__ = [
    "CheckResult",
    "ConformanceError",
    "ConformanceReport",
    "FormulationCheck",
    "check_formulation",
    "formulation_checks",
    "parametrize_formulation_checks",
]

Array = NDArray[np.float64]

#: Estimator parameters the estimator check sets, where the estimator has them, so that
#: scikit-learn's many small fits stay fast.
FAST_ESTIMATOR_PARAMS: dict[str, Any] = {"n_expansion": 3, "max_iter": 5, "random_state": 0}


@dataclass(frozen=True)
class CheckResult:
    """The outcome of one conformance check.

    Attributes
    ----------
    name : str
        The check, e.g. ``"gradient[rbf-clarabel]"``.
    status : {"passed", "failed", "could not run", "skipped", "not applicable"}
        "could not run": the check found no way to test (its reference solve
        failed, say), which fails the report unless ``expected_skips`` declares
        why; "skipped": that, declared; "not applicable": the check does not
        concern this formulation or backend (no W of its own, OSQP on a cone
        problem, ``skip=``), never a failure.
    message : str
        The figures (passed), what went wrong and what to fix (failed), or why
        the check did not run.
    figures : dict
        The measured numbers, e.g. ``{"rel_error": 3e-9}``.
    stale : str or None
        A passed check that ``expected_skips`` declared would not run: the
        declared reason, for the report to flag.
    """

    name: str
    status: str
    message: str
    figures: dict[str, float] = field(default_factory=dict)
    stale: str | None = None


@dataclass
class ConformanceReport:
    """What `check_formulation` found, one `CheckResult` per check.

    Attributes
    ----------
    formulation : str
        The formulation's name.
    results : list of CheckResult
    """

    formulation: str
    results: list[CheckResult]

    @property
    def passed(self) -> bool:
        """True when every check passed, was declared skipped, or does not apply.

        A check that failed, or could not run without a declared reason, makes
        it False: a check that did not test anything is not a pass.
        """
        return all(r.status not in ("failed", "could not run") for r in self.results)

    @property
    def stale(self) -> list[CheckResult]:
        """Checks declared in ``expected_skips`` that ran and passed all the same."""
        return [r for r in self.results if r.stale is not None]

    def result(self, name: str) -> CheckResult:
        """The result of the check called ``name``."""
        for r in self.results:
            if r.name == name:
                return r
        raise KeyError(f"No check {name!r}; the checks are {[r.name for r in self.results]}.")

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready summary."""
        return {
            "formulation": self.formulation,
            "passed": self.passed,
            "stale": [r.name for r in self.stale],
            "checks": [
                {"name": r.name, "status": r.status, "message": r.message, **r.figures}
                for r in self.results
            ],
        }

    def table(self, failures: bool = True) -> str:
        """One line per check; ``failures=False`` leaves out the failed checks' messages.

        Checks that could not run are followed by how to declare them, and
        stale declarations by a warning line.
        """
        width = max((len(r.name) for r in self.results), default=0)
        lines = [f"conformance of the {self.formulation!r} formulation:"]
        for r in self.results:
            message = r.message if failures or r.status != "failed" else "(above)"
            lines.append(f"  {r.name:<{width}}  {r.status:<14}  {message}")
        unrun = [r.name for r in self.results if r.status == "could not run"
                 and r.message != _AFTER_DECLARATION and not r.name.startswith("ran[")]
        if unrun:
            example = ", ".join(f"{n!r}: 'why'" for n in unrun)
            lines.append(f"{len(unrun)} check(s) could not run, which fails the report: fix the "
                         f"cause, or declare why with expected_skips={{{example}}} (a family "
                         "such as 'full_problem', or a pattern such as 'gradient[*-osqp]', "
                         "declares several).")
        for r in self.stale:
            lines.append(f"warning: {r.name} was declared in expected_skips ({r.stale!r}) but "
                         "ran and passed; remove the declaration.")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.table()


#: Why the checks after a failed declaration check did not run.
_AFTER_DECLARATION = "not run: the declaration check failed"


class ConformanceError(AssertionError):
    """A conformance report that did not pass; ``report`` is the `ConformanceReport`."""

    def __init__(self, message: str, report: ConformanceReport) -> None:
        super().__init__(message)
        self.report = report


class _NotApplicable(Exception):
    """The check does not concern this formulation or backend; the message says why."""


class _CouldNotRun(Exception):
    """The check found no way to test (a reference that cannot be solved); says why."""


@dataclass(frozen=True)
class FormulationCheck:
    """One named conformance check; call it to run it.

    Calling it returns the figures when it passes (warning if ``expected_skips``
    declared it would not run), raises `AssertionError` when it fails or could
    not run without a declared reason, and raises `unittest.SkipTest` (a skip
    under pytest and unittest) when it does not apply or could not run as
    declared. ``str(check)`` is its name, so
    ``pytest.mark.parametrize("check", formulation_checks(...), ids=str)``
    gives readable test ids.
    """

    name: str
    formulation: str
    function: Callable[[], dict[str, float]] = field(repr=False)
    skip_reason: str | None = None
    expected_skip: str | None = None

    def run(self) -> CheckResult:
        """Run the check and return its `CheckResult` (nothing raised)."""
        if self.skip_reason is not None:
            return CheckResult(self.name, "not applicable", self.skip_reason)
        try:
            figures = self.function()
        except _NotApplicable as exc:
            return CheckResult(self.name, "not applicable", str(exc))
        except (_CouldNotRun, MemoryEstimateError) as exc:
            why = str(exc).rstrip(".")
            if isinstance(exc, MemoryEstimateError):  # it checks the formulation, not the data
                why = ("it would not fit in memory, so it was refused before anything was built "
                       "(pass a smaller X: the conformance suite needs no more than a few dozen "
                       f"points): {why}")
            if self.expected_skip is not None:
                return CheckResult(self.name, "skipped", f"{why} (declared: "
                                   f"{self.expected_skip})")
            return CheckResult(self.name, "could not run",
                               f"{why}; nothing was tested. Fix the cause, or declare it: "
                               f"expected_skips={{{self.name!r}: 'why'}}.")
        except SolverError as exc:
            return self._failed(str(_fail(
                self.name, self.formulation, f"a convex solve failed: {exc}",
                "the problem must be solvable to solver_tol: try another solver=, a "
                "looser solver_tol, or rescale the objective (the built-in one-class "
                "SVM multiplies its objective by νN for this reason).")))
        except AssertionError as exc:
            return self._failed(str(exc))
        except PluginError as exc:  # the formulation's code tried to exit (plugin_code)
            return self._failed(str(_fail(self.name, self.formulation, f"{exc}",
                                          "a formulation's code returns or raises; it never "
                                          "exits the process.")))
        summary = ", ".join(f"{k} = {v:.3g}" for k, v in figures.items())
        return CheckResult(self.name, "passed", summary, figures, stale=self.expected_skip)

    def _failed(self, message: str) -> CheckResult:
        if self.expected_skip is not None:  # the declaration is wrong too: say so
            message += (f" (expected_skips declared that it would not run, "
                        f"{self.expected_skip!r}, but it ran and failed.)")
        return CheckResult(self.name, "failed", message)

    def __call__(self) -> dict[str, float]:
        result = self.run()
        if result.status in ("failed", "could not run"):
            if result.status == "could not run":
                raise AssertionError(f"{self.name} of the {self.formulation!r} formulation "
                                     f"could not run: {result.message}")
            raise AssertionError(result.message)
        if result.status != "passed":
            raise unittest.SkipTest(f"{result.status}: {result.message}")
        if result.stale is not None:
            warnings.warn(f"{self.name} of the {self.formulation!r} formulation was declared in "
                          f"expected_skips ({result.stale!r}) but ran and passed; remove the "
                          "declaration.", UserWarning, stacklevel=2)
        return result.figures

    def __str__(self) -> str:
        return self.name


# --------------------------------------------------------------------------- the checks


def _fail(name: str, formulation: str, what: str, fix: str) -> AssertionError:
    return AssertionError(f"Conformance check {name!r} of the {formulation!r} formulation "
                          f"failed: {what} To fix: {fix}")


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= 300 else text[:297] + "..."


def _relative(a: float, b: float) -> float:
    return abs(a - b) / max(abs(a), abs(b), 1.0)


@dataclass
class _Context:
    """Everything the checks share: the formulation, the data and the settings."""

    formulation: Formulation
    X: Array
    y: NDArray[Any] | None
    n_expansion: int
    gamma: float | str
    tol: float
    solver_tol: float
    random_state: int

    @property
    def name(self) -> str:
        return self.formulation.name or type(self.formulation).__name__

    def kernel(self, kernel: str | Kernel) -> Kernel:
        return make_kernel(kernel, self.X, gamma=self.gamma)

    def generic(self, name: str, kernel: Kernel, n_expansion: int,
                solver: str) -> ConicMarginal:
        """The core's generic path as a fit and `check_gradient` run it (`ConicMarginal`),
        after refusing a solver that cannot take the problem."""
        if solver != "auto":
            backend: SolverBackend = get_registry().get("solver", solver)
            if not backend.available():
                raise _CouldNotRun(f"the solver {solver!r} is not installed")
        try:
            return ConicMarginal(self.formulation, self.X, self.y, kernel, n_expansion,
                                 solver=solver, tol=self.solver_tol)
        except MemoryEstimateError:
            raise  # FormulationCheck.run: "could not run"
        except ValueError as exc:
            if solver != "auto" and "No solver given can take" in str(exc):
                raise _NotApplicable(f"{solver!r} cannot take the {self.name!r} formulation: "
                                     f"{exc}") from exc
            # a check run alone, under pytest: the declaration fails too
            raise _fail(name, self.name, f"its problem cannot be built: {exc}",
                        "see the 'declaration' check.") from exc

    def accuracy(self, solver: str) -> float:
        """The gradient accuracy a check holds ``solver`` (the backend that answered) to:
        ``tol``, or the backend's stated accuracy where that is looser."""
        registry = get_registry()
        if solver in registry.names("solver"):
            return max(self.tol, float(registry.get("solver", solver).gradient_accuracy))
        return self.tol


def _check_declaration(ctx: _Context, name: str) -> dict[str, float]:
    try:
        marginal = CvxpyMarginal(ctx.formulation, ctx.X, ctx.y, ctx.kernel("rbf"),
                                 min(ctx.n_expansion, len(ctx.X)), solver="auto",
                                 tol=ctx.solver_tol)
    except MemoryEstimateError:
        raise  # not the declaration's fault: FormulationCheck.run reports "could not run"
    except ValueError as exc:  # the core's own DCP, DPP, Parameter and use-of-f checks
        raise _fail(name, ctx.name, f"building its problem failed: {exc}",
                    "declare a cp.Minimize problem over out.f and out.norm_w2 (or out.norms_w2) "
                    "and variables of its own, with hyperparameters as plain numbers, that "
                    "cvxpy calls DCP and DPP (problem.is_dcp(), problem.is_dpp()); pass X and y "
                    "as the formulation expects them.") from exc
    except Exception as exc:
        raise _fail(name, ctx.name, f"declare() raised {exc!r}.",
                    "declare(out) must return a sparsify.Declaration built from the fields of "
                    "sparsify.Outputs (docs/plugins.md).") from exc
    return {"n_variables": float(len(marginal.problem.variables())),
            "n_constraints": float(len(marginal.problem.constraints))}


def _direct_full_value(ctx: _Context, kernel: Kernel, backend: SolverBackend | None) -> float:
    """W of the full problem solved directly: f = Kβ, ‖w‖² = ‖Rβ‖², RᵀR = K, no Parameters."""
    N = len(ctx.X)
    K = kernel(ctx.X, ctx.X)
    R = expansion_factor(K)
    k = n_outputs(ctx.formulation, ctx.y)
    beta = cp.Variable((N,) if k == 1 else (N, k))
    f = cp.Variable(beta.shape)
    norms = (cp.sum_squares(R @ beta),) if k == 1 else tuple(
        cp.sum_squares(R @ beta[:, j]) for j in range(k))
    out = Outputs(f=f, norm_w2=cp.sum_squares(R @ beta), norms_w2=norms, y=ctx.y,
                  n_samples=N, n_outputs=k, norm_w=cp.norm(cp.vec(R @ beta, order="F")),
                  X=ctx.X, **point_data(ctx.formulation, ctx.y, N, kernel.diag(ctx.X)))
    decl = ctx.formulation.declare(out)
    problem = cp.Problem(decl.objective, [f == K @ beta, *decl.constraints])
    # the reference is solved by cvxpy itself: a backend it cannot call gives way to its own
    chain = ([backend] if backend is not None and backend.cvxpy_name is not None
             else [get_registry().get("solver", s) for s in ("clarabel", "ecos")])
    chain = [b for b in chain if not (b.quadratic_only and not problem.is_qp())]
    try:
        solve_problem(problem, chain, ctx.solver_tol)
    except Unsolved as failed:
        raise _CouldNotRun(f"the direct full problem could not be solved ({failed}), so "
                           "there is no reference to compare with") from failed
    return float(problem.value)


def _check_full_problem(ctx: _Context, name: str, kernel_name: str | Kernel,
                        solver: str) -> dict[str, float]:
    kernel = ctx.kernel(kernel_name)
    N = len(ctx.X)
    if len(np.unique(ctx.X, axis=0)) < N:
        raise _CouldNotRun("X has duplicate rows, so Z = X would repeat XVs; pass X without "
                           "duplicates")
    sparse = ctx.generic(name, kernel, N, solver).evaluate(ctx.X, grad=False)
    backend = None if solver == "auto" else get_registry().get("solver", solver)
    direct = _direct_full_value(ctx, kernel, backend)
    rel = _relative(sparse.value, direct)
    figures = {"value_z_eq_x": sparse.value, "value_direct": direct, "rel_diff": rel}
    if not rel <= ctx.tol:
        raise _fail(name, ctx.name,
                    f"with Z = X (Nz = N = {N}) W(Z) = {sparse.value:.10g}, but the direct solve "
                    f"of the full kernel problem gives {direct:.10g} (relative difference "
                    f"{rel:.2e} > tol {ctx.tol:g}).",
                    "declare() must be a pure function of `out` and the hyperparameters: use the "
                    "data only through out.f, out.norm_w2, out.norms_w2, out.y and "
                    "out.n_samples, keep no state between calls, and do not depend on Nz. If "
                    "another solver= agrees, the difference is the solver's accuracy.")
    return figures


def _gradient_figures(ctx: _Context, name: str, form_marginal: Marginal, kernel: Kernel,
                      n_expansion: int, solver: str, own: bool) -> dict[str, float]:
    who = "its own (Formulation.marginal)" if own else f"the generic path's ({solver})"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", NonDifferentiableWarning)
        res = check_gradient(ctx.formulation, kernel, solver, X=ctx.X, y=ctx.y,
                             n_expansion=n_expansion, tol=ctx.solver_tol,
                             random_state=ctx.random_state, marginal=form_marginal)
    g, g_fd = float(np.linalg.norm(res.grad)), float(np.linalg.norm(res.numeric))
    figures = {"rel_error": res.rel_error, "fd_error": res.fd_error, "value": res.value,
               "grad_norm": g, "numeric_norm": g_fd}
    shape = f"Nz = {res.grad.shape[0]}, d = {res.grad.shape[1]}"
    nondiff = [str(w.message) for w in caught if issubclass(w.category, NonDifferentiableWarning)]
    # Neither case tests the gradient, so neither is a pass, nor the gradient's failure.
    if res.flat:
        raise _CouldNotRun(f"∇W(Z) and its finite differences are both zero here (‖g‖ = "
                           f"{g:.2e}, ‖g_fd‖ = {g_fd:.2e}, W = {res.value:.6g}, {shape}), so "
                           "the check cannot tell a right gradient from a wrong one: pass "
                           "data X, y and hyperparameters for which W depends on the XVs")
    # held to what the backend that answered states for its duals (the same backend, with
    # the same settings, as check_gradient and a fit use), and at least to tol
    threshold = ctx.tol if own else ctx.accuracy(res.solver)
    if res.fd_error > threshold:
        raise _CouldNotRun(f"the finite differences of W are not accurate enough to judge "
                           f"∇W(Z) to {threshold:g}: their own error is estimated at "
                           f"{res.fd_error:.2e} (noise of W {res.noise:.2e}, W = "
                           f"{res.value:.6g}, {shape}); W has a kink or is noisy at every "
                           "usable step: check at other data or XVs (random_state=) or with a "
                           "tighter solver_tol, and have Formulation.nondifferentiable report "
                           "a W that is not differentiable here")
    if not res.passed(threshold):
        hint = (f" The core warned that W is not differentiable there: {nondiff[0]}"
                if nondiff else "")
        others = [b for b in ("structured", "clarabel", "ecos", "osqp") if b != res.solver]
        fix = (
            "the evaluate() of the Marginal that Formulation.marginal returns must give the "
            "derivative of the value it returns: check its signs, and the K_ZZ term, which "
            "depends on Z through both arguments (Kernel.vjp_zz)."
            if own else
            "the generic gradient (Lemma 1) is exact where W is differentiable and the duals "
            "are accurate: have Formulation.nondifferentiable say where W is not "
            f"differentiable, or try another solver= (one of {others}) or a tighter "
            "solver_tol; a relative error near the threshold is the solver's accuracy."
        )
        raise _fail(name, ctx.name,
                    f"{who} ∇W(Z) differs from central finite differences of W by a relative "
                    f"{res.rel_error:.2e} > {threshold:g} (‖g‖ = {g:.4g}, ‖g_fd‖ = "
                    f"{g_fd:.4g}, W = {res.value:.6g}, {shape}).{hint}", fix)
    return figures


def _check_gradient(ctx: _Context, name: str, kernel_name: str | Kernel,
                    solver: str) -> dict[str, float]:
    kernel = ctx.kernel(kernel_name)
    nz = min(ctx.n_expansion, len(ctx.X))
    marginal = ctx.generic(name, kernel, nz, solver)
    return _gradient_figures(ctx, name, marginal, kernel, nz, solver, own=False)


def _own(ctx: _Context, name: str, kernel: Kernel, nz: int) -> Marginal:
    own = ctx.formulation.marginal(ctx.X, ctx.y, kernel, nz, "auto", ctx.solver_tol)
    if own is None:
        raise _NotApplicable("the formulation supplies no W(Z) of its own "
                             "(Formulation.marginal returns None), so the generic path is all "
                             "there is")
    if not isinstance(own, Marginal):
        raise _fail(name, ctx.name,
                    f"Formulation.marginal returned a {type(own).__name__}, not a "
                    "sparsify.Marginal.",
                    "return a subclass of sparsify.Marginal (evaluate(Z, grad) -> Evaluation) "
                    "or None.")
    return own


def _check_own_value(ctx: _Context, name: str, kernel_name: str | Kernel) -> dict[str, float]:
    kernel = ctx.kernel(kernel_name)
    nz = min(ctx.n_expansion, len(ctx.X))
    own = _own(ctx, name, kernel, nz)
    rng = np.random.default_rng(ctx.random_state)
    Z = ctx.X[rng.choice(len(ctx.X), nz, replace=False)]
    Z = Z + 0.05 * ctx.X.std(0) * rng.normal(size=Z.shape)
    mine = own.evaluate(Z, grad=False).value
    reference = ctx.generic(name, kernel, nz, "auto").evaluate(Z, grad=False).value
    rel = _relative(mine, reference)
    if not rel <= ctx.tol:
        raise _fail(name, ctx.name,
                    f"its own W(Z) = {mine:.10g} (Formulation.marginal) but the generic cvxpy "
                    f"path, its reference, gives {reference:.10g} at the same Z (relative "
                    f"difference {rel:.2e} > tol {ctx.tol:g}, Nz = {nz}).",
                    "Formulation.marginal must compute the W(Z) of the problem declare() "
                    "states; if it deliberately computes an equivalent objective of another "
                    "scale, skip this check with that reason.")
    return {"own_value": mine, "generic_value": reference, "rel_diff": rel}


def _check_own_gradient(ctx: _Context, name: str,
                        kernel_name: str | Kernel) -> dict[str, float]:
    kernel = ctx.kernel(kernel_name)
    nz = min(ctx.n_expansion, len(ctx.X))
    own = _own(ctx, name, kernel, nz)
    return _gradient_figures(ctx, name, own, kernel, nz, "auto", own=True)


def _check_estimator(ctx: _Context, name: str, estimator: Any,
                     expected_failed_checks: Mapping[str, str] | None) -> dict[str, float]:
    from sklearn.base import BaseEstimator
    from sklearn.utils.estimator_checks import check_estimator

    if estimator is False:
        raise _NotApplicable("estimator=False")
    if isinstance(estimator, BaseEstimator):
        est = estimator
    else:
        from sparsify.core.estimator import estimator_for

        try:
            cls, params = estimator_for(type(ctx.formulation))
        except ValueError as exc:
            raise _NotApplicable(f"the formulation has no estimator ({exc})") from None
        est = cls()
        accepted = est.get_params()
        fast = {k: v for k, v in FAST_ESTIMATOR_PARAMS.items() if k in accepted}
        # the formulation's own hyperparameters, where the estimator has them
        own = {k: v for k, v in vars(ctx.formulation).items() if k in accepted}
        est.set_params(**{**fast, **own, **params})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # convergence warnings of the tiny fits
        results = check_estimator(est, expected_failed_checks=dict(expected_failed_checks or {}),
                                  on_skip=None, on_fail=None)
    failed = [r for r in results if r["status"] == "failed"]
    if failed:
        # one line per distinct cause, most frequent first: a cause shared by many checks
        # (the estimator refusing scikit-learn's data) is the one to fix
        causes: dict[str, list[str]] = {}
        for r in failed:
            exc = r["exception"]
            causes.setdefault(f"{type(exc).__name__}: {_one_line(exc)}", []).append(
                r["check_name"])
        listed = "; ".join(
            f"{len(checks)} raised {cause} ({', '.join(checks[:3])}"
            f"{', ...' if len(checks) > 3 else ''})"
            for cause, checks in sorted(causes.items(), key=lambda item: -len(item[1])))
        raise _fail(name, ctx.name,
                    f"scikit-learn's check_estimator on {est!r} failed {len(failed)} of "
                    f"{len(results)} checks, for {len(causes)} cause(s): {listed}.",
                    "make the formulation's estimator follow the scikit-learn API (the developer "
                    "guide's 'Rolling your own estimator'); pass expected_failed_checks= with a "
                    "reason for a check that cannot apply.")
    return {"n_checks": float(len(results)),
            "n_skipped": float(sum(r["status"] == "skipped" for r in results))}


# --------------------------------------------------------------------------- public API


def formulation_checks(
    formulation: str | Formulation,
    X: ArrayLike | None = None,
    y: ArrayLike | None = None,
    *,
    kernels: Sequence[str | Kernel] = ("rbf",),
    solvers: Sequence[str] = ("clarabel",),
    n_expansion: int = 4,
    gamma: float | str = "scale",
    tol: float = 1e-6,
    solver_tol: float = 1e-9,
    estimator: bool | Any = True,
    expected_failed_checks: Mapping[str, str] | None = None,
    skip: Mapping[str, str] | None = None,
    expected_skips: Mapping[str, str] | None = None,
    random_state: int = 0,
    sample_weight: ArrayLike | None = None,
    groups: ArrayLike | None = None,
) -> Iterator[FormulationCheck]:
    """Yield the conformance checks of a formulation one by one, for ``pytest.mark.parametrize``.

    Parameters are those of `check_formulation`. Each item is a
    `FormulationCheck`: call it to run the check. Bad arguments (a ``skip``
    or ``expected_skips`` key that names no check, an unknown kernel or
    solver) raise `ValueError` here, before any check runs.

    Examples
    --------
    In a plugin's own tests::

        import pytest
        from sparsify.testing import formulation_checks

        @pytest.mark.parametrize("check", formulation_checks(MyFormulation()), ids=str)
        def test_conformance(check):
            check()

    >>> for check in formulation_checks("svm", solvers=("clarabel", "osqp")):
    ...     print(check)
    declaration
    full_problem[rbf-clarabel]
    gradient[rbf-clarabel]
    full_problem[rbf-osqp]
    gradient[rbf-osqp]
    own_value[rbf]
    own_gradient[rbf]
    estimator
    """
    form = make_formulation(formulation)
    if X is None:
        X, y = example_problem(form, 30, 3, random_state)
        weights, grouping = example_point_data(form, len(X), random_state)
        sample_weight = weights if sample_weight is None else sample_weight
        groups = grouping if groups is None else groups
    form = with_point_data(form, sample_weight, groups)
    X = np.asarray(X, dtype=float)
    y = None if y is None else np.asarray(y)
    ctx = _Context(form, X, y, int(n_expansion), gamma, float(tol), float(solver_tol),
                   int(random_state))

    for solver in solvers:  # unknown names are refused now, not as a check that fails
        if solver != "auto":
            get_registry().get("solver", solver)
    for kernel in kernels:
        ctx.kernel(kernel)

    def label(kernel: str | Kernel) -> str:
        return kernel if isinstance(kernel, str) else type(kernel).__name__

    specs: list[tuple[str, str, Callable[[], dict[str, float]]]] = []

    def add(base: str, name: str, run: Callable[[str], dict[str, float]]) -> None:
        def guarded() -> dict[str, float]:
            with plugin_code(ctx.formulation, f"the conformance check {name}"):
                return run(name)

        specs.append((base, name, guarded))

    add("declaration", "declaration", lambda n: _check_declaration(ctx, n))
    for kernel in kernels:
        for solver in solvers:
            tag = f"{label(kernel)}-{solver}"
            add("full_problem", f"full_problem[{tag}]",
                lambda n, k=kernel, s=solver: _check_full_problem(ctx, n, k, s))
            add("gradient", f"gradient[{tag}]",
                lambda n, k=kernel, s=solver: _check_gradient(ctx, n, k, s))
    for kernel in kernels:
        add("own_value", f"own_value[{label(kernel)}]",
            lambda n, k=kernel: _check_own_value(ctx, n, k))
        add("own_gradient", f"own_gradient[{label(kernel)}]",
            lambda n, k=kernel: _check_own_gradient(ctx, n, k))
    add("estimator", "estimator",
        lambda n: _check_estimator(ctx, n, estimator, expected_failed_checks))
    listed = [(base, name) for base, name, _ in specs]
    skipped = _resolve("skip", skip, listed)
    expected = _resolve("expected_skips", expected_skips, listed)
    both = sorted(set(skipped) & set(expected))
    if both:
        raise ValueError(f"The check {both[0]!r} is in both skip= ({skipped[both[0]]!r}) and "
                         f"expected_skips= ({expected[both[0]]!r}): skip= says it does not "
                         "apply, so it is never run; expected_skips= that it runs but cannot "
                         "test. Keep one.")
    return iter([FormulationCheck(name, ctx.name, run, skipped.get(name), expected.get(name))
                 for _, name, run in specs])


def _pattern(key: str) -> re.Pattern[str]:
    """``*`` matches any text; everything else, brackets included, is literal."""
    return re.compile(".*".join(re.escape(part) for part in key.split("*")))


def _resolve(parameter: str, given: Mapping[str, str] | None,
             checks: list[tuple[str, str]]) -> dict[str, str]:
    """Each check's reason in ``given``, by its full name, else its family, else a pattern."""
    if given is None:
        return {}
    example = "{'full_problem[rbf-clarabel]': 'why'}"
    if not isinstance(given, Mapping):
        raise ValueError(f"The {parameter!r} parameter of the conformance suite must be a "
                         f"mapping of check names to reasons, such as {example}. Got "
                         f"{type(given).__name__} instead.")
    for key, reason in given.items():
        if not (isinstance(key, str) and isinstance(reason, str) and reason.strip()):
            raise ValueError(f"The {parameter!r} parameter of the conformance suite must map "
                             f"each check name to its reason, a non-empty str, such as "
                             f"{example}. Got {key!r}: {reason!r} instead.")
    names = [name for _, name in checks]
    families = list(dict.fromkeys(base for base, _ in checks))
    patterns = {key: _pattern(key) for key in given if "*" in key}
    unknown = [key for key in given if key not in names and key not in families
               and not (key in patterns and any(patterns[key].fullmatch(n) for n in names))]
    if unknown:
        raise ValueError(f"The {parameter!r} parameter of the conformance suite names checks "
                         f"that do not exist here: {unknown}. The checks are {names}; a family "
                         f"({', '.join(families)}) or a pattern with * ('gradient[*-osqp]') "
                         "names several.")
    resolved: dict[str, str] = {}
    for base, name in checks:
        matches = [given[k] for k, p in patterns.items() if p.fullmatch(name)]
        reason = given.get(name, given.get(base, matches[0] if matches else None))
        if reason is not None:
            resolved[name] = reason
    return resolved


#: The families of which at least one check must run and pass: W against the full problem, and
#: a gradient against finite differences (the generic path's or the formulation's own).
_MUST_RUN = {"full_problem": ("full_problem",), "gradient": ("gradient", "own_gradient")}


def _coverage(checks: list[FormulationCheck], results: list[CheckResult]) -> list[CheckResult]:
    """A "could not run" result for each family of `_MUST_RUN` of which no check tested anything.

    Every check of a family being "not applicable" by sparsify's own decision (no
    solver given can take the problem, say) means the suite tested nothing of it, so
    the report must not pass. Checks the caller declared (``skip=``,
    ``expected_skips=``) and checks that failed or could not run (already failing
    the report) add nothing here.
    """
    out = []
    for family, bases in _MUST_RUN.items():
        members = [(c, r) for c, r in zip(checks, results, strict=True)
                   if c.name.split("[")[0] in bases]
        if not members or any(r.status != "not applicable" for _, r in members):
            continue
        if all(c.skip_reason is not None for c, _ in members):
            continue  # the caller said they do not apply
        reasons = "; ".join(f"{r.name}: {r.message}" for _, r in members)
        out.append(CheckResult(
            f"ran[{family}]", "could not run",
            f"no {family.replace('_', '-')} check tested anything: every one was not "
            f"applicable ({reasons}), so the suite cannot vouch for the formulation. Give a "
            "solver that takes its problem (solvers=('clarabel',)) or a kernel it supports, "
            f"or say why with skip={{{family!r}: 'why'}}"))
    return out


def parametrize_formulation_checks(formulation: str | Formulation, **kwargs: Any) -> Any:
    """A ``pytest.mark.parametrize("check", ...)`` decorator over `formulation_checks`.

    Examples
    --------
    ::

        from sparsify.testing import parametrize_formulation_checks

        @parametrize_formulation_checks(MyFormulation(), kernels=("rbf", "poly"))
        def test_conformance(check):
            check()
    """
    import pytest

    checks = list(formulation_checks(formulation, **kwargs))
    return pytest.mark.parametrize("check", checks, ids=[c.name for c in checks])


def check_formulation(
    formulation: str | Formulation,
    X: ArrayLike | None = None,
    y: ArrayLike | None = None,
    *,
    kernels: Sequence[str | Kernel] = ("rbf",),
    solvers: Sequence[str] = ("clarabel",),
    n_expansion: int = 4,
    gamma: float | str = "scale",
    tol: float = 1e-6,
    solver_tol: float = 1e-9,
    estimator: bool | Any = True,
    expected_failed_checks: Mapping[str, str] | None = None,
    skip: Mapping[str, str] | None = None,
    expected_skips: Mapping[str, str] | None = None,
    random_state: int = 0,
    sample_weight: ArrayLike | None = None,
    groups: ArrayLike | None = None,
) -> ConformanceReport:
    """Run the conformance suite on a formulation; raise if any check fails.

    Parameters
    ----------
    formulation : str or Formulation
        A registered name or an instance (with its hyperparameters).
    X, y : array-like, optional
        Data, with y as the formulation expects it (−1/+1 for binary
        classifiers, class codes for multi-output ones and levels 0..M−1 for
        ordinal ones, relevance for rankers, None when unsupervised); by
        default `sparsify.core.gradcheck.example_problem` (30 points in 3
        dimensions, y shaped for the formulation's task).
    kernels : sequence of str or Kernel, default=("rbf",)
        Kernels the full-problem and gradient checks run with.
    solvers : sequence of str, default=("clarabel",)
        cvxpy backends of the generic path; a backend that cannot take the
        problem (OSQP on a non-quadratic one) is skipped with that reason.
    n_expansion : int, default=4
        Nz of the gradient checks.
    gamma : float or str, default="scale"
        Kernel coefficient.
    tol : float, default=1e-6
        Largest relative error that passes: gradient against finite
        differences, and W against its reference.
    solver_tol : float, default=1e-9
        Accuracy of every convex solve.
    estimator : bool or estimator, default=True
        True checks the formulation's estimator (`sparsify.core.estimator.estimator_for`)
        with `FAST_ESTIMATOR_PARAMS`; an estimator instance is checked as
        it is; False skips the check.
    expected_failed_checks : mapping, optional
        scikit-learn checks expected to fail, with the reason (passed to
        ``check_estimator``).
    skip : mapping, optional
        Checks that do not apply, with the reason; they are not run and are
        reported as "not applicable". A key is a check's full name
        (``"own_value[rbf]"``), its family (``"own_value"``) or a pattern in
        which ``*`` matches any text (``"gradient[*-osqp]"``; brackets are
        literal); the full name wins over the family, the family over a
        pattern. A key that names no check is refused.
    expected_skips : mapping, optional
        Checks expected not to be able to run, with the reason (the direct
        full problem that no backend solves, say), keyed like ``skip``. A
        check that could not run fails the report unless it is declared here,
        and is then reported as "skipped" with both reasons; one declared here
        that ran and passed is flagged in the report
        (`ConformanceReport.stale`) and warns under pytest, and one that ran
        and failed is a failure whose message names the declaration. A check
        may not be in both ``skip`` and ``expected_skips``.
    random_state : int, default=0
        Seed of the default data and of the checked XVs.
    sample_weight : array-like of shape (N,), optional
        The points' weights (``out.weights``) in every check, for a formulation that
        weighs its points (`sparsify.Formulation.weighted`); with the default data,
        weights drawn from [0.5, 2] (`sparsify.core.gradcheck.example_point_data`).
    groups : array-like of shape (N,), optional
        The points' groups (``out.groups``; a ranker's ``out.pairs`` are made within
        them); with the default data, groups of ten points for a ranker.

    Returns
    -------
    ConformanceReport

    Raises
    ------
    ConformanceError
        An `AssertionError` raised when a check fails or could not run without
        a declared reason; the message names each such check, gives the
        figures and says what to fix; ``.report`` holds the whole report.

    Examples
    --------
    >>> report = check_formulation("oneclass", estimator=False)
    >>> report.passed, report.result("gradient[rbf-clarabel]").status
    (True, 'passed')
    >>> report.result("own_value[rbf]").status  # oneclass has only the generic path
    'not applicable'

    A formulation that creates a cvxpy Parameter of its own fails the
    ``declaration`` check; the message quotes the core's reason and says what to
    change, and the checks that depend on the declaration are not run:

    >>> import cvxpy as cp
    >>> from sparsify import Declaration, Formulation
    >>> class Tunable(Formulation):
    ...     name = "tunable"
    ...     def declare(self, out):
    ...         lam = cp.Parameter(nonneg=True, value=1.0)
    ...         return Declaration(cp.Minimize(cp.sum_squares(out.f - out.y) + lam * out.norm_w2))
    >>> check_formulation(Tunable(), estimator=False)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    sparsify.testing.ConformanceError: The 'tunable' formulation failed 1 of 6 conformance ...
    """
    checks = list(formulation_checks(
        formulation, X, y, kernels=kernels, solvers=solvers, n_expansion=n_expansion,
        gamma=gamma, tol=tol, solver_tol=solver_tol, estimator=estimator,
        expected_failed_checks=expected_failed_checks, skip=skip,
        expected_skips=expected_skips, random_state=random_state,
        sample_weight=sample_weight, groups=groups))
    name = checks[0].formulation
    results: list[CheckResult] = []
    declared = True
    for check in checks:
        if not declared:
            results.append(CheckResult(check.name, "could not run", _AFTER_DECLARATION))
            continue
        results.append(check.run())
        declared = not (check.name == "declaration" and results[-1].status == "failed")
    results += _coverage(checks, results)
    report = ConformanceReport(name, results)
    failed = [r for r in results if r.status == "failed"]
    unrun = [r for r in results if r.status == "could not run"
             and r.message != _AFTER_DECLARATION]  # those follow from a failure listed
    if failed or unrun:
        what = [f"failed {len(failed)}"] if failed else []
        what += [f"could not run {len(unrun)}"] if unrun else []
        raise ConformanceError(
            f"The {name!r} formulation {' and '.join(what)} of {len(results)} conformance "
            "checks:\n" + "\n".join(f"- {r.name}: {r.message}" if r.status != "failed"
                                    else f"- {r.message}" for r in failed + unrun)
            + f"\n\n{report.table(failures=False)}", report)
    return report
