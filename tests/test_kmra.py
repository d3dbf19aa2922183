"""Kernel matching reduction (KMRA): the deletion path, the deletion rule, the widths."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import make_blobs, make_classification, make_moons
from sklearn.svm import SVC
from sklearn.utils._param_validation import InvalidParameterError
from sklearn.utils.estimator_checks import parametrize_with_checks

import sparsify.baselines.kmra
from sparsify.baselines.kmra import (
    AUTO_DELTA_MARGIN,
    KernelMatchingReduction,
    gaussian_dictionary,
    neighbour_widths,
)


@pytest.fixture(scope="module")
def moons() -> tuple[np.ndarray, ...]:
    X, y = make_moons(200, noise=0.25, random_state=0)
    return X[:100], y[:100], X[100:], y[100:]


@pytest.fixture(scope="module")
def fitted(moons) -> KernelMatchingReduction:
    X, y, X_val, y_val = moons
    return KernelMatchingReduction(delta=0.9, n_delete=3, cv_every=4, random_state=0).fit(
        X, y, eval_set=(X_val, y_val))


# some checks fit on noise that no dictionary separates to delta; that warning has its own test
@pytest.mark.filterwarnings("ignore:The full dictionary reaches:UserWarning")
@parametrize_with_checks([KernelMatchingReduction(delta=0.8, C=1.0, n_delete=0.5)])
def test_scikit_learn_conformance(estimator, check) -> None:
    check(estimator)


def _svm_weights(X: np.ndarray, y: np.ndarray, idx: np.ndarray, C: float, p: int = 2):
    """One KMRA round by hand: widths on the dictionary idx, SVM weights on its features."""
    Z = gaussian_dictionary(X, X[idx], neighbour_widths(X[idx], p))
    svm = SVC(kernel="linear", C=C, tol=1e-4).fit(Z, y)
    return svm.coef_[0], Z


def test_path_shrinks_and_stops_below_delta(fitted) -> None:
    path = fitted.path_
    n, acc = path["n_functions"], path["train_accuracy"]
    assert n[0] == 100 and np.all(np.diff(n) < 0)
    sizes = [len(d) for d in path["deleted"]]
    assert sizes[:-1] == [3] * (len(n) - 1) and sizes[-1] == 0
    np.testing.assert_array_equal(n[1:], n[:-1] - 3)
    # every function is deleted at most once
    deleted = np.concatenate(path["deleted"])
    assert len(np.unique(deleted)) == len(deleted)
    # Li & Deng's rule: delete while the training accuracy is ≥ δ, stop at the first below
    assert np.all(acc[:-1] >= 0.9) and (acc[-1] < 0.9 or n[-1] <= 3)
    assert fitted.best_index_ == (len(n) - 2 if acc[-1] < 0.9 else len(n) - 1)
    assert fitted.n_functions_ == n[fitted.best_index_] < 100
    assert np.all(np.isfinite(path["eval_accuracy"])) and np.all(path["C"] > 0)
    gone = np.concatenate(path["deleted"][: fitted.best_index_])
    assert set(fitted.center_indices_).isdisjoint(gone)


def test_deletion_removes_the_smallest_weights_with_recomputed_widths(moons, fitted) -> None:
    X, y, _, _ = moons
    path = fitted.path_
    idx = np.arange(len(X))
    for r in range(3):
        w, _ = _svm_weights(X, y, idx, path["C"][r])
        smallest = idx[np.argsort(np.abs(w), kind="stable")[:3]]
        assert set(path["deleted"][r]) == set(smallest)
        assert np.abs(w[np.isin(idx, smallest)]).max() <= np.sort(np.abs(w))[3]
        idx = np.setdiff1d(idx, path["deleted"][r])


def test_widths_follow_the_current_dictionary(moons, fitted) -> None:
    X, *_ = moons
    np.testing.assert_allclose(fitted.widths_, neighbour_widths(fitted.expansion_vectors_))
    full = neighbour_widths(X)[fitted.center_indices_]
    assert np.all(fitted.widths_ >= full - 1e-12)  # fewer neighbours: never narrower
    assert np.any(fitted.widths_ > full * 1.01)


def test_decision_function_is_the_weighted_dictionary(moons, fitted) -> None:
    X, y, X_val, y_val = moons
    Z = gaussian_dictionary(X_val, fitted.expansion_vectors_, fitted.widths_)
    np.testing.assert_allclose(fitted.decision_function(X_val),
                               Z @ fitted.expansion_coef_[0] + fitted.intercept_[0])
    assert fitted.path_["eval_accuracy"][fitted.best_index_] == pytest.approx(
        fitted.score(X_val, y_val))
    assert fitted.path_["train_accuracy"][fitted.best_index_] == pytest.approx(fitted.score(X, y))
    # the final weights are the SVM on the final dictionary with the recorded C
    w, _ = _svm_weights(X, y, fitted.center_indices_, fitted.C_)
    np.testing.assert_allclose(fitted.expansion_coef_[0], w, rtol=1e-3, atol=1e-3 * np.abs(w).max())


def test_selection_by_eval_set(moons) -> None:
    X, y, X_val, y_val = moons
    clf = KernelMatchingReduction(delta=0.85, C=10.0, n_delete=0.2, selection="eval_set").fit(
        X, y, eval_set=(X_val, y_val))
    ev = clf.path_["eval_accuracy"]
    assert ev[clf.best_index_] == ev.max()
    assert clf.best_index_ == np.flatnonzero(ev == ev.max())[-1]  # ties: fewer functions
    assert clf.score(X_val, y_val) == pytest.approx(ev.max())


def test_neighbour_widths_skip_duplicates() -> None:
    C = np.array([[0.0, 0.0], [0.0, 0.0], [1.0, 0.0], [0.0, 2.0]])
    s = neighbour_widths(C, p=2)
    assert np.all(s > 0)
    np.testing.assert_allclose(s[:2], np.sqrt((1 + 4) / 2))
    np.testing.assert_allclose(neighbour_widths(C, p=1)[2], 1.0)
    np.testing.assert_allclose(neighbour_widths([[0.0, 0.0]]), 1.0)  # no neighbour at all


def test_bad_input(moons) -> None:
    X, y, X_val, y_val = moons
    Xm, ym = make_blobs(60, centers=3, random_state=0)
    with pytest.raises(ValueError, match="Only binary classification is supported"):
        KernelMatchingReduction(C=1.0).fit(Xm, ym)
    with pytest.raises(InvalidParameterError, match="'delta' parameter"):
        KernelMatchingReduction(delta=1.5).fit(X, y)
    with pytest.raises(InvalidParameterError, match="'n_delete' parameter"):
        KernelMatchingReduction(n_delete=0).fit(X, y)
    with pytest.raises(ValueError, match="needs fit\\(X, y, eval_set"):
        KernelMatchingReduction(selection="eval_set").fit(X, y)
    with pytest.raises(ValueError, match="not seen in y"):
        KernelMatchingReduction(C=1.0).fit(X, y, eval_set=(X_val, y_val + 5))
    with pytest.raises(ValueError, match="features"):
        KernelMatchingReduction(C=1.0).fit(X, y, eval_set=(X_val[:, :1], y_val))
    with pytest.raises(ValueError, match="Cs must be"):
        KernelMatchingReduction(Cs=[-1.0, 1.0]).fit(X, y)
    with pytest.warns(UserWarning, match="below delta=1.0"):
        clf = KernelMatchingReduction(delta=1.0, C=0.01).fit(X, y)
    assert clf.best_index_ == 0 and clf.n_functions_ == len(X)


@pytest.mark.parametrize("delta", ["Auto", "high", -0.1, 1.01, None])
def test_delta_must_be_auto_or_a_float_in_0_1(moons, delta) -> None:
    X, y, _, _ = moons
    with pytest.raises(InvalidParameterError,
                       match=r"The 'delta' parameter of KernelMatchingReduction must be a str "
                             r"among \{'auto'\} or a float in the range \[0.0, 1.0\]"):
        KernelMatchingReduction(delta=delta, C=1.0).fit(X, y)


@pytest.fixture(scope="module")
def noisy() -> tuple[np.ndarray, np.ndarray]:
    """Ordinary data: 15 % of the labels flipped, so no dictionary reaches 0.9 on training."""
    return make_classification(150, n_features=5, n_informative=3, flip_y=0.15, random_state=0)


@pytest.mark.slow
def test_auto_delta_deletes_where_the_old_fixed_default_keeps_everything(noisy) -> None:
    X, y = noisy
    # the old default δ = 0.9 is above the full dictionary's training accuracy: nothing deleted
    with pytest.warns(UserWarning, match="below delta=0.9; keeping it"):
        fixed = KernelMatchingReduction(delta=0.9, n_delete=0.1, random_state=0).fit(X, y)
    a0 = fixed.path_["train_accuracy"][0]
    assert a0 < 0.9 and fixed.n_functions_ == len(X) and fixed.delta_ == 0.9
    # the new default: δ two points below that accuracy, and the dictionary shrinks
    auto = KernelMatchingReduction(n_delete=0.1, random_state=0).fit(X, y)
    assert auto.get_params()["delta"] == "auto"
    assert auto.path_["train_accuracy"][0] == a0
    assert auto.delta_ == pytest.approx(a0 - AUTO_DELTA_MARGIN)
    acc = auto.path_["train_accuracy"]
    assert np.all(acc[:-1] >= auto.delta_) and acc[-1] < auto.delta_  # stopped at the first drop
    assert auto.best_index_ == len(acc) - 2
    assert auto.n_functions_ < len(X) // 4
    assert auto.score(X, y) >= auto.delta_


@pytest.mark.slow
def test_a_float_delta_only_moves_the_stop(noisy) -> None:
    X, y = noisy
    auto = KernelMatchingReduction(n_delete=0.1, random_state=0).fit(X, y)
    low = KernelMatchingReduction(delta=0.5, n_delete=0.1, random_state=0).fit(X, y)
    assert low.delta_ == 0.5
    # the same rounds up to where the auto rule stopped; the lower δ goes further
    n = len(auto.path_["n_functions"])
    assert len(low.path_["n_functions"]) > n
    for key in ("n_functions", "train_accuracy", "C"):
        np.testing.assert_array_equal(low.path_[key][:n], auto.path_[key])
    for a, b in zip(low.path_["deleted"][:n - 1], auto.path_["deleted"][:n - 1], strict=True):
        np.testing.assert_array_equal(a, b)
    acc = low.path_["train_accuracy"]
    below = np.flatnonzero(acc < 0.5)
    assert low.best_index_ == (below[0] - 1 if len(below) else len(acc) - 1)


def test_memory_is_estimated_before_the_n_by_n_matrices(moons, monkeypatch) -> None:
    X, y, X_val, y_val = moons
    monkeypatch.setattr(sparsify.baselines.kmra, "MAX_FIT_BYTES", 100_000)
    with pytest.raises(ValueError, match=r"would need about 0.0 GiB for 100 training points and "
                                         r"100 eval_set points .* limit is .* Fit on a "
                                         r"subsample of at most about 55 points"):
        KernelMatchingReduction(C=1.0).fit(X, y, eval_set=(X_val, y_val))
    clf = KernelMatchingReduction(C=1.0, n_delete=0.5).fit(X[:50], y[:50])  # 50 points fit
    assert clf.n_functions_ <= 50


def test_auto_delta_deletes_on_statlog_heart(data_dir) -> None:
    # The IDA copy of Statlog heart (270 × 13), one of Li & Deng's four sets, split 1.
    with np.load(data_dir / "heart" / "heart.npz") as z:
        X, y, tr, te = z["X"], z["y"], z["train_idx"][0], z["test_idx"][0]
    with pytest.warns(UserWarning, match="below delta=0.9"):
        fixed = KernelMatchingReduction(delta=0.9, n_delete=0.05, cv_every=5,
                                        random_state=0).fit(X[tr], y[tr])
    auto = KernelMatchingReduction(n_delete=0.05, cv_every=5, random_state=0).fit(
        X[tr], y[tr], eval_set=(X[te], y[te]))
    assert fixed.n_functions_ == len(tr)
    assert auto.n_functions_ < len(tr) / 3
    assert auto.score(X[te], y[te]) > 0.75


def test_wisconsin_missing_values_and_a_short_run(data_dir) -> None:
    with np.load(data_dir / "uci_breast_cancer_wisconsin" / "uci_breast_cancer_wisconsin.npz") as z:
        X, y = z["X"], z["y"]
    with pytest.raises(ValueError, match="NaN"):
        KernelMatchingReduction(C=1.0).fit(X, y)
    keep = ~np.isnan(X).any(axis=1)
    X, y = 2 * (X[keep] - 1) / 9 - 1, y[keep]  # features 1..10 to [-1, 1]
    clf = KernelMatchingReduction(delta=0.95, C=16.0, n_delete=0.2).fit(
        X[:300], y[:300], eval_set=(X[300:], y[300:]))
    assert clf.n_functions_ < 300
    assert clf.score(X[300:], y[300:]) > 0.93
