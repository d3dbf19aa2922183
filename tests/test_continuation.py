"""Continuation over the data (`sparsify.core.continuation`, the estimators' ``continuation``):
a fit's first phase on a weighted sample of the points, then all points from its XVs."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import make_classification, make_moons

import sparsify.core.estimator as driver
from sparsify import SparseKernelPCA, SparseKernelRidge, SparseSVC, SparseSVR
from sparsify.core.continuation import nested_sample, sample_plateau, strata
from sparsify.core.estimator import estimator_for


def _recording_sample(monkeypatch: pytest.MonkeyPatch) -> list[np.ndarray]:
    """Record the orders the continuation draws its samples from."""
    orders: list[np.ndarray] = []

    def recorded(*args, **kwargs):  # type: ignore[no-untyped-def]
        orders.append(nested_sample(*args, **kwargs))
        return orders[-1]

    monkeypatch.setattr(driver, "nested_sample", recorded)
    return orders


def _declared_svr(c: float | None) -> object:
    """The declared ε-SVR of examples/declared_formulations.py as a regressor, structured."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
    from declared_formulations import EpsilonSVR

    task = type("ContinuationEpsilonSVR", (EpsilonSVR,), {"task": "regressor",
                                                         "name": "continuation_eps_svr"})
    cls, _ = estimator_for(task)
    return cls(4, C=3.0, epsilon=0.1, gamma=0.5, solver="structured", n_iter_no_change=3,
               max_iter=15, continuation=c)


