"""Relevance vector machine: sparsity, the posterior mode, the fixed point of the α updates."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.special import expit
from sklearn.datasets import make_blobs, make_moons
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils._param_validation import InvalidParameterError
from sklearn.utils.estimator_checks import parametrize_with_checks

from sparsify import RBF
from sparsify.baselines.rvm import RVMClassifier, posterior_mode
from sparsify.datasets import load_banana


@pytest.fixture(scope="module")
def banana() -> tuple[np.ndarray, ...]:
    return load_banana()


@pytest.fixture(scope="module")
def fitted(banana) -> dict[str, RVMClassifier]:
    X, y, _, _ = banana
    return {m: RVMClassifier(gamma=1.0, method=m).fit(X, y) for m in ("fast", "em")}


@parametrize_with_checks([RVMClassifier()])
def test_scikit_learn_conformance(estimator, check) -> None:
    check(estimator)


def _design(clf: RVMClassifier, X: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Columns, weights and precisions of the fitted model (bias first when it is used)."""
    Phi, w, a = clf.kernel_(X, clf.relevance_vectors_), clf.expansion_coef_[0], clf.alpha_[0]
    if np.isfinite(clf.intercept_alpha_[0]):
        Phi = np.column_stack([np.ones(len(X)), Phi])
        w, a = np.r_[clf.intercept_[0], w], np.r_[clf.intercept_alpha_[0], a]
    return Phi, w, a


def test_banana_few_relevance_vectors_and_low_error(banana, fitted) -> None:
    X, _, X_test, y_test = banana
    clf = fitted["fast"]
    # Tipping (2001): 10.8 % with about 11 relevance vectors (first 10 IDA splits)
    assert 1 <= clf.n_relevance_ <= 20
    assert 1 - clf.score(X_test, y_test) < 0.135
    np.testing.assert_array_equal(clf.relevance_vectors_, X[clf.relevance_indices_])
    assert clf.expansion_coef_.shape == (1, clf.n_relevance_)
    assert np.all(np.isfinite(clf.alpha_)) and np.all(clf.alpha_ > 0)
    proba = clf.predict_proba(X_test[:50])
    np.testing.assert_allclose(proba.sum(1), 1.0)
    np.testing.assert_allclose(proba[:, 1], expit(clf.decision_function(X_test[:50])))
    np.testing.assert_allclose(np.exp(clf.predict_log_proba(X_test[:50])), proba)


@pytest.mark.parametrize("method", ["fast", "em"])
def test_weights_are_the_posterior_mode(banana, fitted, method) -> None:
    X, y, _, _ = banana
    clf = fitted[method]
    t = (y == clf.classes_[1]).astype(float)
    Phi, w, a = _design(clf, X)
    # the gradient of the penalised log-likelihood vanishes at the mode …
    grad = Phi.T @ (t - expit(Phi @ w)) - a * w
    assert np.abs(grad).max() < 1e-6 * max(1.0, np.abs(Phi.T @ (t - expit(Phi @ w))).max())

    # … and a generic optimiser from zero finds the same weights
    def objective(v: np.ndarray) -> tuple[float, np.ndarray]:
        f = Phi @ v
        value = np.sum(np.logaddexp(0.0, f) - t * f) + 0.5 * a @ v**2
        return value, -(Phi.T @ (t - expit(f))) + a * v

    res = minimize(objective, np.zeros_like(w), jac=True, method="L-BFGS-B",
                   options={"gtol": 1e-10, "ftol": 1e-15, "maxiter": 10000})
    np.testing.assert_allclose(w, res.x, rtol=1e-4, atol=1e-6 * np.abs(w).max())


def test_fast_method_stops_at_a_fixed_point_of_the_alpha_update(banana, fitted) -> None:
    # recomputed here from scratch: sparsity and quality factors at the mode (Tipping & Faul)
    X, y, _, _ = banana
    clf = fitted["fast"]
    t = (y == clf.classes_[1]).astype(float)
    Phi, w, a = _design(clf, X)
    sigma = expit(Phi @ w)
    B = sigma * (1 - sigma)
    C = (Phi.T * B) @ Phi
    Sigma = np.linalg.inv(C + np.diag(a))
    S = np.diag(C) - np.einsum("ij,jk,ki->i", C, Sigma, C)
    Q = Phi.T @ (t - sigma)
    s, q = a * S / (a - S), a * Q / (a - S)
    assert np.all(q**2 > s)  # every relevance vector deserves its place
    np.testing.assert_allclose(np.log(a), np.log(s**2 / (q**2 - s)), atol=5 * clf.tol)


