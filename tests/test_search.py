"""Warm starts (`sparsify.core.warm`) and the warm-started grid search (`SparseSearchCV`)."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import make_moons
from sklearn.exceptions import FitFailedWarning
from sklearn.model_selection import GridSearchCV, StratifiedKFold

from sparsify import RBF, SparseKernelRidge, SparseSearchCV, SparseSVC
from sparsify.core.warm import grow, previous_problems, resize, shrink
from sparsify.model_selection import _nested_sample, expansion_sizes, halving_rounds, warm_plan


@pytest.fixture(scope="module")
def moons() -> tuple[np.ndarray, np.ndarray]:
    X, y = make_moons(240, noise=0.25, random_state=0)
    return X, y


def test_shrink_keeps_the_heaviest_terms_in_their_order() -> None:
    Z = np.arange(5.0)[:, None]
    Z_kept, coef = shrink(Z, np.array([0.1, -3.0, 0.2, 2.0, -0.05]), RBF(1.0), 2)
    assert Z_kept.ravel().tolist() == [1.0, 3.0]
    assert coef.tolist() == [-3.0, 2.0]


def test_grow_draws_distinct_new_points_where_the_loss_is() -> None:
    rng = np.random.RandomState(0)
    X = np.vstack([rng.normal(0, 0.1, (50, 2)), rng.normal(5, 0.1, (50, 2))])
    losses = np.r_[np.zeros(50), np.ones(50)]
    new = grow(X, losses, X[:1], RBF(1.0), 10, rng)
    assert len(np.unique(new, axis=0)) == 10
    assert (new[:, 0] > 2.5).all()  # only the lossy cluster is drawn from
    assert not any((np.abs(X[:1] - z).sum() == 0) for z in new)
    # no loss anywhere: the rows far from the XVs are drawn
    far = grow(X, np.zeros(100), X[:1], RBF(1.0), 1, rng)
    assert far[0, 0] > 2.5


def test_resize_carries_the_solution_with_zeros_for_new_xvs() -> None:
    X = np.linspace(0, 1, 30)[:, None]
    Z0, sol = resize(X, X[:3], np.ones(3), 0.5, RBF(1.0), 5, lambda f: np.ones(len(f)),
                     np.random.RandomState(0))
    assert Z0.shape == (5, 1) and sol.coef.tolist() == [1, 1, 1, 0, 0]
    assert sol.intercept == 0.5
    Z1, sol1 = resize(X, X[:3], np.array([1.0, -5.0, 0.1]), 0.0, RBF(1.0), 1,
                      lambda f: np.ones(len(f)), np.random.RandomState(0))
    assert Z1.ravel().tolist() == [X[1, 0]] and sol1.coef.tolist() == [-5.0]


def test_a_warm_refit_starts_where_the_last_fit_ended(moons: tuple) -> None:
    X, y = moons
    clf = SparseSVC(6, C=10.0, gamma=2.0, random_state=0, warm_start=True).fit(X, y)
    first, first_iterations = clf.objective_[0], int(clf.n_iter_[0])
    clf.fit(X, y)  # the same setting again: from the optimum, little left to gain
    assert clf.objective_[0] <= first * (1 + 1e-9)
    assert int(clf.n_iter_[0]) <= first_iterations // 2
    # a neighbouring C from the last XVs needs fewer iterations than from scratch
    warm = clf.set_params(C=20.0).fit(X, y)
    cold = SparseSVC(6, C=20.0, gamma=2.0, random_state=0).fit(X, y)
    assert warm.n_iter_[0] < cold.n_iter_[0]
    assert warm.objective_[0] <= 1.02 * cold.objective_[0]


def test_a_warm_start_grows_and_shrinks_each_problem(moons: tuple) -> None:
    X, y = moons
    y3 = np.where(X[:, 0] > 1.0, 2, y)
    clf = SparseSVC(3, random_state=0, warm_start=True).fit(X, y3)
    before = previous_problems(clf)
    clf.set_params(n_expansion=5).fit(X, y3)
    assert clf.n_expansion_.tolist() == [5, 5, 5]
    after = previous_problems(clf)
    assert before is not None and after is not None and len(after) == 3
    # another number of features: a cold start, not an error
    clf.fit(np.c_[X, X[:, :1]], y3)
    assert clf.expansion_vectors_.shape[1] == 3


def test_a_regressor_warm_starts_too() -> None:
    rng = np.random.default_rng(0)
    X = rng.uniform(-3, 3, size=(200, 1))
    y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=200)
    reg = SparseKernelRidge(3, alpha=0.1, gamma=0.5, warm_start=True, random_state=0).fit(X, y)
    reg.set_params(n_expansion=6).fit(X, y)
    assert reg.expansion_vectors_.shape == (6, 1)
    assert reg.score(X, y) > 0.9


def test_expansion_sizes_double_to_the_largest() -> None:
    assert expansion_sizes(1) == [1]
    assert expansion_sizes(64) == [1, 2, 4, 8, 16, 32, 64]
    with pytest.raises(ValueError, match="at least 1"):
        expansion_sizes(0)


def test_the_warm_plan_starts_each_setting_from_a_fitted_neighbour() -> None:
    grid = [{"C": c, "gamma": g, "n_expansion": n, "loss": loss}
            for loss in ("hinge", "squared_hinge") for n in (1, 2, 4) for g in (0.1, 1.0)
            for c in (1.0, 10.0, 100.0)]
    order, parent = warm_plan(grid)
    seen: set[int] = set()
    for i in order:
        p = parent[i]
        if p is None:
            # a cold start only for the first setting of each loss
            assert not any(grid[j]["loss"] == grid[i]["loss"] for j in seen)
        else:
            assert p in seen
            assert grid[p]["loss"] == grid[i]["loss"]
            assert grid[p]["n_expansion"] <= grid[i]["n_expansion"]
        seen.add(i)
    assert sum(p is None for p in parent) == 2


def test_cold_search_equals_gridsearchcv(moons: tuple) -> None:
    X, y = moons
    grid = {"C": [1.0, 10.0], "gamma": [0.5, 2.0]}
    cv = StratifiedKFold(3, shuffle=True, random_state=0)
    base = SparseSVC(5, random_state=0, max_iter=40)
    ours = SparseSearchCV(base, grid, cv=cv, warm_start=False, n_iter_no_change=None,
                          return_train_score=True).fit(X, y)
    theirs = GridSearchCV(base, grid, cv=cv, return_train_score=True).fit(X, y)
    for key, value in theirs.cv_results_.items():
        if "time" in key:
            continue
        assert key in ours.cv_results_, key
        if key == "params":
            assert ours.cv_results_[key] == value
        elif key.startswith("param_"):
            assert list(ours.cv_results_[key]) == list(value)
        else:
            np.testing.assert_allclose(ours.cv_results_[key], value, rtol=1e-12, err_msg=key)
    assert ours.best_params_ == theirs.best_params_
    assert ours.best_index_ == theirs.best_index_
    assert ours.best_score_ == pytest.approx(theirs.best_score_)
    np.testing.assert_array_equal(ours.predict(X), theirs.predict(X))
    assert ours.classes_.tolist() == [0, 1] and ours.n_features_in_ == 2


def test_a_warm_search_finds_the_cold_searchs_setting(moons: tuple) -> None:
    X, y = moons
    grid = {"C": [0.1, 1.0, 10.0, 100.0], "gamma": [0.1, 1.0, 10.0]}
    cv = StratifiedKFold(3, shuffle=True, random_state=0)
    base = SparseSVC(6, random_state=0)
    steps = []
    warm = SparseSearchCV(base, grid, cv=cv, callback=steps.append).fit(X, y)
    cold = GridSearchCV(base, grid, cv=cv).fit(X, y)
    assert len(steps) == 3 * 12
    assert sum(s.warm for s in steps) == 3 * 11  # one cold start per fold
    assert np.all(warm.cv_results_["warm_start"][1:] > 0)
    # the chosen setting's cross-validated score is within a standard error of the best
    best = cold.cv_results_["mean_test_score"].max()
    se = cold.cv_results_["std_test_score"][cold.best_index_] / np.sqrt(3)
    assert cold.cv_results_["mean_test_score"][warm.best_index_] >= best - se - 0.02
    assert warm.best_estimator_.get_params()["warm_start"] is False
    # the refit is the chosen setting fitted from scratch, as the estimator alone fits it
    alone = clone(base).set_params(**warm.best_params_).fit(X, y)
    np.testing.assert_array_equal(warm.best_estimator_.expansion_vectors_,
                                  alone.expansion_vectors_)
    np.testing.assert_array_equal(warm.predict(X), alone.predict(X))


def test_the_one_standard_error_rule_takes_the_smallest_good_nz(moons: tuple) -> None:
    X, y = moons
    grid = {"n_expansion": expansion_sizes(16), "C": [10.0]}
    search = SparseSearchCV(SparseSVC(random_state=0, gamma=2.0), grid, cv=3).fit(X, y)
    results = search.cv_results_
    mean, std = results["mean_test_score"], results["std_test_score"]
    best = int(np.argmax(mean))
    eligible = np.flatnonzero(mean >= mean[best] - std[best] / np.sqrt(3))
    chosen = search.best_params_["n_expansion"]
    assert chosen == min(grid["n_expansion"][i] for i in eligible)
    assert chosen <= grid["n_expansion"][best]
    best_search = SparseSearchCV(SparseSVC(random_state=0, gamma=2.0), grid, cv=3,
                                 select="best").fit(X, y)
    assert best_search.best_index_ == int(np.argmax(best_search.cv_results_["mean_test_score"]))


def test_several_metrics_refit_callable_and_no_refit(moons: tuple) -> None:
    X, y = moons
    grid = {"C": [1.0, 10.0]}
    base = SparseSVC(4, random_state=0, max_iter=20)
    multi = SparseSearchCV(base, grid, cv=3, scoring=["accuracy", "balanced_accuracy"],
                           refit="balanced_accuracy").fit(X, y)
    assert "mean_test_balanced_accuracy" in multi.cv_results_
    assert multi.best_index_ == int(np.argmax(multi.cv_results_["mean_test_balanced_accuracy"]))
    with pytest.raises(ValueError, match="one of the metrics"):
        SparseSearchCV(base, grid, cv=3, scoring=["accuracy"], refit=True).fit(X, y)
    chosen = SparseSearchCV(base, grid, cv=3, refit=lambda results: 1).fit(X, y)
    assert chosen.best_index_ == 1 and chosen.best_params_ == {"C": 10.0}
    plain = SparseSearchCV(base, grid, cv=3, refit=False).fit(X, y)
    assert not hasattr(plain, "best_estimator_")
    with pytest.raises(AttributeError):
        plain.predict(X)


def test_a_failing_setting_scores_error_score_or_raises(moons: tuple) -> None:
    X, y = moons
    grid = {"C": [1.0, -1.0]}
    base = SparseSVC(4, random_state=0, max_iter=10)
    with pytest.warns(FitFailedWarning, match="C"):
        search = SparseSearchCV(base, grid, cv=3).fit(X, y)
    assert np.isnan(search.cv_results_["mean_test_score"][1])
    assert search.best_params_ == {"C": 1.0}
    with pytest.raises(ValueError, match="C"):
        SparseSearchCV(base, grid, cv=3, error_score="raise").fit(X, y)


def test_sample_weight_is_split_with_the_folds(moons: tuple) -> None:
    X, y = moons
    weights = np.where(y == 1, 3.0, 1.0)
    grid = {"C": [1.0]}
    base = SparseSVC(4, random_state=0, max_iter=15)
    cv = StratifiedKFold(3, shuffle=True, random_state=0)
    ours = SparseSearchCV(base, grid, cv=cv, warm_start=False, n_iter_no_change=None).fit(
        X, y, sample_weight=weights)
    theirs = GridSearchCV(base, grid, cv=cv).fit(X, y, sample_weight=weights)
    np.testing.assert_allclose(ours.cv_results_["mean_test_score"],
                               theirs.cv_results_["mean_test_score"])


def test_an_empty_grid_is_refused(moons: tuple) -> None:
    X, y = moons
    with pytest.raises(ValueError, match="non-empty"):
        SparseSearchCV(SparseSVC(4), {"C": []}, cv=3).fit(X, y)


def test_regressors_and_declared_formulations_search_warm() -> None:
    import cvxpy as cp

    from sparsify import Declaration, Formulation, SparseSVR
    from sparsify.core.estimator import estimator_for

    rng = np.random.default_rng(0)
    X = rng.uniform(-3, 3, size=(150, 1))
    y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=150)

    class Huberised(Formulation):
        name, task = "test_search_huber", "regressor"

        def __init__(self, C: float = 1.0) -> None:
            self.C = C

        def declare(self, out):  # type: ignore[no-untyped-def]
            b = cp.Variable()
            return Declaration(cp.Minimize(0.5 * out.norm_w2 + self.C * cp.sum(
                cp.huber(out.f + b - out.y, 0.1))), [], b)

    declared, _ = estimator_for(Huberised)
    for base in (SparseSVR(epsilon=0.05, gamma=1.0, random_state=0, max_iter=30),
                 declared(gamma=1.0, random_state=0, max_iter=15)):
        steps = []
        search = SparseSearchCV(base, {"n_expansion": [2, 4], "C": [1.0, 10.0]}, cv=3,
                                callback=steps.append).fit(X, y)
        assert sum(s.warm for s in steps) == 3 * 3
        assert search.best_estimator_.score(X, y) > 0.8


def test_dask_collections_are_refused_not_gathered(moons: tuple) -> None:
    da = pytest.importorskip("dask.array")
    X, y = moons
    with pytest.raises(ValueError, match="does not take dask collections"):
        SparseSearchCV(SparseSVC(4), {"C": [1.0]}, cv=3).fit(da.from_array(X, chunks=50), y)


def test_halving_rounds_shrink_the_settings_and_grow_the_sample() -> None:
    assert halving_rounds(25, 6667, 3, 500) == [(25, 741), (9, 2223), (3, 6667)]
    assert halving_rounds(25, 6667, 4, 400) == [(25, 417), (7, 1667), (2, 6667)]
    assert halving_rounds(2, 10_000, 3, 500) == [(2, 10_000)]  # fewer settings than factor
    assert halving_rounds(100, 3000, 3, 500) == [(100, 1000), (34, 3000)]
    assert halving_rounds(100, 1400, 3, 500) == [(100, 1400)]


def test_a_nested_sample_is_stratified_in_every_prefix() -> None:
    y = np.r_[np.zeros(900, int), np.ones(100, int)]
    train = np.arange(1000)
    order = _nested_sample(train, y, True, np.random.RandomState(0))
    assert sorted(order.tolist()) == train.tolist()
    for m in (10, 100, 333, 1000):
        assert abs(y[order[:m]].sum() - m / 10) <= 1  # one in ten from the rare class
    plain = _nested_sample(train, y, False, np.random.RandomState(0))
    assert sorted(plain.tolist()) == train.tolist() and not np.array_equal(plain, train)
    # a class of three points among a thousand is in every sample of three points or more
    rare = np.r_[np.zeros(997, int), np.full(3, 2)]
    order = _nested_sample(np.arange(1000), rare, True, np.random.RandomState(1))
    assert 2 in rare[order[:2]]
    # several outputs: not stratified, still every point once
    both = np.c_[y, y]
    assert sorted(_nested_sample(train, both, True, np.random.RandomState(0))) == train.tolist()


@pytest.fixture(scope="module")
def many_moons() -> tuple[np.ndarray, np.ndarray]:
    return make_moons(1500, noise=0.3, random_state=0)


def test_halving_fits_fewer_settings_on_larger_samples(many_moons: tuple) -> None:
    X, y = many_moons
    grid = {"C": [0.1, 1.0, 10.0, 100.0], "gamma": [0.3, 1.0, 3.0]}
    cv = StratifiedKFold(3, shuffle=True, random_state=0)
    steps: list = []
    search = SparseSearchCV(SparseSVC(4, random_state=0, max_iter=30), grid, cv=cv,
                            halving=True, factor=3, min_resources=100, random_state=0,
                            callback=steps.append).fit(X, y)
    rounds = halving_rounds(12, 1000, 3, 100)
    assert rounds == [(12, 112), (4, 334), (2, 1000)]
    results = search.cv_results_
    for r, (n_settings, n_points) in enumerate(rounds):
        fits = [s for s in steps if s.round == r]
        assert len(fits) == 3 * n_settings
        assert {s.n_resources for s in fits} == {n_points}
        # the settings of a round are the best of the last round's by its mean score
        if r > 0:
            earlier: dict[int, list[float]] = {}
            for s in steps:
                if s.round == r - 1:
                    earlier.setdefault(s.candidate, []).append(s.score)
            kept = {s.candidate for s in fits}
            dropped = set(earlier) - kept
            assert kept <= set(earlier) and len(kept) == n_settings
            assert (min(np.mean(earlier[i]) for i in kept)
                    >= max(np.mean(earlier[i]) for i in dropped))
            for i in dropped:  # they keep that round's scores
                assert results["iter"][i] == r - 1
                assert results["mean_test_score"][i] == pytest.approx(np.mean(earlier[i]))
    assert results["iter"].tolist().count(2) == 2
    assert set(results["n_resources"][results["iter"] == 2]) == {1000}
    # the choice is the best of the last round, which ranks first
    last = np.flatnonzero(results["iter"] == 2)
    assert search.best_index_ == last[np.argmax(results["mean_test_score"][last])]
    assert results["rank_test_score"][search.best_index_] == 1
    assert set(results["rank_test_score"][last]) <= {1, 2}
    rank = results["rank_test_score"]
    for r in (0, 1):  # a later round's settings rank above an earlier round's
        assert rank[results["iter"] == r].min() > rank[results["iter"] > r].max()
    # after the first round every fit starts warm: from a neighbour or its own earlier fit
    assert all(s.warm for s in steps if s.round > 0)


def test_the_last_round_of_a_cold_halving_is_gridsearchcvs_fits(many_moons: tuple) -> None:
    X, y = many_moons
    grid = {"C": [0.1, 1.0, 10.0], "gamma": [0.3, 3.0]}
    cv = StratifiedKFold(3, shuffle=True, random_state=0)
    base = SparseSVC(4, random_state=0, max_iter=20)
    ours = SparseSearchCV(base, grid, cv=cv, halving=True, min_resources=100, warm_start=False,
                          n_iter_no_change=None, random_state=0).fit(X, y)
    theirs = GridSearchCV(base, grid, cv=cv).fit(X, y)
    last = np.flatnonzero(ours.cv_results_["iter"] == ours.cv_results_["iter"].max())
    assert 0 < len(last) < len(ours.cv_results_["params"])
    np.testing.assert_allclose(ours.cv_results_["mean_test_score"][last],
                               theirs.cv_results_["mean_test_score"][last], rtol=1e-12)


def test_a_rounds_sample_is_fitted_with_each_point_weighing_its_share(
        many_moons: tuple) -> None:
    from sklearn.utils import check_random_state

    X, y = many_moons
    grid = {"C": [0.1, 1.0, 10.0, 100.0], "gamma": [0.3, 3.0]}
    cv = StratifiedKFold(3, shuffle=True, random_state=0)
    base = SparseSVC(4, random_state=0, max_iter=20)
    ours = SparseSearchCV(base, grid, cv=cv, halving=True, min_resources=100, warm_start=False,
                          n_iter_no_change=None, random_state=0).fit(X, y)
    assert halving_rounds(8, 1000, 4, 100) == [(8, 250), (2, 1000)]
    # the first round, by hand: the same nested samples, each point weighing 4
    rng = check_random_state(0)
    first = [(np.sort(_nested_sample(train, y, True, rng)[:250]), test)
             for train, test in cv.split(X, y)]
    dropped = np.flatnonzero(ours.cv_results_["iter"] == 0)
    assert len(dropped) == 6
    weighted = GridSearchCV(base, grid, cv=first).fit(X, y, sample_weight=np.full(len(X), 4.0))
    np.testing.assert_allclose(ours.cv_results_["mean_test_score"][dropped],
                               weighted.cv_results_["mean_test_score"][dropped], rtol=1e-12)
    plain = GridSearchCV(base, grid, cv=first).fit(X, y)
    assert not np.allclose(ours.cv_results_["mean_test_score"][dropped],
                           plain.cv_results_["mean_test_score"][dropped])


def test_halving_auto_is_for_many_points_and_no_expansion_path(many_moons: tuple,
                                                               monkeypatch) -> None:
    import sparsify.model_selection as model_selection

    X, y = many_moons
    base = SparseSVC(3, random_state=0, max_iter=10)
    grid = {"C": [0.1, 1.0, 10.0], "gamma": [0.3, 3.0]}
    # 1000 training points a fold: under PLATEAU_FROM, every setting on every point
    assert "iter" not in SparseSearchCV(base, grid, cv=3).fit(X, y).cv_results_
    monkeypatch.setattr(model_selection, "PLATEAU_FROM", 1000)
    assert "iter" in SparseSearchCV(base, grid, cv=3, min_resources=100).fit(X, y).cv_results_
    path = SparseSearchCV(base, {**grid, "n_expansion": [1, 2]}, cv=3, min_resources=100)
    assert "iter" not in path.fit(X, y).cv_results_
    # kernel ridge regression takes no sample_weight: its samples could not stand for the fold
    ridge = SparseSearchCV(SparseKernelRidge(3, random_state=0, max_iter=10),
                           {"alpha": [0.01, 0.1, 1.0], "gamma": [0.3, 3.0]}, cv=3,
                           min_resources=100)
    assert "iter" not in ridge.fit(X, y.astype(float)).cv_results_
    assert "iter" in ridge.set_params(halving=True).fit(X, y.astype(float)).cv_results_
    assert "iter" not in SparseSearchCV(base, grid, cv=3, halving=False).fit(X, y).cv_results_
    with pytest.raises(ValueError, match="factor"):
        SparseSearchCV(base, grid, cv=3, factor=1).fit(X, y)


def test_halving_over_parallel_folds_is_the_same_search(many_moons: tuple) -> None:
    X, y = many_moons
    grid = {"C": [0.1, 1.0, 10.0], "gamma": [0.3, 3.0]}
    kwargs = {"cv": 3, "halving": True, "factor": 2, "min_resources": 100, "random_state": 0}
    base = SparseSVC(3, random_state=0, max_iter=15)
    one = SparseSearchCV(base, grid, **kwargs).fit(X, y)
    two = SparseSearchCV(base, grid, n_jobs=2, **kwargs).fit(X, y)
    assert one.cv_results_["iter"].max() >= 1
    # the later rounds started from the earlier rounds' fits carried back from the workers
    assert one.cv_results_["warm_start"][one.cv_results_["iter"] >= 1].min() == 1.0
    for key in ("iter", "n_resources", "mean_test_score", "rank_test_score", "warm_start"):
        np.testing.assert_array_equal(one.cv_results_[key], two.cv_results_[key], err_msg=key)
    assert one.best_params_ == two.best_params_
