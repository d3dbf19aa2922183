"""Costs C_i = C · class_weight[y_i] · sample_weight_i: the formulation, fast path, SparseSVC."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import make_blobs, make_classification
from sklearn.metrics import balanced_accuracy_score, recall_score
from sklearn.svm import SVC
from sklearn.utils import shuffle

from sparsify import CvxpyMarginal, SparseSVC
from sparsify.algorithms.svm.formulation import SVM
from sparsify.core.gradcheck import random_problem
from sparsify.core.optimize import initial_expansion_vectors
from sparsify.kernels import make_kernel, resolve_gamma
from sparsify.svm_dual import SVMDualMarginal


def _rel(a, b) -> float:
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return float(np.max(np.abs(a - b)) / max(float(np.max(np.abs(b))), 1e-300))


# ---------------------------------------------------------------- the formulation and fast path


@pytest.mark.parametrize("kernel_name", ["rbf", "poly", "rbf+linear"])
def test_fast_path_agrees_with_the_generic_path_with_non_uniform_costs(kernel_name: str) -> None:
    X, y = random_problem(60, 3, random_state=1)
    kernel = make_kernel(kernel_name, X)
    rng = np.random.default_rng(0)
    # class weights 4 : 0.5, times sample weights in [0.5, 2], five of them 0
    C = np.where(y > 0, 4.0, 0.5) * rng.uniform(0.5, 2.0, len(y))
    C[:5] = 0.0
    fast = SVMDualMarginal(C, X, y, kernel, 6, tol=1e-10, formulation=SVM(C))
    generic = CvxpyMarginal(SVM(C), X, y, kernel, 6, solver="clarabel", tol=1e-10)
    Z = initial_expansion_vectors(X, 6, "random", 0)
    for _ in range(3):  # the second and third evaluations are warm-started
        ev, ref = fast.evaluate(Z), generic.evaluate(Z)
        assert ev.solver == "svm-dual"
        assert _rel(ev.value, ref.value) <= 1e-6
        assert _rel(ev.coef, ref.coef) <= 1e-6
        assert _rel(ev.intercept, ref.intercept) <= 1e-6
        assert _rel(ev.grad, ref.grad) <= 1e-6
        Z = Z + 0.01 * rng.normal(size=Z.shape)
    assert fast.n_generic == 0


def test_a_zero_cost_is_the_same_as_leaving_the_point_out() -> None:
    X, y = random_problem(50, 2, random_state=3)
    kernel = make_kernel("rbf", X)
    C = np.full(len(y), 2.0)
    C[[0, 7, 19]] = 0.0
    keep = C > 0
    Z = initial_expansion_vectors(X, 5, "random", 1)
    for make in (lambda c, X_, y_: SVMDualMarginal(c, X_, y_, kernel, 5, tol=1e-10,
                                                   formulation=SVM(c)),
                 lambda c, X_, y_: CvxpyMarginal(SVM(c), X_, y_, kernel, 5, solver="clarabel",
                                                 tol=1e-10)):
        with_zeros = make(C, X, y).evaluate(Z)
        without = make(C[keep], X[keep], y[keep]).evaluate(Z)
        assert _rel(with_zeros.value, without.value) <= 1e-6
        assert _rel(with_zeros.grad, without.grad) <= 1e-6


def test_the_fast_path_refuses_costs_without_a_positive_one_or_a_class() -> None:
    X, y = random_problem(20, 2)
    kernel = make_kernel("rbf", X)
    with pytest.raises(ValueError, match="finite and >= 0, at least one of them positive"):
        SVMDualMarginal(-np.ones(20), X, y, kernel, 3, formulation=SVM(1.0))
    only_one_class = np.where(y > 0, 1.0, 0.0)
    with pytest.raises(ValueError, match="from both classes among the points with a positive"):
        SVMDualMarginal(only_one_class, X, y, kernel, 3, formulation=SVM(only_one_class))


def test_the_svm_formulation_takes_one_cost_per_point() -> None:
    X, y = random_problem(30, 2)
    kernel = make_kernel("rbf", X)
    Z = X[:4] + 0.01
    plain = CvxpyMarginal(SVM(3.0), X, y, kernel, 4, solver="clarabel").evaluate(Z)
    as_array = CvxpyMarginal(SVM(np.full(30, 3.0)), X, y, kernel, 4,
                             solver="clarabel").evaluate(Z)
    assert as_array.value == pytest.approx(plain.value, rel=1e-7)
    with pytest.raises(ValueError, match="has 7 costs C but there are 30 training points"):
        CvxpyMarginal(SVM(np.ones(7)), X, y, kernel, 4, solver="clarabel").evaluate(Z)


# ---------------------------------------------------------------- SparseSVC


def test_balanced_class_weight_equals_the_equivalent_sample_weight() -> None:
    X, y = make_classification(150, n_features=4, weights=[0.8], random_state=0)
    params = dict(n_expansion=5, gamma=0.5, max_iter=15, random_state=0)
    by_class = SparseSVC(class_weight="balanced", **params).fit(X, y)
    weights = len(y) / (2 * np.bincount(y))
    by_sample = SparseSVC(**params).fit(X, y, sample_weight=weights[y])
    np.testing.assert_allclose(by_class.class_weight_, weights)
    np.testing.assert_allclose(by_class.decision_function(X), by_sample.decision_function(X),
                               rtol=1e-10, atol=1e-12)


def test_integer_sample_weights_equal_repeated_rows_and_zero_equals_removal() -> None:
    rng = np.random.RandomState(0)
    X, y = rng.rand(30, 4), rng.randint(0, 3, size=30)
    sw = rng.randint(0, 4, size=30)
    X_w, y_w, sw_w = shuffle(X, y, sw, random_state=1)
    # gamma="scale" from the weighted variance: a weight counts as repeats there too
    params = dict(n_expansion=3, max_iter=5, random_state=0)
    repeated = SparseSVC(**params).fit(X.repeat(sw, axis=0), y.repeat(sw))
    weighted = SparseSVC(**params).fit(X_w, y_w, sample_weight=sw_w)
    assert weighted.kernel_.gamma == pytest.approx(repeated.kernel_.gamma, rel=1e-12)
    np.testing.assert_allclose(weighted.decision_function(X), repeated.decision_function(X),
                               rtol=1e-7)


def test_class_weight_leaves_gamma_scale_as_svc_has_it() -> None:
    X, y = make_classification(80, n_features=3, n_redundant=0, weights=[0.7], random_state=1)
    clf = SparseSVC(n_expansion=3, class_weight="balanced", max_iter=0, random_state=0)
    assert clf.fit(X, y).kernel_.gamma == pytest.approx(resolve_gamma("scale", X))


def test_a_class_weight_dict_by_label_weighs_labels_left_out_by_one() -> None:
    X, y = make_blobs(90, centers=3, random_state=0)
    labels = np.array(["ant", "bee", "cat"])[y]
    clf = SparseSVC(n_expansion=3, class_weight={"cat": 5.0}, max_iter=0, random_state=0)
    assert clf.fit(X, labels).class_weight_.tolist() == [1.0, 1.0, 5.0]
    assert SparseSVC(n_expansion=3, max_iter=0).fit(X, labels).class_weight_.tolist() == [1.0] * 3


def test_one_vs_rest_problems_keep_each_points_weight_from_its_own_label() -> None:
    X, y = make_blobs(60, centers=3, cluster_std=2.0, random_state=1)
    cw = {0: 3.0, 1: 0.5, 2: 1.0}
    clf = SparseSVC(n_expansion=4, C=2.0, class_weight=cw, gamma=0.3, max_iter=0,
                    random_state=0).fit(X, y)
    costs = 2.0 * np.array([cw[label] for label in y])
    for k in range(3):
        Z = clf.expansion_vectors_[4 * k:4 * (k + 1)]
        t = np.where(y == k, 1, -1)
        ref = CvxpyMarginal(SVM(costs), X, t, clf.kernel_, 4, solver="clarabel",
                            tol=1e-10).evaluate(Z, grad=False)
        assert clf.objective_[k] == pytest.approx(ref.value, rel=1e-6)


def test_ratio_n_expansion_counts_the_support_vectors_of_the_weighted_full_svc() -> None:
    X, y = make_classification(120, n_features=3, n_redundant=0, weights=[0.85],
                               random_state=2)
    sw = np.random.default_rng(0).uniform(0.5, 2.0, len(y))
    clf = SparseSVC(n_expansion=0.5, C=3.0, gamma=0.5, class_weight="balanced", max_iter=0,
                    random_state=0).fit(X, y, sample_weight=sw)
    full = SVC(C=3.0, gamma=0.5, class_weight="balanced").fit(X, y, sample_weight=sw)
    assert clf.full_n_support_.tolist() == [int(full.n_support_.sum())]
    assert clf.n_expansion_.tolist() == [round(0.5 * full.n_support_.sum())]


def test_balanced_weights_recover_the_minority_class() -> None:
    # 1:20 imbalance with overlapping classes: unweighted, the minority is mostly lost
    X, y = make_classification(630, n_features=2, n_redundant=0, n_clusters_per_class=1,
                               weights=[20 / 21], class_sep=0.8, flip_y=0, random_state=3)
    X_test, y_test = X[::2], y[::2]
    X_train, y_train = X[1::2], y[1::2]
    params = dict(n_expansion=10, C=1.0, gamma=1.0, random_state=0)
    plain = SparseSVC(**params).fit(X_train, y_train)
    balanced = SparseSVC(class_weight="balanced", **params).fit(X_train, y_train)
    recall_plain = recall_score(y_test, plain.predict(X_test))
    recall_balanced = recall_score(y_test, balanced.predict(X_test))
    assert recall_balanced > recall_plain + 0.2
    assert balanced_accuracy_score(y_test, balanced.predict(X_test)) > 0.75
    # and close to the full SVC with the same weights
    svc = SVC(C=1.0, gamma=1.0, class_weight="balanced").fit(X_train, y_train)
    assert recall_balanced >= recall_score(y_test, svc.predict(X_test)) - 0.15


# ---------------------------------------------------------------- bad weights


@pytest.mark.parametrize(
    ("fit_weight", "class_weight", "match"),
    [
        ([1.0] * 9 + [-1.0], None, r"The sample_weight passed to SparseSVC.fit must be >= 0 \(a "
                                   r"weight of 0 leaves the sample out\)\. Got -1.0 at index 9"),
        ([1.0] * 9 + [np.nan], None, "Input sample_weight contains NaN"),
        ([1.0] * 9 + [np.inf], None, "Input sample_weight contains infinity"),
        ([1.0] * 5, None, r"sample_weight.shape == \(5,\), expected \(10,\)"),
        ([0.0] * 10, None, "Sample weights must contain at least one non-zero number"),
        ([0.0, 1.0] * 5, None, r"class 0 has none \(its sample_weight × class_weight is 0"),
        (None, {0: 1.0, 1: 0.0}, r"class 1 has none \(its sample_weight × class_weight is 0"),
        (None, {0: -2.0}, r"The weight of class 0 in the 'class_weight' parameter of SparseSVC "
                          r"must be a finite float >= 0\. Got -2.0 instead\."),
        (None, {0: float("nan")}, "must be a finite float >= 0. Got nan instead"),
        (None, {7: 2.0}, r"The 'class_weight' parameter of SparseSVC has the label 7, which is "
                         r"not a class of y \(\[0, 1\]\); use the labels of y as its keys\."),
        (None, "even", r"The 'class_weight' parameter of SparseSVC must be an instance of 'dict',"
                       r" a str among \{'balanced'\} or None\. Got 'even' instead\."),
    ],
)
def test_bad_weights_are_clear_errors(fit_weight, class_weight, match: str) -> None:
    X = np.arange(20.0).reshape(10, 2)
    y = np.array([0, 1] * 5)
    with pytest.raises(ValueError, match=match):
        SparseSVC(n_expansion=2, class_weight=class_weight, max_iter=0).fit(
            X, y, sample_weight=fit_weight)


def test_the_sample_weight_given_is_not_modified() -> None:
    X, y = make_blobs(40, centers=2, random_state=0)
    sw = np.linspace(0.0, 2.0, 40)
    before = sw.copy()
    SparseSVC(n_expansion=3, class_weight="balanced", max_iter=2, random_state=0).fit(
        X, y, sample_weight=sw)
    np.testing.assert_array_equal(sw, before)


def test_scikit_learns_weight_checks_pass() -> None:
    # parametrize_with_checks in test_estimators.py runs them too, since fit takes
    # sample_weight and the constructor class_weight; here they are named, so dropping
    # either parameter cannot silently drop its checks
    from sklearn.utils.estimator_checks import (
        check_class_weight_classifiers,
        check_classifiers_one_label_sample_weights,
        check_sample_weight_equivalence_on_dense_data,
    )
    from sklearn.utils.validation import has_fit_parameter

    clf = SparseSVC(n_expansion=3, max_iter=5, random_state=0)
    assert has_fit_parameter(clf, "sample_weight") and "class_weight" in clf.get_params()
    check_sample_weight_equivalence_on_dense_data("SparseSVC", clf)
    check_class_weight_classifiers("SparseSVC", clf)
    check_classifiers_one_label_sample_weights("SparseSVC", clf)
