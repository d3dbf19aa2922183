"""SparseKernelPCA: the eigenproblem W(Z) and its gradient against finite differences, Z = X
against scikit-learn's KernelPCA, the L-BFGS fit, the pre-images, and scikit-learn's checks."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.decomposition import KernelPCA as SklearnKernelPCA
from sklearn.utils.estimator_checks import parametrize_with_checks

from sparsify import RBF, Linear, NonDifferentiableWarning, Polynomial, SparseKernelPCA
from sparsify.algorithms.kernel_pca.eigen import VarianceMarginal
from sparsify.algorithms.kernel_pca.formulation import NOT_CONVEX, KernelPCA
from sparsify.algorithms.kernel_pca.preimage import rbf_pre_image
from sparsify.core.conic import make_marginal
from sparsify.core.estimator import estimator_for
from sparsify.core.gradcheck import check_gradient
from sparsify.testing import parametrize_formulation_checks


def _data(n: int = 60, d: int = 3, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, d)) * np.array([1.0, 0.7, 0.4][:d] + [0.3] * max(0, d - 3))


def _circle(n: int = 300, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    angle = rng.uniform(0, 2 * np.pi, n)
    return np.column_stack([np.cos(angle), np.sin(angle)]) + 0.05 * rng.normal(size=(n, 2))


# ----------------------------------------------------------------------------- the gradient


@pytest.mark.parametrize("n_components", [None, 1, 2, 3])
@pytest.mark.parametrize("kernel", ["rbf", "poly", "rbf+linear"])
def test_gradient_matches_central_differences(kernel: str, n_components: int | None) -> None:
    form = KernelPCA(n_components=n_components)
    for seed in (0, 1):
        result = check_gradient(form, kernel, random_state=seed)
        assert result.solver == "eigen"
        assert result.passed(1e-6), result.as_dict()
        assert np.linalg.norm(result.grad) > 0


def test_gradient_of_the_linear_kernel_moves_the_plane() -> None:
    # Nz = 2 XVs in 3-D: W depends on the plane they span, and on nothing else
    result = check_gradient("kernel_pca", "linear", n_components=1)
    assert result.passed(1e-6), result.as_dict()


# The checks of a declared cvxpy problem do not apply: there is none (NOT_CONVEX).
@parametrize_formulation_checks(
    KernelPCA(n_components=2), kernels=("rbf", "poly"),
    skip={"declaration": NOT_CONVEX, "full_problem": NOT_CONVEX, "gradient": NOT_CONVEX,
          "own_value": NOT_CONVEX,
          "estimator": "SparseKernelPCA passes parametrize_with_checks below"})
def test_conformance_of_its_own_gradient(check) -> None:  # type: ignore[no-untyped-def]
    check()


def test_the_formulation_declares_nothing_and_supplies_its_marginal_for_any_solver() -> None:
    X = _data(30)
    with pytest.raises(ValueError, match=r"is an eigenproblem .* not a convex program"):
        KernelPCA(2).declare(None)  # type: ignore[arg-type]
    assert KernelPCA(2).n_outputs(None) == 2
    Z = X[:4] + 0.1
    values = {solver: make_marginal(KernelPCA(2), X, None, RBF(0.5), 4, solver, 1e-8)
              .evaluate(Z).value for solver in ("auto", "clarabel", "osqp")}
    assert len(set(values.values())) == 1, values
    assert estimator_for("kernel_pca") == (SparseKernelPCA, {})
    with pytest.raises(ValueError, match="The 'n_components' parameter of KernelPCA"):
        KernelPCA(0)


def test_ties_warn_once_that_w_is_not_differentiable() -> None:
    # isotropic data, linear kernel, Z = two axes: λ₁ = λ₂, so the top-1 direction is any one
    X = np.array([[1.0, 0.0], [-1.0, 0.0], [0.0, 1.0], [0.0, -1.0]])
    marginal = VarianceMarginal(X, Linear(), 2, n_components=1)
    with pytest.warns(NonDifferentiableWarning, match=r"eigenvalues are equal \(λ_1 = 0\.5"):
        ev = marginal.evaluate(np.eye(2))
    assert ev.value == pytest.approx(-0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        marginal.evaluate(np.eye(2))  # once per marginal
        # all components: the trace, differentiable at a tie
        VarianceMarginal(X, Linear(), 2).evaluate(np.eye(2))


def test_more_components_than_xvs_are_refused() -> None:
    with pytest.raises(ValueError, match=r"n_components=5 must be between 1 and the number of "
                                         r"XVs Nz=3"):
        VarianceMarginal(_data(), RBF(1.0), 3, n_components=5)
    with pytest.raises(ValueError, match="n_components=4 must be between 1"):
        SparseKernelPCA(3, n_components=4).fit(_data())


# ----------------------------------------------------------------------------- Z = X


@pytest.mark.parametrize("kernel", [RBF(0.3), Polynomial(gamma=0.5, degree=2, coef0=1.0)])
def test_z_equal_x_is_scikit_learns_kernel_pca(kernel) -> None:  # type: ignore[no-untyped-def]
    X, X_test = _data(60), _data(15, seed=1)
    params = ({"kernel": "rbf", "gamma": kernel.gamma} if isinstance(kernel, RBF) else
              {"kernel": "poly", "gamma": kernel.gamma, "degree": kernel.degree,
               "coef0": kernel.coef0})
    sk = SklearnKernelPCA(n_components=4, eigen_solver="dense", **params).fit(X)
    # max_iter=0 keeps the initial XVs: all 60 training points
    ours = SparseKernelPCA(60, n_components=4, max_iter=0, random_state=0, **params).fit(X)
    assert sorted(map(tuple, ours.expansion_vectors_)) == sorted(map(tuple, X))
    # scikit-learn's eigenvalues_ are those of the centred N × N kernel matrix: N × variance
    np.testing.assert_allclose(ours.eigenvalues_, sk.eigenvalues_ / len(X), rtol=1e-7)
    assert ours.objective_[0] == pytest.approx(-ours.eigenvalues_.sum(), rel=1e-12)
    ours_t, sk_t = ours.transform(X_test), sk.transform(X_test)
    signs = np.sign((ours_t * sk_t).sum(axis=0))
    np.testing.assert_allclose(ours_t * signs, sk_t, atol=1e-7 * np.abs(sk_t).max())
    np.testing.assert_allclose(ours.fit_transform(X) * signs, sk.transform(X),
                               atol=1e-7 * np.abs(sk_t).max())


def test_components_are_orthonormal_and_the_scores_centred() -> None:
    X = _data(80)
    est = SparseKernelPCA(8, n_components=3, gamma=0.5, max_iter=20, random_state=0).fit(X)
    Z, C = est.expansion_vectors_, est.components_
    assert C is est.expansion_coef_ and C.shape == (3, 8)
    np.testing.assert_allclose(C @ est.kernel_(Z, Z) @ C.T, np.eye(3), atol=1e-6)
    scores = est.transform(X)
    np.testing.assert_allclose(scores.mean(0), 0.0, atol=1e-12)
    np.testing.assert_allclose(scores.var(0), est.eigenvalues_, rtol=1e-12)
    assert np.all(np.diff(est.eigenvalues_) <= 0)
    assert est.get_feature_names_out().tolist() == [f"sparsekernelpca{i}" for i in range(3)]


# ----------------------------------------------------------------------------- the fit


def test_lbfgs_raises_the_captured_variance_over_the_initial_xvs() -> None:
    X = _circle(300)
    start = SparseKernelPCA(6, n_components=3, gamma=1.0, max_iter=0, random_state=0).fit(X)
    fitted = SparseKernelPCA(6, n_components=3, gamma=1.0, random_state=0).fit(X)
    history = fitted.objective_history_[0]
    assert history[0] == pytest.approx(start.objective_[0], rel=1e-12)
    assert np.all(np.diff(history) <= 1e-12)
    assert fitted.eigenvalues_.sum() > 1.05 * start.eigenvalues_.sum()
    # the full kernel PCA with all 300 points bounds what any 6 XVs capture
    full = SklearnKernelPCA(n_components=3, kernel="rbf", gamma=1.0).fit(X)
    assert fitted.eigenvalues_.sum() <= full.eigenvalues_.sum() / len(X) + 1e-9
    assert fitted.eigenvalues_.sum() > 0.95 * full.eigenvalues_.sum() / len(X)


# ----------------------------------------------------------------------------- pre-images


def test_inverse_transform_recovers_the_training_points() -> None:
    X = _circle(300)
    est = SparseKernelPCA(20, n_components=6, gamma=1.0, random_state=0).fit(X)
    back = est.inverse_transform(est.transform(X))
    error = np.linalg.norm(back - X, axis=1)
    # the noise is 0.05 per coordinate: the pre-images lie on the circle, near each point
    assert np.median(error) < 0.06 and error.mean() < 0.08, (np.median(error), error.mean())
    assert np.abs(np.linalg.norm(back, axis=1) - 1.0).mean() < 0.05


def test_pre_image_of_an_image_is_the_point() -> None:
    rng = np.random.default_rng(0)
    Z = rng.normal(size=(6, 3))
    coef = np.eye(6)[[2, 4]]
    np.testing.assert_allclose(rbf_pre_image(coef, Z, gamma=0.7), Z[[2, 4]], atol=1e-12)
    with pytest.raises(ValueError, match="coef has 5 columns but there are 6 expansion"):
        rbf_pre_image(np.ones((1, 5)), Z, 1.0)


def test_inverse_transform_refuses_other_kernels_and_other_shapes() -> None:
    X = _data(40)
    poly = SparseKernelPCA(4, n_components=2, kernel="poly", max_iter=2, random_state=0).fit(X)
    with pytest.raises(ValueError, match=r"Gaussian kernel only; this model's kernel is "
                                         r"Polynomial\(.*kernel='rbf'"):
        poly.inverse_transform(poly.transform(X))
    rbf = SparseKernelPCA(4, n_components=2, max_iter=2, random_state=0).fit(X)
    with pytest.raises(ValueError, match=r"X has 3 columns, but SparseKernelPCA has 2 "
                                         r"components"):
        rbf.inverse_transform(np.zeros((2, 3)))


# ----------------------------------------------------------------------------- scikit-learn


@parametrize_with_checks([SparseKernelPCA(3, max_iter=5, random_state=0),
                          SparseKernelPCA(3, n_components=2, max_iter=5, random_state=0)])
def test_scikit_learn_checks(estimator, check) -> None:  # type: ignore[no-untyped-def]
    check(estimator)
