"""Paper baselines: reduced set (RS, MRS) and reduced SVM (RSVM, MRSVM)."""

from __future__ import annotations

import itertools

import cvxpy as cp
import numpy as np
import pytest
from sklearn.datasets import make_moons
from sklearn.svm import SVC
from sklearn.utils.estimator_checks import parametrize_with_checks

from sparsify import RBF
from sparsify.baselines.reduced_set import ReducedSetSVC, reduced_set
from sparsify.baselines.rsvm import ReducedSVC


@parametrize_with_checks([
    ReducedSetSVC(n_expansion=3, random_state=0),
    ReducedSetSVC(n_expansion=3, coef="mrs", random_state=0),
    ReducedSVC(n_expansion=3, random_state=0),
    ReducedSVC(n_expansion=3, coef="mrsvm", random_state=0),
])
def test_scikit_learn_conformance(estimator, check) -> None:
    check(estimator)


def test_reduced_set_recovers_a_single_gaussian() -> None:
    S = np.array([[0.3, -0.2], [5.0, 5.0]])
    Z, beta = reduced_set(S, [2.0, 0.0], gamma=0.5, n_expansion=1, random_state=0)
    np.testing.assert_allclose(Z[0], S[0], atol=1e-8)
    np.testing.assert_allclose(beta, [2.0], rtol=1e-8)


def test_reduced_set_residual_shrinks_with_more_vectors() -> None:
    X, y = make_moons(150, noise=0.3, random_state=0)
    svm = SVC(C=10.0, gamma=2.0).fit(X, y)
    S, a, k = svm.support_vectors_, svm.dual_coef_[0], RBF(2.0)
    assert len(S) > 24
    residuals = []
    for nz in (1, 3, 6, 12):
        Z, beta = reduced_set(S, a, 2.0, nz, random_state=0)
        residuals.append(a @ k(S, S) @ a - 2 * a @ k(S, Z) @ beta + beta @ k(Z, Z) @ beta)
    assert all(later < earlier for earlier, later in itertools.pairwise(residuals))
    # better than 12 support vectors picked at random with their best coefficients
    P = S[np.random.default_rng(0).choice(len(S), 12, replace=False)]
    beta = np.linalg.solve(k(P, P), k(P, S) @ a)
    assert residuals[-1] < a @ k(S, S) @ a - 2 * a @ k(S, P) @ beta + beta @ k(P, P) @ beta


def test_rsvm_solves_the_simplified_problem_exactly() -> None:
    X, y = make_moons(60, noise=0.2, random_state=1)
    clf = ReducedSVC(n_expansion=5, C=3.0, gamma=1.5, random_state=0).fit(X, y)
    Psi = RBF(1.5)(X, clf.expansion_vectors_)
    y_pm = np.where(y == 1, 1, -1)
    beta, b = cp.Variable(5), cp.Variable()
    cp.Problem(cp.Minimize(0.5 * cp.sum_squares(beta)
                           + 3.0 * cp.sum(cp.pos(1 - cp.multiply(y_pm, Psi @ beta + b))))
               ).solve(solver="CLARABEL")
    np.testing.assert_allclose(clf.decision_function(X), Psi @ beta.value + b.value, atol=1e-4)


@pytest.mark.parametrize("cls", [ReducedSetSVC, ReducedSVC])
def test_binary_only_and_ratio(cls) -> None:
    X, y = make_moons(60, noise=0.2, random_state=1)
    with pytest.raises(ValueError, match="Only binary classification is supported"):
        cls(n_expansion=2).fit(X, np.arange(60) % 3)
    clf = cls(n_expansion=0.2, C=10.0, gamma=2.0, random_state=0).fit(X, y)
    nsv = SVC(C=10.0, gamma=2.0).fit(X, y).n_support_.sum()
    assert clf.expansion_vectors_.shape == (round(0.2 * nsv), 2)
