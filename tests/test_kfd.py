"""Kernel Fisher discriminant: the convex "kfd" and the paper's Rayleigh-quotient "skfd"."""

from __future__ import annotations

import cvxpy as cp
import numpy as np
import pytest
import scipy.linalg
from sklearn.datasets import make_blobs, make_moons
from sklearn.utils.estimator_checks import parametrize_with_checks

from sparsify import RBF, CvxpyMarginal, expansion_coefficients
from sparsify.algorithms.kfd.estimator import (
    SparseKFD,
    class_contrast,
    full_kfd,
    within_class_centring,
)
from sparsify.algorithms.kfd.formulation import KFD, SKFD, RayleighMarginal
from sparsify.core.formulation import make_formulation
from sparsify.core.gradcheck import check_gradient, random_problem
from sparsify.kernels import make_kernel
from sparsify.plugins.registry import get_registry

SOLVERS = ["clarabel", "ecos", "osqp"]
KERNELS = ["rbf", "poly", "linear", "rbf+linear"]
MU = 0.5


def test_both_formulations_are_registered_with_their_estimator() -> None:
    registry = get_registry()
    assert registry.get("formulation", "kfd") is KFD
    assert registry.get("formulation", "skfd") is SKFD
    from sparsify.core.estimator import estimator_for

    assert estimator_for("kfd") == (SparseKFD, {"method": "convex"})
    assert estimator_for("skfd") == (SparseKFD, {"method": "rayleigh"})


@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize("kernel", KERNELS)
def test_kfd_gradient_matches_central_differences(kernel: str, solver: str) -> None:
    result = check_gradient("kfd", kernel, solver=solver, tol=1e-9, mu=MU)
    assert result.passed(get_registry().get("solver", solver).gradient_accuracy), \
        result.as_dict()
    assert np.linalg.norm(result.grad) > 0


@pytest.mark.parametrize("kernel", KERNELS)
def test_skfd_own_gradient_matches_central_differences(kernel: str) -> None:
    X, y = random_problem()
    nz = X.shape[1] - 1 if kernel == "linear" else 4  # the Nz check_gradient evaluates at
    marginal = SKFD(mu=MU).marginal(X, y, make_kernel(kernel, X), nz, "auto", 1e-9)
    assert isinstance(marginal, RayleighMarginal)
    result = check_gradient("skfd", kernel, X=X, y=y, marginal=marginal, mu=MU)
    assert result.passed(1e-6), result.as_dict()
    assert np.linalg.norm(result.grad) > 0 and result.value < 0


def test_skfd_far_from_the_data_is_w_zero_with_zero_gradient() -> None:
    # A line search can throw the XVs so far that K_XZ underflows to 0: then A^z = 0 and
    # W = 0 exactly (λ = dᵀ(B^z)⁻¹d is quadratic in d = 0, so ∇W = 0); this used to raise
    # ValueError mid-fit (IDA banana, γ ≈ 0.48, μ = 0.1) instead of letting L-BFGS back off.
    X, y = random_problem()
    marginal = RayleighMarginal(X, y, RBF(1.0), mu=MU)
    ev = marginal.evaluate(X[:3] + 1e3)
    assert ev.value == 0.0
    assert np.all(np.isfinite(ev.grad)) and np.all(ev.grad == 0)
    near = marginal.evaluate(X[:3])
    assert near.value < 0 and np.all(np.isfinite(near.coef))


@pytest.fixture(scope="module")
def problem() -> tuple[np.ndarray, np.ndarray, RBF]:
    X, y = random_problem(n_samples=30, n_features=2, random_state=3)
    return X, y, RBF(0.8)


def _full_kfd_cvxpy(K: np.ndarray, y: np.ndarray, mu: float) -> tuple[float, np.ndarray, float]:
    """The full convex KFD over α (w = Σ α_i φ(x_i)), solved directly with the Gram matrix."""
    alpha, b = cp.Variable(len(y)), cp.Variable()
    L = np.linalg.cholesky(K + 1e-10 * np.eye(len(y)))
    xi = K @ alpha + b - y
    cons = [cp.sum(xi[y == c]) == 0 for c in (-1, 1)]
    prob = cp.Problem(cp.Minimize(cp.sum_squares(xi) + mu * cp.sum_squares(L.T @ alpha)), cons)
    prob.solve(solver="CLARABEL")
    return float(prob.value), alpha.value, float(b.value)


