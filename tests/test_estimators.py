"""SparseSVC: scikit-learn conformance, behaviour and clear errors."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from sklearn.datasets import make_blobs, make_moons
from sklearn.svm import SVC
from sklearn.utils.estimator_checks import parametrize_with_checks

from sparsify import RBF, Linear, SparseSVC
from sparsify.core.optimize import IterationInfo
from sparsify.datasets import load_banana


@parametrize_with_checks([SparseSVC(n_expansion=3, max_iter=5, random_state=0)])
def test_scikit_learn_conformance(estimator, check) -> None:
    check(estimator)


@pytest.fixture(scope="module")
def moons() -> tuple[np.ndarray, np.ndarray]:
    return make_moons(n_samples=120, noise=0.15, random_state=0)


def test_fit_moves_xvs_and_lowers_w(moons) -> None:
    X, y = moons
    clf = SparseSVC(n_expansion=6, C=10.0, gamma=2.0, random_state=0).fit(X, y)
    fixed = SparseSVC(n_expansion=6, C=10.0, gamma=2.0, random_state=0, max_iter=0).fit(X, y)
    history = clf.objective_history_[0]
    assert history[-1] < 0.8 * history[0]
    assert np.all(np.diff(history) <= 1e-9 * abs(history[0]))
    assert clf.score(X, y) > fixed.score(X, y)
    assert clf.score(X, y) > 0.95
    # the XVs are free: optimised ones are not training points
    assert not any(np.any(np.all(np.isclose(X, z), axis=1)) for z in clf.expansion_vectors_)
    assert clf.n_iter_[0] > 0 and fixed.n_iter_[0] == 0


def test_ratio_of_full_svm_support_vectors(moons) -> None:
    X, y = moons
    clf = SparseSVC(n_expansion=0.2, C=10.0, gamma=2.0, max_iter=3, random_state=0).fit(X, y)
    nsv = SVC(C=10.0, gamma=2.0).fit(X, y).n_support_.sum()
    assert clf.full_n_support_[0] == nsv
    assert clf.n_expansion_[0] == round(0.2 * nsv)
    assert clf.expansion_vectors_.shape == (round(0.2 * nsv), 2)


def test_any_labels_and_decision_sign(moons) -> None:
    X, y = moons
    labels = np.array(["no", "yes"])[y]
    clf = SparseSVC(n_expansion=5, C=10.0, gamma=2.0, max_iter=20, random_state=0).fit(X, labels)
    assert list(clf.classes_) == ["no", "yes"]
    scores = clf.decision_function(X)
    np.testing.assert_array_equal(clf.predict(X), np.where(scores > 0, "yes", "no"))


def test_multiclass_one_vs_rest_in_parallel_is_deterministic() -> None:
    X, y = make_blobs(n_samples=90, centers=3, cluster_std=1.0, random_state=2)
    one = SparseSVC(n_expansion=3, max_iter=15, random_state=0, n_jobs=1).fit(X, y)
    two = SparseSVC(n_expansion=3, max_iter=15, random_state=0, n_jobs=2).fit(X, y)
    assert one.expansion_coef_.shape == (3, 9) and one.decision_function(X).shape == (90, 3)
    np.testing.assert_allclose(one.expansion_vectors_, two.expansion_vectors_)
    np.testing.assert_array_equal(one.predict(X), two.predict(X))
    assert one.score(X, y) >= SVC().fit(X, y).score(X, y) - 0.02
    # each problem's coefficients live on its own block of XVs
    assert np.count_nonzero(one.expansion_coef_[0, 3:]) == 0


def test_n_init_keeps_the_start_with_the_lowest_w(moons) -> None:
    X, y = moons
    params = {"n_expansion": 3, "C": 10.0, "gamma": 2.0, "max_iter": 30, "random_state": 0}
    one = SparseSVC(**params).fit(X, y)
    best = SparseSVC(**params, n_init=4, n_jobs=2).fit(X, y)
    assert best.objective_[0] <= one.objective_[0]
    assert best.objective_[0] == pytest.approx(min(h.min() for h in best.objective_history_),
                                               rel=1e-3)


def test_pickle_roundtrip(moons) -> None:
    X, y = moons
    clf = SparseSVC(n_expansion=4, max_iter=10, random_state=0).fit(X, y)
    again = pickle.loads(pickle.dumps(clf))
    np.testing.assert_array_equal(again.decision_function(X), clf.decision_function(X))


def test_kmeans_init_and_other_kernels(moons) -> None:
    X, y = moons
    for kernel in ["poly", "rbf+linear", RBF(1.0) + Linear()]:
        clf = SparseSVC(n_expansion=4, kernel=kernel, init="kmeans", max_iter=10,
                        random_state=0).fit(X, y)
        assert clf.score(X, y) > 0.8


def test_callback_and_verbose(moons, capsys) -> None:
    X, y = moons
    seen: list[IterationInfo] = []

    def stop_after_two(info: IterationInfo) -> bool:
        seen.append(info)
        return info.iteration >= 2

    clf = SparseSVC(n_expansion=4, callback=stop_after_two, verbose=1, random_state=0).fit(X, y)
    assert [i.iteration for i in seen] == [1, 2]
    assert clf.n_iter_[0] == 2
    # verbose=1: one line for the problem; the callback's stop is not a convergence failure
    assert capsys.readouterr().out.startswith("[sparsify] 2 iterations, W = ")
    SparseSVC(n_expansion=4, callback=stop_after_two, verbose=2, random_state=0).fit(X, y)
    assert "iter    1/200  W =" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"C": -1}, r"The 'C' parameter of SparseSVC must be a float in the range \(0.0, inf\)"),
        ({"n_expansion": 0}, "The 'n_expansion' parameter of SparseSVC must be"),
        ({"n_expansion": 1.5}, "The 'n_expansion' parameter of SparseSVC must be"),
        ({"n_expansion": 500}, "n_expansion=500 asks for more expansion vectors than the 120 "
                               "distinct training points"),
        ({"kernel": "gauss"},
         r"Unknown kernel 'gauss'. Use one of \['linear', 'poly', 'rbf', 'taylor_rbf'\]"),
        ({"solver": "mosekk"}, r"Unknown solver 'mosekk'. Use one of \['clarabel', 'ecos'"),
        ({"init": "sample"}, "The 'init' parameter of SparseSVC must be a str among"),
    ],
)
def test_bad_parameters_say_what_to_change(moons, params, message) -> None:
    X, y = moons
    with pytest.raises(ValueError, match=message):
        SparseSVC(**params).fit(X, y)


def test_bad_data_say_what_to_change(moons) -> None:
    X, y = moons
    bad = X.copy()
    bad[3, 1] = np.nan
    with pytest.raises(ValueError, match="Input X contains NaN"):
        SparseSVC(n_expansion=3).fit(bad, y)
    bad[3, 1] = np.inf
    with pytest.raises(ValueError, match="Input X contains infinity"):
        SparseSVC(n_expansion=3).fit(bad, y)
    with pytest.raises(ValueError, match=r"at least 2 classes.*got 1 class"):
        SparseSVC(n_expansion=3).fit(X, np.zeros(len(X)))
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        SparseSVC(n_expansion=3).fit(X, y[:-1])
    clf = SparseSVC(n_expansion=3, max_iter=2).fit(X, y)
    with pytest.raises(ValueError, match="X has 3 features, but SparseSVC is expecting 2"):
        clf.predict(np.ones((2, 3)))


def test_duplicates_are_removed_before_choosing_xvs() -> None:
    X = np.repeat(np.array([[0.0, 0.0], [1.0, 1.0], [0.0, 1.0], [1.0, 0.0]]), 5, axis=0)
    y = np.array([0, 1, 1, 0]).repeat(5)
    clf = SparseSVC(n_expansion=4, C=10.0, gamma=1.0, max_iter=0, random_state=0).fit(X, y)
    assert len(np.unique(clf.expansion_vectors_, axis=0)) == 4
    with pytest.raises(ValueError, match="than the 4 distinct training points"):
        SparseSVC(n_expansion=5).fit(X, y)


def test_one_vs_rest_starts_each_class_with_half_of_its_xvs() -> None:
    X, y = make_blobs(n_samples=[60, 60, 60, 60], centers=[[0, 0], [4, 0], [0, 4], [4, 4]],
                      random_state=0)

    def own_xvs(init: str) -> list[int]:
        clf = SparseSVC(n_expansion=8, init=init, max_iter=0, random_state=0).fit(X, y)
        blocks = clf.expansion_vectors_.reshape(4, 8, 2)
        return [int(np.isin(blocks[k], X[y == k]).all(axis=1).sum()) for k in range(4)]

    assert own_xvs("balanced") == own_xvs("auto") == [4, 4, 4, 4]
    assert min(own_xvs("random")) < 4  # about 1/4 of them
    with pytest.raises(ValueError, match="'init' parameter of SparseSVC must be"):
        SparseSVC(init="grid").fit(X, y)


def test_auto_init_is_random_for_two_classes(moons) -> None:
    X, y = moons
    auto, random = (SparseSVC(n_expansion=6, init=init, max_iter=0, random_state=0).fit(X, y)
                    for init in ("auto", "random"))
    np.testing.assert_array_equal(auto.expansion_vectors_, random.expansion_vectors_)


@pytest.mark.slow
def test_banana_default_data_reaches_full_svm_accuracy() -> None:
    X, y, X_test, y_test = load_banana()
    clf = SparseSVC(n_expansion=10, C=100.0, gamma=1.0, random_state=0).fit(X, y)
    full = SVC(C=100.0, gamma=1.0).fit(X, y)
    assert 1 - clf.score(X_test, y_test) < 1 - full.score(X_test, y_test) + 0.01
