"""The core: W(Z) and its Lemma 1 gradient for any formulation, and the contract checks."""

from __future__ import annotations

import cvxpy as cp
import numpy as np
import pytest
from sklearn.svm import SVC

from sparsify import (
    RBF,
    CvxpyMarginal,
    Declaration,
    Formulation,
    NonDifferentiableWarning,
    SolverError,
    expansion_coefficients,
)
from sparsify.core.formulation import make_formulation
from sparsify.core.gradcheck import check_gradient, random_problem
from sparsify.kernels import make_kernel
from sparsify.plugins.registry import get_registry

SOLVERS = ["clarabel", "ecos", "osqp"]
KERNELS = ["rbf", "poly", "linear", "rbf+linear"]


def _accuracy(answered: str) -> float:
    """The gradient accuracy claimed by whatever answered: a backend's, or 1e-6."""
    registry = get_registry()
    if answered in registry.names("solver"):
        return float(registry.get("solver", answered).gradient_accuracy)
    return 1e-6


# the built-ins only: an installed third-party plugin is checked by its own conformance suite
BUILTIN_FORMULATIONS = sorted(name for name, entry in get_registry().entries["formulation"].items()
                              if entry.builtin)


@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("formulation", BUILTIN_FORMULATIONS)
def test_gradient_matches_central_differences(formulation: str, kernel: str, solver: str) -> None:
    try:
        result = check_gradient(formulation, kernel, solver=solver, tol=1e-9)
    except SolverError as exc:
        # OSQP is refused where its polishing fails: unpolished duals are first-order only
        assert solver == "osqp" and "polishing failed" in str(exc), exc
        return
    except ValueError as exc:
        if "handles quadratic programs only" not in str(exc):
            raise
        pytest.skip(f"{solver} cannot solve the {formulation!r} formulation: {exc}")
    # the backend's own accuracy where the generic path answered, else the fast path's 1e-6
    threshold = _accuracy(result.solver)
    assert result.passed(threshold), result.as_dict()
    assert np.linalg.norm(result.grad) > 0


def _svm_dual_value(K: np.ndarray, y: np.ndarray, C: float) -> float:
    """Optimal value of the full SVM, solved directly in the dual."""
    a = cp.Variable(len(y))
    L = np.linalg.cholesky(K + 1e-12 * np.eye(len(y)))
    objective = cp.Maximize(cp.sum(a) - 0.5 * cp.sum_squares(L.T @ cp.multiply(a, y)))
    cp.Problem(objective, [a >= 0, a <= C, y @ a == 0]).solve(solver="CLARABEL")
    return float(objective.value)


@pytest.fixture(scope="module")
def problem() -> tuple[np.ndarray, np.ndarray, RBF, float]:
    X, y = random_problem(n_samples=50, n_features=2, random_state=3)
    return X, y, RBF(0.8), 2.0


def test_z_equal_x_gives_the_full_svm(problem) -> None:
    X, y, kernel, C = problem
    W = CvxpyMarginal(make_formulation("svm", C=C), X, y, kernel, len(X)).evaluate(X)
    direct = _svm_dual_value(kernel(X, X), y, C)
    assert W.value == pytest.approx(direct, rel=1e-6)
    svc = SVC(C=C, kernel="rbf", gamma=0.8, tol=1e-10).fit(X, y)
    dc = svc.dual_coef_.ravel()
    sv = svc.support_vectors_
    libsvm = np.abs(dc).sum() - 0.5 * dc @ kernel(sv, sv) @ dc
    assert W.value == pytest.approx(libsvm, rel=1e-5)
    # the same machine: decision values agree with libsvm's
    tau = kernel(X, X) @ W.coef + W.intercept
    np.testing.assert_allclose(tau, svc.decision_function(X), atol=1e-4)


def test_example_1_support_vectors_are_optimal_xvs(problem) -> None:
    """Paper §5.7, Example 1: with Nz = NSV, the SVs give the full SVM's optimal value."""
    X, y, kernel, C = problem
    svc = SVC(C=C, kernel="rbf", gamma=0.8, tol=1e-10).fit(X, y)
    Z = svc.support_vectors_
    form = make_formulation("svm", C=C)
    at_svs = CvxpyMarginal(form, X, y, kernel, len(Z)).evaluate(Z)
    full = CvxpyMarginal(form, X, y, kernel, len(X)).evaluate(X)
    assert at_svs.value == pytest.approx(full.value, rel=1e-6)
    # and the gradient vanishes there: the SVs are a stationary point of W
    assert np.linalg.norm(at_svs.grad) < 1e-4 * np.linalg.norm(
        CvxpyMarginal(form, X, y, kernel, len(Z)).evaluate(Z + 0.1).grad)