def test_kfd_with_z_equal_x_is_the_full_convex_kfd(problem) -> None:
    X, y, kernel = problem
    K = kernel(X, X)
    ev = CvxpyMarginal(KFD(mu=MU), X, y, kernel, len(X)).evaluate(X)
    value, alpha, b = _full_kfd_cvxpy(K, y, MU)
    assert ev.value == pytest.approx(value, rel=1e-6)
    np.testing.assert_allclose(K @ ev.coef + ev.intercept, K @ alpha + b, atol=1e-5)
    # and the closed form of the library's full_kfd
    alpha_cf, b_cf, lam = full_kfd(K, y, MU)
    np.testing.assert_allclose(K @ alpha_cf + b_cf, K @ alpha + b, atol=1e-5)
    assert value == pytest.approx(4.0 / lam, rel=1e-6)


def test_skfd_at_z_equal_x_is_the_largest_generalised_eigenvalue(problem) -> None:
    X, y, kernel = problem
    K = kernel(X, X)
    marginal = RayleighMarginal(X, y, kernel, MU)
    ev = marginal.evaluate(X, grad=False)
    # the full KFD of eq. 49 directly: A = K a aᵀ K, B̂ = K H K + μ K (same jitter)
    a, H = class_contrast(y), within_class_centring(y)
    A = np.outer(K @ a, K @ a)
    B = H(K).T @ H(K) + MU * (K + marginal.jitter * np.eye(len(X)))
    top = scipy.linalg.eigh(A, B, eigvals_only=True, subset_by_index=[len(X) - 1, len(X) - 1])
    assert ev.value == pytest.approx(-top[0], rel=1e-8)
    assert ev.coef @ B @ ev.coef == pytest.approx(1.0, rel=1e-8)  # eq. 61


def test_convex_and_rayleigh_share_direction_and_minimisers(problem) -> None:
    """For any Z: W_kfd = −4 / W_skfd, the same β direction, gradients related by the chain rule."""
    X, y, kernel = problem
    Z = X[:5] + 0.03
    convex = CvxpyMarginal(KFD(mu=MU), X, y, kernel, 5).evaluate(Z)
    rayleigh = RayleighMarginal(X, y, kernel, MU).evaluate(Z)
    assert convex.value == pytest.approx(-4.0 / rayleigh.value, rel=1e-6)
    cos = convex.coef @ rayleigh.coef / np.linalg.norm(convex.coef) / np.linalg.norm(
        rayleigh.coef)
    assert cos == pytest.approx(1.0, abs=1e-7)
    np.testing.assert_allclose(convex.grad, 4.0 / rayleigh.value**2 * rayleigh.grad,
                               rtol=1e-5, atol=1e-8 * np.abs(convex.grad).max())
    # the same midpoint bias as the convex KFD's class-mean constraints, once β is scaled
    # from βᵀB^zβ = 1 (Rayleigh, dᵀβ = √λ) to dᵀβ = 2 (convex)
    scale = 2.0 / np.sqrt(-rayleigh.value)
    assert scale * rayleigh.intercept == pytest.approx(convex.intercept, rel=1e-5)


def test_skfd_declares_the_convex_kfd_as_its_reference(problem) -> None:
    X, y, kernel = problem
    skfd = CvxpyMarginal(SKFD(mu=MU), X, y, kernel, 4).evaluate(X[:4] + 0.01)
    kfd = CvxpyMarginal(KFD(mu=MU), X, y, kernel, 4).evaluate(X[:4] + 0.01)
    assert skfd.value == pytest.approx(kfd.value, rel=1e-9)


@pytest.mark.parametrize("name", ["kfd", "skfd"])
def test_formulation_errors(name: str, problem) -> None:
    X, _, kernel = problem
    with pytest.raises(ValueError, match=r"The 'mu' parameter of S?KFD must be a float in the "
                       r"range \(0.0, inf\)\. Got 0.0 instead\."):
        make_formulation(name, mu=0.0)
    with pytest.raises(ValueError, match="needs labels y in"):
        make_formulation(name).marginal(X, None, kernel, 3, "auto", 1e-9) if name == "skfd" \
            else CvxpyMarginal(KFD(), X, None, kernel, 3)
    with pytest.raises(ValueError, match="with both classes present"):
        CvxpyMarginal(make_formulation(name), X, np.ones(len(X)), kernel, 3)