@pytest.mark.parametrize("make", [
    lambda c: SparseSVC(6, C=3.0, gamma=2.0, n_iter_no_change=3, continuation=c),
    lambda c: SparseSVR(6, C=3.0, gamma=0.5, n_iter_no_change=3, continuation=c),
    _declared_svr,
], ids=["SparseSVC", "SparseSVR", "declared eps-SVR"])
def test_the_two_phases_are_a_weighted_sample_fit_then_a_warm_start_on_all_points(
        make, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(0)
    if isinstance(make(None), SparseSVC):
        X, y = make_moons(800, noise=0.25, random_state=0)
    else:
        X = rng.uniform(-3, 3, (800, 1))
        y = np.sin(X[:, 0]) + 0.2 * rng.normal(size=800)
    orders = _recording_sample(monkeypatch)
    seen: list[str] = []
    est = make(0.25).set_params(random_state=np.random.RandomState(1),
                                callback=lambda info: seen.append(info.problem))
    est.fit(X, y)
    rows = np.sort(orders[0][:200])
    assert len(orders) == 1 and len(set(rows.tolist())) == 200

    # by hand: the same rows, each weighing 800 / 200, the same draws of the seeds; then all
    # points from that fit's XVs and solution
    state = np.random.RandomState(1)
    state.permutation(800)
    by_hand = make(None).set_params(random_state=state)
    by_hand.fit(X[rows], y[rows], sample_weight=np.full(200, 4.0))
    first = int(by_hand.n_iter_[0])
    by_hand.set_params(warm_start=True).fit(X, y)

    assert est.n_iter_[0] == first + by_hand.n_iter_[0]
    assert seen[:first] == ["sample of 200 points"] * first and seen[first:] == [
        ""] * int(by_hand.n_iter_[0])
    assert np.allclose(est.expansion_vectors_, by_hand.expansion_vectors_, rtol=1e-9, atol=1e-12)
    assert est.objective_[0] == pytest.approx(by_hand.objective_[0], rel=1e-9)
    assert len(est.objective_history_[0]) == first + 1 + len(by_hand.objective_history_[0])


def test_the_sample_phase_is_unweighted_where_the_formulation_weighs_no_points(
        monkeypatch: pytest.MonkeyPatch) -> None:
    X, _ = make_classification(600, n_features=5, random_state=0)
    orders = _recording_sample(monkeypatch)
    made: list[object] = []
    original = SparseKernelPCA._make_formulation

    def recorded(self, weights=None):  # type: ignore[no-untyped-def]
        made.append(weights)
        return original(self, weights)

    monkeypatch.setattr(SparseKernelPCA, "_make_formulation", recorded)
    pca = SparseKernelPCA(4, n_components=2, gamma=0.1, random_state=0, continuation=0.5)
    pca.fit(X)
    assert len(orders) == 1 and made[-1] is None
    assert pca.n_iter_[0] > 0 and pca.transform(X).shape == (600, 2)


def test_a_classifier_sample_holds_every_class_in_proportion() -> None:
    labels = np.array([0] * 970 + [1] * 27 + [2] * 3)
    targets = [np.where(labels == k, 1.0, -1.0) for k in range(3)]
    order = nested_sample(np.arange(1000), strata(targets), np.random.RandomState(0))
    first = labels[order[:100]]
    assert set(first[:3].tolist()) == {0, 1, 2}
    assert abs(np.sum(first == 1) - 2.7) <= 1 and np.sum(first == 0) >= 96


def test_strata_are_the_classes_and_none_for_real_targets() -> None:
    binary = np.array([1.0, -1.0, np.nan, 1.0])  # NaN: an unlabelled point, its own stratum
    assert len(set(strata([binary]).tolist())) == 3
    assert strata([np.array([0.5, 2.0])]) is None
    assert strata([np.ones((4, 2))]) is None and strata([None]) is None


def test_the_sample_phase_always_stops_on_its_own_plateau() -> None:
    assert sample_plateau(400, None) == (3, 0.05)
    assert sample_plateau(400, "auto") == (3, 0.05)
    assert sample_plateau(10_000, 7) == (7, 0.01)


def test_a_warm_start_skips_the_sample(monkeypatch: pytest.MonkeyPatch) -> None:
    X, y = make_moons(400, noise=0.2, random_state=0)
    orders = _recording_sample(monkeypatch)
    est = SparseSVC(5, gamma=2.0, random_state=0, continuation=0.5, warm_start=True).fit(X, y)
    assert len(orders) == 1
    est.fit(X, y)
    assert len(orders) == 1


def test_the_starts_run_on_the_sample_and_the_best_goes_on() -> None:
    X, y = make_moons(600, noise=0.25, random_state=0)
    seen: list[str] = []
    SparseSVC(5, gamma=2.0, n_init=3, random_state=0, continuation=0.5,
              callback=lambda info: seen.append(info.problem)).fit(X, y)
    assert {p for p in seen if p.startswith("sample")} == {
        f"sample of 300 points, start {j}" for j in (1, 2, 3)}
    assert {p for p in seen if not p.startswith("sample")} == {""}


def test_the_regressors_and_one_vs_rest_fit_with_it() -> None:
    X, y = make_classification(900, n_classes=3, n_informative=4, random_state=0)
    clf = SparseSVC(5, random_state=0, continuation=0.3).fit(X, y)
    assert clf.n_iter_.shape == (3,) and clf.score(X, y) > 0.7
    rng = np.random.default_rng(0)
    Xr = rng.uniform(-3, 3, (600, 1))
    yr = np.sin(Xr[:, 0]) + 0.1 * rng.normal(size=600)
    for est in (SparseKernelRidge(6, gamma=0.5, random_state=0, continuation=0.3),
                SparseSVR(6, gamma=0.5, random_state=0, continuation=0.3)):
        assert est.fit(Xr, yr).score(Xr, yr) > 0.95


@pytest.mark.parametrize("value", [0.0, 1.0, 1, 1.5, -0.1, "auto", True])
def test_a_continuation_outside_zero_one_is_refused(value: object) -> None:
    X, y = make_moons(60, noise=0.2, random_state=0)
    with pytest.raises(ValueError, match="continuation"):
        SparseSVC(3, continuation=value).fit(X, y)


def test_a_sample_too_small_for_the_xvs_is_refused_before_any_fit() -> None:
    X, y = make_moons(300, noise=0.2, random_state=0)
    with pytest.raises(ValueError, match=r"continuation=0.05 samples 15 of the 300 training "
                                         r"points, fewer distinct ones than n_expansion=20"):
        SparseSVC(20, continuation=0.05).fit(X, y)


def test_a_fit_over_row_blocks_refuses_it() -> None:
    # (the gate every fit on dask collections passes before its first evaluation)
    with pytest.raises(ValueError, match=r"on dask collections does not take "
                                         r"continuation=0.5 \(its sample is drawn from rows in "
                                         r"memory; use continuation=None\)"):
        SparseSVC(3, continuation=0.5)._refuse_on_blocks({})
    SparseSVC(3)._refuse_on_blocks({})


def test_clone_and_get_params_carry_it() -> None:
    est = SparseSVC(4, continuation=0.25)
    assert clone(est).get_params()["continuation"] == 0.25
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the sample phase's max_iter stop warns nothing itself
        X, y = make_moons(400, noise=0.2, random_state=0)
        SparseSVC(4, gamma=2.0, continuation=0.5, max_iter=400, random_state=0).fit(X, y)