def test_fewer_xvs_cannot_beat_the_full_problem(problem) -> None:
    X, y, kernel, C = problem
    form = make_formulation("svm", C=C)
    full = CvxpyMarginal(form, X, y, kernel, len(X)).evaluate(X).value
    sparse = CvxpyMarginal(form, X, y, kernel, 5).evaluate(X[:5]).value
    assert sparse > full


def test_expansion_coefficients_eq45_is_an_svm_on_fixed_xvs(problem) -> None:
    X, y, kernel, C = problem
    Z = X[:6] + 0.01
    coef, b = expansion_coefficients(X, y, Z, kernel=kernel, C=C)
    direct = CvxpyMarginal(make_formulation("svm", C=C), X, y, kernel, 6).evaluate(Z)
    np.testing.assert_allclose(coef, direct.coef, rtol=1e-5, atol=1e-7)
    # eq. 45 equals an SVM with the kernel K^z(x, x') = ψ(x)ᵀ K_ZZ⁻¹ ψ(x')
    P = kernel(X, Z)
    Kz = P @ np.linalg.solve(kernel(Z, Z), P.T)
    svc = SVC(C=C, kernel="precomputed", tol=1e-10).fit(Kz, y)
    np.testing.assert_allclose(P @ coef + b, svc.decision_function(Kz), atol=1e-4)
    with pytest.raises(ValueError, match="Z has 3 features but X has 2"):
        expansion_coefficients(X, y, np.zeros((2, 3)))


class _MultiRidge(Formulation):
    """Two-output least squares: checks the multi-output design (β of shape Nz × K)."""

    name = "multi_ridge"

    def n_outputs(self, y):
        return 2

    def declare(self, out):
        b = cp.Variable(2)
        T = np.column_stack([out.y, out.y**2])
        loss = cp.sum_squares(out.f + cp.reshape(b, (1, 2), order="C") - T)
        return Declaration(cp.Minimize(loss + 0.5 * out.norms_w2[0] + 2.0 * out.norms_w2[1]),
                           [], b)


def test_multi_output_formulation_gradient_and_shapes() -> None:
    X, y = random_problem(30, 2)
    result = check_gradient(_MultiRidge(), "rbf", X=X, y=y.astype(float), n_expansion=4)
    assert result.rel_error <= 1e-6
    ev = CvxpyMarginal(_MultiRidge(), X, y.astype(float), RBF(0.5), 4).evaluate(X[:4])
    assert ev.coef.shape == (4, 2) and np.shape(ev.intercept) == (2,)


class _Bad(Formulation):
    name = "bad"

    def __init__(self, kind: str) -> None:
        self.kind = kind

    def declare(self, out):
        b = cp.Variable()
        hinge = cp.sum(cp.pos(1 - cp.multiply(out.y, out.f + b)))
        if self.kind == "not_dcp":
            return Declaration(cp.Minimize(hinge - out.norm_w2))
        if self.kind == "not_dpp":
            p = cp.Parameter(nonneg=True, value=1.0)
            return Declaration(cp.Minimize(p * p * hinge + out.norm_w2))
        if self.kind == "own_parameter":
            p = cp.Parameter(nonneg=True, value=1.0)
            return Declaration(cp.Minimize(p * hinge + out.norm_w2))
        if self.kind == "ignores_f":
            return Declaration(cp.Minimize(out.norm_w2 + cp.square(b)))
        if self.kind == "maximize":
            return Declaration(cp.Maximize(-hinge - out.norm_w2))
        if self.kind == "infeasible":
            return Declaration(cp.Minimize(hinge + out.norm_w2), [out.f >= 1, out.f <= -1])
        if self.kind == "exp_cone":
            loss = cp.sum(cp.logistic(-cp.multiply(out.y, out.f)))
            return Declaration(cp.Minimize(loss + out.norm_w2))
        return (hinge, [])


# a plugin's formulation is named with its class
_BAD = r"'bad' formulation \(tests\.test_marginal\._Bad, a plugin\) "


