"""The smoothed hinge's Newton path: its line search, its widths' minimisers, the hinge's limit."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import minimize_scalar

from sparsify.algorithms.svm.formulation import SVM
from sparsify.core.kernel_blocks import triangular_whitening
from sparsify.core.optimize import initial_expansion_vectors
from sparsify.datasets import make_checkerboard
from sparsify.kernels import make_kernel
from sparsify.svm_dual import SVMDualMarginal
from sparsify.svm_dual.smoothed import hinge_partition, smoothed_hinge_path, smoothed_line_search


def _huber(r: np.ndarray, delta: float) -> np.ndarray:
    return np.where(r <= 0, 0.0, np.where(r < delta, r**2 / (2 * delta), r - delta / 2))


def _F(u, b, B, y, C, delta):
    return 0.5 * u @ u + C @ _huber(1.0 - B @ u - y * b, delta)


def _rows(n: int, nz: int, C: float, seed: int = 0):
    """A checkerboard's signed whitened rows at random XVs, and its fast path."""
    X, y = make_checkerboard(n, random_state=seed)
    fast = SVMDualMarginal(C, X, y, make_kernel("rbf", X, gamma=0.375), nz, tol=1e-10,
                           formulation=SVM(C))
    Z = initial_expansion_vectors(X, nz, "random", seed)
    T = triangular_whitening(fast.kernel(Z, Z) + fast.jitter * np.eye(nz))
    return fast, Z, fast.signed_rows(fast.kernel(fast.X, Z), T)


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("delta", [1.0, 1e-2])
def test_the_line_search_finds_the_minimum_along_its_direction(seed: int, delta: float) -> None:
    """Against a bounded scalar minimisation of F_δ along the same direction."""
    rng = np.random.default_rng(seed)
    B, y = rng.normal(size=(200, 5)), rng.choice([-1.0, 1.0], 200)
    C = rng.uniform(0.1, 10.0, 200)
    u, b = rng.normal(size=5), rng.normal()
    d_u, d_b = rng.normal(size=5), rng.normal()
    r, delta_r = 1.0 - B @ u - y * b, B @ d_u + y * d_b
    # made a descent direction: F_δ's slope along it at t = 0 negative
    slope = float(u @ d_u) - float(C @ (delta_r * np.clip(r / delta, 0, 1)))
    if slope > 0:
        d_u, d_b, delta_r = -d_u, -d_b, -delta_r
    t = smoothed_line_search(float(u @ d_u), float(d_u @ d_u), r, delta_r, C, delta)

    def along(s: float) -> float:
        return _F(u + s * d_u, b + s * d_b, B, y, C, delta)

    brent = minimize_scalar(along, bounds=(0.0, 10.0 * max(t, 1.0)), method="bounded",
                            options={"xatol": 1e-12})
    # F_δ along the line is convex: t is its minimiser where no other point is lower (to the
    # round-off of the sums, relative to F's size)
    assert along(t) <= brent.fun + 1e-12 * max(1.0, abs(brent.fun))
    # (Brent's point is accurate to about √eps relative: F_δ is flat at its minimum)
    assert t == pytest.approx(brent.x, rel=1e-5, abs=1e-8)


def test_each_width_ends_at_its_minimiser_and_the_last_near_the_hinge_optimum() -> None:
    """At each width ∇F_δ = 0 (u = Bᵀα, yᵀα = 0 with α = C ℓ′_δ(r)), to the round-off of
    a sum over N rows of terms up to C and of a Newton solve whose matrix has a condition
    number of about C/δ (the quadratic rows' weight against the identity); the hinge's
    value at the last width's point is above the hinge optimum W by at most δ/2 · ΣC (the
    smoothing's largest gap per row)."""
    fast, Z, B = _rows(2000, 20, 1e4)
    y, C = fast.y, fast.C
    path = list(smoothed_hinge_path(B, y, C))
    assert [round(d, 15) for d, *_ in path] == [round(10.0 ** (1 - k / 2), 15) for k in range(15)]
    for delta, u, b, r in path:
        np.testing.assert_allclose(r, 1.0 - B @ u - y * b, atol=1e-8)
        alpha, _, _ = hinge_partition(r, C, delta)
        scale = float((np.abs(B).T @ alpha).max())  # the sum's largest terms
        rel = 1e-9 + np.finfo(float).eps * C.max() / delta
        np.testing.assert_allclose(u, B.T @ alpha, atol=rel * scale)
        assert abs(y @ alpha) <= rel * float(alpha.sum())
    W = fast.evaluate(Z, grad=False).value
    delta, u, b, _ = path[-1]
    hinge = 0.5 * u @ u + C @ np.maximum(0.0, 1.0 - B @ u - y * b)
    assert W * (1 - 1e-12) <= hinge <= W + delta / 2 * C.sum()