# method="convex" shares every line of the estimator but the formulation's name (tested below)
@parametrize_with_checks([SparseKFD(n_expansion=3, max_iter=5, init="random", random_state=0)])
def test_scikit_learn_conformance(estimator, check) -> None:
    check(estimator)


@pytest.fixture(scope="module")
def moons() -> tuple[np.ndarray, np.ndarray]:
    return make_moons(n_samples=120, noise=0.15, random_state=0)


def test_rayleigh_fit_lowers_w_and_uses_the_svm_step(moons) -> None:
    X, y = moons
    params = {"n_expansion": 6, "mu": 0.1, "C": 10.0, "gamma": 2.0, "random_state": 0}
    clf = SparseKFD(**params).fit(X, y)
    fixed = SparseKFD(**params, max_iter=0).fit(X, y)
    history = clf.objective_history_[0]
    assert history[-1] < history[0] and clf.n_iter_[0] > 0
    assert clf.score(X, y) > 0.95 and clf.score(X, y) >= fixed.score(X, y)
    # β and b are the SVM's on the final XVs (paper eq. 37-45)
    coef, b = expansion_coefficients(X, np.where(y == 1, 1, -1), clf.expansion_vectors_,
                                     kernel=clf.kernel_, C=10.0)
    np.testing.assert_allclose(clf.expansion_coef_[0], coef, rtol=1e-6, atol=1e-8)
    assert clf.intercept_[0] == pytest.approx(b, rel=1e-6)


def test_convex_method_keeps_its_own_coefficients(moons) -> None:
    X, y = moons
    clf = SparseKFD(n_expansion=5, mu=0.1, gamma=2.0, method="convex", max_iter=10,
                    random_state=0).fit(X, y)
    ev = CvxpyMarginal(KFD(mu=0.1), X, np.where(y == 1, 1, -1), clf.kernel_, 5).evaluate(
        clf.expansion_vectors_)
    np.testing.assert_allclose(clf.expansion_coef_[0], ev.coef, rtol=1e-5, atol=1e-7)
    assert clf.score(X, y) > 0.9


def test_ratio_and_multiclass() -> None:
    X, y = make_blobs(n_samples=60, centers=3, cluster_std=1.0, random_state=2)
    clf = SparseKFD(n_expansion=0.5, mu=0.1, C=10.0, max_iter=5, random_state=0).fit(X, y)
    assert clf.decision_function(X).shape == (60, 3) and len(clf.full_n_support_) == 3
    assert clf.score(X, y) > 0.9


@pytest.mark.parametrize(
    ("params", "y", "message"),
    [
        ({"mu": 0.0}, [0, 0, 1, 1], r"The 'mu' parameter of SparseKFD must be a float in the "
                                    r"range \(0.0, inf\)\. Got 0.0 instead"),
        ({"mu": -1}, [0, 0, 1, 1], r"The 'mu' parameter of SparseKFD must be"),
        ({"method": "eig"}, [0, 0, 1, 1], r"The 'method' parameter of SparseKFD must be"),
        ({}, [0, 0, 0, 1], r"needs at least 2 samples of each class.*class np.int64\(1\) has "
                           r"1 sample|class 1 has 1 sample"),
        ({}, [1, 1, 1, 1], r"needs samples of at least 2 classes"),
    ],
)
def test_bad_input_is_a_clear_error(params, y, message) -> None:
    X = np.array([[0.0, 0.0], [0.1, 0.3], [1.0, 1.0], [1.2, 0.9]])
    with pytest.raises(ValueError, match=message):
        SparseKFD(n_expansion=2, **params).fit(X, np.array(y))


def test_command_line_fits_kfd(capsys) -> None:
    import json

    from sparsify.cli import main

    assert main(["fit", "--formulation", "kfd", "--param", "mu=0.1", "--n-expansion", "5",
                 "--max-iter", "5", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["estimator"] == "SparseKFD" and result["n_expansion"] == 5
    assert result["test_error"] < 0.3  # a working classifier after 5 iterations (chance: 0.45)