@pytest.mark.parametrize(
    ("kind", "message"),
    [
        ("not_dcp", _BAD + "is not DCP"),
        # only a Parameter of the formulation's own can break DPP (the core's are in the
        # links and the objective's scale); that is what it is told
        ("not_dpp", _BAD + "creates cvxpy Parameters of its own"),
        ("own_parameter", _BAD + "creates cvxpy Parameters of its own"),
        ("ignores_f", _BAD + "ignores the outputs f"),
        ("maximize", _BAD + "must declare a cp.Minimize objective"),
        ("wrong_type", _BAD + "must return a sparsify.Declaration"),
    ],
)
def test_contract_breaches_are_named(kind: str, message: str) -> None:
    X, y = random_problem(10, 2)
    with pytest.raises(ValueError, match=message):
        CvxpyMarginal(_Bad(kind), X, y, RBF(1.0), 3)


def test_qp_only_solver_on_a_cone_problem_is_refused() -> None:
    X, y = random_problem(10, 2)
    with pytest.raises(ValueError, match=r"'osqp' handles quadratic programs only.*'bad'"):
        CvxpyMarginal(_Bad("exp_cone"), X, y, RBF(1.0), 3, solver="osqp")
    ev = CvxpyMarginal(_Bad("exp_cone"), X, y, RBF(1.0), 3, solver="clarabel").evaluate(X[:3])
    assert np.isfinite(ev.value)
    auto = CvxpyMarginal(_Bad("exp_cone"), X, y, RBF(1.0), 3)
    assert [b.name for b in auto.backends] == ["clarabel", "ecos"]


@pytest.mark.parametrize("solver", ["auto", *SOLVERS])
def test_failed_solve_is_an_error_naming_solver_and_formulation(solver: str) -> None:
    X, y = random_problem(10, 2)
    marginal = CvxpyMarginal(_Bad("infeasible"), X, y, RBF(1.0), 3, solver=solver)
    expected = "clarabel then osqp then ecos" if solver == "auto" else solver
    with pytest.raises(SolverError, match=f"{expected} solver did not solve the 'bad' formulation"):
        marginal.evaluate(X[:3])


def test_unknown_solver_lists_the_registered_ones() -> None:
    X, y = random_problem(10, 2)
    with pytest.raises(ValueError, match=r"Unknown solver 'gurobix'.*'clarabel', 'ecos', 'osqp'"):
        CvxpyMarginal(make_formulation("svm"), X, y, RBF(1.0), 3, solver="gurobix")


def test_nondifferentiable_points_warn() -> None:
    class Flagged(Formulation):
        name = "flagged"

        def declare(self, out):
            return Declaration(cp.Minimize(cp.sum_squares(out.f - out.y) + out.norm_w2))

        def nondifferentiable(self, y, dual_f):
            return "test reason"

    X, y = random_problem(10, 2)
    with pytest.warns(NonDifferentiableWarning, match="'flagged'.*test reason"):
        CvxpyMarginal(Flagged(), X, y.astype(float), RBF(1.0), 3).evaluate(X[:3])


def test_svm_flags_support_vectors_from_one_class() -> None:
    svm = make_formulation("svm")
    y = np.array([1, 1, -1, -1])
    assert svm.nondifferentiable(y, np.array([0.5, 0.2, 0.0, 0.0])) is not None
    assert svm.nondifferentiable(y, np.array([0.5, 0.0, -0.5, 0.0])) is None


def test_repeated_evaluations_reuse_one_compiled_problem() -> None:
    X, y = random_problem(30, 2)
    marginal = CvxpyMarginal(make_formulation("svm"), X, y, RBF(1.0), 4)
    marginal.evaluate(X[:4])
    cache = marginal.problem._cache.param_prog
    marginal.evaluate(X[4:8])
    assert marginal.problem._cache.param_prog is cache


def test_clarabel_solves_where_k_zz_is_singular_at_any_round_off() -> None:
    """A cubic kernel at Z = X, 30 points in 3-D: K_ZZ has rank 10 of 30 (the cubic
    monomials of 3 inputs). Clarabel's KKT factorisation failed here with every earlier
    attempt on 3 to 8 % of round-off perturbations of X (seeds 9, 25 and 28 below, on one
    machine; an Intel Xeon failed at the unperturbed X); the retry with a larger static
    regularisation answers, with the same W."""
    X0, _ = random_problem(30, 3, 0)
    oneclass = make_formulation("oneclass")
    values = []
    for seed in (0, 1, 9, 25, 28):
        X = X0 * (1 + 1e-15 * np.random.default_rng(seed).normal(size=X0.shape))
        kernel = make_kernel("poly", X, gamma="scale")
        marginal = CvxpyMarginal(oneclass, X, None, kernel, 30, solver="clarabel", tol=1e-9)
        values.append(marginal.evaluate(X, grad=False).value)
    np.testing.assert_allclose(values, values[0], rtol=1e-8)
