"""Every public estimator: same seed → same model, saved → loaded → same predictions, a model
from another major.minor version refused, and the feature map ``transform``."""

from __future__ import annotations

import copy
import functools
import pickle
from typing import Any

import joblib
import numpy as np
import pytest
from sklearn.base import BaseEstimator, clone, is_regressor
from sklearn.datasets import make_blobs, make_moons
from sklearn.exceptions import NotFittedError

import sparsify
from sparsify import (
    ImportVectorMachine,
    KernelMatchingReduction,
    ReducedSetSVC,
    ReducedSVC,
    RVMClassifier,
    SemiSupervisedSVC,
    SparseKernelLogisticRegression,
    SparseKernelTransformer,
    SparseKFD,
    SparseOneClassSVM,
    SparseSearchCV,
    SparseSVC,
    TaylorGaussianFeatures,
)
from sparsify.core.estimator import KernelMachineMixin
from sparsify.persistence import (
    VERSION_KEY,
    IncompatibleVersionError,
    VersionedPickleMixin,
    major_minor,
)

# Small, fast settings per estimator; a public estimator missing here is still tested, with its
# defaults (and random_state=0 when it has one), so a new estimator cannot slip through.
SETTINGS: dict[str, BaseEstimator] = {
    "SparseSVC": SparseSVC(4, C=10.0, gamma=2.0, max_iter=10, random_state=0),
    "SparseKFD": SparseKFD(4, gamma=2.0, max_iter=5, init="random", random_state=0),
    "SparseKernelLogisticRegression": SparseKernelLogisticRegression(
        4, gamma=2.0, max_iter=10, random_state=0),
    "SparseOneClassSVM": SparseOneClassSVM(4, gamma=2.0, max_iter=10, random_state=0),
    "ImportVectorMachine": ImportVectorMachine(gamma=2.0, max_import_points=5, n_candidates=20,
                                               random_state=0),
    "ReducedSVC": ReducedSVC(5, C=10.0, gamma=2.0, random_state=0),
    "ReducedSetSVC": ReducedSetSVC(4, C=10.0, gamma=2.0, n_starts=3, random_state=0),
    "RVMClassifier": RVMClassifier(gamma=2.0),
    "KernelMatchingReduction": KernelMatchingReduction(C=10.0, n_delete=0.2, random_state=0),
    "TaylorGaussianFeatures": TaylorGaussianFeatures(gamma=0.5),
    "SemiSupervisedSVC": SemiSupervisedSVC(n_expansion=4, gamma=2.0, max_iter=5, random_state=0),
    "SparseSearchCV": SparseSearchCV(SparseSVC(3, gamma=2.0, max_iter=5, random_state=0),
                                     {"C": [1.0, 10.0]}, cv=2),
}

# Estimators whose random_state picks the initial XVs (or candidates): another seed must give
# another model, which proves the seed is used at all.
SEEDED = ["SparseSVC", "SparseKernelLogisticRegression", "SparseOneClassSVM",
          "ImportVectorMachine", "ReducedSVC"]


def public_estimators() -> dict[str, type[BaseEstimator]]:
    """Every estimator class that ``import sparsify`` exports."""
    out = {}
    for name in sparsify.__all__:
        obj = getattr(sparsify, name)
        # the task bases (SparseKernelClassifier, ...) fit nothing until given a formulation
        if isinstance(obj, type) and issubclass(obj, BaseEstimator) and not (
                getattr(obj, "formulation_class", 0) is None
                and not getattr(obj, "formulation_name", "")):
            out[name] = obj
    return out


def _estimator(name: str) -> BaseEstimator:
    if name in SETTINGS:
        return clone(SETTINGS[name])
    est = public_estimators()[name]()
    return est.set_params(random_state=0) if "random_state" in est.get_params() else est


