"""Model files (sparsify.io): data only, every estimator round-trips exactly, and every bad or
damaged file is refused without running code."""

from __future__ import annotations

import ast
import functools
import importlib.util
import io
import json
import os
import pickle
import re
import sys
import warnings
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import cvxpy as cp
import numpy as np
import pytest
from sklearn.base import (
    BaseEstimator,
    clone,
    is_classifier,
    is_outlier_detector,
    is_regressor,
)
from sklearn.datasets import make_blobs, make_moons
from sklearn.exceptions import NotFittedError
from sklearn.svm import SVC

from sparsify import (
    Declaration,
    Formulation,
    ImportVectorMachine,
    KernelMatchingReduction,
    Polynomial,
    ReducedSetSVC,
    ReducedSVC,
    RVMClassifier,
    SemiSupervisedSVC,
    SparseKernelLogisticRegression,
    SparseKernelRegressor,
    SparseKernelRidge,
    SparseKFD,
    SparseOneClassSVM,
    SparseSVC,
    SparseSVR,
)
from sparsify.core.estimator import estimator_for
from sparsify.io import (
    ModelFileError,
    SavedKernelMachine,
    dumps_model,
    load_model,
    loads_model,
    save_model,
)
from sparsify.io.kernel_spec import MAX_TAYLOR_ORDER
from sparsify.io.model_file import (
    CHECKSUM_MEMBER,
    FORMAT_VERSION,
    HEADER_MEMBER,
    MAX_FILE_BYTES,
    checksum,
    read_model_bytes,
)
from sparsify.kernels import RBF
from tests.conftest import REPO

DOC = REPO / "docs" / "model-format.md"


def _svdd_class() -> type:
    """The example plugin's SparseSVDD, loaded from its source file (it is not installed)."""
    path = REPO / "examples" / "sparsify-svdd" / "sparsify_svdd" / "plugin.py"
    spec = importlib.util.spec_from_file_location("_sparsify_svdd_plugin_under_test", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.SparseSVDD  # type: ignore[no-any-return]


def _moons() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    X, y = make_moons(n_samples=80, noise=0.15, random_state=0)
    return X[:55], y[:55], X[55:] + 0.01  # fresh points, none of them a training point


def _blobs() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    X, y = make_blobs(n_samples=75, centers=3, cluster_std=1.0, random_state=2)
    return X[:55], y[:55], X[55:] + 0.01


def _sine() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    X = rng.uniform(-3, 3, size=(60, 1))
    return X[:45], np.sin(X[:45, 0]) + 0.1 * rng.normal(size=45), X[45:] + 0.01


def _saddle() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(1)
    X = rng.uniform(-2, 2, size=(60, 2))
    return X[:45], X[:45, 0] * X[:45, 1], X[45:] + 0.01


class DeclaredRidge(Formulation):
    """min ‖y − f − b‖² + α‖w‖², declared in cvxpy with the task "regressor" and no estimator."""

    name = "model_file_ridge"
    task = "regressor"

    def __init__(self, alpha: float = 1.0) -> None:
        self.alpha = alpha

    def declare(self, out):  # type: ignore[no-untyped-def]
        b = cp.Variable()
        return Declaration(cp.Minimize(cp.sum_squares(out.y - out.f - b)
                                       + self.alpha * out.norm_w2), [], b)


def _declared_regressor(**params: Any) -> BaseEstimator:
    """The estimator the fit driver makes from DeclaredRidge's task (no class written)."""
    made, _ = estimator_for(DeclaredRidge)
    assert issubclass(made, SparseKernelRegressor) and made is not SparseKernelRidge
    return made(**params)  # type: ignore[no-any-return]


def _semi(y: np.ndarray) -> np.ndarray:
    return np.where(np.arange(len(y)) < 12, y, -1)  # 12 labelled points, the rest unlabelled


# id -> (estimator factory, data, y transform); small, fast settings
CASES: dict[str, tuple[Callable[[], BaseEstimator], Callable[[], Any], Callable[[Any], Any]]] = {
    "SparseSVC": (lambda: SparseSVC(4, C=10.0, gamma=2.0, max_iter=10, random_state=0),
                  _moons, lambda y: y),
    "SparseSVC-one-vs-rest": (lambda: SparseSVC(4, gamma="scale", max_iter=5, random_state=0),
                              _blobs, lambda y: y),
    "SparseSVC-poly": (lambda: SparseSVC(4, kernel="poly", degree=2, coef0=1.0, gamma=0.5,
                                         max_iter=5, random_state=0), _moons, lambda y: y),
    "SparseSVC-linear": (lambda: SparseSVC(3, kernel="linear", max_iter=5, random_state=0),
                         _moons, lambda y: y),
    "SparseSVC-rbf+linear": (lambda: SparseSVC(4, kernel="rbf+linear", gamma=2.0, max_iter=5,
                                               random_state=0), _moons, lambda y: y),
    "SparseSVC-taylor_rbf": (lambda: SparseSVC(4, kernel="taylor_rbf", gamma=0.5, max_iter=5,
                                               random_state=0), _moons, lambda y: y),
    "SparseKFD": (lambda: SparseKFD(4, gamma=2.0, max_iter=5, init="random", random_state=0),
                  _moons, lambda y: y),
    "SparseKFD-one-vs-rest": (lambda: SparseKFD(3, gamma="scale", max_iter=3, random_state=0),
                              _blobs, lambda y: y),
    "SparseOneClassSVM": (lambda: SparseOneClassSVM(4, gamma=2.0, max_iter=10, random_state=0),
                          _moons, lambda y: None),
    "SparseKernelLogisticRegression": (
        lambda: SparseKernelLogisticRegression(4, gamma=2.0, max_iter=10, random_state=0),
        _moons, lambda y: y),
    "SparseKernelLogisticRegression-softmax": (
        lambda: SparseKernelLogisticRegression(4, gamma="scale", max_iter=5, random_state=0),
        _blobs, lambda y: y),
    "SemiSupervisedSVC": (lambda: SemiSupervisedSVC(n_expansion=4, gamma=2.0, max_iter=5,
                                                    random_state=0), _moons, _semi),
    "SemiSupervisedSVC-manifold-dense": (
        lambda: SemiSupervisedSVC(gamma=2.0, manifold=True, random_state=0), _moons, _semi),
    "SemiSupervisedSVC-mkl-manifold-sparse": (
        lambda: SemiSupervisedSVC(n_expansion=4, gamma=2.0, kernels=["rbf", "manifold"],
                                  mkl_max_iter=3, max_iter=5, random_state=0), _moons, _semi),
    "ReducedSVC": (lambda: ReducedSVC(5, C=10.0, gamma=2.0, random_state=0), _moons,
                   lambda y: y),
    "ReducedSetSVC": (lambda: ReducedSetSVC(4, C=10.0, gamma=2.0, n_starts=3, random_state=0),
                      _moons, lambda y: y),
    "RVMClassifier": (lambda: RVMClassifier(gamma=2.0), _moons, lambda y: y),
    "RVMClassifier-multiclass": (lambda: RVMClassifier(gamma=0.5), _blobs, lambda y: y),
    "ImportVectorMachine": (lambda: ImportVectorMachine(gamma=2.0, max_import_points=5,
                                                        n_candidates=20, random_state=0),
                            _moons, lambda y: y),
    "ImportVectorMachine-multiclass": (
        lambda: ImportVectorMachine(gamma=0.5, max_import_points=5, n_candidates=20,
                                    random_state=0), _blobs, lambda y: y),
    "KernelMatchingReduction": (lambda: KernelMatchingReduction(C=10.0, n_delete=0.2,
                                                                random_state=0),
                                _moons, lambda y: y),
    "SparseKernelRidge": (lambda: SparseKernelRidge(5, alpha=0.1, gamma=0.5, random_state=0),
                          _sine, lambda y: y),
    "SparseSVR": (lambda: SparseSVR(5, C=10.0, epsilon=0.05, gamma=0.5, max_iter=20,
                                    random_state=0), _sine, lambda y: y),
    "SparseKernelRidge-2d-poly": (lambda: SparseKernelRidge(6, alpha=0.1, kernel="poly",
                                                            degree=2, coef0=1.0, gamma=0.5,
                                                            max_iter=10, random_state=0),
                                  _saddle, lambda y: y),
    "declared-regressor": (lambda: _declared_regressor(n_expansion=4, alpha=0.1, gamma=0.5,
                                                       max_iter=5, random_state=0),
                           _sine, lambda y: y),
    "SparseSVDD": (lambda: _svdd_class()(n_expansion=4, nu=0.1, gamma=1.0, max_iter=10,
                                         random_state=0), _moons, lambda y: None),
    "SparseSVDD-rbf+rbf": (lambda: _svdd_class()(n_expansion=4, nu=0.1, kernel="rbf+rbf",
                                                 gamma=1.0, max_iter=5, random_state=0),
                           _moons, lambda y: None),
}


@functools.cache
def _fit(case: str) -> tuple[BaseEstimator, np.ndarray, np.ndarray]:
    """The fitted estimator of a case, its training inputs and fresh test points (read only)."""
    factory, data, target = CASES[case]
    X, y, X_test = data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # convergence warnings of the short fits
        est = factory().fit(X, target(y))
    return est, X, X_test


def _assert_same_predictions(est: BaseEstimator, machine: Any, X: np.ndarray) -> None:
    """Decision values to 1e-12 relative, the same labels, the same probabilities and scores;
    a regressor's real predictions to 1e-12 relative."""
    if is_regressor(est):
        expected, got = est.predict(X), machine.predict(X)
        assert got.shape == expected.shape == (len(X),) and got.dtype == np.float64
        np.testing.assert_allclose(got, expected, rtol=1e-12,
                                   atol=1e-12 * float(np.abs(expected).max()))
        assert not hasattr(machine, "decision_function") and not hasattr(est, "decision_function")
        assert not hasattr(machine, "predict_proba") and not hasattr(machine, "score_samples")
        return
    expected = est.decision_function(X)
    got = machine.decision_function(X)
    assert got.shape == expected.shape
    scale = float(np.abs(expected).max())
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12 * scale)
    labels, want = machine.predict(X), est.predict(X)
    np.testing.assert_array_equal(labels, want)
    assert labels.dtype == want.dtype
    assert hasattr(machine, "predict_proba") == hasattr(est, "predict_proba")
    if hasattr(est, "predict_proba"):
        # 1 ulp: RVMClassifier computes σ(−f) where the format's 'logistic' computes 1 − σ(f)
        np.testing.assert_allclose(machine.predict_proba(X), est.predict_proba(X), rtol=1e-12,
                                   atol=1e-15)
    if hasattr(est, "score_samples"):
        np.testing.assert_allclose(machine.score_samples(X), est.score_samples(X), rtol=1e-12,
                                   atol=1e-12 * scale)


