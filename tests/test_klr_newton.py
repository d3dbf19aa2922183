"""The KLR fast path (Newton, solver="auto") against the generic cvxpy path, its reference."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg
from sklearn.datasets import make_moons

import sparsify.algorithms.klr.newton as klr_newton
from sparsify import CvxpyMarginal
from sparsify.algorithms.klr.estimator import SparseKernelLogisticRegression
from sparsify.algorithms.klr.newton import NewtonKLRMarginal
from sparsify.core.formulation import make_formulation
from sparsify.core.gradcheck import check_gradient, random_problem
from sparsify.core.solvers import SolverError
from sparsify.kernels import make_kernel
from tests.test_klr import _full_klr_value, _three_classes


def _problem(classes: int, n: int = 40) -> tuple[np.ndarray, np.ndarray]:
    return random_problem(n, 3) if classes == 2 else _three_classes(n)


def _xvs(X: np.ndarray, nz: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return X[:nz] + 0.05 * X.std(0) * rng.normal(size=(nz, X.shape[1]))


@pytest.mark.parametrize("kernel", ["rbf", "poly"])
@pytest.mark.parametrize("classes", [2, 3])
def test_agrees_with_the_generic_path(classes: int, kernel: str) -> None:
    X, y = _problem(classes)
    k = make_kernel(kernel, X)
    Z = _xvs(X, 5)
    formulation = make_formulation("klr", lam=0.1)
    fast = formulation.marginal(X, y, k, len(Z), "auto", 1e-9)
    assert isinstance(fast, NewtonKLRMarginal)
    ref = CvxpyMarginal(formulation, X, y, k, len(Z), solver="ecos", tol=1e-9).evaluate(Z)
    ev = fast.evaluate(Z)
    assert ev.solver == "newton"
    # measured: W to 1e-15, β, b and ∇W to 1e-8 relative (ECOS's own accuracy)
    assert ev.value == pytest.approx(ref.value, rel=1e-6)
    scale = np.abs(ref.coef).max()
    np.testing.assert_allclose(ev.coef, ref.coef, atol=1e-5 * scale)
    np.testing.assert_allclose(ev.intercept, ref.intercept, atol=1e-5 * max(1.0, scale))
    assert np.shape(ev.intercept) == np.shape(ref.intercept)
    assert np.linalg.norm(ev.grad - ref.grad) <= 1e-5 * np.linalg.norm(ref.grad)


@pytest.mark.parametrize("kernel", ["rbf", "poly", "linear", "rbf+linear"])
@pytest.mark.parametrize("classes", [2, 3])
def test_gradient_matches_central_differences(classes: int, kernel: str) -> None:
    X, y = _problem(classes, 30)
    # solver="auto" takes the formulation's own marginal, as a fit does
    result = check_gradient("klr", kernel, solver="auto", X=X, y=y, n_expansion=3, tol=1e-9,
                            lam=1.0)
    assert result.solver == "newton"
    assert result.passed(1e-6), result.as_dict()
    assert np.linalg.norm(result.grad) > 0


def test_a_named_backend_keeps_the_generic_path() -> None:
    X, y = _problem(2)
    k = make_kernel("rbf", X)
    for solver in ("clarabel", "ecos"):
        assert make_formulation("klr", lam=0.1).marginal(X, y, k, 3, solver, 1e-9) is None


@pytest.mark.parametrize("classes", [2, 3])
def test_z_equal_x_gives_the_full_klr(classes: int) -> None:
    X, y = _problem(classes, 25)
    kernel, lam = make_kernel("rbf", X, gamma=0.7), 0.05
    ev = NewtonKLRMarginal(lam, X, y, kernel, len(X)).evaluate(X)
    assert ev.value / len(X) == pytest.approx(_full_klr_value(kernel(X, X), y, lam), rel=1e-6)


def test_warm_start_does_not_change_the_solution() -> None:
    X, y = _problem(3)
    k = make_kernel("rbf", X)
    Z1, Z2 = _xvs(X, 4, 0), _xvs(X, 4, 1)
    warm = NewtonKLRMarginal(0.05, X, y, k, 4)
    warm.evaluate(Z1)
    ev = warm.evaluate(Z2)
    cold = NewtonKLRMarginal(0.05, X, y, k, 4).evaluate(Z2)
    assert ev.value == pytest.approx(cold.value, rel=1e-12)
    np.testing.assert_allclose(ev.grad, cold.grad, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(ev.intercept.sum(), 0.0, atol=1e-12)  # Σ_k b_k = 0


@pytest.mark.parametrize("classes", [2, 3])
def test_diagonal_preconditioner_and_eigen_factor_give_the_same_solution(
    classes: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the paths a large Nz (diagonal preconditioner) and a K_ZZ that round-off made
    # indefinite (eigen factor instead of Cholesky) take
    X, y = _problem(classes)
    k = make_kernel("rbf", X)
    Z = _xvs(X, 6)
    ref = NewtonKLRMarginal(0.05, X, y, k, 6).evaluate(Z)
    monkeypatch.setattr(klr_newton, "BLOCK_PRECONDITIONER_MAX_NZ", 0)
    diag = NewtonKLRMarginal(0.05, X, y, k, 6).evaluate(Z)

    def no_cholesky(*args: object, **kwargs: object) -> None:
        raise np.linalg.LinAlgError("not positive definite")

    monkeypatch.setattr(scipy.linalg, "cholesky", no_cholesky)
    eig = NewtonKLRMarginal(0.05, X, y, k, 6).evaluate(Z)
    for ev in (diag, eig):
        assert ev.value == pytest.approx(ref.value, rel=1e-12)
        np.testing.assert_allclose(ev.coef, ref.coef, rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(ev.grad, ref.grad, rtol=1e-6, atol=1e-8)


def test_estimators_use_the_fast_path_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    evaluate = NewtonKLRMarginal.evaluate

    def spy(self: NewtonKLRMarginal, Z: np.ndarray, grad: bool = True):  # type: ignore[no-untyped-def]
        calls.append(len(Z))
        return evaluate(self, Z, grad)

    monkeypatch.setattr(NewtonKLRMarginal, "evaluate", spy)
    X, y = make_moons(60, noise=0.2, random_state=0)
    fast = SparseKernelLogisticRegression(4, lam=1e-2, gamma=2.0, max_iter=3,
                                          random_state=0).fit(X, y)
    assert calls and set(calls) == {4}
    calls.clear()
    ref = SparseKernelLogisticRegression(4, lam=1e-2, gamma=2.0, max_iter=0, solver="ecos",
                                         random_state=0).fit(X, y)
    assert not calls
    fixed = SparseKernelLogisticRegression(4, lam=1e-2, gamma=2.0, max_iter=0,
                                           random_state=0).fit(X, y)
    assert fixed.objective_ == pytest.approx(ref.objective_, rel=1e-6)
    assert fast.objective_ < fixed.objective_


def test_errors() -> None:
    X, y = _problem(2)
    k = make_kernel("rbf", X)
    with pytest.raises(ValueError, match="needs two classes"):
        NewtonKLRMarginal(0.1, X, np.zeros(len(X)), k, 3)
    with pytest.raises(ValueError, match="The 'lam' parameter of KLR must be a float > 0"):
        NewtonKLRMarginal(0.0, X, y, k, 3)
    with pytest.raises(SolverError, match="did not reach tol=1e-09 in 0 steps"):
        NewtonKLRMarginal(0.1, X, y, k, 3, max_newton=0).evaluate(X[:3])
