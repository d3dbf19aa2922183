"""The squared-hinge SVM (L2-SVM): its finite Newton fast path against the generic path."""

from __future__ import annotations

from functools import partial

import cvxpy as cp
import numpy as np
import pytest
from scipy.optimize import minimize_scalar
from sklearn.utils.estimator_checks import parametrize_with_checks

from sparsify import CvxpyMarginal, SparseSVC, expansion_coefficients
from sparsify.algorithms.svm import squared_hinge
from sparsify.algorithms.svm.formulation import SVM
from sparsify.algorithms.svm.squared_hinge import SquaredHingeMarginal, line_search
from sparsify.core.gradcheck import check_gradient, random_problem
from sparsify.core.kernel_blocks import whitening
from sparsify.core.optimize import initial_expansion_vectors
from sparsify.kernels import make_kernel

KERNELS = ["rbf", "poly", "linear", "rbf+linear"]


def _pair(X, y, kernel, nz, C):
    form = SVM(C, loss="squared_hinge")
    fast = SquaredHingeMarginal(C, X, y, kernel, nz, tol=1e-10, formulation=form)
    generic = CvxpyMarginal(form, X, y, kernel, nz, solver="clarabel", tol=1e-10)
    return fast, generic


@pytest.mark.parametrize("C", [0.1, 3.0, 300.0, "per point"])
@pytest.mark.parametrize("kernel_name", KERNELS)
def test_fast_path_agrees_with_the_generic_path(kernel_name: str, C) -> None:
    X, y = random_problem(60, 3, random_state=1)
    if C == "per point":
        C = np.random.default_rng(2).uniform(0.0, 10.0, len(y))
        C[:5] = 0.0  # points left out
    kernel = make_kernel(kernel_name, X)
    nz = 2 if kernel_name == "linear" else 6
    fast, generic = _pair(X, y, kernel, nz, C)
    rng = np.random.default_rng(0)
    Z = initial_expansion_vectors(X, nz, "random", 0)
    for _ in range(3):  # the second and third evaluations start from the last violators
        ev, ref = fast.evaluate(Z), generic.evaluate(Z)
        # Clarabel stops at a relative gap of 1e-10 (tol); the Newton method is exact up
        # to the round-off of one (Nz + 1) Cholesky solve
        assert ev.value == pytest.approx(ref.value, rel=1e-6)
        np.testing.assert_allclose(ev.grad, ref.grad, rtol=0,
                                   atol=1e-5 * np.abs(ref.grad).max())
        # (β, b) are unique: the problem is strictly convex once a point violates its margin
        f, f_ref = kernel(X, Z) @ ev.coef + ev.intercept, kernel(X, Z) @ ref.coef + ref.intercept
        np.testing.assert_allclose(f, f_ref, atol=1e-5 * max(1.0, np.abs(f_ref).max()))
        Z = Z + 0.05 * rng.normal(size=Z.shape)
    assert fast.n_generic == 0


@pytest.mark.parametrize("kernel_name", KERNELS)
@pytest.mark.slow
def test_gradient_matches_central_differences(kernel_name: str) -> None:
    result = check_gradient("svm", kernel_name, solver="auto", tol=1e-10, C=2.0,
                            loss="squared_hinge")
    assert result.solver == "svm-l2-newton"  # "auto" took the Newton fast path
    assert result.passed(1e-6), result.as_dict()


def test_xvs_on_all_points_give_the_full_l2_svm() -> None:
    """Reduction: Nz = N with Z = X is the full L2-SVM, whose dual is solved directly."""
    X, y = random_problem(40, 2, random_state=3)
    C = 2.0
    kernel = make_kernel("rbf", X, gamma=0.8)
    svm = SVM(C, loss="squared_hinge")
    ev = SquaredHingeMarginal(C, X, y, kernel, len(X), formulation=svm).evaluate(X)
    # the dual: max Σα − ½ (α∘y)ᵀK(α∘y) − Σα²/(4C), yᵀα = 0, α ≥ 0
    Q = (y[:, None] * y[None, :]) * kernel(X, X)
    L = np.linalg.cholesky(Q + 1e-12 * np.eye(len(y)))
    alpha = cp.Variable(len(y))
    dual = cp.Problem(cp.Maximize(cp.sum(alpha) - 0.5 * cp.sum_squares(L.T @ alpha)
                                  - cp.sum_squares(alpha) / (4 * C)),
                      [alpha >= 0, y @ alpha == 0])
    dual.solve(solver="CLARABEL")
    # strong duality; the jitter the fast path adds to K_ZZ (1e-10 of its scale) moves W by
    # about that relative amount
    assert ev.value == pytest.approx(dual.value, rel=1e-6)


def test_line_search_finds_the_minimiser_along_the_direction() -> None:
    rng = np.random.default_rng(0)
    for _ in range(20):
        n = 30
        slack, delta, C = rng.normal(size=n), rng.normal(size=n), rng.uniform(0.1, 3.0, n)
        a, c = -abs(rng.normal()) - 1.0, abs(rng.normal())
        F = partial(_along, a, c, slack, delta, C)
        t = line_search(a, c, slack, delta, C)
        best = minimize_scalar(F, bounds=(0.0, 50.0), method="bounded",
                               options={"xatol": 1e-12})
        assert F(t) <= F(best.x) + 1e-9 * max(1.0, abs(F(best.x)))


