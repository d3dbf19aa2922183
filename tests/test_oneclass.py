"""The one-class SVM: its gradient, the full problem at Z = X, and SparseOneClassSVM."""

from __future__ import annotations

import pickle

import cvxpy as cp
import numpy as np
import pytest
from sklearn.metrics import roc_auc_score
from sklearn.svm import OneClassSVM
from sklearn.utils.estimator_checks import parametrize_with_checks

from sparsify import RBF, CvxpyMarginal, SolverError
from sparsify.algorithms.oneclass.estimator import SparseOneClassSVM
from sparsify.core.formulation import make_formulation
from sparsify.core.gradcheck import check_gradient, random_problem
from sparsify.plugins.registry import get_registry

SOLVERS = ["clarabel", "ecos", "osqp"]
KERNELS = ["rbf", "poly", "linear", "rbf+linear"]


@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize("kernel", KERNELS)
def test_gradient_matches_central_differences(kernel: str, solver: str) -> None:
    # Shifted off the origin: with a linear or odd polynomial kernel on centred
    # data the origin is inside the reduced convex hull and W ≡ 0 for small ν.
    X, _ = random_problem(n_samples=40, n_features=3, random_state=1)
    try:
        result = check_gradient("oneclass", kernel, solver=solver, X=X + 1.0, y=None, tol=1e-9,
                                nu=0.3)
    except SolverError as exc:
        # OSQP is refused where its polishing fails: unpolished duals are first-order only
        assert solver == "osqp" and "polishing failed" in str(exc), exc
        return
    assert result.passed(get_registry().get("solver", solver).gradient_accuracy), \
        result.as_dict()
    assert np.linalg.norm(result.grad) > 1e-3


def test_labels_are_ignored() -> None:
    X, y = random_problem(n_samples=30, n_features=2, random_state=0)
    form = make_formulation("oneclass", nu=0.3)
    with_y = CvxpyMarginal(form, X, y, RBF(0.7), 4).evaluate(X[:4])
    without = CvxpyMarginal(form, X, None, RBF(0.7), 4).evaluate(X[:4])
    assert with_y.value == pytest.approx(without.value, rel=1e-7)
    np.testing.assert_allclose(with_y.grad, without.grad, rtol=1e-5, atol=1e-8)


def _oneclass_dual(K: np.ndarray, nu: float) -> tuple[float, np.ndarray]:
    """min ½ αᵀKα s.t. 0 ≤ α ≤ 1/(νN), Σα = 1, solved directly: (value, α)."""
    n = len(K)
    a = cp.Variable(n)
    L = np.linalg.cholesky(K + 1e-12 * np.eye(n))
    objective = cp.Minimize(0.5 * cp.sum_squares(L.T @ a))
    cp.Problem(objective, [a >= 0, a <= 1 / (nu * n), cp.sum(a) == 1]).solve(solver="CLARABEL")
    return float(objective.value), np.asarray(a.value)


@pytest.fixture(scope="module")
def blob() -> tuple[np.ndarray, RBF, float]:
    X, _ = random_problem(n_samples=60, n_features=2, random_state=3)
    return X, RBF(0.8), 0.2


def test_z_equal_x_gives_the_full_one_class_svm(blob) -> None:
    X, kernel, nu = blob
    N = len(X)
    ev = CvxpyMarginal(make_formulation("oneclass", nu=nu), X, None, kernel, N).evaluate(X)
    dual, _ = _oneclass_dual(kernel(X, X), nu)
    # W is νN times Schölkopf's primal optimum, which is minus the dual optimum
    assert ev.value == pytest.approx(-nu * N * dual, rel=1e-6)
    ocsvm = OneClassSVM(nu=nu, kernel="rbf", gamma=0.8, tol=1e-10).fit(X)
    a = ocsvm.dual_coef_.ravel()  # libsvm's multipliers: 0 ≤ α' ≤ 1, Σα' = νN
    assert a.sum() == pytest.approx(nu * N, rel=1e-8)
    sv = ocsvm.support_vectors_
    assert ev.value == pytest.approx(-(a @ kernel(sv, sv) @ a) / (2 * nu * N), rel=1e-5)
    # the same machine: libsvm's decision values are νN times ours
    tau = kernel(X, X) @ ev.coef + ev.intercept
    np.testing.assert_allclose(nu * N * tau, ocsvm.decision_function(X), atol=1e-4)
    assert ev.intercept == pytest.approx(float(ocsvm.intercept_[0]) / (nu * N), abs=1e-6)


def test_support_vectors_are_optimal_xvs(blob) -> None:
    """Paper Example 1 for the one-class SVM: Z = the SVs gives the full optimum, ∇W = 0."""
    X, kernel, nu = blob
    Z = OneClassSVM(nu=nu, kernel="rbf", gamma=0.8, tol=1e-10).fit(X).support_vectors_
    form = make_formulation("oneclass", nu=nu)
    full = CvxpyMarginal(form, X, None, kernel, len(X)).evaluate(X)
    marginal = CvxpyMarginal(form, X, None, kernel, len(Z))
    at_svs = marginal.evaluate(Z)
    assert at_svs.value == pytest.approx(full.value, rel=1e-6)
    assert np.linalg.norm(at_svs.grad) < 1e-4 * np.linalg.norm(marginal.evaluate(Z + 0.1).grad)


