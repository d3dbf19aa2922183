"""The plateau rule of ``n_iter_no_change="auto"``, distinct rows by hashing, weighted
declarations (`sparsify.Formulation.weighted`)."""

from __future__ import annotations

import cvxpy as cp
import numpy as np
import pytest
from sklearn.datasets import make_moons

from sparsify import RBF, ConicMarginal, Declaration, Formulation, SparseSVC
from sparsify.algorithms.svm.formulation import SVM
from sparsify.core.distinct import _BLOCK, count_distinct, distinct_rows, has_distinct
from sparsify.core.estimator import estimator_for
from sparsify.core.optimize import PLATEAU_FROM, PLATEAU_WINDOW, sampling_plateau


def test_auto_stops_on_the_sampling_plateau_from_its_threshold() -> None:
    assert sampling_plateau(PLATEAU_FROM - 1, "auto") is None
    assert sampling_plateau(PLATEAU_FROM, "auto") == (PLATEAU_WINDOW,
                                                      pytest.approx(PLATEAU_FROM ** -0.5))
    assert sampling_plateau(100, None) is None


def test_a_large_fit_stops_where_w_levels_off_within_its_sampling_error() -> None:
    X, y = make_moons(6000, noise=0.25, random_state=0)
    clf = SparseSVC(8, C=1.0, gamma=2.0, random_state=0, max_iter=200).fit(X, y)
    n = PLATEAU_WINDOW
    assert clf.n_iter_[0] < 200
    history = clf.objective_history_[0]
    # it stopped at the first iteration whose last n decreases together fell below W/√N
    drops = [history[k - n] - history[k] <= history[k] / np.sqrt(len(X))
             for k in range(n, len(history))]
    assert drops[-1] and not any(drops[:-1])
    whole = SparseSVC(8, C=1.0, gamma=2.0, random_state=0, max_iter=200,
                      n_iter_no_change=None).fit(X, y)
    X_test, y_test = make_moons(4000, noise=0.25, random_state=1)
    # the Bayes error of these moons is about 9 %: both within a point of each other
    assert abs(clf.score(X_test, y_test) - whole.score(X_test, y_test)) < 0.01


def test_distinct_rows_are_numpys_unique_rows() -> None:
    rng = np.random.default_rng(0)
    X = rng.integers(0, 3, size=(2000, 4)).astype(float)
    X[5], X[6] = -0.0, 0.0
    _, first = np.unique(X, axis=0, return_index=True)
    np.testing.assert_array_equal(distinct_rows(X), first)
    assert count_distinct(X) == len(first)
    with pytest.raises(ValueError, match="2-D"):
        distinct_rows(np.zeros(3))


@pytest.mark.parametrize("n_init", [1, 2])
def test_the_problems_of_a_multiclass_fit_hash_their_rows_once(monkeypatch, n_init) -> None:
    """Ten one-vs-rest problems (or their starts) draw their initial XVs from the same rows:
    those are found once per fit, and every problem's XVs are the ones it drew before."""
    import sparsify.core.estimator as estimator
    import sparsify.core.optimize as optimize

    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3))
    y = np.digitize(X[:, 0], [-0.8, 0.0, 0.8])  # four classes
    calls = []

    def counted(rows):
        calls.append(len(rows))
        return distinct_rows(rows)

    before = SparseSVC(4, max_iter=0, n_init=n_init, random_state=0).fit(X, y)
    monkeypatch.setattr(estimator, "distinct_rows", counted)
    monkeypatch.setattr(optimize, "distinct_rows", counted)
    after = SparseSVC(4, max_iter=0, n_init=n_init, random_state=0).fit(X, y)
    assert calls == [300]
    np.testing.assert_array_equal(after.expansion_vectors_, before.expansion_vectors_)


class _WeightedQuantile(Formulation):
    """The pinball loss, each point's term weighted by out.weights."""

    name, task, weighted = "test_weighted_quantile", "regressor", True

    def __init__(self, tau: float = 0.5) -> None:
        self.tau = tau

    def declare(self, out):  # type: ignore[no-untyped-def]
        b = cp.Variable()
        r = out.y - out.f - b
        loss = out.weights @ cp.maximum(self.tau * r, (self.tau - 1) * r)
        return Declaration(cp.Minimize(0.1 * out.norm_w2 + loss), [], intercept=b)


def test_a_weighted_declaration_sees_its_weights() -> None:
    form = _WeightedQuantile()
    assert form.point_weights is None
    heavy = form.weigh(np.full(30, 2.0))
    assert form.point_weights is None and repr(heavy) == repr(form)  # a copy, same params
    X = np.linspace(-2, 2, 30)[:, None]
    y = np.sin(X[:, 0])
    light = ConicMarginal(form, X, y, RBF(1.0), 3, solver="structured").evaluate(X[::10],
                                                                               grad=False)
    doubled = ConicMarginal(heavy, X, y, RBF(1.0), 3, solver="structured").evaluate(
        X[::10], grad=False)
    # twice the loss against the same ‖w‖² term: W grows, but by less than twice
    assert light.value < doubled.value < 2 * light.value
    with pytest.raises(ValueError, match="weighted = False"):
        SVM(1.0).weigh(2.0)
    cls, _ = estimator_for(_WeightedQuantile)
    reg = cls(4, gamma=1.0, max_iter=10, random_state=0).fit(X, y)
    assert reg.predict(X).shape == (30,)


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_has_distinct_answers_as_the_full_count_does(n: int) -> None:
    """Blocks of rows until n distinct ones are seen: the same answer as counting them all,
    with -0.0 equal to 0.0 and a duplicate in a later block not counted twice."""
    X = np.zeros((3 * _BLOCK, 2))
    X[_BLOCK + 5] = [1.0, 2.0]
    X[2 * _BLOCK + 7] = [1.0, 2.0]
    X[2 * _BLOCK + 9] = [-0.0, 0.0]
    assert count_distinct(X) == 2
    assert has_distinct(X, n) == (n <= 2)
