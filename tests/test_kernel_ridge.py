"""SparseKernelRidge: the closed-form W(Z) and ∇W(Z) against the generic path, finite
differences and the full problem solved directly; the estimator against scikit-learn."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks

import sparsify.core.memory
from sparsify import RBF, CvxpyMarginal, Polynomial, SparseKernelRidge
from sparsify.algorithms.kernel_ridge.closed_form import RidgeMarginal
from sparsify.algorithms.kernel_ridge.formulation import KernelRidge
from sparsify.core.errors import MemoryEstimateError
from sparsify.core.gradcheck import check_gradient


def _data(n: int = 60, d: int = 2, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, size=(n, d))
    return X, np.sin(X[:, 0]) + 0.5 * X[:, -1] ** 2 + 0.1 * rng.normal(size=n)


@pytest.mark.parametrize("kernel", [RBF(0.7), Polynomial(gamma=0.5, degree=2, coef0=1.0)])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_closed_form_equals_the_generic_path(kernel, seed: int) -> None:
    X, y = _data(seed=seed)
    Z = np.random.default_rng(seed + 10).uniform(-2, 2, size=(5, 2))
    own = RidgeMarginal(0.3, X, y, kernel, 5).evaluate(Z)
    ref = CvxpyMarginal(KernelRidge(0.3), X, y, kernel, 5, solver="clarabel",
                        tol=1e-10).evaluate(Z)
    # Clarabel at 1e-10 gives W and its duals to about 1e-8 relative on this problem
    assert own.value == pytest.approx(ref.value, rel=1e-6)
    np.testing.assert_allclose(own.grad, ref.grad, rtol=1e-5,
                               atol=1e-6 * np.abs(ref.grad).max())
    np.testing.assert_allclose(own.coef, ref.coef, rtol=1e-5, atol=1e-6 * np.abs(ref.coef).max())


def test_gradient_matches_finite_differences() -> None:
    for kernel in ("rbf", "poly"):
        result = check_gradient("kernel_ridge", kernel, alpha=0.5)
        assert result.passed(1e-6), result


def test_gradient_holds_where_k_zz_is_numerically_singular() -> None:
    """Points on a curve in 16-D (as naval's), α = 1e-10 and 120 XVs: K_ZZ's smallest
    eigenvalues are at round-off, β = Tγ reaches 6e4 and y − K_XZ β cancels to a few digits;
    the residual from the whitened rows keeps ∇W right (the residual y − K_XZ β − b missed it
    by 30 to 500 times).

    W (about 1e-9) is known only to about ε·Nz / jitter ≈ 1e-4 of itself here (the eigenvalues
    of K_ZZ + jitter·I that carry it are the jitter, 1e-10, known to round-off), so central
    differences at h = 1e-5 carry up to 1.5e-8 of noise, as much as a derivative along a random
    direction (about 1e-8; on one machine they agreed, on another they were 2× apart). Along
    ∇W itself, and along its parts on either half of the XVs, the derivatives are 6e-7 to 1e-6:
    noise ≤ 2.5 % and the h² term ≤ 2 % (measured over h = 1e-6 … 3e-5).
    """
    rng = np.random.default_rng(0)
    t = rng.uniform(-1, 1, size=(1000, 2)) * [1.0, 0.1]
    X = np.column_stack([np.sin(0.3 * (k + 1) * t[:, 0] + k) + t[:, 1] * (k % 3)
                         for k in range(16)])
    X = (X - X.mean(0)) / X.std(0)
    marginal = RidgeMarginal(1e-10, X, np.sin(2 * t[:, 0]) + t[:, 1], RBF(1 / 32), 120)
    Z = X[rng.choice(1000, 120, replace=False)]
    grad = marginal.evaluate(Z).grad
    first_half = np.arange(len(Z))[:, None] < len(Z) // 2
    h = 1e-5
    for v in (grad, np.where(first_half, grad, 0.0), np.where(first_half, 0.0, grad)):
        v = v / np.linalg.norm(v)
        fd = (marginal.evaluate(Z + h * v, grad=False).value
              - marginal.evaluate(Z - h * v, grad=False).value) / (2 * h)
        assert float(np.sum(grad * v)) == pytest.approx(fd, rel=0.05)


def test_z_equal_x_is_the_full_kernel_ridge_solved_directly() -> None:
    """Nz = N with Z = X and α: the full problem, against its normal equations."""
    X, y = _data(40)
    alpha, kernel = 0.2, RBF(0.5)
    ev = RidgeMarginal(alpha, X, y, kernel, 40).evaluate(X)
    K = kernel(X, X)
    A = np.zeros((41, 41))
    A[:40, :40], A[:40, 40], A[40, :40], A[40, 40] = K + alpha * np.eye(40), 1.0, K.sum(0), 40.0
    beta_b = np.linalg.solve(A, np.append(y, y.sum()))
    np.testing.assert_allclose(K @ ev.coef + ev.intercept, K @ beta_b[:40] + beta_b[40],
                               rtol=1e-8, atol=1e-8)


def test_coinciding_xvs_are_handled_by_the_whitening() -> None:
    X, y = _data()
    Z = np.vstack([X[:3], X[:3]])  # every XV twice: K_ZZ singular
    ev = RidgeMarginal(0.1, X, y, RBF(1.0), 6).evaluate(Z)
    single = RidgeMarginal(0.1, X, y, RBF(1.0), 3).evaluate(X[:3])
    assert np.isfinite(ev.grad).all()
    assert ev.value == pytest.approx(single.value, rel=1e-6)


def test_a_problem_too_large_for_memory_is_refused_before_allocating(monkeypatch) -> None:
    X, y = _data(1000)
    monkeypatch.setattr(sparsify.core.memory, "available_memory", lambda: 10_000)
    with pytest.raises(MemoryEstimateError, match=r"Kernel ridge's closed form with N=1000, "
                                                  r"Nz=50.*Use fewer XVs"):
        RidgeMarginal(1.0, X, y, RBF(1.0), 50)


def test_optimised_xvs_beat_the_initial_ones_and_predict_well() -> None:
    X, y = _data(400, d=1, seed=3)
    start = SparseKernelRidge(5, alpha=0.05, gamma=0.5, max_iter=0, random_state=0).fit(X, y)
    fitted = SparseKernelRidge(5, alpha=0.05, gamma=0.5, random_state=0).fit(X, y)
    assert fitted.objective_[0] < 0.8 * start.objective_[0]
    history = fitted.objective_history_[0]
    assert np.all(np.diff(history) <= 1e-12 * history[0])  # L-BFGS never went up
    X_test, y_test = _data(400, d=1, seed=4)
    assert fitted.score(X_test, y_test) > 0.85
    generic = SparseKernelRidge(5, alpha=0.05, gamma=0.5, max_iter=0, solver="clarabel",
                                solver_tol=1e-10, random_state=0).fit(X, y)
    np.testing.assert_allclose(generic.predict(X_test), start.predict(X_test), rtol=1e-5,
                               atol=1e-6)


@parametrize_with_checks([SparseKernelRidge(3, max_iter=5, random_state=0)])
def test_scikit_learn_conformance(estimator, check) -> None:
    check(estimator)