def test_fast_and_em_agree(banana, fitted) -> None:
    _, _, X_test, y_test = banana
    errors = {m: 1 - c.score(X_test, y_test) for m, c in fitted.items()}
    assert abs(errors["fast"] - errors["em"]) < 0.02
    assert fitted["em"].n_relevance_ <= 25
    assert abs(fitted["fast"].n_relevance_ - fitted["em"].n_relevance_) <= 6
    # both maximise the same (Laplace) evidence; neither is far behind the other
    assert fitted["fast"].log_evidence_[0] == pytest.approx(fitted["em"].log_evidence_[0], rel=0.05)


def test_multiclass_one_vs_rest_with_own_relevance_vectors() -> None:
    X, y = make_blobs(150, centers=[[0, 0], [3, 0], [0, 3]], cluster_std=0.8, random_state=0)
    clf = RVMClassifier(gamma=0.5).fit(X, y)
    assert clf.expansion_coef_.shape == (3, clf.n_relevance_)
    used = clf.expansion_coef_ != 0
    assert np.all(used.any(axis=0))  # the union: every vector is used by some class
    assert not np.all(used)  # … but not every class uses all of them
    np.testing.assert_array_equal(np.isfinite(clf.alpha_), used)
    assert clf.score(X, y) > 0.9
    proba = clf.predict_proba(X)
    np.testing.assert_allclose(proba.sum(1), 1.0)
    np.testing.assert_array_equal(clf.classes_[proba.argmax(1)], clf.predict(X))
    # one-vs-rest: each output is the binary RVM of its class
    single = RVMClassifier(gamma=0.5).fit(X, y == 2)
    np.testing.assert_allclose(clf.decision_function(X)[:, 2], single.decision_function(X),
                               rtol=1e-8, atol=1e-8)


def test_kernel_instance_equals_gamma() -> None:
    X, y = make_moons(80, noise=0.2, random_state=0)
    a = RVMClassifier(gamma=2.0).fit(X, y)
    b = RVMClassifier(kernel=RBF(2.0)).fit(X, y)
    np.testing.assert_allclose(a.decision_function(X), b.decision_function(X))
    assert b.gamma_ is None and a.gamma_ == 2.0


def test_posterior_mode_helper_matches_logistic_regression() -> None:
    from sklearn.linear_model import LogisticRegression

    X, y = make_moons(60, noise=0.3, random_state=2)
    w, L, sigma = posterior_mode(X, y.astype(float), np.full(2, 0.5))
    lr = LogisticRegression(C=2.0, fit_intercept=False, tol=1e-12, max_iter=1000).fit(X, y)
    np.testing.assert_allclose(w, lr.coef_[0], rtol=1e-6)
    H = L @ L.T
    np.testing.assert_allclose(H, (X.T * sigma * (1 - sigma)) @ X + 0.5 * np.eye(2))


def test_bad_input() -> None:
    X, y = make_moons(40, noise=0.2, random_state=0)
    with pytest.raises(InvalidParameterError, match="'method' parameter"):
        RVMClassifier(method="newton").fit(X, y)
    with pytest.raises(InvalidParameterError, match="'kernel' parameter"):
        RVMClassifier(kernel="poly").fit(X, y)
    with pytest.raises(InvalidParameterError, match="'gamma' parameter"):
        RVMClassifier(gamma=-1.0).fit(X, y)
    with pytest.raises(ValueError, match="at least 2 classes"):
        RVMClassifier().fit(X, np.zeros(40))
    with pytest.warns(ConvergenceWarning, match="max_iter=2"):
        RVMClassifier(max_iter=2).fit(X, y)


def test_image_subset_with_duplicate_rows(data_dir) -> None:
    # duplicate rows give identical kernel columns: only one of a pair may enter the model
    with np.load(data_dir / "image" / "image.npz") as z:
        X, y, tr, te = z["X"], z["y"], z["train_idx"][0][:300], z["test_idx"][0]
    tr = np.concatenate([tr, tr[:100]])
    clf = RVMClassifier().fit(X[tr], y[tr])
    assert len(np.unique(clf.relevance_vectors_, axis=0)) == clf.n_relevance_ < 60
    assert clf.score(X[te], y[te]) > 0.85
