"""The SVM's exact fast path against its reference, the generic cvxpy path."""

from __future__ import annotations

import cvxpy as cp
import numpy as np
import pytest
from sklearn.svm import SVC
from sparsify_plugins.svm import SVM
from sparsify_plugins.svm_fast import SVMDualMarginal, _active_set_solve, _null_vector

from sparsify import CvxpyMarginal, Declaration, SparseSVC
from sparsify.datasets import load_banana
from sparsify.gradcheck import check_gradient, random_problem
from sparsify.kernels import make_kernel
from sparsify.optimize import initial_expansion_vectors

KERNELS = ["rbf", "poly", "linear", "rbf+linear"]


def _pair(X, y, kernel, nz, C):
    fast = SVMDualMarginal(C, X, y, kernel, nz, tol=1e-10)
    generic = CvxpyMarginal(SVM(C), X, y, kernel, nz, solver="clarabel", tol=1e-10)
    return fast, generic


@pytest.mark.parametrize("C", [0.1, 3.0, 300.0])
@pytest.mark.parametrize("kernel_name", KERNELS)
def test_fast_path_agrees_with_the_generic_path(kernel_name: str, C: float) -> None:
    X, y = random_problem(60, 3, random_state=1)
    kernel = make_kernel(kernel_name, X)
    nz = 2 if kernel_name == "linear" else 6
    fast, generic = _pair(X, y, kernel, nz, C)
    rng = np.random.default_rng(0)
    Z = initial_expansion_vectors(X, nz, "random", 0)
    for _ in range(3):  # the second and third evaluations are warm-started
        ev, ref = fast.evaluate(Z), generic.evaluate(Z)
        assert ev.value == pytest.approx(ref.value, rel=1e-6)
        np.testing.assert_allclose(ev.grad, ref.grad, rtol=0,
                                   atol=1e-5 * np.abs(ref.grad).max())
        # β is unique (K_ZZ is positive definite); b is not when no point lies on
        # the margin (small C), so compare the outputs f = K_XZ β
        f, f_ref = kernel(X, Z) @ ev.coef, kernel(X, Z) @ ref.coef
        np.testing.assert_allclose(f, f_ref, atol=1e-5 * max(1.0, np.abs(f_ref).max()))
        Z = Z + 0.01 * rng.normal(size=Z.shape)


@pytest.mark.parametrize("kernel_name", KERNELS)
def test_fast_gradient_matches_central_differences(kernel_name: str) -> None:
    result = check_gradient("svm", kernel_name, solver="auto", tol=1e-10, C=2.0)
    assert result.solver == "svm-dual"  # "auto" took the fast path
    assert result.passed(1e-6), result.as_dict()


def test_warm_start_settles_small_steps_by_one_active_set_solve() -> None:
    X, y, _, _ = load_banana()
    fast = SVMDualMarginal(3.0, X, y, make_kernel("rbf", X, gamma=3.0), 10, tol=1e-9)
    Z = initial_expansion_vectors(X, 10, "random", 0)
    first = fast.evaluate(Z)
    assert (fast.n_active_set, fast.n_interior_point) == (0, 1)
    second = fast.evaluate(Z + 1e-6)
    assert (fast.n_active_set, fast.n_interior_point) == (1, 1)
    assert second.value == pytest.approx(first.value, rel=1e-4)


def test_xvs_on_all_points_give_the_full_svm() -> None:
    """Reduction: Nz = N with Z = X is the full SVM (libsvm's dual value)."""
    X, y = random_problem(50, 2, random_state=3)
    kernel = make_kernel("rbf", X, gamma=0.8)
    ev = SVMDualMarginal(2.0, X, y, kernel, len(X), tol=1e-10).evaluate(X)
    svc = SVC(C=2.0, kernel="rbf", gamma=0.8, tol=1e-10).fit(X, y)
    dc, sv = svc.dual_coef_.ravel(), svc.support_vectors_
    assert ev.value == pytest.approx(np.abs(dc).sum() - 0.5 * dc @ kernel(sv, sv) @ dc, rel=1e-5)
    np.testing.assert_allclose(kernel(X, X) @ ev.coef + ev.intercept, svc.decision_function(X),
                               atol=1e-4)