# ----------------------------------------------------------------------------- round trips


@pytest.mark.parametrize("case", list(CASES))
def test_round_trip_predicts_what_the_estimator_predicts(case: str) -> None:
    est, X, X_test = _fit(case)
    machine = loads_model(dumps_model(est), source=f"{case}.spm")
    assert isinstance(machine, SavedKernelMachine)
    assert machine.estimator_class_ == type(est).__name__
    assert machine.n_features_in_ == est.n_features_in_
    np.testing.assert_array_equal(machine.expansion_vectors_, est.expansion_vectors_)
    np.testing.assert_array_equal(machine.expansion_coef_, est.expansion_coef_)
    np.testing.assert_array_equal(machine.intercept_, est.intercept_)
    if hasattr(est, "classes_"):
        np.testing.assert_array_equal(machine.classes_, est.classes_)
        assert machine.classes_.dtype == est.classes_.dtype
        assert is_classifier(machine)
    elif is_regressor(est):
        assert is_regressor(machine) and not is_classifier(machine)
        assert not hasattr(machine, "classes_") and machine.decision_rule_ == "identity"
        assert machine.format_version_ == 2
    else:
        assert is_outlier_detector(machine) and not hasattr(machine, "classes_")
    _assert_same_predictions(est, machine, X_test)
    # the training points too: a manifold kernel takes a shortcut on its own graph points
    _assert_same_predictions(est, machine, X)
    np.testing.assert_allclose(machine.transform(X_test), est.transform(X_test), rtol=1e-12,
                               atol=1e-14)


@pytest.mark.parametrize(("case", "formulation"), [("SparseKernelRidge", "kernel_ridge"),
                                                   ("SparseSVR", "svr"),
                                                   ("declared-regressor", "model_file_ridge")])
def test_a_regressor_file_holds_the_rule_identity_and_predicts_real_values(
        case: str, formulation: str, tmp_path: Path) -> None:
    est, X, X_test = _fit(case)
    y = _sine()[1]
    path = save_model(est, tmp_path / "regressor.spm", metadata={"test_rmse": 0.125})
    header = json.loads(_members(path.read_bytes())[HEADER_MEMBER])
    assert (header["decision_rule"], header["classes"], header["probability"], header["offset"]) \
        == ("identity", None, None, None)
    assert header["format_version"] == 2 and header["formulation"] == formulation
    assert header["estimator"]["class"] == type(est).__name__
    machine = load_model(path)
    assert machine.metadata == {"test_rmse": 0.125} and machine.formulation_ == formulation
    predicted = machine.predict(X_test)
    np.testing.assert_array_equal(predicted, est.predict(X_test))  # the same operations
    assert len(np.unique(predicted)) == len(X_test)  # real values, not labels
    assert machine.score(X, y) == pytest.approx(est.score(X, y), rel=1e-12)
    assert machine.score(X, y) > 0.9
    with pytest.raises(TypeError, match="cannot be fitted"):
        machine.fit(X, y)


