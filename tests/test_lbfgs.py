"""L-BFGS's memory of pairs: the two-loop direction and its change of coordinates."""

from __future__ import annotations

import numpy as np

from sparsify.core.lbfgs import Pairs


def _quadratic(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """An SPD Hessian of condition number 100, and its eigenvectors (columns)."""
    q, _ = np.linalg.qr(np.random.default_rng(seed).normal(size=(n, n)))
    return (q * np.logspace(0, 2, n)) @ q.T, q


def _filled(hess: np.ndarray, steps: np.ndarray) -> Pairs:
    """Pairs from n conjugate steps on the quadratic (as exact line searches make them)."""
    pairs = Pairs(m=len(hess))
    for s in (steps * np.random.default_rng(1).uniform(0.5, 2.0, len(steps))).T:
        assert pairs.push(s, hess @ s)
    return pairs


def test_pairs_that_span_the_space_give_the_newton_step() -> None:
    hess, steps = _quadratic(6)
    g = np.random.default_rng(2).normal(size=6)
    # BFGS's updates keep every earlier secant equation along conjugate steps, so n of them
    # give the inverse exactly; the two-loop recursion's n updates of condition 100 round by
    # a few hundred ε
    np.testing.assert_allclose(_filled(hess, steps).direction(g), -np.linalg.solve(hess, g),
                               rtol=1e-10, atol=1e-12)


def test_rescaled_pairs_give_the_same_step_in_the_new_coordinates() -> None:
    """U' = U·r: a step s becomes s·r and the gradient g becomes g / r."""
    hess, steps = _quadratic(6)
    g = np.random.default_rng(3).normal(size=6)
    pairs = _filled(hess, steps)
    before = pairs.direction(g)
    r = np.exp2([-3.0, 0.0, 1.0, 4.0, -1.0, 2.0])
    pairs.rescale(r)
    np.testing.assert_allclose(pairs.direction(g / r), before * r, rtol=1e-9, atol=1e-12)
    # the curvature each pair measured is unchanged
    for s, y in zip(pairs.s, pairs.y, strict=True):
        assert np.isclose(s @ y, (s / r) @ (hess @ (s / r)), rtol=1e-12)
    # a wrong change (y·r, as for s) gives another step
    wrong = _filled(hess, steps)
    wrong.s, wrong.y = [s * r for s in wrong.s], [y * r for y in wrong.y]
    assert not np.allclose(wrong.direction(g / r), before * r, rtol=1e-3)


def test_push_skips_pairs_without_positive_curvature_and_keeps_the_last_m() -> None:
    pairs = Pairs(m=3)
    assert not pairs.push(np.array([1.0, 0.0]), np.array([-1.0, 0.0]))
    assert not pairs.push(np.array([1.0, 0.0]), np.array([0.0, 1.0]))
    assert len(pairs) == 0
    np.testing.assert_array_equal(pairs.direction(np.array([3.0, -4.0])), [-3.0, 4.0])
    for k in range(1, 6):
        assert pairs.push(np.array([float(k), 0.0]), np.array([1.0, 0.0]))
    assert len(pairs) == 3 and [s[0] for s in pairs.s] == [3.0, 4.0, 5.0]
    pairs.clear()
    assert len(pairs) == 0