def test_active_set_solve_refuses_more_margin_points_than_unknowns() -> None:
    X, y = random_problem(20, 2)
    B = y[:, None] * make_kernel("rbf", X)(X, X[:3])
    # 5 margin points, only Nz + 1 = 4 unknowns
    F = np.arange(5)
    solved = _active_set_solve(B, y.astype(float), F, 5, np.eye(3), np.zeros(3), 0.0, 1.0)[1]
    assert not solved


@pytest.mark.parametrize("duplicate", [False, True])
def test_null_vector_of_a_singular_free_set(duplicate: bool) -> None:
    """Nz + 2 free points, or Nz + 1 of which two coincide: [B_F, y_F]ᵀ d = 0 exactly."""
    rng = np.random.default_rng(0)
    B, y = rng.normal(size=(8, 3)), rng.choice([-1.0, 1.0], size=8)
    if duplicate:
        B[6], y[6] = B[1], y[1]
        F = np.array([0, 1, 2, 6, 7])
    else:
        F = np.array([0, 1, 2, 4, 7])
    m = 4 if duplicate else 5  # only F[:m] is free
    d, ok = _null_vector(B, y, F, m)
    M = np.vstack([B[F[:m]].T, y[F[:m]]])
    assert ok and np.linalg.norm(d) == pytest.approx(1.0)
    assert np.abs(M @ d).max() <= 1e-12


class _WeightedSVM(SVM):
    """The SVM with one hinge weight per point, as the semi-supervised SVM's stages use."""

    name = "weighted_svm"

    def __init__(self, costs) -> None:
        self.costs = np.asarray(costs, dtype=float)

    def declare(self, out):
        b = cp.Variable()
        hinge = cp.pos(1 - cp.multiply(out.y, out.f + b))
        return Declaration(cp.Minimize(0.5 * out.norm_w2 + self.costs @ hinge), [], b)


@pytest.mark.parametrize("kernel_name", ["rbf", "rbf+linear"])
def test_per_point_costs_agree_with_the_generic_path(kernel_name: str) -> None:
    X, y = random_problem(60, 3, random_state=2)
    kernel = make_kernel(kernel_name, X)
    costs = np.where(np.arange(60) < 15, 5.0, 0.05)  # labeled points weigh 100× more
    fast = SVMDualMarginal(costs, X, y, kernel, 6, tol=1e-10, formulation=_WeightedSVM(costs))
    generic = CvxpyMarginal(_WeightedSVM(costs), X, y, kernel, 6, solver="clarabel", tol=1e-10)
    rng = np.random.default_rng(1)
    Z = initial_expansion_vectors(X, 6, "random", 0)
    for _ in range(3):
        ev, ref = fast.evaluate(Z), generic.evaluate(Z)
        assert ev.value == pytest.approx(ref.value, rel=1e-6)
        np.testing.assert_allclose(ev.grad, ref.grad, rtol=0,
                                   atol=1e-5 * np.abs(ref.grad).max())
        Z = Z + 0.02 * rng.normal(size=Z.shape)
    assert fast.n_generic == 0


def test_costs_spanning_decades_are_solved_by_the_fast_path_itself() -> None:
    """A semi-supervised stage: C = 100 on 20 labeled points, 1e-2 on the rest.

    The interior point's gap wanders there; its best iterate, polished, is exact.
    """
    from sparsify.datasets import make_g241c

    X, y = make_g241c(n_samples=400, random_state=0)
    X = X / np.sqrt(((X - X.mean(0)) ** 2).sum(1).mean())
    costs = np.full(400, 1e-2)
    costs[np.random.default_rng(0).choice(400, 20, replace=False)] = 100.0
    kernel = make_kernel("rbf", X, gamma=0.5)
    fast = SVMDualMarginal(costs, X, y, kernel, 30, tol=1e-9, formulation=_WeightedSVM(costs))
    generic = CvxpyMarginal(_WeightedSVM(costs), X, y, kernel, 30, solver="clarabel",
                            tol=1e-10)
    ev = fast.evaluate(X[:30] + 0.01)
    assert fast.n_generic == 0 and ev.solver == "svm-dual"
    assert ev.value == pytest.approx(generic.evaluate(X[:30] + 0.01).value, rel=1e-6)