def test_a_classifier_file_stays_format_version_1() -> None:
    """The lowest version that holds the file: older readers keep reading classifiers."""
    for case in ("SparseSVC", "SparseOneClassSVM", "SparseKernelLogisticRegression-softmax"):
        header = json.loads(_members(dumps_model(_fit(case)[0]))[HEADER_MEMBER])
        assert header["format_version"] == 1, case
    assert FORMAT_VERSION == 3


def test_a_regressor_subclass_that_predicts_otherwise_is_refused() -> None:
    X, y, X_test = _sine()

    class Shifted(SparseKernelRidge):
        def predict(self, X: Any) -> np.ndarray:
            return super().predict(X) + 1.0

    with pytest.raises(ValueError, match=r"Shifted cannot be saved as a model file: it overrides "
                                         "predict.*pickle"):
        dumps_model(Shifted(3, gamma=0.5, max_iter=2, random_state=0).fit(X, y))

    class Renamed(SparseKernelRidge):
        """Predicts as SparseKernelRidge does: it declares the rule through its task."""

    est = Renamed(3, gamma=0.5, max_iter=2, random_state=0).fit(X, y)
    machine = loads_model(dumps_model(est), "renamed.spm")
    assert machine.decision_rule_ == "identity" and machine.estimator_class_ == "Renamed"
    np.testing.assert_array_equal(machine.predict(X_test), est.predict(X_test))


def test_the_kernel_is_rebuilt_as_a_sparsify_kernel_or_none_when_bound_to_z() -> None:
    svc = loads_model(dumps_model(_fit("SparseSVC-rbf+linear")[0]), "a.spm")
    assert svc.kernel_ == _fit("SparseSVC-rbf+linear")[0].kernel_
    manifold = loads_model(dumps_model(_fit("SemiSupervisedSVC-manifold-dense")[0]), "b.spm")
    assert manifold.kernel_ is None and manifold.kernel_spec_["name"] == "manifold"
    kmra = loads_model(dumps_model(_fit("KernelMatchingReduction")[0]), "c.spm")
    assert kmra.kernel_ is None and kmra.kernel_spec_["name"] == "gaussian_widths"


def test_save_and_load_a_file_with_metadata(tmp_path: Path) -> None:
    est, _, X_test = _fit("SparseSVC")
    meta = {"formulation": "svm", "kernel": "rbf", "n_features": 2, "classes": [0, 1],
            "data": "moons.csv", "test_error": np.float64(0.0625), "created":
            "2025-01-01T12:00:00+00:00", "nested": {"a": [1, None, True]}}
    path = save_model(est, tmp_path / "model.spm", metadata=meta)
    assert path == tmp_path / "model.spm"
    assert [p.name for p in tmp_path.iterdir()] == ["model.spm"]  # no temporary file left
    machine = load_model(path)
    assert machine.metadata == {**meta, "test_error": 0.0625}
    assert machine.formulation_ == "svm" and machine.format_version_ == 1
    assert machine.estimator_params_["C"] == 10.0 and "callback" in machine.estimator_params_
    _assert_same_predictions(est, machine, X_test)


def test_the_same_model_gives_the_same_bytes() -> None:
    est = _fit("SparseSVC")[0]
    assert dumps_model(est, {"a": 1}) == dumps_model(est, {"a": 1})
    assert dumps_model(est, {"a": 1}) != dumps_model(est, {"a": 2})


@pytest.mark.parametrize("labels", [
    np.array(["no", "yes"]),                                    # fixed-width strings
    np.array(["no", "yes"], dtype=object),                      # Python strings (pandas)
    np.array([-1.0, 2.0]),                                      # floats (integral)
    np.array([False, True]),                                    # bools
    np.array([3, 7], dtype=np.uint8),                           # small unsigned ints
], ids=["str", "object", "float", "bool", "uint8"])
def test_class_labels_keep_their_type(labels: np.ndarray) -> None:
    X, y, X_test = _moons()
    est = SparseSVC(3, gamma=2.0, max_iter=3, random_state=0).fit(X, labels[y])
    machine = loads_model(dumps_model(est), "labels.spm")
    assert machine.classes_.dtype == est.classes_.dtype
    assert machine.classes_.tolist() == est.classes_.tolist()
    predicted = machine.predict(X_test)
    np.testing.assert_array_equal(predicted, est.predict(X_test))
    assert predicted.dtype == est.predict(X_test).dtype


def test_feature_names_are_kept() -> None:
    pd = pytest.importorskip("pandas")
    X, y, X_test = _moons()
    frame = pd.DataFrame(X, columns=["width", "height"])
    est = SparseSVC(3, gamma=2.0, max_iter=3, random_state=0).fit(frame, y)
    machine = loads_model(dumps_model(est), "named.spm")
    assert machine.feature_names_in_.tolist() == ["width", "height"]
    test = pd.DataFrame(X_test, columns=["width", "height"])
    np.testing.assert_array_equal(machine.predict(test), est.predict(test))
    with pytest.warns(UserWarning, match="feature names"):
        machine.predict(X_test)  # like the estimator: fitted with names, given none


