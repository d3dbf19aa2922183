"""SparseSVR: its exact fast path (an interior point on the normal equations, polished by the
SVM's active-set method on two rows per point) against the generic path, finite differences and
the full SVR (Nz = N); the estimator against scikit-learn."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
from sklearn.svm import SVR as FullSVR
from sklearn.utils.estimator_checks import parametrize_with_checks

import sparsify.algorithms.svr.fast
import sparsify.core.memory
import sparsify.svm_dual.marginal
from sparsify import RBF, CvxpyMarginal, Polynomial, SparseSVR
from sparsify.algorithms.svr import interior
from sparsify.algorithms.svr.fast import SVRDualMarginal
from sparsify.algorithms.svr.formulation import SVR
from sparsify.algorithms.svr.interior import _Step, interior_point
from sparsify.core.errors import MemoryEstimateError
from sparsify.core.gradcheck import check_gradient


def _data(n: int = 80, d: int = 2, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, size=(n, d))
    return X, np.sin(X[:, 0]) + 0.5 * X[:, -1] ** 2 + 0.1 * rng.normal(size=n)


def _primal(K_xz: np.ndarray, K_zz: np.ndarray, y: np.ndarray, beta: np.ndarray, b: float,
            C: float | np.ndarray, epsilon: float) -> float:
    excess = np.maximum(0.0, np.abs(y - K_xz @ beta - b) - epsilon)
    return float(0.5 * beta @ K_zz @ beta + np.sum(C * excess))


@pytest.mark.parametrize(("C", "epsilon", "kernel"), [
    (10.0, 0.1, RBF(0.7)), (100.0, 0.05, RBF(2.0)), (1.0, 0.0, RBF(0.7)),
    (5.0, 0.2, Polynomial(gamma=0.5, degree=2, coef0=1.0))])
@pytest.mark.parametrize("seed", [0, 1])
def test_fast_path_equals_the_generic_path(C: float, epsilon: float, kernel, seed: int) -> None:
    X, y = _data(seed=seed)
    # 4 XVs: fewer than the quadratic kernel's 6 features, so its gradient is not zero
    Z = np.random.default_rng(seed + 10).uniform(-2, 2, size=(4, 2))
    fast = SVR(C, epsilon).marginal(X, y, kernel, 4, "auto", 1e-9)
    assert isinstance(fast, SVRDualMarginal)
    own = fast.evaluate(Z)
    ref = CvxpyMarginal(SVR(C, epsilon), X, y, kernel, 4, solver="clarabel",
                        tol=1e-10).evaluate(Z)
    assert own.solver == "svr-dual" and fast.n_generic == 0
    # Clarabel at 1e-10 gives W to about 1e-9 relative and its duals to about 1e-7 here;
    # the fast path's solution is a KKT point to 1e-9
    assert own.value == pytest.approx(ref.value, rel=1e-6)
    np.testing.assert_allclose(own.grad, ref.grad, rtol=1e-5, atol=1e-6 * np.abs(ref.grad).max())
    K_xz, K_zz = kernel(X, Z), kernel(Z, Z)
    assert _primal(K_xz, K_zz, y, own.coef, own.intercept, C, epsilon) == pytest.approx(
        own.value, rel=1e-9)


def test_per_point_costs_and_zero_costs() -> None:
    """C_i = 0 leaves point i out: W and ∇W equal those without the point."""
    X, y = _data(60)
    C = np.full(60, 3.0)
    C[:10] = 0.0
    C[10:20] = 30.0
    Z = X[20:25] + 0.05
    own = SVRDualMarginal(C, 0.1, X, y, RBF(0.7), 5, formulation=SVR(C, 0.1)).evaluate(Z)
    ref = CvxpyMarginal(SVR(C, 0.1), X, y, RBF(0.7), 5, solver="clarabel",
                        tol=1e-10).evaluate(Z)
    assert own.value == pytest.approx(ref.value, rel=1e-6)
    np.testing.assert_allclose(own.grad, ref.grad, rtol=1e-5, atol=1e-6 * np.abs(ref.grad).max())
    left_out = SVRDualMarginal(C[10:], 0.1, X[10:], y[10:], RBF(0.7), 5,
                               formulation=SVR(C[10:], 0.1)).evaluate(Z)
    assert own.value == pytest.approx(left_out.value, rel=1e-12)


def test_a_large_cost_on_noiseless_data_is_solved_exactly() -> None:
    """C = 10⁴ and ε = 10⁻³ on a noiseless target: coordinate descent does not name the
    partition, the interior point and its polish answer, still exactly."""
    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, size=(150, 2))
    y = np.sin(X[:, 0]) + 0.5 * X[:, 1] ** 2
    fast = SVRDualMarginal(1e4, 1e-3, X, y, RBF(0.7), 8, formulation=SVR(1e4, 1e-3))
    reference = CvxpyMarginal(SVR(1e4, 1e-3), X, y, RBF(0.7), 8, solver="clarabel", tol=1e-10)
    for shift in (0.0, 0.01):
        own, ref = fast.evaluate(X[:8] + 0.1 + shift), reference.evaluate(X[:8] + 0.1 + shift)
        assert own.value == pytest.approx(ref.value, rel=1e-6)
        np.testing.assert_allclose(own.grad, ref.grad, rtol=1e-5,
                                   atol=1e-6 * np.abs(ref.grad).max())
    assert fast.n_interior_point >= 1 and fast.n_generic == 0


def test_gradient_matches_finite_differences() -> None:
    for kernel in ("rbf", "poly"):
        result = check_gradient("svr", kernel, C=10.0, epsilon=0.05)
        assert result.passed(1e-6), result


@pytest.mark.parametrize("scale", [1e-4, 1e4])
def test_the_units_of_y_change_nothing_but_the_scale(scale: float) -> None:
    """y·s with ε·s and C·s: the same problem, W·s², β·s (the tolerances follow y's spread)."""
    X, y = _data(300, seed=3)
    Z = X[:8] + 0.1
    unit = SVRDualMarginal(10.0, 0.1, X, y, RBF(0.7), 8, formulation=SVR(10.0, 0.1))
    scaled = SVRDualMarginal(10.0 * scale, 0.1 * scale, X, y * scale, RBF(0.7), 8,
                             formulation=SVR(10.0 * scale, 0.1 * scale))
    # both solve the same unit problem up to rounding of y·s/s; β and ∇W carry the active
    # set's KKT tolerance (1e-9) amplified by the free-set system's conditioning, W only
    # its square (the value is stationary in β): 1e-6 and 1e-8
    for shift in (0.0, 0.05, 0.1):  # warm starts too
        a, b = unit.evaluate(Z + shift), scaled.evaluate(Z + shift)
        assert b.value == pytest.approx(a.value * scale**2, rel=1e-8)
        np.testing.assert_allclose(b.coef, a.coef * scale, rtol=1e-6,
                                   atol=1e-8 * scale * np.abs(a.coef).max())
        np.testing.assert_allclose(b.grad, a.grad * scale**2, rtol=1e-6,
                                   atol=1e-8 * scale**2 * np.abs(a.grad).max())
    assert scaled.n_generic == 0 and unit.n_generic == 0


def test_z_equal_x_is_the_full_svr() -> None:
    """Nz = N with Z = X: the full ε-SVR, against scikit-learn's solved to 1e-10."""
    X, y = _data(50)
    C, epsilon, kernel = 5.0, 0.1, RBF(0.5)
    ev = SVRDualMarginal(C, epsilon, X, y, kernel, 50, formulation=SVR(C, epsilon)).evaluate(X)
    full = FullSVR(C=C, epsilon=epsilon, gamma=0.5, tol=1e-10).fit(X, y)
    K = kernel(X, X)
    beta = np.zeros(50)
    beta[full.support_] = full.dual_coef_[0]
    # scikit-learn's (β, b) is feasible, so its primal value bounds W from above (to
    # round-off); from below, libsvm caches kernel rows in single precision (Qfloat), so its
    # solution is that of a kernel perturbed by ~6e-8 relative per entry: 1e-6 allows for it
    reference = _primal(K, K, y, beta, full.intercept_[0], C, epsilon)
    assert reference * (1 - 1e-6) <= ev.value <= reference * (1 + 1e-12)
    np.testing.assert_allclose(K @ ev.coef + ev.intercept, full.predict(X), atol=1e-6)


def test_a_problem_too_large_for_memory_is_refused_before_allocating(monkeypatch) -> None:
    X, y = _data(1000)
    monkeypatch.setattr(sparsify.core.memory, "available_memory", lambda: 10_000)
    with pytest.raises(MemoryEstimateError, match=r"The SVR fast path with N=1000, Nz=50.*"
                                                  r"Use fewer XVs"):
        SVRDualMarginal(1.0, 0.1, X, y, RBF(1.0), 50, formulation=SVR())


@pytest.mark.slow
def test_optimised_xvs_beat_the_initial_ones_and_predict_well() -> None:
    X, y = _data(400, d=1, seed=3)
    start = SparseSVR(5, C=10.0, epsilon=0.05, gamma=0.5, max_iter=0, random_state=0).fit(X, y)
    fitted = SparseSVR(5, C=10.0, epsilon=0.05, gamma=0.5, random_state=0).fit(X, y)
    assert fitted.objective_[0] < 0.8 * start.objective_[0]
    history = fitted.objective_history_[0]
    assert np.all(np.diff(history) <= 1e-12 * history[0])  # L-BFGS never went up
    X_test, y_test = _data(400, d=1, seed=4)
    assert fitted.score(X_test, y_test) > 0.85
    generic = SparseSVR(5, C=10.0, epsilon=0.05, gamma=0.5, max_iter=0, solver="clarabel",
                        solver_tol=1e-10, random_state=0).fit(X, y)
    np.testing.assert_allclose(generic.predict(X_test), start.predict(X_test), rtol=1e-5,
                               atol=1e-6)


def test_integer_sample_weights_are_repeats() -> None:
    X, y = _data(60, seed=5)
    weights = np.random.default_rng(0).integers(0, 3, size=60)
    weighted = SparseSVR(4, C=10.0, random_state=0, max_iter=0).fit(X, y, sample_weight=weights)
    keep = np.repeat(np.arange(60), weights)
    Z = weighted.expansion_vectors_
    repeated = SVRDualMarginal(10.0, 0.1, X[keep], y[keep], weighted.kernel_, 4,
                               formulation=SVR(10.0, 0.1)).evaluate(Z)
    assert weighted.objective_[0] == pytest.approx(repeated.value, rel=1e-9)
    with pytest.raises(ValueError, match="at least one non-zero"):
        SparseSVR(4).fit(X, y, sample_weight=np.zeros(60))


def test_bad_parameters_are_clear_errors() -> None:
    X, y = _data(30)
    with pytest.raises(ValueError, match=r"The 'epsilon' parameter of SparseSVR must be a float "
                                         r"in the range \[0.0, inf\)"):
        SparseSVR(epsilon=-0.1).fit(X, y)
    with pytest.raises(ValueError, match="y must hold numbers"):
        SparseSVR(3).fit(X, np.array(["a", "b"] * 15, dtype=object))


@parametrize_with_checks([SparseSVR(3, max_iter=5, random_state=0)])
def test_scikit_learn_conformance(estimator, check) -> None:
    check(estimator)


@pytest.mark.slow
def test_constant_targets_fit_inside_the_tube() -> None:
    """y constant: W = 0 at β = 0 (any b within ε of y); the warm starts stay in their box."""
    X = np.random.default_rng(0).normal(size=(50, 2))
    for value in (5.0, 0.0):
        reg = SparseSVR(3, epsilon=0.1, max_iter=5, random_state=0).fit(X, np.full(50, value))
        assert reg.objective_[0] == pytest.approx(0.0, abs=1e-12)
        assert np.all(np.abs(reg.predict(X) - value) <= 0.1 + 1e-9)


def test_many_points_on_the_tube_edges() -> None:
    """Nz = 40 on 400 points with a narrow tube: the regime where some tens of points lie on
    the tube's edges (the interior point and its polish answer), warm starts included."""
    X, y = _data(400, seed=7)
    fast = SVRDualMarginal(30.0, 0.02, X, y, RBF(1.0), 40, formulation=SVR(30.0, 0.02))
    reference = CvxpyMarginal(SVR(30.0, 0.02), X, y, RBF(1.0), 40, solver="clarabel",
                              tol=1e-10)
    Z = X[:40] + 0.05
    for _ in range(2):
        own, ref = fast.evaluate(Z), reference.evaluate(Z)
        assert own.value == pytest.approx(ref.value, rel=1e-6)
        np.testing.assert_allclose(own.grad, ref.grad, rtol=1e-5,
                                   atol=1e-6 * np.abs(ref.grad).max())
        Z = Z - 0.05 * own.grad / np.abs(own.grad).max()
    assert fast.n_interior_point == 2 and fast.n_generic == 0


def test_where_both_interior_points_stall_the_smoothed_hinge_answers(monkeypatch) -> None:
    """The SVM's smoothed hinge path on the SVR's rows, with their margin targets, where the
    SVR's interior point and the SVM's stall (both made to, and coordinate descent stopped
    short): the generic path's W and ∇W."""
    X, y = _data(400, seed=7)
    reference = CvxpyMarginal(SVR(30.0, 0.02), X, y, RBF(1.0), 40, solver="clarabel",
                              tol=1e-10)
    monkeypatch.setattr(sparsify.algorithms.svr.fast, "interior_point", lambda *a, **k: None)
    monkeypatch.setattr(sparsify.svm_dual.marginal, "interior_point", lambda *a, **k: None)
    fast = SVRDualMarginal(30.0, 0.02, X, y, RBF(1.0), 40, formulation=SVR(30.0, 0.02))
    fast.first_epochs = 5
    Z = X[:40] + 0.05
    own, ref = fast.evaluate(Z), reference.evaluate(Z)
    assert (fast.n_smoothed, fast.n_generic) == (1, 0)
    assert own.value == pytest.approx(ref.value, rel=1e-6)
    np.testing.assert_allclose(own.grad, ref.grad, rtol=1e-5, atol=1e-6 * np.abs(ref.grad).max())


def _whitened(X: np.ndarray, Z: np.ndarray) -> np.ndarray:
    K_zz = RBF(1.0)(Z, Z)
    values, vectors = np.linalg.eigh(K_zz)
    return RBF(1.0)(X, Z) @ (vectors / np.sqrt(values))


def test_the_interior_point_names_the_solution_s_partition() -> None:
    """At the gap where it stops, the interior point's partition (its free rows) is the exact
    solution's, so the polish starts where it ends; the value agrees to the gap."""
    X, y = _data(300, seed=8)
    Phi, C = _whitened(X, X[:20] + 0.1), np.full(300, 10.0)
    start = interior_point(Phi, y, 0.05, C, 1e-9)
    assert start is not None and start.gap <= 1e-9
    exact = SVRDualMarginal(C, 0.05, X, y, RBF(1.0), 20, formulation=SVR(C, 0.05))
    ev = exact.evaluate(X[:20] + 0.1)
    alpha = exact.last[0] * exact.scale  # the exact solution's α in the units of y
    free = (alpha > 1e-9 * C[0]) & (alpha < C[0] * (1 - 1e-9))
    np.testing.assert_array_equal(start.free, free)
    primal = 0.5 * start.u @ start.u + C @ np.maximum(0, np.abs(y - Phi @ start.u - start.b)
                                                      - 0.05)
    assert primal == pytest.approx(ev.value, rel=1e-9)


def test_the_interior_point_stops_at_its_best_iterate_where_the_gap_cannot_close(
        monkeypatch) -> None:
    """tol = 0 cannot be met in floating point: the method stops once its gap stops falling,
    well within its budget, and returns its best iterate."""
    X, y = _data(200, seed=9)
    Phi = _whitened(X, X[:10] + 0.1)
    steps = []
    monkeypatch.setattr(interior, "_Step",
                        lambda *args: steps.append(1) or _Step(*args))  # count the iterations
    start = interior_point(Phi, y, 0.05, np.full(200, 10.0), 0.0, max_iter=200)
    assert start is not None and start.gap <= 1e-10
    assert len(steps) < 100


def test_where_the_interior_point_fails_the_dual_solver_answers(monkeypatch) -> None:
    monkeypatch.setattr(sparsify.algorithms.svr.fast, "interior_point", lambda *args: None)
    X, y = _data(seed=1)
    Z = X[:6] + 0.1
    fast = SVRDualMarginal(10.0, 0.1, X, y, RBF(0.7), 6, formulation=SVR(10.0, 0.1))
    reference = CvxpyMarginal(SVR(10.0, 0.1), X, y, RBF(0.7), 6, solver="clarabel", tol=1e-10)
    own, ref = fast.evaluate(Z), reference.evaluate(Z)
    assert own.value == pytest.approx(ref.value, rel=1e-6)
    np.testing.assert_allclose(own.grad, ref.grad, rtol=1e-5, atol=1e-6 * np.abs(ref.grad).max())
    assert fast.n_interior_point == 0 and fast.n_active_set == 1 and fast.n_generic == 0


@pytest.mark.parametrize("n_expansion", [5, 60])
def test_the_memory_estimate_covers_an_evaluation(monkeypatch, n_expansion: int) -> None:
    """What an evaluation allocates at its peak (numpy's allocations, traced) is within the
    estimate checked before any kernel block, at few XVs (the solvers' row vectors dominate)
    and at many (the N × Nz arrays do)."""
    X, y = _data(3000, seed=2)
    estimates = []
    check = sparsify.svm_dual.marginal.check_memory
    monkeypatch.setattr(sparsify.svm_dual.marginal, "check_memory",
                        lambda need, *args: estimates.append(need) or check(need, *args))
    fast = SVRDualMarginal(10.0, 0.05, X, y, RBF(1.0), n_expansion,
                           formulation=SVR(10.0, 0.05))
    tracemalloc.start()
    fast.evaluate(X[:n_expansion] + 0.01)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert fast.n_generic == 0
    assert peak <= estimates[0]