def _along(a: float, c: float, slack, delta, C, t: float) -> float:
    """F along a direction, up to a constant: a t + ½ c t² + Σ C_i max(0, slack_i − t δ_i)²."""
    return a * t + 0.5 * c * t**2 + float(C @ np.maximum(0.0, slack - t * delta) ** 2)


def test_a_stalled_newton_method_falls_back_to_the_generic_path(monkeypatch) -> None:
    monkeypatch.setattr(squared_hinge, "MAX_NEWTON", 0)
    X, y = random_problem(40, 2)
    kernel = make_kernel("rbf", X)
    fast, generic = _pair(X, y, kernel, 4, 1.0)
    ev = fast.evaluate(X[:4] + 0.01)
    assert fast.n_generic == 1 and ev.solver == "structured"  # the auto chain's first
    assert ev.value == pytest.approx(generic.evaluate(X[:4] + 0.01).value, rel=1e-6)


def test_sparse_svc_with_the_squared_hinge_fits_like_the_generic_path() -> None:
    X, y = random_problem(80, 2, random_state=4)
    fast = SparseSVC(4, C=3.0, loss="squared_hinge", max_iter=5, random_state=0).fit(X, y)
    generic = SparseSVC(4, C=3.0, loss="squared_hinge", max_iter=5, random_state=0,
                        solver="clarabel").fit(X, y)
    # five L-BFGS steps from the same start on the same W(Z): the same path to round-off
    # (the two gradients agree to 1e-6, above)
    assert fast.objective_[0] == pytest.approx(generic.objective_[0], rel=1e-4)
    hinge = SparseSVC(4, C=3.0, max_iter=5, random_state=0).fit(X, y)
    assert abs(fast.objective_[0] - hinge.objective_[0]) > 1e-3 * hinge.objective_[0]


def test_an_unknown_loss_is_refused_by_name() -> None:
    X, y = random_problem(30, 2)
    with pytest.raises(ValueError, match="'loss' parameter of SparseSVC must be a str among"):
        SparseSVC(3, loss="log").fit(X, y)
    with pytest.raises(ValueError, match="'loss' parameter of SVM must be a str among"):
        SVM(loss="hinge2")


@parametrize_with_checks([SparseSVC(n_expansion=3, loss="squared_hinge", max_iter=5,
                                    random_state=0)])
def test_scikit_learn_conformance(estimator, check) -> None:
    check(estimator)


def test_an_iterate_without_margin_violators_steps_towards_u_zero() -> None:
    """From a start where no point violates its margin (u large, b between the classes), the
    Newton method goes on to the minimiser instead of solving a singular system."""
    rng = np.random.default_rng(5)
    y = np.repeat([-1.0, 1.0], 20)
    X = 0.3 * rng.normal(size=(40, 2)) + 3.0 * y[:, None]  # two blobs far apart
    kernel = make_kernel("rbf", X, gamma=0.5)
    fast, generic = _pair(X, y, kernel, 4, 1.0)
    Z = X[[0, 1, 20, 21]] + 0.01
    Phi = kernel(X, Z) @ whitening(kernel(Z, Z) + fast.jitter * np.eye(4))
    # a start that separates the points with margin: its violators are none
    u0, *_ = np.linalg.lstsq(np.hstack([Phi, np.ones((len(y), 1))]), 3.0 * y, rcond=None)
    assert not np.any(1.0 - y * (Phi @ u0[:4] + u0[4]) > 0)
    fast.last = (np.zeros(len(y)), 0.0)  # the previous evaluation's violators: none
    fast._newton_point = _starting_at(fast._newton_point, u0)
    u, b, _ = fast._solve_newton(Phi)
    assert fast.evaluate(Z).value == pytest.approx(generic.evaluate(Z).value, rel=1e-6)
    assert 0.5 * u @ u + fast.C * np.sum(np.maximum(0.0, 1 - y * (Phi @ u + b)) ** 2) == (
        pytest.approx(generic.evaluate(Z).value, rel=1e-6))


def _starting_at(newton_point, u0):
    """``newton_point`` whose first call returns the start u0 (the rest unchanged)."""
    calls = []

    def wrapped(Phi, on):
        calls.append(on)
        return (u0[:-1], float(u0[-1])) if len(calls) == 1 else newton_point(Phi, on)
    return wrapped


def test_expansion_coefficients_take_the_loss() -> None:
    """eq. 45 for fixed XVs with the squared hinge: the fast path's β and b, the generic path's
    to its accuracy, and not the hinge's."""
    X, y = random_problem(random_state=3)
    Z = X[:5] + 0.1
    coef, b = expansion_coefficients(X, y, Z, gamma=0.5, C=10.0, loss="squared_hinge")
    ref_coef, ref_b = expansion_coefficients(X, y, Z, gamma=0.5, C=10.0, loss="squared_hinge",
                                             solver="clarabel", tol=1e-10)
    np.testing.assert_allclose(coef, ref_coef, rtol=1e-5, atol=1e-6 * np.abs(ref_coef).max())
    assert b == pytest.approx(ref_b, abs=1e-5 * max(1.0, abs(ref_b)))
    hinge_coef, _ = expansion_coefficients(X, y, Z, gamma=0.5, C=10.0)
    assert np.abs(hinge_coef - coef).max() > 1e-3 * np.abs(coef).max()