def test_platt_probabilities_follow_the_documented_formula() -> None:
    """P(positive) = 1 / (1 + exp(A f + B)), as in scikit-learn's SVC; several classes are
    normalised. The Platt parameters are set by hand here: the formula is the contract."""
    for case, a, b in [("SparseSVC", [-2.0], [0.3]),
                       ("SparseSVC-one-vs-rest", [-1.0, -2.0, -0.5], [0.1, -0.2, 0.0])]:
        est, _, X_test = _fit(case)
        est = pickle.loads(pickle.dumps(est))  # a copy: the cached fit stays untouched
        est.probA_, est.probB_ = np.array(a), np.array(b)
        machine = loads_model(dumps_model(est), "platt.spm")
        assert machine.probability_ == "platt"
        f = np.atleast_2d(est.decision_function(X_test).T).T
        s = 1.0 / (1.0 + np.exp(np.array(a) * f + np.array(b)))
        expected = np.column_stack([1 - s[:, 0], s[:, 0]]) if len(a) == 1 else (
            s / s.sum(1, keepdims=True))
        np.testing.assert_allclose(machine.predict_proba(X_test), expected, rtol=1e-12)
        if hasattr(est, "predict_proba"):  # SparseSVC's own Platt scaling, once it has one
            np.testing.assert_allclose(machine.predict_proba(X_test), est.predict_proba(X_test),
                                       rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("data", [_moons, _blobs], ids=["binary", "one-vs-rest"])
def test_sparse_svc_platt_scaling_round_trips(data: Callable[[], Any]) -> None:
    if "probability" not in SparseSVC().get_params():
        pytest.skip("SparseSVC has no 'probability' parameter (Platt scaling) in this version")
    X, y, X_test = data()
    est = SparseSVC(4, gamma="scale", max_iter=5, probability=True, random_state=0).fit(X, y)
    machine = loads_model(dumps_model(est), "platt.spm")
    assert machine.probability_ == "platt"
    _assert_same_predictions(est, machine, X_test)
    np.testing.assert_array_equal(machine.predict_proba(X_test), est.predict_proba(X_test))
    # every sigmoid underflows to 0 (exp(800) overflows): the log-domain normalisation
    est = pickle.loads(pickle.dumps(est))
    est.probA_ = np.zeros_like(est.probA_)
    est.probB_ = 800.0 + np.arange(len(est.probB_), dtype=float)
    machine = loads_model(dumps_model(est), "platt-underflow.spm")
    proba = machine.predict_proba(X_test)
    np.testing.assert_array_equal(proba, est.predict_proba(X_test))
    assert np.isfinite(proba).all() and np.allclose(proba.sum(axis=1), 1.0)


def test_a_loaded_machine_cannot_be_refitted() -> None:
    machine = loads_model(dumps_model(_fit("SparseSVC")[0]), "m.spm")
    with pytest.raises(TypeError, match="cannot be fitted; fit SparseSVC"):
        machine.fit(*_moons()[:2])


# ----------------------------------------------------------------------------- what cannot be saved


def test_an_unfitted_estimator_is_refused() -> None:
    with pytest.raises(NotFittedError):
        dumps_model(SparseSVC())


def test_an_estimator_the_format_cannot_describe_is_refused() -> None:
    X, y, _ = _moons()
    with pytest.raises(ValueError, match=r"sklearn\.svm\._classes\.SVC cannot be saved as a "
                                         r"model file.*SparseSVC.*pickle"):
        dumps_model(SVC().fit(X, y))

    class MyReducedSVC(ReducedSVC):  # a baseline's table holds exactly its classes
        pass

    sub = MyReducedSVC(3, gamma=2.0, random_state=0).fit(X, y)
    with pytest.raises(ValueError, match=r"MyReducedSVC cannot be saved.*model_file_rule\(\)"):
        dumps_model(sub)

    class MySVC(SparseSVC):
        """Predicts as SparseSVC does: SparseSVC's model_file_rule describes it."""

    sub = MySVC(3, gamma=2.0, max_iter=2, random_state=0).fit(X, y)
    machine = loads_model(dumps_model(sub), "mysvc.spm")
    assert machine.estimator_class_ == "MySVC" and machine.decision_rule_ == "binary_sign"
    assert np.array_equal(machine.decision_function(X), sub.decision_function(X))


def test_a_kernel_the_format_cannot_describe_is_refused_at_save_time() -> None:
    class Laplacian(RBF):
        """A kernel the format does not know (a subclass of a known one, even)."""

        def __call__(self, A: np.ndarray, B: np.ndarray) -> np.ndarray:
            return np.exp(-self.gamma * np.abs(A[:, None, :] - B[None, :, :]).sum(-1))

    X, y, _ = _moons()
    est = SparseSVC(3, kernel=Laplacian(1.0), solver="clarabel", max_iter=0,
                    random_state=0).fit(X, y)
    with pytest.raises(ValueError, match=r"SparseSVC cannot be saved as a model file: the kernel "
                                         r"Laplacian .* cannot be described by data\. A model "
                                         r"file can hold the kernels 'rbf', 'poly'"):
        dumps_model(est)


def test_svdd_with_a_kernel_of_varying_diagonal_is_refused() -> None:
    rng = np.random.default_rng(0)
    angles = rng.uniform(0, 2 * np.pi, 40)
    X = np.column_stack([np.cos(angles), np.sin(angles)])  # on the unit circle: ⟨x, x⟩ = 1
    est = _svdd_class()(n_expansion=3, nu=0.2, kernel=Polynomial(gamma=1.0, degree=2, coef0=1.0),
                        max_iter=2, random_state=0).fit(X)
    with pytest.raises(ValueError, match=r"SparseSVDD with the kernel Polynomial.*cannot be "
                                         r"saved as a model file"):
        dumps_model(est)


@pytest.mark.parametrize(("metadata", "message"), [
    ({"x": np.zeros(2)}, r"metadata\['x'\] is a ndarray"),
    ({"x": float("inf")}, r"metadata\['x'\] is inf; JSON has no NaN"),
    ({1: "a"}, "has the key 1; JSON keys are strings"),
    (["a"], "must be a dict of JSON values or None. Got list instead"),
])
def test_metadata_that_is_not_json_is_refused(metadata: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        dumps_model(_fit("SparseSVC")[0], metadata)


def test_a_model_too_large_for_a_model_file_is_refused_before_writing(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import sparsify.io.model_file as model_file

    est = _fit("SemiSupervisedSVC-manifold-dense")[0]
    # the limit lowered so the small test model exceeds it: the check uses the real sizes
    monkeypatch.setattr(model_file, "MAX_ARRAY_BYTES", 1000)
    with pytest.raises(ValueError, match=r"would make a model file of 0\.0 GiB of arrays \(the "
                                         r"largest, 'kernel\.graph_coef', has shape \(55, "):
        dumps_model(est)


def test_save_model_is_atomic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    est = _fit("SparseSVC")[0]
    path = tmp_path / "model.spm"
    path.write_bytes(b"the previous model")
    with pytest.raises(ValueError):  # refused before the disk is touched
        save_model(est, path, metadata={"x": object()})
    assert path.read_bytes() == b"the previous model"

    def failing_replace(src: Any, dst: Any) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", failing_replace)
    with pytest.raises(OSError, match=r"Cannot write the model file '.*model\.spm': No space "
                                      "left on device; nothing was written"):
        save_model(est, path)
    assert path.read_bytes() == b"the previous model"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.spm"]  # no temporary file


def test_save_model_names_the_file_it_cannot_write(tmp_path: Path) -> None:
    est = _fit("SparseSVC")[0]
    with pytest.raises(FileNotFoundError, match=r"'.*missing.model\.spm'.*the directory "
                                                r"'.*missing' does not exist"):
        save_model(est, tmp_path / "missing" / "model.spm")
    with pytest.raises(IsADirectoryError, match="it is a directory"):
        save_model(est, tmp_path)


# ----------------------------------------------------------------------------- code never runs


class _Marker:
    """Unpickling it creates a file: proof that code ran."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self) -> tuple[Any, ...]:
        return (Path.touch, (self.path,))


@pytest.mark.parametrize("suffix", [".pkl", ".npz", ".spm"])
def test_a_malicious_pickle_is_refused_without_running(tmp_path: Path, suffix: str) -> None:
    marker = tmp_path / "code-ran"
    pickle.loads(pickle.dumps(_Marker(marker)))  # the payload works ...
    assert marker.exists()
    marker.unlink()
    evil = tmp_path / f"evil{suffix}"
    evil.write_bytes(pickle.dumps({"format": "sparsify-model", "estimator": _Marker(marker)}))
    with pytest.raises(ModelFileError, match=rf"'.*evil\{suffix}': it is a pickle .*never "
                                             "unpickles"):
        load_model(evil)
    assert not marker.exists()  # ... but was never run


def test_an_npz_with_a_pickled_object_array_is_refused_without_running(tmp_path: Path) -> None:
    marker = tmp_path / "code-ran"
    evil = tmp_path / "evil.npz"
    np.savez(evil, estimator=np.array([_Marker(marker)], dtype=object))
    with pytest.raises(ModelFileError, match=r"'.*evil\.npz': it is a zip archive without "
                                             r"header\.json"):
        load_model(evil)
    assert not marker.exists()


def _members(data: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        return {info.filename: zf.read(info) for info in zf.infolist()}


def _forge(members: dict[str, bytes], *, header: dict[str, Any] | None = None,
           fix_checksum: bool = True, compression: int = zipfile.ZIP_STORED) -> bytes:
    """A zip of ``members`` (the header replaced), with a correct checksum unless told not to:
    so the reader's checks after the checksum are reached."""
    members = dict(members)
    if header is not None:
        members[HEADER_MEMBER] = json.dumps(header).encode()
    if fix_checksum:
        members[CHECKSUM_MEMBER] = checksum(members).encode()
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return buf.getvalue()


def _valid() -> tuple[dict[str, bytes], dict[str, Any]]:
    members = _members(dumps_model(_fit("SparseSVC")[0]))
    return members, json.loads(members[HEADER_MEMBER])


def _npy(array: np.ndarray, *, fortran: bool = False) -> bytes:
    buf = io.BytesIO()
    np.lib.format.write_array(buf, np.asfortranarray(array) if fortran else array,
                              allow_pickle=True)
    return buf.getvalue()


def test_an_object_array_member_is_refused_without_running(tmp_path: Path) -> None:
    marker = tmp_path / "code-ran"
    members, _ = _valid()
    members["intercept.npy"] = _npy(np.array([_Marker(marker)], dtype=object))
    with pytest.raises(ModelFileError, match="array 'intercept' has dtype object; model files "
                                             "hold float64 arrays only"):
        loads_model(_forge(members), "forged.spm")
    assert not marker.exists()


def test_names_in_the_file_are_never_imported() -> None:
    members, header = _valid()
    header["estimator"].update({"class": "system", "module": "_sparsify_never_imported"})
    machine = loads_model(_forge(members, header=header), "renamed.spm")
    assert machine.estimator_class_ == "system"
    assert "_sparsify_never_imported" not in sys.modules


# ----------------------------------------------------------------------------- rejections


def _header_edit(edit: Callable[[dict[str, Any]], None]) -> bytes:
    members, header = _valid()
    edit(header)
    return _forge(members, header=header)


def _array_edit(name: str, array: np.ndarray, *, fortran: bool = False,
                listed: list[int] | None = None) -> bytes:
    members, header = _valid()
    members[f"{name}.npy"] = _npy(array, fortran=fortran)
    if listed is not None:
        next(e for e in header["arrays"] if e["name"] == name)["shape"] = listed
    return _forge(members, header=header)


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def edit(header: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node = header
        for key in parents:
            node = node[key]
        node[last] = value
    return edit


def _zip_without_checksum() -> bytes:
    members, _ = _valid()
    del members[CHECKSUM_MEMBER]
    return _forge(members, fix_checksum=False)


def _with_extra_member() -> bytes:
    members, _ = _valid()
    members["notes.txt"] = b"hello"
    return _forge(members)


def _duplicate_member() -> bytes:
    members, _ = _valid()
    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns about the duplicate name
        with zipfile.ZipFile(buf, "w") as zf:
            for name, data in [*members.items(), ("intercept.npy", members["intercept.npy"])]:
                zf.writestr(name, data)
    return buf.getvalue()


def _flipped_array_byte() -> bytes:
    members, _ = _valid()
    raw = bytearray(members["expansion_coef.npy"])
    raw[-1] ^= 0x01  # a slightly different β: the zip's CRC is recomputed, the checksum not
    members["expansion_coef.npy"] = bytes(raw)
    return _forge(members, fix_checksum=False)


def _nan_in_header() -> bytes:
    members, header = _valid()
    members[HEADER_MEMBER] = json.dumps(header).replace('"gamma": 2.0', '"gamma": NaN').encode()
    return _forge(members)


def _garbled_npy_header() -> bytes:
    members, _ = _valid()
    header = b"{'descr': '<f8', 'fortran_order': False, 'shape': (1,\x84 }"
    header += b" " * (63 - len(header) % 64) + b"\n"  # padded as numpy pads it
    members["intercept.npy"] = (b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little")
                                + header + np.zeros(1).tobytes())
    return _forge(members)


def _z() -> np.ndarray:
    return np.asarray(_fit("SparseSVC")[0].expansion_vectors_)


REJECTIONS: dict[str, tuple[Callable[[], bytes], str]] = {
    "empty file": (lambda: b"", "it is empty, not a sparsify model file"),
    "CSV text": (lambda: b"x1,x2,y\n1,2,0\n", "it is not a zip archive, not a sparsify model"),
    "zip without header": (lambda: _forge({"a.npy": _npy(np.zeros(2))}, fix_checksum=False),
                           "zip archive without header.json"),
    "other format marker": (lambda: _header_edit(_set("format", "other-model")),
                            "has the format marker 'other-model', not 'sparsify-model'"),
    "newer format version": (lambda: _header_edit(_set("format_version", FORMAT_VERSION + 1)),
                             f"model format version {FORMAT_VERSION + 1}, and this sparsify .* "
                             f"reads versions up to {FORMAT_VERSION}. Upgrade sparsify"),
    "format version 0": (lambda: _header_edit(_set("format_version", 0)),
                         f"format_version is 0; this sparsify reads the versions 1 to "
                         f"{FORMAT_VERSION}"),
    "regressor rule in a version 1 file": (lambda: _ridge_edit(_set("format_version", 1)),
                                           "the decision rule 'identity' needs format_version 2 "
                                           "or later; the file has 1"),
    "classes for a regressor": (lambda: _ridge_edit(_set("classes", {"dtype": "<i8",
                                                                     "values": [0, 1]})),
                                "an 'identity' model has one output and classes null"),
    "regressor rule on a classifier's file": (
        lambda: _header_edit(lambda h: h.update(decision_rule="identity", format_version=2)),
        "an 'identity' model has one output and classes null"),
    "probability for a regressor": (lambda: _ridge_edit(_set("probability", "logistic")),
                                    "'identity' cannot come with the probability method "
                                    "'logistic'"),
    "format version as a string": (lambda: _header_edit(_set("format_version", "1")),
                                   "format_version is '1'"),
    "checksum mismatch": (_flipped_array_byte,
                          "it is corrupted: its SHA-256 checksum does not match its contents.*"
                          "Save the model again"),
    "no checksum member": (_zip_without_checksum, "it has no checksum.sha256 member"),
    "compressed member": (lambda: _forge(_valid()[0], compression=zipfile.ZIP_DEFLATED),
                          "is compressed; model files store their members uncompressed"),
    "duplicate member": (_duplicate_member, "lists a member twice"),
    "unlisted member": (_with_extra_member, "its members must be exactly"),
    "unknown header field": (lambda: _header_edit(_set("color", "red")),
                             r"must have exactly the keys .* unknown \['color'\]"),
    "missing header field": (lambda: _header_edit(lambda h: h.pop("kernel")),
                             r"missing \['kernel'\]"),
    "NaN in the header": (_nan_in_header, "header.json is not valid UTF-8 JSON .*NaN"),
    "header not an object": (lambda: _forge(_valid()[0] | {HEADER_MEMBER: b"[1, 2]"}),
                             "header.json is not a JSON object"),
    "unknown kernel": (lambda: _header_edit(_set("kernel", {"name": "laplacian", "gamma": 1.0})),
                       "kernel name 'laplacian'; this sparsify reads 'rbf'"),
    "negative gamma": (lambda: _header_edit(_set("kernel.gamma", -1.0)),
                       "kernel.gamma must be > 0; got -1.0"),
    "unknown decision rule": (lambda: _header_edit(_set("decision_rule", "median")),
                              "decision_rule is 'median'"),
    "probability the rule cannot have": (lambda: _header_edit(_set("probability", "softmax")),
                                         "'binary_sign' cannot come with the probability "
                                         "method 'softmax'"),
    "array dtype float32": (lambda: _array_edit("intercept", np.zeros(1, dtype=np.float32)),
                            "array 'intercept' has dtype float32"),
    "array dtype int64": (lambda: _array_edit("intercept", np.zeros(1, dtype=np.int64)),
                          "array 'intercept' has dtype int64"),
    "listed dtype not float64": (lambda: _header_edit(lambda h: h["arrays"][0].update(
        dtype="|O")), "has dtype '|O'; model files hold float64"),
    "array shape unlike the listing": (lambda: _array_edit("intercept", np.zeros(2)),
                                       r"array 'intercept' has shape \(2,\) but header.json "
                                       r"lists \(1,\)"),
    "garbled .npy header": (_garbled_npy_header, "member intercept.npy is not a valid .npy "
                                                 "array"),
    "Fortran-order array": (lambda: _array_edit("expansion_vectors", _z(), fortran=True),
                            "is in Fortran order"),
    "coef shape unlike Z": (lambda: _array_edit("expansion_coef", np.zeros((1, 5)),
                                                listed=[1, 5]),
                            r"expansion_coef has shape \(1, 5\); expected \(n_outputs, Nz=4\)"),
    "intercept shape unlike coef": (lambda: _array_edit("intercept", np.zeros(2), listed=[2]),
                                    r"intercept has shape \(2,\); expected \(n_outputs=1,\)"),
    "Z unlike n_features_in": (lambda: _header_edit(_set("n_features_in", 3)),
                               r"expansion_vectors has shape \(4, 2\); expected \(Nz, "
                               "n_features_in=3\\)"),
    "3 classes for a binary rule": (lambda: _header_edit(_set("classes.values", [0, 1, 2])),
                                    "the rule 'binary_sign' needs 2 classes and 1 output; "
                                    r"the file has 3 classes and 1 output\(s\)"),
    "classes unlike the outputs": (lambda: _header_edit(_set("decision_rule", "ovr_argmax")),
                                   "the rule 'ovr_argmax' needs one output per class"),
    "classes for an outlier rule": (lambda: _header_edit(_set("decision_rule", "outlier_sign")),
                                    "an 'outlier_sign' model has one output and classes null"),
    "label out of its dtype": (lambda: _header_edit(_set("classes", {"dtype": "|i1",
                                                                     "values": [0, 300]})),
                               r"classes.values do not fit the dtype '\|i1'"),
    "label of another type": (lambda: _header_edit(_set("classes.values", [0, "1"])),
                              "holds a value that is not of the dtype '<i8'"),
    "duplicate label": (lambda: _header_edit(_set("classes.values", [1, 1])),
                        "holds a label twice"),
    "odd class dtype": (lambda: _header_edit(_set("classes.dtype", "(2,)i4")),
                        r"classes has the dtype '\(2,\)i4'"),
    "NaN in Z": (lambda: _array_edit("expansion_vectors", np.full((4, 2), np.nan)),
                 "array 'expansion_vectors' holds NaN or infinite values"),
    "infinity in b": (lambda: _array_edit("intercept", np.array([np.inf])),
                      "array 'intercept' holds NaN or infinite values"),
    "array name with a path": (lambda: _header_edit(lambda h: h["arrays"][0].update(
        name="../x")), r"the array name '\.\./x' is not allowed"),
    "truncated file": (lambda: dumps_model(_fit("SparseSVC")[0])[:-40],
                       "its zip archive is damaged"),
    "decision rule of the wrong type": (lambda: _header_edit(_set("decision_rule", ["x"])),
                                        r"decision_rule is \['x'\]"),
    "kernel array named like Z": (lambda: _kmra_edit(lambda h: h["kernel"].update(
        widths="expansion_vectors")), "must be distinct and start with 'kernel.'"),
    "Gaussian width zero": (lambda: _kmra_edit(None, widths=0.0),
                            "the Gaussian widths 'kernel.widths' must be > 0"),
}


def _ridge_edit(edit: Callable[[dict[str, Any]], None]) -> bytes:
    members = _members(dumps_model(_fit("SparseKernelRidge")[0]))
    header = json.loads(members[HEADER_MEMBER])
    edit(header)
    return _forge(members, header=header)


def _kmra_edit(edit: Callable[[dict[str, Any]], None] | None, widths: float | None = None
               ) -> bytes:
    members = _members(dumps_model(_fit("KernelMatchingReduction")[0]))
    header = json.loads(members[HEADER_MEMBER])
    if edit is not None:
        edit(header)
    if widths is not None:
        n = len(_fit("KernelMatchingReduction")[0].widths_)
        members["kernel.widths.npy"] = _npy(np.full(n, widths))
    return _forge(members, header=header)


@pytest.mark.parametrize("case", list(REJECTIONS))
def test_a_bad_model_file_is_refused_with_a_clear_error(case: str, tmp_path: Path) -> None:
    make, message = REJECTIONS[case]
    path = tmp_path / "bad model.spm"
    path.write_bytes(make())
    with pytest.raises(ModelFileError, match=r"^Cannot load the model file '.*bad model\.spm': "
                                             rf".*{message}"):
        load_model(path)


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every key path of a JSON value (dict keys and list indices)."""
    out = [prefix] if prefix else []
    items = node.items() if isinstance(node, dict) else enumerate(node) \
        if isinstance(node, list) else []
    for key, value in items:
        out += _paths(value, (*prefix, key))
    return out


ODD_VALUES = [None, True, -1, 0, 2, 1.5, 1e308, "", "rbf", [], [1], {}, {"name": "linear"}]


@pytest.mark.parametrize("case", ["SparseSVC-one-vs-rest", "SemiSupervisedSVC-mkl-manifold-sparse",
                                  "KernelMatchingReduction", "SparseKernelRidge"])
def test_any_header_value_replaced_loads_or_is_refused_cleanly(case: str) -> None:
    """Each header value replaced by odd JSON (the checksum made right, so every later check is
    reached): the file loads and predicts, or is refused with a ModelFileError; no other
    exception escapes."""
    X_test = _fit(case)[2]
    members = _members(dumps_model(_fit(case)[0]))
    header = json.loads(members[HEADER_MEMBER])
    outcomes = {"loaded": 0, "refused": 0}
    for path in _paths(header):
        for value in ODD_VALUES:
            edited = json.loads(json.dumps(header))
            node = edited
            for key in path[:-1]:
                node = node[key]
            node[path[-1]] = value
            try:
                machine = loads_model(_forge(members, header=edited), "odd.spm")
            except ModelFileError:
                outcomes["refused"] += 1
                continue
            outcomes["loaded"] += 1  # e.g. another gamma or label: a valid, different model
            with np.errstate(all="ignore"):
                assert machine.predict(X_test).shape == (len(X_test),)
    assert outcomes["refused"] > outcomes["loaded"] > 0, outcomes  # metadata, params: free


def test_the_forged_files_are_otherwise_valid() -> None:
    """The rejection cases edit one thing each: the unedited forgery loads."""
    members, header = _valid()
    machine = loads_model(_forge(members, header=header), "forged.spm")
    est, _, X_test = _fit("SparseSVC")
    _assert_same_predictions(est, machine, X_test)


def test_a_missing_model_file_or_a_directory_is_named(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"No model file at '.*nothing\.spm'; check the "
                                                "path"):
        load_model(tmp_path / "nothing.spm")
    with pytest.raises(IsADirectoryError, match="is a directory"):
        load_model(tmp_path)


def test_corrupted_files_are_refused_or_predict_exactly_the_same() -> None:
    """Every byte flipped (two ways) and every truncation of a valid file: each is refused with
    a ModelFileError, or (a byte the checksum does not cover, zip bookkeeping) predicts exactly
    the same. None loads and predicts differently."""
    est, _, X_test = _fit("SparseSVC-one-vs-rest")
    data = dumps_model(est)
    expected = est.decision_function(X_test), est.predict(X_test)
    counts = {"refused": 0, "same": 0, "different": 0}
    variants = [data[:n] for n in range(len(data))]
    for pos in range(len(data)):
        for mask in (0xFF, 0x01):
            damaged = bytearray(data)
            damaged[pos] ^= mask
            variants.append(bytes(damaged))
    for damaged in variants:
        try:
            machine = loads_model(damaged, "damaged.spm")
        except ModelFileError:
            counts["refused"] += 1
            continue
        same = (np.array_equal(machine.decision_function(X_test), expected[0])
                and np.array_equal(machine.predict(X_test), expected[1]))
        counts["same" if same else "different"] += 1
    assert counts["different"] == 0, counts
    assert counts["refused"] > 0.9 * len(variants), counts
    assert sum(counts.values()) == 3 * len(data)


# ----------------------------------------------------------------------------- the documentation


def _python_blocks(text: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", text, flags=re.S | re.M)


def _reader_code() -> str:
    text = DOC.read_text(encoding="utf-8")
    section = text.split("## Reading a model file without sparsify", 1)[1]
    return _python_blocks(section)[0]


def test_the_documented_reader_needs_only_numpy_json_and_zipfile() -> None:
    code = _reader_code()
    assert len([line for line in code.splitlines() if line.strip()]) <= 20
    imported = set()
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Import):
            imported |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            imported.add(node.module or "")
    assert imported == {"json", "zipfile", "numpy"}


@pytest.mark.parametrize("case", ["SparseSVC", "SparseSVC-one-vs-rest",
                                  "SparseKernelLogisticRegression-softmax", "SparseOneClassSVM",
                                  "SparseKernelRidge", "SparseKernelRidge-2d-poly",
                                  "declared-regressor"])
def test_the_documented_reader_predicts_what_sparsify_predicts(case: str,
                                                               tmp_path: Path) -> None:
    namespace: dict[str, Any] = {}
    exec(compile(_reader_code(), str(DOC), "exec"), namespace)
    est, _, X_test = _fit(case)
    path = save_model(est, tmp_path / "model.spm")
    machine = load_model(path)
    if machine.kernel_spec_["name"] != "rbf":
        with pytest.raises(AssertionError):  # the reader knows "rbf" only, and says so
            namespace["decision_values"](str(path), X_test)
        return
    values = namespace["decision_values"](str(path), X_test)
    # a regressor's f is its prediction (it has no decision_function)
    expected = machine.predict(X_test) if is_regressor(machine) \
        else machine.decision_function(X_test)
    assert values.shape == (len(X_test), len(est.intercept_))
    np.testing.assert_allclose(values.reshape(expected.shape), expected, rtol=1e-12,
                               atol=1e-12 * np.abs(expected).max())
    predicted, want = namespace["predict"](str(path), X_test), est.predict(X_test)
    assert predicted.shape == want.shape
    if is_regressor(est):
        assert predicted.dtype == np.float64
        np.testing.assert_allclose(predicted, want, rtol=1e-12, atol=1e-12 * np.abs(want).max())
    else:
        np.testing.assert_array_equal(predicted, want)
        assert predicted.dtype == want.dtype


def test_the_python_examples_of_the_page_run() -> None:
    namespace: dict[str, Any] = {}
    blocks = _python_blocks(DOC.read_text(encoding="utf-8"))
    assert len(blocks) >= 2
    for block in blocks:
        exec(compile(block, str(DOC), "exec"), namespace)


# --------------------------------------------------------------------------- sizes and overflow
# (issue 43: every size a file declares is bounded by its bytes; overflow is never a class)


def test_class_labels_declared_wider_than_the_file_are_refused_before_allocating() -> None:
    members, header = _valid()
    # 2 labels of width 999999: 8 MB of numpy strings from a header of about 1 KB (500 such
    # labels, in a one-vs-rest model, were 2 GB from a 10 KB file)
    header["classes"] = {"dtype": "<U999999", "values": ["a", "b"]}
    data = _forge(members, header=header)
    with pytest.raises(ModelFileError, match=r"declares the dtype '<U999999' for 2 labels, "
                                             r"8 MiB of labels from a header of \d+ bytes"):
        loads_model(data, source="wide.spm")


def test_a_label_width_that_fits_its_values_loads() -> None:
    est, X, _ = _fit("SparseSVC")
    est = clone(est).fit(X, np.where(est.predict(X) == est.classes_[0], "no", "yes"))
    machine = loads_model(dumps_model(est), source="labels.spm")
    assert machine.classes_.dtype == est.classes_.dtype  # '<U3', as saved


@pytest.mark.parametrize("order", [10**9, -1, MAX_TAYLOR_ORDER + 1])
def test_a_taylor_order_out_of_bounds_is_refused(order: int) -> None:
    members, header = _valid()
    header["kernel"] = {"name": "taylor_rbf", "gamma": 0.5, "order": order}
    with pytest.raises(ModelFileError, match=rf"kernel\.order must be an integer from 0 to "
                                             rf"{MAX_TAYLOR_ORDER}; got {order}"):
        loads_model(_forge(members, header=header), source="taylor.spm")


@pytest.mark.parametrize(("kernel", "coef"), [
    ({"name": "poly", "gamma": 1.0, "degree": 1e308, "coef0": 1.0}, 1.0),
    ({"name": "rbf", "gamma": 1.0}, 1e308),
], ids=["degree_1e308", "coefficients_1e308"])
def test_a_model_whose_numbers_overflow_is_refused_at_load(kernel: dict[str, Any],
                                                           coef: float) -> None:
    members, header = _valid()
    header["kernel"] = kernel
    beta = np.load(io.BytesIO(members["expansion_coef.npy"]))
    members["expansion_coef.npy"] = _npy(np.full_like(beta, coef))
    with pytest.raises(ModelFileError, match=r"its decision values are not finite \(The model "
                                             r"'over\.spm' gives a decision value of (inf|nan)"):
        loads_model(_forge(members, header=header), source="over.spm")


def test_a_model_that_overflows_on_the_data_refuses_to_predict() -> None:
    """Degree 0.5 and a negative coef0: finite at its own XVs, NaN elsewhere."""
    members, header = _valid()
    Z = np.load(io.BytesIO(members["expansion_vectors.npy"]))
    header["kernel"] = {"name": "poly", "gamma": 1.0, "degree": 0.5,
                        "coef0": float(-np.min(Z @ Z.T)) + 1e-3}  # > 0 at its own XVs
    machine = loads_model(_forge(members, header=header), source="half.spm")
    far = -100 * Z[[np.argmax(np.sum(Z * Z, axis=1))]]  # ⟨x, z⟩ + coef0 < 0: √ of a negative
    with pytest.raises(ValueError, match=r"The model 'half\.spm' gives a decision value of nan "
                                         r"for row 0 of X"):
        machine.predict(far)
    contents = read_model_bytes(_forge(members, header=header), "half.spm")
    with pytest.raises(ValueError, match="decision value of nan for row 0 of the data"):
        contents.predict(far)


def test_a_file_larger_than_any_model_is_refused_unread(tmp_path: Path) -> None:
    big = tmp_path / "big.spm"
    with big.open("wb") as fh:  # a sparse file: its size, not its blocks
        fh.write(b"PK\x03\x04")
        fh.truncate(MAX_FILE_BYTES + 1)
    import tracemalloc

    tracemalloc.start()
    try:
        with pytest.raises(ModelFileError, match=r"it is 1\.06 GiB, larger than any model "
                                                 r"file .* it was not read"):
            load_model(big)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 2**20  # read whole, it would take a GiB


def test_a_file_larger_than_the_memory_available_is_refused_unread(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import sparsify.core.memory

    path = tmp_path / "m.spm"
    path.write_bytes(dumps_model(_fit("SparseSVC")[0]))
    monkeypatch.setattr(sparsify.core.memory, "available_memory", lambda: 1000)
    with pytest.raises(ModelFileError, match=r"reading it \(0 MiB\) would need about 0 MiB, "
                                             r"and 0 MiB are available \(counting cgroup and "
                                             r"ulimit -v limits\); it was not read"):
        load_model(path)


@pytest.mark.parametrize("kind", ["fifo", "read_only", "directory"])
def test_save_model_refuses_a_target_it_must_not_replace(kind: str, tmp_path: Path) -> None:
    target = tmp_path / "target"
    if kind == "fifo":
        os.mkfifo(target)
    elif kind == "read_only":
        target.write_bytes(b"keep me")
        target.chmod(0o444)
    else:
        target.mkdir()
    error = IsADirectoryError if kind == "directory" else ValueError
    message = {"fifo": "is a FIFO (named pipe), not a regular file", "read_only": "is read-only",
               "directory": "it is a directory"}[kind]
    with pytest.raises(error, match=re.escape(message)):
        save_model(_fit("SparseSVC")[0], target)
    if kind == "read_only":
        assert target.read_bytes() == b"keep me"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["target"]


def test_save_model_writes_through_a_symbolic_link(tmp_path: Path) -> None:
    real = tmp_path / "real.spm"
    real.write_bytes(b"old")
    link = tmp_path / "link.spm"
    link.symlink_to(real)
    est = _fit("SparseSVC")[0]
    save_model(est, link)
    assert link.is_symlink() and load_model(real).n_features_in_ == est.n_features_in_
