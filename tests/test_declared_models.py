"""Declared formulations are first-class models: saved, predicted and exported like the built-ins.

A plugin written as docs/plugins.md teaches (a classifier with its own estimator class, a
regressor and a multi-class formulation without one) goes ``sparsify fit --out`` →
``sparsify predict`` → ``sparsify export --onnx`` → onnxruntime, and every step equals the
estimator fitted in Python with the same settings (to 1e-6, labels identical). The hook that
says how an estimator predicts, ``model_file_rule``, is checked on its own: a subclass that
predicts otherwise is refused naming it, and one that declares its rule is saved by it.
"""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path
from typing import Any

import cvxpy as cp
import numpy as np
import pytest
from sklearn.datasets import make_blobs, make_moons

import sparsify
from sparsify import Declaration, Formulation, SparseKernelClassifier
from sparsify.cli import main
from sparsify.core.estimator import estimator_for
from sparsify.io import dumps_model, load_model, loads_model, save_model
from sparsify.io.model_file import read_model_bytes
from sparsify.plugins.registry import get_registry

# The plugin, as docs/plugins.md teaches it: a classifier with its estimator class, a regressor
# and a multi-class formulation whose estimators are made from their tasks.
PLUGIN = '''
import cvxpy as cp
import numpy as np

from sparsify import Declaration, Formulation, SparseKernelClassifier, hookimpl


class ModelsL2SVM(Formulation):
    name, task = "models_l2svm", "classifier"

    def __init__(self, C=1.0):
        self.C = C

    def declare(self, out):
        b = cp.Variable()
        loss = cp.sum_squares(cp.pos(1 - cp.multiply(out.y, out.f + b)))
        return Declaration(cp.Minimize(0.5 * out.norm_w2 + self.C * loss), [], intercept=b)


class SparseModelsL2SVC(SparseKernelClassifier):
    formulation_class = ModelsL2SVM


class ModelsHuber(Formulation):
    """Huber regression: no estimator class, the regressor task's."""

    name, task = "models_huber", "regressor"

    def __init__(self, C=1.0, delta=0.5):
        self.C, self.delta = C, delta

    def declare(self, out):
        b = cp.Variable()
        loss = cp.sum(cp.huber(out.y - out.f - b, self.delta))
        return Declaration(cp.Minimize(0.5 * out.norm_w2 + self.C * loss), [], intercept=b)


class ModelsWestonWatkins(Formulation):
    """A multi-class SVM over all classes at once: K outputs in one problem."""

    name, task = "models_ww", "multioutput_classifier"

    def __init__(self, C=1.0):
        self.C = C

    def declare(self, out):
        y = out.y.astype(int)
        onehot = np.eye(out.n_outputs)[y]
        b = cp.Variable(out.n_outputs)
        scores = out.f + np.ones((out.n_samples, 1)) @ cp.reshape(b, (1, out.n_outputs),
                                                                  order="C")
        true = cp.sum(cp.multiply(scores, onehot), axis=1)
        margin = scores - cp.reshape(true, (out.n_samples, 1), order="C") @ np.ones(
            (1, out.n_outputs)) + 1 - onehot
        loss = cp.sum(cp.pos(margin))
        return Declaration(cp.Minimize(0.5 * out.norm_w2 + self.C * loss), [], intercept=b)

    def n_outputs(self, y):
        return int(np.nanmax(y)) + 1


@hookimpl
def register_formulations(register):
    register(ModelsL2SVM)
    register(ModelsHuber)
    register(ModelsWestonWatkins)


@hookimpl
def register_estimators(register):
    register(SparseModelsL2SVC)
'''


@pytest.fixture(scope="module")
def plugin() -> types.ModuleType:
    """The plugin module, importable by name (pickles and the registry refer to it)."""
    name = "declared_models_plugin"
    module = sys.modules.get(name)
    if module is None:
        module = types.ModuleType(name)
        exec(compile(PLUGIN, f"{name}.py", "exec"), module.__dict__)
        sys.modules[name] = module
    if "models_l2svm" not in get_registry().names("formulation"):
        sparsify.register_plugin(module, name)
    return module


