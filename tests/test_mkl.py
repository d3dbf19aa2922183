"""Lp-norm multiple kernel learning: the closed-form θ-step and the alternation."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.svm import SVC

from sparsify import RBF, Linear, SumKernel
from sparsify.algorithms.s3vm.mkl import (
    alternate,
    block_norms2,
    combined_kernel,
    lp_weights,
    uniform_weights,
)


@pytest.mark.parametrize("p", [1.0, 1.5, 2.0, 5.0, 20.0])
def test_weights_are_on_the_unit_lp_sphere(p: float) -> None:
    norms2 = np.random.default_rng(0).exponential(size=6)
    theta = lp_weights(norms2, p)
    assert np.all(theta > 0)
    assert np.sum(theta ** p) ** (1 / p) == pytest.approx(1.0, rel=1e-12)
    assert np.sum(uniform_weights(6, p) ** p) == pytest.approx(1.0, rel=1e-12)


@pytest.mark.parametrize("p", [1.0, 2.0, 5.0])
def test_closed_form_minimises_the_regulariser_on_the_lp_ball(p: float) -> None:
    """θ-step (eq. 24-26): argmin Σ ‖w_m‖²/θ_m subject to θ ≥ 0, ‖θ‖_p ≤ 1."""
    rng = np.random.default_rng(1)
    norms2 = rng.exponential(size=5)
    best = float(np.sum(norms2 / lp_weights(norms2, p)))
    for _ in range(2000):
        theta = rng.exponential(size=5)
        theta /= np.sum(theta ** p) ** (1 / p)
        assert np.sum(norms2 / theta) >= best * (1 - 1e-12)


def test_special_cases() -> None:
    np.testing.assert_allclose(lp_weights([4.0, 1.0], 1.0), [2 / 3, 1 / 3])  # p = 1: ∝ ‖w_m‖
    np.testing.assert_array_equal(lp_weights([4.0, 1.0], np.inf), [1.0, 1.0])
    np.testing.assert_allclose(lp_weights([0.0, 0.0], 2.0), uniform_weights(2, 2.0))
    # scale-free: no overflow for huge norms
    np.testing.assert_allclose(lp_weights([1e300, 1e299], 3.0), lp_weights([10.0, 1.0], 3.0))


@pytest.mark.parametrize("bad", [0.5, 0.0, -1.0, np.nan])
def test_p_below_one_is_a_clear_error(bad: float) -> None:
    with pytest.raises(ValueError, match="must be >= 1"):
        lp_weights([1.0, 2.0], bad)
    with pytest.raises(ValueError, match="must be >= 1"):
        uniform_weights(3, bad)


def test_block_norms_are_those_of_the_weight_vectors() -> None:
    rng = np.random.default_rng(2)
    Z, beta = rng.normal(size=(5, 2)), rng.normal(size=5)
    kernels, theta = [RBF(0.5), Linear()], np.array([0.7, 0.4])
    n2 = block_norms2(kernels, theta, Z, beta)
    np.testing.assert_allclose(n2, [0.49 * beta @ RBF(0.5)(Z, Z) @ beta,
                                    0.16 * beta @ (Z @ Z.T) @ beta])
    # ‖w‖² of the combined machine is Σ_m ‖w_m‖² / θ_m
    K = combined_kernel(kernels, theta)(Z, Z)
    assert beta @ K @ beta == pytest.approx(np.sum(n2 / theta))


def test_combined_kernel() -> None:
    k = combined_kernel([RBF(1.0), Linear()], [0.5, 2.0])
    assert isinstance(k, SumKernel) and k.weights == (0.5, 2.0)
    assert combined_kernel([RBF(1.0)], [1.0]) == RBF(1.0)
    with pytest.raises(ValueError, match="2 weights for 1 kernels"):
        combined_kernel([RBF(1.0)], [1.0, 2.0])


def _svm_mkl(p: float):  # type: ignore[no-untyped-def]
    """Supervised Lp-MKL SVM: an informative kernel, a noise-only kernel and a copy."""
    rng = np.random.default_rng(3)
    n = 80
    signal = rng.normal(size=(n, 2))
    noise = rng.normal(size=(n, 5))
    y = np.where(signal[:, 0] + 0.3 * signal[:, 1] > 0, 1, -1)
    grams = [signal @ signal.T, noise @ noise.T, 0.5 * signal @ signal.T + noise @ noise.T]
    objective = []

    def f_step(theta: np.ndarray, iteration: int) -> np.ndarray:
        K = sum(t * G for t, G in zip(theta, grams, strict=True))
        svc = SVC(C=1.0, kernel="precomputed", tol=1e-10).fit(K, y)
        beta = np.zeros(n)
        beta[svc.support_] = svc.dual_coef_.ravel()
        g = K @ beta + svc.intercept_[0]
        objective.append(0.5 * beta @ K @ beta + np.maximum(0, 1 - y * g).sum())
        return np.array([t * t * beta @ G @ beta for t, G in zip(theta, grams, strict=True)])

    return alternate(f_step, 3, p, max_iter=50, tol=1e-6), np.array(objective)


def test_alternation_lowers_the_objective_and_converges() -> None:
    res, objective = _svm_mkl(2.0)
    assert res.converged and res.history.shape == (res.n_iter + 1, 3)
    assert np.all(np.diff(objective) <= 1e-6 * objective[0])
    assert objective[-1] < objective[0]


def test_p_one_is_sparse_and_large_p_near_uniform() -> None:
    sparse, _ = _svm_mkl(1.0)
    dense, _ = _svm_mkl(10.0)
    assert sparse.theta[1] < 1e-3 and sparse.theta[0] > 0.5  # the noise kernel is dropped
    assert dense.theta.min() > 0.6  # ‖θ‖_10 = 1: every weight stays near 1
    assert np.argmax(dense.theta) == 0
