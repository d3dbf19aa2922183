"""Property-based tests (hypothesis) of the estimators and the core on odd input.

Tiny N (1 to 3 points), Nz = N, duplicate rows, constant features, feature
scales of 1e-8 and 1e8, NaN and infinity, one class, labels of any type, 1-D,
empty and sparse X. Each case either works, and the result is sane
(predictions among ``classes_``, finite decision values, Nz as asked), or
raises a ValueError whose message says what to change. Which of the two is
predicted from the data before the fit, so a case that fails for another
reason, or works where it should not, fails the test.

The runs are derandomised (``derandomize=True``, no example database), so CI
sees the same examples every time; the file runs in well under a minute.
``SPARSIFY_MAX_EXAMPLES=200 pytest tests/test_properties.py`` searches deeper.
"""

from __future__ import annotations

import os
import re
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import scipy.sparse
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from sklearn.exceptions import ConvergenceWarning
from sklearn.preprocessing import StandardScaler

from sparsify import (
    RBF,
    CvxpyMarginal,
    Polynomial,
    ReducedSetSVC,
    ReducedSVC,
    SolverError,
    SparseKernelLogisticRegression,
    SparseKFD,
    SparseOneClassSVM,
    SparseSVC,
)
from sparsify.core.conic import make_marginal
from sparsify.core.formulation import make_formulation
from sparsify.core.optimize import minimize_marginal