def _csv(path: Path, X: np.ndarray, y: np.ndarray) -> Path:
    names = [f"x{j}" for j in range(X.shape[1])] + ["label"]
    np.savetxt(path, np.column_stack([X, y]), delimiter=",", header=",".join(names),
               comments="")
    return path


def _problem(name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    if name == "models_l2svm":
        X, y = make_moons(120, noise=0.15, random_state=0)
    elif name == "models_ww":
        X, y = make_blobs(120, centers=3, cluster_std=1.5, random_state=0)
    else:
        rng = np.random.default_rng(0)
        X = rng.uniform(-3, 3, size=(120, 2))
        y = np.sin(X[:, 0]) + 0.1 * X[:, 1] + 0.1 * rng.normal(size=120)
    return X[:80], y[:80], X[80:], y[80:]


def _cli(capsys: pytest.CaptureFixture[str], *argv: Any) -> dict[str, Any]:
    capsys.readouterr()
    assert main([str(a) for a in argv]) == 0
    return json.loads(capsys.readouterr().out)  # type: ignore[no-any-return]


# the fit reads named CSV columns, the comparison passes bare arrays
@pytest.mark.filterwarnings("ignore:X does not have valid feature names:UserWarning")
@pytest.mark.parametrize(("name", "estimator", "rule"), [
    ("models_l2svm", "SparseModelsL2SVC", "binary_sign"),
    ("models_huber", "SparseModelsHuber", "identity"),
    ("models_ww", "SparseModelsWestonWatkins", "multioutput_argmax"),
])
def test_a_declared_formulation_goes_fit_predict_export_from_the_command_line(
        name: str, estimator: str, rule: str, plugin: types.ModuleType, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    ort = pytest.importorskip("onnxruntime")
    pytest.importorskip("skl2onnx")
    X, y, X_test, y_test = _problem(name)
    train, test = _csv(tmp_path / "train.csv", X, y), _csv(tmp_path / "test.csv", X_test, y_test)
    model, onnx_path = tmp_path / f"{name}.model", tmp_path / f"{name}.onnx"
    settings = {"n_expansion": 6, "gamma": 0.5, "max_iter": 15, "random_state": 0}
    fitted = _cli(capsys, "fit", "--formulation", name, "--data", train, "--test", test,
                  "--n-expansion", 6, "--gamma", 0.5, "--max-iter", 15, "--seed", 0,
                  "--out", model, "--json")
    assert fitted["estimator"] == estimator

    # the same estimator in Python: the reference every step is compared with
    cls, params = estimator_for(name)
    reference = cls(**params, **settings).fit(X, y)
    regressor = rule == "identity"
    values = reference.predict(X_test) if regressor else reference.decision_function(X_test)
    labels = reference.predict(X_test)

    machine = load_model(model)
    assert machine.decision_rule_ == ("binary_sign" if rule != "identity" and len(
        np.unique(y)) == 2 else rule)
    assert machine.formulation_ == name and machine.estimator_class_ == estimator
    saved = machine.predict(X_test) if regressor else machine.decision_function(X_test)
    np.testing.assert_allclose(saved, values, rtol=1e-6, atol=1e-6 * np.abs(values).max())
    assert np.array_equal(machine.predict(X_test), labels) or regressor

    predicted = _cli(capsys, "predict", "--model", model, "--data", test, "--json")
    if regressor:
        np.testing.assert_allclose(predicted["predictions"], labels, rtol=1e-6, atol=1e-9)
    else:
        assert predicted["predictions"] == labels.tolist()

    exported = _cli(capsys, "export", model, "--onnx", onnx_path, "--json")
    assert exported["decision_rule"] == machine.decision_rule_
    session = ort.InferenceSession(onnx_path.read_bytes(), providers=["CPUExecutionProvider"])
    outputs = dict(zip([o.name for o in session.get_outputs()],
                       session.run(None, {"X": X_test}), strict=True))
    if regressor:
        np.testing.assert_allclose(outputs["variable"].ravel(), labels, rtol=1e-6,
                                   atol=1e-6 * np.abs(labels).max())
    else:
        assert np.array_equal(outputs["label"], labels)
        np.testing.assert_allclose(outputs["scores"].reshape(values.shape), values, rtol=1e-6,
                                   atol=1e-6 * np.abs(values).max())


def test_to_onnx_and_the_numpy_reader_take_a_plugin_estimator(plugin: types.ModuleType) -> None:
    """`sparsify.to_onnx` on the estimator itself, and the file read with numpy alone."""
    ort = pytest.importorskip("onnxruntime")
    pytest.importorskip("skl2onnx")
    X, y, X_test, _ = _problem("models_ww")
    clf = plugin.SparseModelsL2SVC(n_expansion=5, gamma=0.5, max_iter=10, random_state=0)
    clf.fit(X, np.where(y == 0, "a", "b"))
    session = ort.InferenceSession(sparsify.to_onnx(clf, X[:1]).SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    label, scores = session.run(None, {"X": X_test})
    assert np.array_equal(label, clf.predict(X_test))
    np.testing.assert_allclose(scores.ravel(), clf.decision_function(X_test), rtol=1e-6,
                               atol=1e-9)
    contents = read_model_bytes(dumps_model(clf), "l2svc.spm")
    assert np.array_equal(contents.predict(X_test), clf.predict(X_test))
    # an estimator made on the spot from the regressor task
    X, t, X_test, _ = _problem("models_huber")
    made, _ = estimator_for("models_huber")
    reg = made(n_expansion=5, gamma=0.5, max_iter=10, random_state=0).fit(X, t)
    session = ort.InferenceSession(sparsify.to_onnx(reg).SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    (values,) = session.run(None, {"X": X_test})
    np.testing.assert_allclose(values.ravel(), reg.predict(X_test), rtol=1e-6, atol=1e-9)


def test_two_classes_of_a_multi_output_formulation_are_saved_as_their_difference(
        plugin: types.ModuleType) -> None:
    """argmax over τ_0, τ_1 is the sign of τ_1 − τ_0, the estimator's own decision_function."""
    X, y = make_moons(80, noise=0.15, random_state=1)
    cls, _ = estimator_for("models_ww")
    clf = cls(n_expansion=5, gamma=1.0, max_iter=10, random_state=0).fit(X, y)
    assert clf.expansion_coef_.shape[0] == 2
    machine = loads_model(dumps_model(clf), source="two.spm")
    assert machine.decision_rule_ == "binary_sign" and machine.expansion_coef_.shape[0] == 1
    np.testing.assert_allclose(machine.decision_function(X), clf.decision_function(X),
                               rtol=1e-12, atol=1e-12)
    assert np.array_equal(machine.predict(X), clf.predict(X))


def test_a_three_class_multi_output_file_has_format_version_3(plugin: types.ModuleType,
                                                               tmp_path: Path) -> None:
    from tests.test_model_file import _reader_code

    X, y, X_test, _ = _problem("models_ww")
    cls, _ = estimator_for("models_ww")
    clf = cls(n_expansion=5, gamma=0.5, max_iter=5, random_state=0).fit(X, y)
    assert clf.model_file_rule() == {"decision_rule": "multioutput_argmax", "probability": None,
                                     "formulation": "models_ww"}
    path = save_model(clf, tmp_path / "three.spm")
    machine = load_model(path)
    assert machine.format_version_ == 3 and machine.decision_rule_ == "multioutput_argmax"
    assert np.array_equal(machine.predict(X_test), clf.predict(X_test))
    reader: dict[str, Any] = {}  # the numpy-only reader of docs/model-format.md
    exec(compile(_reader_code(), "model-format.md", "exec"), reader)
    np.testing.assert_allclose(reader["decision_values"](str(path), X_test),
                               clf.decision_function(X_test), rtol=1e-12, atol=1e-12)
    assert np.array_equal(reader["predict"](str(path), X_test), clf.predict(X_test))


class _L2SVM(Formulation):
    name = "models_l2svm_unregistered"

    def __init__(self, C: float = 1.0) -> None:
        self.C = C

    def declare(self, out):  # type: ignore[no-untyped-def]
        b = cp.Variable()
        loss = cp.sum_squares(cp.pos(1 - cp.multiply(out.y, out.f + b)))
        return Declaration(cp.Minimize(0.5 * out.norm_w2 + self.C * loss), [], intercept=b)


class _Flipped(SparseKernelClassifier):
    """Predicts the other class: not what a model file's binary_sign would say."""

    formulation_class = _L2SVM

    def predict(self, X):  # type: ignore[no-untyped-def]
        return self.classes_[(self.decision_function(X) <= 0).astype(int)]


class _Logistic(SparseKernelClassifier):
    """Adds logistic probabilities and says so through the hook."""

    formulation_class = _L2SVM

    def predict_proba(self, X):  # type: ignore[no-untyped-def]
        p = 1.0 / (1.0 + np.exp(-self.decision_function(X)))
        return np.column_stack([1.0 - p, p])

    def model_file_rule(self):  # type: ignore[no-untyped-def]
        return {**super().model_file_rule(), "probability": "logistic"}


def test_an_estimator_that_predicts_otherwise_is_refused_naming_the_hook(tmp_path: Path) -> None:
    from sparsify.io.saveable import check_saveable

    with pytest.raises(ValueError, match=r"overrides predict.*model_file_rule\(\)"):
        check_saveable(_Flipped())  # before any fit, as 'sparsify fit --out' asks
    X, y = make_moons(60, noise=0.1, random_state=0)
    clf = _Flipped(n_expansion=4, gamma=1.0, max_iter=3, random_state=0).fit(X, y)
    with pytest.raises(ValueError, match=r"_Flipped cannot be saved as a model file: it "
                                         r"overrides predict"):
        save_model(clf, tmp_path / "flipped.spm")
    assert not list(tmp_path.iterdir())
    pytest.importorskip("skl2onnx")
    with pytest.raises(ValueError, match="model_file_rule"):
        sparsify.to_onnx(clf)


def test_an_estimator_that_declares_its_rule_is_saved_with_its_probabilities() -> None:
    X, y = make_moons(60, noise=0.1, random_state=0)
    clf = _Logistic(n_expansion=4, gamma=1.0, max_iter=5, random_state=0).fit(X, y)
    machine = loads_model(dumps_model(clf), source="logistic.spm")
    assert machine.probability_ == "logistic"
    np.testing.assert_allclose(machine.predict_proba(X), clf.predict_proba(X), rtol=1e-12)


@pytest.mark.parametrize(("returned", "message"), [
    ({"decision_rule": "sign"}, "returned the decision rule 'sign'; it must be one of"),
    ({"decision_rule": "binary_sign", "probability": "softmax"},
     "'softmax' with the decision rule 'binary_sign', which takes"),
    ({"decision_rule": "binary_sign", "probability": "platt"}, "probA_ and probB_"),
    ({"decision_rule": "binary_sign", "rule": 1}, "it must return a dict with the keys"),
    ({"decision_rule": "binary_sign", "formulation": 3}, "it must be a formulation's name"),
])
def test_a_hook_that_returns_what_a_file_cannot_hold_is_refused(returned: dict[str, Any],
                                                               message: str) -> None:
    class Declares(SparseKernelClassifier):
        formulation_class = _L2SVM

        def model_file_rule(self):  # type: ignore[no-untyped-def]
            return returned

    X, y = make_moons(40, noise=0.1, random_state=0)
    clf = Declares(n_expansion=3, gamma=1.0, max_iter=2, random_state=0).fit(X, y)
    with pytest.raises(ValueError, match=message):
        dumps_model(clf)


def test_every_task_estimator_names_its_rule() -> None:
    """The built-ins now say their rule through the same hook as a plugin's estimators."""
    X, y = make_blobs(60, centers=3, random_state=0)
    svc = sparsify.SparseSVC(3, gamma=0.5, max_iter=3, probability=True, random_state=0)
    assert svc.fit(X, y).model_file_rule() == {"decision_rule": "ovr_argmax",
                                                "probability": "platt", "formulation": "svm"}
    klr = sparsify.SparseKernelLogisticRegression(3, gamma=0.5, max_iter=3, random_state=0)
    assert klr.fit(X, y).model_file_rule()["decision_rule"] == "softmax_argmax"
    ridge = sparsify.SparseKernelRidge(3, max_iter=3, random_state=0).fit(X, X[:, 0])
    assert ridge.model_file_rule()["decision_rule"] == "identity"