@parametrize_with_checks([SparseOneClassSVM(n_expansion=3, max_iter=5, random_state=0)])
def test_scikit_learn_conformance(estimator, check) -> None:
    check(estimator)


def _ring_data() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(150, 2))
    inliers = rng.normal(size=(100, 2))
    outliers = rng.uniform(-5, 5, size=(300, 2))
    outliers = outliers[np.linalg.norm(outliers, axis=1) > 3.0]
    return X, inliers, outliers


def test_fit_lowers_w_and_matches_the_full_machine() -> None:
    X, inliers, outliers = _ring_data()
    params = {"n_expansion": 6, "nu": 0.1, "gamma": 0.5, "random_state": 0}
    det = SparseOneClassSVM(**params).fit(X)
    fixed = SparseOneClassSVM(**params, max_iter=0).fit(X)
    assert det.objective_ < fixed.objective_
    history = det.objective_history_[0]
    assert np.all(np.diff(history) <= 1e-9 * abs(history[0]))
    assert det.expansion_vectors_.shape == (6, 2) and det.expansion_coef_.shape == (1, 6)
    # ν bounds the fraction of training outliers from above (up to the XVs' restriction)
    assert np.mean(det.predict(X) == -1) <= 0.1 + 0.05
    test = np.vstack([inliers, outliers])
    truth = np.r_[np.ones(len(inliers)), np.zeros(len(outliers))]
    full = OneClassSVM(nu=0.1, gamma=0.5).fit(X)
    auc_full = roc_auc_score(truth, full.decision_function(test))
    assert roc_auc_score(truth, det.decision_function(test)) > auc_full - 0.01
    np.testing.assert_allclose(det.decision_function(test),
                               det.score_samples(test) - det.offset_)
    assert det.offset_ == pytest.approx(-det.intercept_[0])


def test_ratio_of_full_support_vectors() -> None:
    X, _, _ = _ring_data()
    det = SparseOneClassSVM(n_expansion=0.25, nu=0.1, gamma=0.5, max_iter=2,
                            random_state=0).fit(X)
    nsv = len(OneClassSVM(nu=0.1, gamma=0.5).fit(X).support_)
    assert det.full_n_support_ == nsv
    assert det.n_expansion_ == round(0.25 * nsv) == len(det.expansion_vectors_)


def test_pickle_roundtrip() -> None:
    X, inliers, _ = _ring_data()
    det = SparseOneClassSVM(n_expansion=4, nu=0.2, max_iter=5, random_state=0).fit(X)
    again = pickle.loads(pickle.dumps(det))
    np.testing.assert_array_equal(again.decision_function(inliers), det.decision_function(inliers))
    np.testing.assert_array_equal(again.predict(inliers), det.predict(inliers))


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"nu": 0}, r"The 'nu' parameter of SparseOneClassSVM must be a float in the range "
                    r"\(0.0, 1.0\]. Got 0 instead."),
        ({"nu": 1.5}, r"The 'nu' parameter of SparseOneClassSVM must be a float in the range "
                      r"\(0.0, 1.0\]. Got 1.5 instead."),
        ({"n_expansion": 0}, "The 'n_expansion' parameter of SparseOneClassSVM must be"),
        ({"n_expansion": 1.5}, "The 'n_expansion' parameter of SparseOneClassSVM must be"),
        ({"n_expansion": 200}, "n_expansion=200 asks for more expansion vectors than the 150 "
                               "distinct training points"),
        ({"kernel": "gauss"}, r"Unknown kernel 'gauss'"),
        ({"solver": "mosekk"}, r"Unknown solver 'mosekk'"),
        # inliers only, so no classes to draw evenly from
        ({"init": "balanced"}, r"The 'init' parameter of SparseOneClassSVM must be a str among"),
    ],
)
def test_bad_parameters_say_what_to_change(params, message) -> None:
    X, _, _ = _ring_data()
    with pytest.raises(ValueError, match=message):
        SparseOneClassSVM(**{"n_expansion": 3, **params}).fit(X)


def test_bad_data_say_what_to_change() -> None:
    X, _, _ = _ring_data()
    bad = X.copy()
    bad[3, 1] = np.nan
    with pytest.raises(ValueError, match="Input X contains NaN"):
        SparseOneClassSVM(n_expansion=3).fit(bad)
    bad[3, 1] = np.inf
    with pytest.raises(ValueError, match="Input X contains infinity"):
        SparseOneClassSVM(n_expansion=3).fit(bad)
    det = SparseOneClassSVM(n_expansion=3, max_iter=2).fit(X)
    with pytest.raises(ValueError, match="X has 3 features, but SparseOneClassSVM is expecting 2"):
        det.predict(np.ones((2, 3)))