# (id, estimator name, data): the multi-class cases cover one-vs-rest (stacked XVs) and the
# joint softmax model.
CASES = [(name, name, "binary") for name in public_estimators()] + [
    ("SparseSVC-one-vs-rest", "SparseSVC", "multiclass"),
    ("SparseKernelLogisticRegression-softmax", "SparseKernelLogisticRegression", "multiclass"),
]
# the blobs are wider than the moons: the default gamma, and few iterations to stay fast
MULTICLASS = {"SparseSVC": {"C": 1.0, "gamma": "scale", "max_iter": 5},
              "SparseKernelLogisticRegression": {"gamma": "scale", "max_iter": 5}}


def _data(kind: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Training X, y and fresh test points."""
    if kind == "binary":
        X, y = make_moons(n_samples=70, noise=0.15, random_state=0)
        return X[:50], y[:50], X[50:]
    X, y = make_blobs(n_samples=60, centers=3, cluster_std=1.0, random_state=2)
    return X[:45], y[:45], X[45:]


def _fresh_fit(name: str, kind: str) -> tuple[BaseEstimator, np.ndarray]:
    X, y, X_test = _data(kind)
    if name == "SemiSupervisedSVC":
        y = np.where(np.arange(len(y)) < 10, y, -1)  # 10 labelled points, the rest unlabelled
    est = _estimator(name)
    if kind == "multiclass":
        est.set_params(**MULTICLASS[name])
    return est.fit(X, y), X_test


@functools.cache
def _fit(name: str, kind: str) -> tuple[BaseEstimator, np.ndarray]:
    """One fit per case shared by the tests that only read it (never mutate the result)."""
    return _fresh_fit(name, kind)


def _outputs(est: BaseEstimator, X: np.ndarray) -> dict[str, np.ndarray]:
    """What a fitted model gives on X, through every prediction method it has."""
    methods = ["predict", "decision_function", "predict_proba", "score_samples", "transform"]
    return {m: np.asarray(getattr(est, m)(X)) for m in methods if hasattr(est, m)}


def _assert_same(a: Any, b: Any, where: str) -> None:
    """Fitted state equal bitwise (arrays, numbers, containers, nested estimators)."""
    if isinstance(a, np.ndarray) and a.dtype == object:  # e.g. ragged per-round index lists
        assert isinstance(b, np.ndarray) and a.shape == b.shape, where
        for i, (u, v) in enumerate(zip(a.ravel(), b.ravel(), strict=True)):
            _assert_same(u, v, f"{where}[{i}]")
    elif isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        np.testing.assert_array_equal(a, b, err_msg=where)
    elif isinstance(a, dict):
        assert a.keys() == b.keys(), where
        for key in a:
            _assert_same(a[key], b[key], f"{where}[{key!r}]")
    elif isinstance(a, list | tuple):
        assert len(a) == len(b), where
        for i, (u, v) in enumerate(zip(a, b, strict=True)):
            _assert_same(u, v, f"{where}[{i}]")
    elif isinstance(a, BaseEstimator):
        _assert_same(_fitted_state(a), _fitted_state(b), where)
    elif isinstance(a, float) and np.isnan(a):
        assert np.isnan(b), where
    elif callable(a) and not isinstance(a, type):  # a search's scorer: bound to no fitted state
        assert type(a) is type(b), where
    else:
        assert a == b, where


def _fitted_state(est: BaseEstimator) -> dict[str, Any]:
    """The fitted attributes, but the seconds a search measured (never the same twice)."""
    state = {k: v for k, v in vars(est).items() if k.endswith("_") and not k.startswith("_")
             and k != "refit_time_"}
    if "cv_results_" in state:
        state["cv_results_"] = {k: v for k, v in state["cv_results_"].items() if "time" not in k}
    return state


# ----------------------------------------------------------------------------- determinism


@pytest.mark.parametrize(("name", "kind"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_same_seed_gives_the_same_model(name: str, kind: str) -> None:
    # the global RNG differs between the fits: a model that drew from it would differ
    saved = np.random.get_state()  # noqa: NPY002
    try:
        np.random.seed(1)  # noqa: NPY002 - the legacy global RNG is what must not leak in
        one, X_test = _fresh_fit(name, kind)
        np.random.seed(2)  # noqa: NPY002
        two, _ = _fresh_fit(name, kind)
    finally:
        np.random.set_state(saved)  # noqa: NPY002
    state = _fitted_state(one)
    assert state, f"{name} has no fitted attributes"
    _assert_same(state, _fitted_state(two), name)
    for method, out in _outputs(one, X_test).items():
        np.testing.assert_array_equal(getattr(two, method)(X_test), out, err_msg=method)


@pytest.mark.parametrize("name", SEEDED)
def test_another_seed_gives_another_model(name: str) -> None:
    X, y, _ = _data("binary")
    one = _estimator(name).fit(X, y)
    two = _estimator(name).set_params(random_state=1).fit(X, y)
    assert not np.array_equal(one.expansion_vectors_, two.expansion_vectors_)


# ----------------------------------------------------------------------------- persistence


@pytest.mark.parametrize(("name", "kind"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_saved_model_loads_and_predicts_the_same(name: str, kind: str, tmp_path) -> None:
    est, X_test = _fit(name, kind)
    expected = _outputs(est, X_test)
    assert expected
    path = tmp_path / "model.joblib"
    joblib.dump(est, path)
    for loaded in (pickle.loads(pickle.dumps(est)), joblib.load(path), copy.deepcopy(est)):
        assert type(loaded) is type(est)
        assert VERSION_KEY not in vars(loaded)  # the marker lives in the pickle only
        _assert_same(_fitted_state(loaded), _fitted_state(est), name)
        for method, out in expected.items():
            np.testing.assert_array_equal(getattr(loaded, method)(X_test), out, err_msg=method)


def _versioned(name: str) -> BaseEstimator:
    est = _estimator(name)
    if not isinstance(est, VersionedPickleMixin):
        pytest.skip(f"{name} does not record the sparsify version when pickled: add "
                    "sparsify.persistence.VersionedPickleMixin first in its bases")
    return est


def _pickle_as(est: BaseEstimator, version: str, monkeypatch: pytest.MonkeyPatch) -> bytes:
    with monkeypatch.context() as m:
        m.setattr(sparsify, "__version__", version)
        return pickle.dumps(est)


@pytest.mark.parametrize("name", list(public_estimators()))
@pytest.mark.parametrize("shift", ["minor", "major"])
def test_model_from_another_major_minor_is_refused(name: str, shift: str,
                                                   monkeypatch: pytest.MonkeyPatch,
                                                   tmp_path) -> None:
    _versioned(name)
    est = _fit(name, "binary")[0]
    major, minor = (int(p) for p in major_minor(sparsify.__version__))
    other = f"{major}.{minor + 1}.0" if shift == "minor" else f"{major + 1}.{minor}.0"
    data = _pickle_as(est, other, monkeypatch)
    # a search holds fitted estimators, and the first of them to load refuses
    shown = type(est.estimator).__name__ if hasattr(est, "best_estimator_") else name
    message = (rf"This {shown} was saved by sparsify {other} and this is sparsify "
               rf"{sparsify.__version__}; models load only in the same major\.minor version "
               rf"\({major}\.{minor}\.x\)\. Refit it")
    with pytest.raises(IncompatibleVersionError, match=message):
        pickle.loads(data)
    path = tmp_path / "old.joblib"
    path.write_bytes(data)
    with pytest.raises(ValueError, match=message):  # IncompatibleVersionError is a ValueError
        joblib.load(path)


@pytest.mark.parametrize("name", ["SparseSVC", "KernelMatchingReduction"])
def test_model_from_another_patch_release_loads(name: str,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    _versioned(name)
    est, X_test = _fit(name, "binary")
    patch = ".".join([*major_minor(sparsify.__version__), "99"])
    loaded = pickle.loads(_pickle_as(est, patch, monkeypatch))
    np.testing.assert_array_equal(loaded.decision_function(X_test), est.decision_function(X_test))


class _NoVersionPickler(pickle.Pickler):
    """Pickles estimators as an older sparsify did: the state without the version."""

    def reducer_override(self, obj: Any) -> Any:
        if isinstance(obj, VersionedPickleMixin):
            state = {k: v for k, v in obj.__getstate__().items() if k != VERSION_KEY}
            return object.__new__, (type(obj),), state
        return NotImplemented


def test_pickle_without_a_recorded_version_is_refused(tmp_path) -> None:
    est = _fit("SparseSVC", "binary")[0]
    path = tmp_path / "old.pkl"
    with path.open("wb") as fh:
        _NoVersionPickler(fh).dump(est)
    with pytest.raises(IncompatibleVersionError,
                       match="saved by a sparsify version that records none"):
        pickle.loads(path.read_bytes())


# ----------------------------------------------------------------------------- transform

MACHINES = [c for c in CASES if issubclass(public_estimators()[c[1]], KernelMachineMixin)]


def test_every_public_kernel_machine_has_the_feature_map() -> None:
    # everything sparsify exports except the Taylor feature map and the search (whose
    # best_estimator_ is one) predicts with XVs
    machines = {c[1] for c in MACHINES}
    assert set(public_estimators()) - machines == {"TaylorGaussianFeatures", "SparseSearchCV"}


@pytest.mark.parametrize(("name", "kind"), [c[1:] for c in MACHINES],
                         ids=[c[0] for c in MACHINES])
def test_transform_is_the_linear_model_of_decision_function(name: str, kind: str) -> None:
    est, X_test = _fit(name, kind)
    # a transformer's transform is its output; the feature map is kernel_features
    features = (est.kernel_features if isinstance(est, SparseKernelTransformer)
                else est.transform)(X_test)
    assert features.shape == (len(X_test), len(est.expansion_vectors_))
    assert features.dtype == np.float64
    linear = features @ est.expansion_coef_.T + est.intercept_
    # a regressor has no decision_function: its predict is the machine
    scores = (est.predict if is_regressor(est) else est.decision_function)(X_test)
    np.testing.assert_allclose(linear.reshape(scores.shape), scores, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", ["SparseSVC", "SparseOneClassSVM", "KernelMatchingReduction"])
def test_fit_transform_is_fit_then_transform(name: str) -> None:
    X, y, _ = _data("binary")
    est = _fit(name, "binary")[0]
    np.testing.assert_array_equal(_estimator(name).fit_transform(X, y), est.transform(X))


def test_one_vs_rest_transform_is_per_class_blocks() -> None:
    est, X_test = _fit("SparseSVC", "multiclass")
    # a transformer's transform is its output; the feature map is kernel_features
    features = (est.kernel_features if isinstance(est, SparseKernelTransformer)
                else est.transform)(X_test)
    start = 0
    for k, size in enumerate(est.n_expansion_):
        block = slice(start, start + size)
        Z_k = est.expansion_vectors_[block]
        np.testing.assert_allclose(features[:, block], est.kernel_(X_test, Z_k), rtol=1e-14)
        # problem k uses its own block only
        assert np.count_nonzero(np.delete(est.expansion_coef_[k], np.r_[block])) == 0
        start += size
    assert start == features.shape[1]


def test_transform_feeds_a_plain_linear_model() -> None:
    # prediction without sparsify: a scikit-learn linear model holding β and b
    from sklearn.linear_model import LogisticRegression

    est, X_test = _fit("SparseSVC", "binary")
    linear = LogisticRegression()
    linear.classes_ = np.array([0, 1])
    linear.coef_, linear.intercept_ = est.expansion_coef_, est.intercept_
    np.testing.assert_array_equal(linear.predict(est.transform(X_test)), est.predict(X_test))


@pytest.mark.parametrize("name", [c[1] for c in MACHINES if c[2] == "binary"])
def test_transform_before_fit_raises_not_fitted(name: str) -> None:
    with pytest.raises(NotFittedError):
        _estimator(name).transform(_data("binary")[2])