def test_per_point_costs_need_the_formulation_and_the_right_shape() -> None:
    X, y = random_problem(20, 2)
    kernel = make_kernel("rbf", X)
    with pytest.raises(ValueError, match="formulation="):
        SVMDualMarginal(np.ones(20), X, y, kernel, 3)
    with pytest.raises(ValueError, match="shape"):
        SVMDualMarginal(np.ones(7), X, y, kernel, 3, formulation=_WeightedSVM(np.ones(7)))
    with pytest.raises(ValueError, match="positive"):
        SVMDualMarginal(np.zeros(20), X, y, kernel, 3, formulation=_WeightedSVM(np.zeros(20)))


def test_auto_takes_the_fast_path_and_a_named_backend_the_generic_one() -> None:
    X, y = random_problem(30, 2)
    kernel = make_kernel("rbf", X)
    assert isinstance(SVM(1.0).marginal(X, y, kernel, 3, "auto", 1e-8), SVMDualMarginal)
    assert SVM(1.0).marginal(X, y, kernel, 3, "clarabel", 1e-8) is None


def test_sparse_svc_fits_by_the_fast_path_like_the_generic_one() -> None:
    X, y, X_test, _ = load_banana()
    fast = SparseSVC(8, C=3.0, gamma=3.0, max_iter=0, random_state=0).fit(X, y)
    generic = SparseSVC(8, C=3.0, gamma=3.0, max_iter=0, solver="clarabel",
                        random_state=0).fit(X, y)
    assert fast.objective_[0] == pytest.approx(generic.objective_[0], rel=1e-6)
    np.testing.assert_allclose(fast.decision_function(X_test), generic.decision_function(X_test),
                               atol=1e-4)


def test_labels_must_be_plus_minus_one_from_both_classes() -> None:
    X, y = random_problem(10, 2)
    with pytest.raises(ValueError, match=r"labels y in \{-1, \+1\}"):
        SVMDualMarginal(1.0, X, (y > 0).astype(int), make_kernel("rbf", X), 3)



def test_points_left_out_by_shrinking_are_checked_and_rejoin() -> None:
    X, y, _, _ = load_banana()
    kernel = make_kernel("rbf", X, gamma=3.0)
    fast, generic = _pair(X, y, kernel, 8, 3.0)
    fast.evaluate(initial_expansion_vectors(X, 8, "random", 0))
    # XVs elsewhere: points predicted far outside the margin now violate it
    Z = initial_expansion_vectors(X, 8, "random", 1)
    ev = fast.evaluate(Z)
    assert ev.value == pytest.approx(generic.evaluate(Z).value, rel=1e-6)


def test_a_stalled_interior_point_falls_back_to_the_generic_path(monkeypatch) -> None:
    import sparsify_plugins.svm_fast as svm_fast

    monkeypatch.setattr(svm_fast, "_interior_point", lambda *args, **kwargs: None)
    X, y = random_problem(40, 2)
    kernel = make_kernel("rbf", X)
    fast, generic = _pair(X, y, kernel, 4, 1.0)
    ev = fast.evaluate(X[:4])
    assert fast.n_generic == 1 and ev.solver == "clarabel"
    assert ev.value == pytest.approx(generic.evaluate(X[:4]).value, rel=1e-6)


def test_a_stalled_interior_point_hands_over_to_the_fallback_given(monkeypatch) -> None:
    import sparsify_plugins.svm_fast as svm_fast

    monkeypatch.setattr(svm_fast, "_interior_point", lambda *args, **kwargs: None)
    X, y = random_problem(40, 2)
    kernel = make_kernel("rbf", X)
    generic = CvxpyMarginal(SVM(1.0), X, y, kernel, 4, solver="ecos", tol=1e-10)
    fast = SVMDualMarginal(1.0, X, y, kernel, 4, tol=1e-10, fallback=generic)
    assert fast.evaluate(X[:4]).solver == "ecos" and fast.n_generic == 1


def test_without_a_writable_cache_the_fast_path_compiles_per_process(monkeypatch) -> None:
    """numba refuses cache=True with a RuntimeError where no cache folder is writable."""
    import numba
    from sparsify_plugins import svm_fast

    def njit_without_cache(*args, **kwargs):
        if kwargs.get("cache"):
            raise RuntimeError("cannot cache function 'double': no locator available for file")
        return numba.njit(*args, **kwargs)

    monkeypatch.setattr(svm_fast, "njit", njit_without_cache)

    def double(x: float) -> float:
        return 2.0 * x

    compiled = svm_fast._compiled(double)
    assert isinstance(compiled, numba.core.dispatcher.Dispatcher)
    assert compiled(1.5) == 3.0