#: Few examples, no deadline (the first fit compiles a cvxpy problem), the same
#: examples on every run and no .hypothesis database written into the checkout.
#: SPARSIFY_MAX_EXAMPLES=200 searches deeper (minutes) with the same rules.
FAST = settings(
    max_examples=int(os.environ.get("SPARSIFY_MAX_EXAMPLES", "10")),
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
#: The estimators' property, where many examples end in a refusal: half as many again.
MORE = settings(FAST, max_examples=FAST.max_examples * 3 // 2)

#: Label sets of every type the estimators must take (bool has two classes only).
LABELS: dict[str, np.ndarray] = {
    "int": np.array([0, 1, 2]),
    "negative, non-contiguous": np.array([-7, 3, 12]),
    # scikit-learn reads non-integral floats as a regression target ("Unknown label
    # type: continuous", tested below); integral floats are class labels
    "integral float": np.array([-1.0, 1.0, 2.0]),
    "str": np.array(["cat", "dog", "emu"]),
    "object": np.array(["cat", "dog", "emu"], dtype=object),
    "bool": np.array([False, True]),
}

#: Messages the estimators may answer odd data with; each says what to change.
REFUSALS = {
    "one class": r"needs samples of at least 2 classes in the data; got 1 class",
    "singleton class": r"needs at least 2 samples of each class",
    "multiclass": r"Only binary classification is supported.*one-vs-rest",
    "too many XVs": r"asks for more expansion vectors than the \d+ distinct training points.*"
                    r"lower n_expansion",
}


@st.composite
def odd_inputs(draw: st.DrawFn, max_samples: int = 8) -> np.ndarray:
    """X with tiny N, duplicate rows, constant features and scales 1e-8 to 1e8."""
    # sampled, not st.integers: hypothesis favours N = 1 there, which leaves one class
    n = draw(st.sampled_from([n for n in (5, 2, 8, 3, 1, 4, 6, 7) if n <= max_samples]))
    d = draw(st.integers(1, 3))
    # a small integer grid gives duplicate rows and constant columns by itself
    grid = st.integers(-2, 2).map(float)
    reals = st.floats(-3, 3, allow_nan=False, allow_subnormal=False)
    X = draw(arrays(np.float64, (n, d), elements=draw(st.sampled_from([grid, reals]))))
    if draw(st.booleans()):
        X[:, 0] = X[0, 0]  # a constant feature
    if n > 1 and draw(st.booleans()):
        X[-1] = X[0]  # a duplicate row
    return X * 10.0 ** draw(st.sampled_from([-8, 0, 8]))


@st.composite
def odd_classification(draw: st.DrawFn, max_samples: int = 8) -> tuple[np.ndarray, np.ndarray]:
    """(X, y) from :func:`odd_inputs` with 1 to 3 classes of a label type drawn too."""
    X = draw(odd_inputs(max_samples))
    labels = LABELS[draw(st.sampled_from(sorted(LABELS)))]
    # two classes first (hypothesis favours the first choice); one class stays likely
    # enough through N = 1
    n_classes = min(draw(st.sampled_from([2, 3, 1])), len(labels))
    codes = draw(arrays(np.int64, len(X), elements=st.integers(0, n_classes - 1)))
    codes[: n_classes] = np.arange(n_classes)[: len(X)]  # every class drawn is present
    return X, labels[draw(st.permutations(codes.tolist()))]


def _n_distinct(X: np.ndarray) -> int:
    return len(np.unique(X, axis=0))


def _refusal(name: str, X: np.ndarray, y: np.ndarray, nz: int) -> str | None:
    """The refusal each estimator owes these data (its checks in their order), or None."""
    classes, counts = np.unique(y, return_counts=True)
    if name == "SparseKFD" and len(classes) >= 2 and counts.min() < 2:
        return "singleton class"
    if len(classes) < 2:
        return "one class"
    if name in ("ReducedSVC", "ReducedSetSVC") and len(classes) > 2:
        return "multiclass"
    # the reduced set method finds its vectors anywhere, not among the training points
    if name != "ReducedSetSVC" and nz > _n_distinct(X):
        return "too many XVs"
    return None


CLASSIFIERS: dict[str, Callable[[int, Any], Any]] = {
    "SparseSVC": lambda nz, gamma: SparseSVC(nz, gamma=gamma, max_iter=5, random_state=0),
    "SparseKFD": lambda nz, gamma: SparseKFD(nz, gamma=gamma, max_iter=5, random_state=0),
    "SparseKernelLogisticRegression": lambda nz, gamma: SparseKernelLogisticRegression(
        nz, gamma=gamma, max_iter=5, random_state=0),
    "ReducedSVC": lambda nz, gamma: ReducedSVC(nz, gamma=gamma, coef="mrsvm", random_state=0),
    "ReducedSetSVC": lambda nz, gamma: ReducedSetSVC(nz, gamma=gamma, n_starts=2,
                                                     random_state=0),
}


def _n_problems(name: str, n_classes: int) -> int:
    """Binary problems whose XVs are stacked: one-vs-rest for SparseSVC and SparseKFD."""
    if name in ("SparseSVC", "SparseKFD") and n_classes > 2:
        return n_classes
    return 1


def _fit_quietly(est: Any, *args: Any) -> Any:
    # ConvergenceWarning is the documented fallback (best XVs kept) and allowed;
    # the result is checked below either way
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return est.fit(*args)


@pytest.mark.parametrize("name", sorted(CLASSIFIERS))
@MORE
@given(data=odd_classification(), choice=st.data())
def test_classifier_works_or_says_what_to_change(name: str, data, choice) -> None:
    X, y = data
    # Nz from 1 to one more than the distinct points; Nz = N is the full problem
    nz = choice.draw(st.integers(1, _n_distinct(X) + 1), label="n_expansion")
    gamma = choice.draw(st.sampled_from(["scale", 1.0]), label="gamma")
    est = CLASSIFIERS[name](nz, gamma)
    refusal = _refusal(name, X, y, nz)
    event(f"refused: {refusal}" if refusal else "fitted")  # pytest --hypothesis-show-statistics
    if refusal is not None:
        with pytest.raises(ValueError, match=REFUSALS[refusal]):
            est.fit(X, y)
        return
    _fit_quietly(est, X, y)
    classes = np.unique(y)
    assert est.classes_.tolist() == classes.tolist()
    pred = est.predict(X)
    assert pred.shape == (len(X),) and np.isin(pred, est.classes_).all()
    scores = est.decision_function(X)
    expected = (len(X),) if len(classes) == 2 else (len(X), len(classes))
    assert scores.shape == expected and np.isfinite(scores).all()
    assert est.expansion_vectors_.shape == (nz * _n_problems(name, len(classes)), X.shape[1])
    assert np.isfinite(est.expansion_vectors_).all() and np.isfinite(est.expansion_coef_).all()
    if hasattr(est, "predict_proba"):
        proba = est.predict_proba(X)
        np.testing.assert_allclose(proba.sum(1), 1.0, rtol=1e-12)


@FAST
@given(X=odd_inputs(), choice=st.data())
def test_one_class_svm_works_or_says_what_to_change(X: np.ndarray, choice) -> None:
    nz = choice.draw(st.integers(1, _n_distinct(X) + 1), label="n_expansion")
    nu = choice.draw(st.sampled_from([0.1, 0.5, 1.0]), label="nu")
    det = SparseOneClassSVM(nz, nu=nu, max_iter=5, random_state=0)
    if nz > _n_distinct(X):
        with pytest.raises(ValueError, match=REFUSALS["too many XVs"]):
            det.fit(X)
        return
    _fit_quietly(det, X)
    assert set(det.predict(X).tolist()) <= {-1, 1}
    assert np.isfinite(det.decision_function(X)).all()
    assert np.isfinite(det.score_samples(X)).all()
    assert det.expansion_vectors_.shape == (nz, X.shape[1])


ESTIMATORS = [*(make(2, "scale") for make in CLASSIFIERS.values()), SparseOneClassSVM(2)]


def _fit_any(est: Any, X: Any, y: Any) -> Any:
    return est.fit(X) if isinstance(est, SparseOneClassSVM) else est.fit(X, y)


@pytest.mark.parametrize("est", ESTIMATORS, ids=lambda e: type(e).__name__)
@FAST
@given(
    row=st.integers(0, 5), col=st.integers(0, 1),
    value=st.sampled_from([np.nan, np.inf, -np.inf]),
)
def test_nan_and_inf_anywhere_are_refused(est: Any, row: int, col: int, value: float) -> None:
    X = np.array([[0.0, 0.0], [0.0, 1.0], [1.0, 0.0], [1.0, 1.0], [2.0, 0.0], [2.0, 1.0]])
    X[row, col] = value
    word = "NaN" if np.isnan(value) else "infinity"
    with pytest.raises(ValueError, match=f"Input X contains {word}"):
        _fit_any(est, X, np.array([0, 1] * 3))


@pytest.mark.parametrize("est", ESTIMATORS, ids=lambda e: type(e).__name__)
@pytest.mark.parametrize(
    ("X", "message"),
    [
        (np.arange(6.0), r"(?s)Expected 2D array, got 1D array instead.*Reshape your data"),
        (np.empty((0, 2)), r"Found array with 0 sample\(s\) \(shape=\(0, 2\)\) while a minimum "
                           "of 1 is required"),
        (np.empty((6, 0)), r"Found array with 0 feature\(s\) \(shape=\(6, 0\)\) while a minimum "
                           "of 1 is required"),
    ],
    ids=["1-D X", "empty X", "no features"],
)
def test_malformed_x_is_refused(est: Any, X: np.ndarray, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        _fit_any(est, X, np.array([0, 1] * 3)[: len(X)])


@pytest.mark.parametrize("est", ESTIMATORS, ids=lambda e: type(e).__name__)
def test_sparse_x_is_refused_with_the_conversion_to_make(est: Any) -> None:
    # no estimator takes sparse input; scikit-learn's convention is a TypeError
    X = scipy.sparse.csr_matrix(np.eye(6, 2))
    with pytest.raises(TypeError, match=re.escape("dense data is required. Use '.toarray()'")):
        _fit_any(est, X, np.array([0, 1] * 3))


@pytest.mark.parametrize("est", ESTIMATORS[:-1], ids=lambda e: type(e).__name__)
def test_non_integral_float_labels_are_refused_as_continuous(est: Any) -> None:
    X = np.array([[0.0], [1.0], [2.0], [3.0]])
    with pytest.raises(ValueError, match="Unknown label type: continuous"):
        est.fit(X, np.array([0.5, 1.5, 0.5, 1.5]))


def test_one_class_message_shows_the_plain_label() -> None:
    # numpy 2 would print np.int64(3); the user wrote 3
    with pytest.raises(ValueError, match=r"got 1 class \(3\)\.$"):
        SparseSVC(1).fit(np.array([[0.0], [1.0]]), np.array([3, 3]))


def test_kfd_singleton_class_message_shows_the_plain_label() -> None:
    with pytest.raises(ValueError, match=r"class 0 has 1 sample"):
        SparseKFD(1).fit(np.array([[0.0], [1.0], [2.0]]), np.array([0, 1, 1]))


def test_convex_kfd_on_constant_inputs_says_what_to_change() -> None:
    X, y = np.ones((8, 2)), np.array([0, 1] * 4)
    with pytest.raises(ValueError, match="method='rayleigh'"):
        SparseKFD(1, method="convex", max_iter=3, random_state=0).fit(X, y)


def test_rayleigh_kfd_on_constant_inputs_works() -> None:
    # the Rayleigh quotient is 0 there (no between-class scatter): a constant machine
    X, y = np.ones((8, 2)), np.array([0, 1] * 4)
    clf = SparseKFD(1, max_iter=3, random_state=0).fit(X, y)
    assert np.isfinite(clf.decision_function(X)).all()
    assert len(set(clf.predict(X).tolist())) == 1


def _huge_features() -> tuple[np.ndarray, np.ndarray]:
    X = np.random.default_rng(0).normal(size=(12, 2))
    return 1e8 * X, (X[:, 0] > 0).astype(int)


@pytest.mark.parametrize(
    ("est", "message"),
    [
        # the eigen solve overflows on its way to a NaN (numpy's RuntimeWarnings), in W or
        # only in the gradient (W = nan on some machines, -0.0 on others)
        pytest.param(
            SparseKFD(3, kernel="linear", max_iter=5, random_state=0),
            r"non-finite W\(Z\) = \S+ or gradient for the 'skfd' formulation.*standardise the "
            "features",
            marks=pytest.mark.filterwarnings("ignore::RuntimeWarning"),
        ),
    ],
    ids=["SparseKFD"],
)
def test_a_linear_kernel_on_features_of_size_1e8_says_to_standardise(est, message) -> None:
    # gamma="scale" makes the RBF and polynomial kernels scale-free; the linear kernel has
    # no gamma, so its values reach 1e16 and the solvers fail: the report says what to do
    X, y = _huge_features()
    with pytest.raises(SolverError, match=message):
        est.fit(X, y)
    standardised = StandardScaler().fit_transform(X)
    assert est.fit(standardised, y).score(standardised, y) >= 0.9


@pytest.mark.parametrize("solver", ["auto", "clarabel"])
def test_the_svm_copes_with_a_linear_kernel_on_features_of_size_1e8(solver: str) -> None:
    # the fast path, and the generic path since its link is whitened (f = K_XZ K_ZZ^-½ u):
    # the kernel's scale no longer reaches the backend (it failed with K_XZ itself in the link)
    X, y = _huge_features()
    clf = SparseSVC(3, kernel="linear", solver=solver, max_iter=5, random_state=0).fit(X, y)
    assert np.isfinite(clf.decision_function(X)).all() and clf.score(X, y) >= 0.9


# -- the core -------------------------------------------------------------------------------

#: (formulation, its parameters, solver, label kind): the fast paths and the generic path.
CORE = [
    ("svm", {"C": 10.0}, "auto", "pm"),
    ("svm", {"C": 10.0}, "clarabel", "pm"),
    ("skfd", {"mu": 0.1}, "auto", "pm"),
    ("kfd", {"mu": 0.1}, "clarabel", "pm"),
    ("klr", {"lam": 0.1}, "auto", "pm"),
    ("oneclass", {"nu": 0.5}, "auto", None),
]


@st.composite
def binary_problem(draw: st.DrawFn, max_samples: int = 7) -> tuple[np.ndarray, np.ndarray]:
    """Odd X (from 2 points) with both labels -1/+1 present."""
    X = draw(odd_inputs(max_samples).filter(lambda X: len(X) >= 2))
    y = draw(arrays(np.int64, len(X), elements=st.sampled_from([-1, 1])))
    assume(len(np.unique(y)) == 2)
    return X, y


def _marginal(case: tuple, X: np.ndarray, y: np.ndarray, nz: int, gamma: float):
    name, params, solver, labels = case
    return make_marginal(make_formulation(name, **params), X, y if labels else None,
                         RBF(gamma), nz, solver, 1e-9)


@pytest.mark.parametrize("case", CORE, ids=lambda c: f"{c[0]}-{c[2]}")
@FAST
@given(data=binary_problem(), choice=st.data())
def test_marginal_is_finite_or_names_formulation_and_solver(case, data, choice) -> None:
    X, y = data
    # any rows of X, repeats allowed (duplicate XVs), shifted or not; Nz = N included
    rows = choice.draw(st.lists(st.integers(0, len(X) - 1), min_size=1, max_size=len(X)),
                       label="rows")
    Z = X[rows] + choice.draw(st.sampled_from([0.0, 0.3]), label="shift") * X.std()
    gamma = 1.0 / max(float(X.var()) * X.shape[1], 1e-300) if X.var() > 0 else 1.0
    try:
        ev = _marginal(case, X, y, len(Z), gamma).evaluate(Z)
    except SolverError as exc:
        # solver trouble is an error that names the formulation and the solver
        assert f"{case[0]!r} formulation" in str(exc) and "solver" in str(exc)
        return
    assert np.isfinite(ev.value)
    assert ev.grad.shape == Z.shape and np.isfinite(ev.grad).all()
    assert np.shape(ev.coef) == (len(Z),) and np.isfinite(ev.coef).all()


@st.composite
def well_spread(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray]:
    """3 to 7 distinct points at unit scale, labels -1/+1 both present."""
    n = draw(st.integers(3, 7))
    X = draw(arrays(np.float64, (n, 2), elements=st.integers(-4, 4).map(lambda v: 0.7 * v)))
    assume(_n_distinct(X) == n)
    y = draw(arrays(np.int64, n, elements=st.sampled_from([-1, 1])))
    assume(len(np.unique(y)) == 2)
    return X, y


@pytest.mark.parametrize("case", [c for c in CORE if c[0] != "kfd"], ids=lambda c: f"{c[0]}-{c[2]}")
@FAST
@given(data=well_spread(), choice=st.data())
def test_a_duplicate_xv_adds_nothing(case, data, choice) -> None:
    # φ(z) twice spans what it spans once: W is unchanged (up to the jitter on K_ZZ),
    # and the duplicate's gradient row is the original's
    X, y = data
    nz = choice.draw(st.integers(1, len(X) - 1), label="Nz")
    Z = X[:nz]
    once = _marginal(case, X, y, nz, 0.5).evaluate(Z)
    twice = _marginal(case, X, y, nz + 1, 0.5).evaluate(np.vstack([Z, Z[:1]]))
    assert twice.value == pytest.approx(once.value, rel=1e-6, abs=1e-7)
    scale = max(float(np.abs(twice.grad).max()), 1.0)
    np.testing.assert_allclose(twice.grad[0], twice.grad[-1], atol=1e-4 * scale)


@pytest.mark.parametrize("case", [c for c in CORE if c[0] != "kfd"], ids=lambda c: f"{c[0]}-{c[2]}")
@FAST
@given(data=well_spread(), choice=st.data())
def test_no_xvs_beat_nz_equal_n(case, data, choice) -> None:
    # Z = X (Nz = N) is the full kernel problem: by the representer theorem no Z does better
    X, y = data
    full = _marginal(case, X, y, len(X), 0.5).evaluate(X).value
    nz = choice.draw(st.integers(1, len(X)), label="Nz")
    Z = choice.draw(arrays(np.float64, (nz, 2), elements=st.floats(-3, 3)), label="Z")
    value = _marginal(case, X, y, nz, 0.5).evaluate(Z, grad=False).value
    assert value >= full - 1e-6 * max(1.0, abs(full))


@FAST
@given(data=binary_problem(), choice=st.data())
def test_minimize_marginal_never_ends_above_its_start(data, choice) -> None:
    X, y = data
    rows = choice.draw(st.lists(st.integers(0, len(X) - 1), min_size=1, max_size=3), label="rows")
    Z0 = X[rows]  # duplicate initial XVs included
    marginal = _marginal(CORE[0], X, y, len(Z0), 1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # the documented early stop
        res = minimize_marginal(marginal, Z0, max_iter=5)
    assert res.Z.shape == Z0.shape and np.isfinite(res.Z).all()
    assert res.evaluation.value <= res.history[0] + 1e-12 * max(1.0, abs(res.history[0]))
    assert np.all(np.diff(res.history) <= 1e-9 * max(1.0, abs(res.history[0])))


@pytest.mark.parametrize(
    ("X", "Z", "message"),
    [
        (np.arange(4.0), None, r"needs X of shape \(n_samples, n_features\).*got shape \(4,\)"),
        (np.empty((0, 2)), None, r"needs X of shape .* got shape \(0, 2\)"),
        (np.array([[0.0, np.nan], [1.0, 1.0]]), None, "contains NaN or infinity; remove"),
        (np.eye(2), np.array([[0.0, np.inf]]), r"Z of the 'svm' formulation contain NaN or "
                                               r"infinity \(row 0\); pass finite XVs"),
        (np.eye(2), np.eye(3), r"must have shape \(1, 2\) \(Nz, n_features\); got \(3, 3\)"),
    ],
    ids=["1-D X", "empty X", "NaN in X", "inf in Z", "Z of the wrong shape"],
)
def test_core_refuses_malformed_arrays_clearly(X, Z, message) -> None:
    svm = make_formulation("svm")
    y = np.array([-1, 1])[: len(X)] if len(X) else np.array([])
    with pytest.raises(ValueError, match=message):
        CvxpyMarginal(svm, X, y, RBF(1.0), 1).evaluate(np.zeros((1, 2)) if Z is None else Z)


@pytest.mark.parametrize("Z0", [np.zeros(2), np.array([[0.0, np.nan]])], ids=["1-D", "NaN"])
def test_minimize_marginal_refuses_malformed_starts(Z0) -> None:
    X, y = np.eye(2), np.array([-1, 1])
    marginal = CvxpyMarginal(make_formulation("svm"), X, y, RBF(1.0), 1)
    with pytest.raises(ValueError, match="Z0"):
        minimize_marginal(marginal, Z0)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # numpy's own, on the way there
def test_svm_fast_path_refuses_nan_xvs_and_kernel_overflow_clearly() -> None:
    # the fast path breaks down and hands the evaluation to the generic path, whose
    # checks say what is wrong
    X, y = np.array([[0.0], [1.0], [2.0], [3.0]]), np.array([-1, -1, 1, 1])
    with pytest.raises(ValueError, match=r"contain NaN or infinity \(row 1\); pass finite XVs"):
        _marginal(CORE[0], X, y, 2, 1.0).evaluate(np.array([[0.0], [np.nan]]))
    svm = make_formulation("svm")
    # k(x, x) overflows on the training inputs: refused when the marginal is built
    with pytest.raises(ValueError, match=r"overflows on the training inputs.*Rescale the data"):
        make_marginal(svm, 1e200 * X, y, Polynomial(), 2).evaluate(X[:2])


@pytest.mark.parametrize("case", [CORE[2], CORE[4]], ids=lambda c: c[0])
def test_fast_paths_refuse_nan_xvs_clearly(case) -> None:
    X, y = np.array([[0.0], [1.0], [2.0], [3.0]]), np.array([-1, -1, 1, 1])
    with pytest.raises(ValueError, match=r"contain NaN or infinity \(row 1\); pass finite XVs"):
        _marginal(case, X, y, 2, 1.0).evaluate(np.array([[0.0], [np.nan]]))


@pytest.mark.parametrize("case", [CORE[2], CORE[4]], ids=lambda c: c[0])
@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_fast_paths_refuse_kernel_overflow_clearly(case) -> None:
    name, params, solver, _ = case
    X, y = 1e200 * np.array([[0.0], [1.0], [2.0], [3.0]]), np.array([-1, -1, 1, 1])
    with pytest.raises(ValueError, match=r"overflows on the training inputs.*Rescale the data"):
        make_marginal(make_formulation(name, **params), X, y, Polynomial(), 2,
                      solver).evaluate(X[:2])
