"""ONNX export: onnxruntime gives the estimator's own predictions, for every exportable model.

Every output of an exported graph is run in onnxruntime and compared with the estimator's
method of the same meaning: ``label`` with `predict` (identical), ``scores`` with
`decision_function`, ``probabilities`` with `predict_proba`, ``variable`` with `predict`
(regressors) or `transform` (transformers), to 10⁻⁶ relative in float64. The graph repeats
the package's float64 operations, so the two differ by round-off (about 10⁻¹³ of the values'
scale where β is large); 10⁻⁶ is the issue's bar, far above it. float32 graphs are held to a
worst-case float32 round-off bound computed from the model (`_float32_bound`).
"""

from __future__ import annotations

import functools
import re
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import cvxpy as cp
import numpy as np
import pytest
from sklearn.datasets import make_blobs, make_moons
from sklearn.exceptions import NotFittedError

pytest.importorskip("onnx", reason="needs onnx (pip install -e '.[test]')")
pytest.importorskip("skl2onnx", reason="needs skl2onnx (pip install -e '.[test]')")
ort = pytest.importorskip("onnxruntime", reason="needs onnxruntime (pip install -e '.[test]')")

import sparsify  # noqa: E402
from sparsify import (  # noqa: E402
    RBF,
    Declaration,
    Formulation,
    ImportVectorMachine,
    KernelMatchingReduction,
    Linear,
    Polynomial,
    ReducedSetSVC,
    ReducedSVC,
    RVMClassifier,
    SemiSupervisedSVC,
    SparseKernelLogisticRegression,
    SparseKernelPCA,
    SparseKernelRegressor,
    SparseKernelRidge,
    SparseKFD,
    SparseOneClassSVM,
    SparseSVC,
    SparseSVR,
    SumKernel,
    TaylorRBF,
    to_onnx,
)
from sparsify.cli import main  # noqa: E402
from sparsify.io import dumps_model, loads_model, save_model  # noqa: E402
from sparsify.io.saveable import saveable_estimators  # noqa: E402
from sparsify.onnx import register_converters  # noqa: E402

RTOL = 1e-6


def run(model: Any, X: np.ndarray) -> dict[str, np.ndarray]:
    """The graph's outputs on X, by name, from onnxruntime."""
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(None, {session.get_inputs()[0].name: X}), strict=True))


def assert_close(actual: np.ndarray, expected: np.ndarray) -> None:
    expected = np.asarray(expected)
    actual = np.asarray(actual).reshape(expected.shape)
    # relative to each value, and to the values' scale where one of them is near 0
    scale = float(np.abs(expected).max())
    np.testing.assert_allclose(actual, expected, rtol=RTOL, atol=RTOL * 1e-6 * scale)


def check_outputs(est: Any, out: dict[str, np.ndarray], X: np.ndarray) -> None:
    """Each output against the estimator's method of the same meaning."""
    from sklearn.base import is_classifier, is_outlier_detector, is_regressor

    if is_classifier(est) or is_outlier_detector(est):
        expected = {"label", "scores"} | ({"probabilities"} if hasattr(est, "predict_proba")
                                          else set())
    else:
        expected = {"variable"}
    assert set(out) == expected
    if "label" in out:
        labels = est.predict(X)
        assert out["label"].shape == labels.shape
        assert out["label"].tolist() == labels.tolist()
    if "scores" in out:
        decision = est.decision_function(X)
        assert out["scores"].shape == (len(X), 1 if decision.ndim == 1 else decision.shape[1])
        assert_close(out["scores"], decision)
    if "probabilities" in out:
        proba = est.predict_proba(X)
        assert out["probabilities"].shape == proba.shape
        assert_close(out["probabilities"], proba)
    if "variable" in out:
        values = est.predict(X) if is_regressor(est) else est.transform(X)
        assert out["variable"].shape == (len(X), 1 if values.ndim == 1 else values.shape[1])
        assert_close(out["variable"], values)


# --------------------------------------------------------------------------- data and models

X2, Y2 = make_moons(200, noise=0.2, random_state=0)
X3, Y3 = make_blobs(240, centers=3, cluster_std=2.0, random_state=0)
_rng = np.random.default_rng(0)
X1 = _rng.uniform(-3, 3, size=(200, 1))
T1 = np.sin(X1[:, 0]) + 0.1 * _rng.normal(size=200)


def _fit(est: Any, X: np.ndarray, y: np.ndarray | None) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # short fits on purpose
        return est.fit(X) if y is None else est.fit(X, y)


MUST_SHOW = {
    "binary SparseSVC": lambda: (_fit(SparseSVC(6, gamma=2.0, probability=True, max_iter=30,
                                                random_state=0), X2, Y2), X2),
    "3-class SparseSVC": lambda: (_fit(SparseSVC(5, gamma=0.2, probability=True, max_iter=20,
                                                 random_state=0), X3, Y3), X3),
    "SparseKernelRidge": lambda: (_fit(SparseKernelRidge(6, alpha=0.1, gamma=0.5, max_iter=30,
                                                         random_state=0), X1, T1), X1),
    "SparseSVR": lambda: (_fit(SparseSVR(6, C=10.0, gamma=0.5, max_iter=30, random_state=0),
                               X1, T1), X1),
    "SparseOneClassSVM": lambda: (_fit(SparseOneClassSVM(5, gamma=1.0, max_iter=20,
                                                         random_state=0), X2, None), X2),
    "SparseKernelPCA": lambda: (_fit(SparseKernelPCA(8, n_components=3, gamma=1.0, max_iter=30,
                                                     random_state=0), X2, None), X2),
}


@functools.cache
def fitted_model(name: str) -> tuple[Any, np.ndarray]:
    """The fitted estimator of a case, and its inputs; fitted once (no test changes it)."""
    return {**SAVEABLE, **MUST_SHOW}[name]()


@pytest.fixture(params=sorted(MUST_SHOW))
def fitted(request: pytest.FixtureRequest) -> tuple[Any, np.ndarray]:
    return fitted_model(request.param)


def test_onnxruntime_gives_the_estimators_outputs(fitted: tuple[Any, np.ndarray]) -> None:
    est, X = fitted
    out = run(to_onnx(est, X[:1]), X)
    check_outputs(est, out, X)
    # the labels and probabilities are not trivially constant
    if "label" in out:
        assert len(np.unique(out["label"])) >= 2
    if "probabilities" in out:
        np.testing.assert_allclose(out["probabilities"].sum(1), 1.0, rtol=1e-12)


def test_outputs_keep_float64_and_name_what_they_hold(fitted: tuple[Any, np.ndarray]) -> None:
    est, X = fitted
    model = to_onnx(est, X[:1])
    types = {o.name: o.type.tensor_type.elem_type for o in model.graph.output}
    assert model.graph.input[0].name == "X"
    assert model.graph.input[0].type.tensor_type.elem_type == 11  # DOUBLE
    for name, elem in types.items():
        assert elem == (7 if name == "label" else 11), name  # INT64 labels, DOUBLE values
    props = {p.key: p.value for p in model.metadata_props}
    assert props["estimator"] == type(est).__name__ and props["dtype"] == "float64"
    assert props["sparsify_version"] == sparsify.__version__


def _float32_bound(est: Any, X: np.ndarray) -> np.ndarray:
    """A worst-case bound on |f32 − f64| per row and output, for an RBF machine.

    float32 rounds X, the squared distance (a sum of d products and two norms: relative
    error (d + 3)·ε of ‖x‖² + ‖z‖²), the kernel value (a few ε) and the sum over the Nz XVs
    (Nz·ε of Σ|β_j K_j|) — the standard bounds of floating-point sums and dot products.
    """
    eps = float(np.finfo(np.float32).eps)
    Z, beta = est.expansion_vectors_, est.expansion_coef_
    gamma, d = est.kernel_.gamma, X.shape[1]
    K = est.kernel_(X, Z)
    sq = (X * X).sum(1)[:, None] + (Z * Z).sum(1)[None, :]
    per_term = K * (gamma * (d + 3) * sq + len(Z) + 4)
    return eps * (per_term @ np.abs(beta).T + np.abs(est.intercept_))


@pytest.mark.parametrize("case", ["binary SparseSVC", "3-class SparseSVC", "SparseOneClassSVM"])
def test_float32_stays_within_float32_round_off(case: str) -> None:
    est, X = fitted_model(case)
    out64 = run(to_onnx(est, X[:1]), X)
    model32 = to_onnx(est, X[:1].astype(np.float32))  # a float32 sample picks float32
    out32 = run(model32, X.astype(np.float32))
    assert out32["scores"].dtype == np.float32
    error = np.abs(out32["scores"].astype(np.float64) - out64["scores"])
    bound = _float32_bound(est, X)
    assert (error <= bound).all(), float((error / bound).max())
    assert error.max() > 0  # float32 is not float64 under another name
    # a label may change only where a decision value lies within the bound of a boundary
    f = out64["scores"]
    flipped = out32["label"] != out64["label"]
    if f.shape[1] == 1:
        assert (np.abs(f[flipped, 0]) <= bound[flipped, 0]).all()
    else:
        top2 = np.sort(f, axis=1)[:, -2:]
        assert (top2[flipped, 1] - top2[flipped, 0] <= 2 * bound[flipped].max(1)).all()
    # the arrays (Z, β, ...) take half the bytes
    float_bytes = [sum(len(t.raw_data) for t in m.graph.initializer if t.data_type in (1, 11))
                   for m in (model32, to_onnx(est))]
    assert 2 * float_bytes[0] == float_bytes[1]


# --------------------------------------------------------------------------- every model file


SAVEABLE = {
    "SparseSVC": lambda: fitted_model("3-class SparseSVC"),
    "SparseKFD": lambda: (_fit(SparseKFD(5, gamma=0.2, max_iter=10, random_state=0), X3, Y3),
                          X3),
    "SparseOneClassSVM": lambda: fitted_model("SparseOneClassSVM"),
    "SparseKernelLogisticRegression": lambda: (_fit(
        SparseKernelLogisticRegression(5, gamma=0.2, max_iter=10, random_state=0), X3, Y3), X3),
    "binary SparseKernelLogisticRegression": lambda: (_fit(
        SparseKernelLogisticRegression(5, gamma=1.0, max_iter=10, random_state=0), X2, Y2), X2),
    "SemiSupervisedSVC": lambda: (_fit(
        SemiSupervisedSVC(5, kernels=["rbf", "manifold"], gamma=1.0, max_iter=5,
                          random_state=0), X2, np.where(np.arange(200) < 20, Y2, -1)), X2),
    "ReducedSVC": lambda: (_fit(ReducedSVC(5, gamma=1.0), X2, Y2), X2),
    "ReducedSetSVC": lambda: (_fit(ReducedSetSVC(5, gamma=1.0), X2, Y2), X2),
    "RVMClassifier": lambda: (_fit(RVMClassifier(gamma=0.2), X3, Y3), X3),
    "ImportVectorMachine": lambda: (_fit(ImportVectorMachine(gamma=0.2), X3[:90], Y3[:90]), X3),
    "KernelMatchingReduction": lambda: (_fit(KernelMatchingReduction(), X2[:60], Y2[:60]), X2),
    "SparseKernelRidge": lambda: fitted_model("SparseKernelRidge"),
    "SparseSVR": lambda: fitted_model("SparseSVR"),
}


def test_every_class_a_model_file_holds_is_tested() -> None:
    names = {name.split()[-1] for name in SAVEABLE}
    assert {cls.__name__ for cls in saveable_estimators()} <= names


@pytest.mark.parametrize("name", sorted(SAVEABLE))
def test_estimator_and_its_model_file_export_the_same_predictions(name: str) -> None:
    est, X = fitted_model(name)
    out = run(to_onnx(est), X)
    check_outputs(est, out, X)
    machine = loads_model(dumps_model(est), source=f"{name}.spm")
    from_file = run(to_onnx(machine), X)
    check_outputs(machine, from_file, X)
    for key in out:
        assert from_file[key].tolist() == out[key].tolist(), key  # one graph, same numbers


@pytest.mark.parametrize("kernel", [
    RBF(0.5), Polynomial(gamma=0.5, degree=3, coef0=1.0), Polynomial(gamma=0.1, degree=2.5,
                                                                     coef0=10.0),
    Linear(), SumKernel((RBF(0.5), Linear()), (0.7, 0.2)), SumKernel((RBF(2.0), RBF(0.1))),
    TaylorRBF(0.5, order=0), TaylorRBF(0.5, order=3),
], ids=repr)
def test_every_kernel_of_the_model_files(kernel: Any) -> None:
    X = np.column_stack([X1[:, 0], np.cos(X1[:, 0])])
    reg = _fit(SparseKernelRidge(6, alpha=0.1, kernel=kernel, max_iter=10, random_state=0), X,
               T1)
    check_outputs(reg, run(to_onnx(reg), X), X)


def test_a_taylor_order_beyond_the_limit_is_refused() -> None:
    reg = _fit(SparseKernelRidge(4, kernel=TaylorRBF(0.5, order=2), max_iter=2, random_state=0),
               X1, T1)
    reg.kernel_ = TaylorRBF(0.5, order=101)
    with pytest.raises(ValueError, match=r"Taylor kernel of order 101; .* orders up to 100"):
        to_onnx(reg)


@pytest.mark.parametrize("labels, dtype", [
    (np.array(["setosa", "b", "a long label"]), object), (np.array([3, 7, 250], np.uint8),
                                                          np.int64),
])
def test_labels_keep_their_values(labels: np.ndarray, dtype: type) -> None:
    clf = _fit(SparseSVC(4, gamma=0.2, max_iter=5, random_state=0), X3, labels[Y3])
    out = run(to_onnx(clf), X3)
    assert out["label"].dtype == dtype
    assert out["label"].tolist() == clf.predict(X3).tolist()


def test_boolean_labels_stay_boolean() -> None:
    clf = _fit(SparseSVC(4, gamma=2.0, max_iter=5, random_state=0), X2, Y2.astype(bool))
    out = run(to_onnx(clf), X2)
    assert out["label"].dtype == bool and out["label"].tolist() == clf.predict(X2).tolist()


@pytest.mark.parametrize("opset", [9, 13])
def test_older_opsets(opset: int) -> None:
    clf, X = fitted_model("3-class SparseSVC")
    model = to_onnx(clf, target_opset=opset)
    assert [o.version for o in model.opset_import if o.domain in ("", "ai.onnx")] == [opset]
    check_outputs(clf, run(model, X), X)


# --------------------------------------------------------------------------- skl2onnx


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_a_pipeline_converts_with_skl2onnx(dtype: type) -> None:
    from skl2onnx import to_onnx as skl2onnx_to_onnx
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    X = X3 * 10.0 + 3.0
    pipe = _fit(make_pipeline(StandardScaler(), SparseSVC(5, probability=True, max_iter=10,
                                                          random_state=0)), X, Y3)
    register_converters()
    model = skl2onnx_to_onnx(pipe, X[:1].astype(dtype),
                             options={SparseSVC: {"zipmap": False}})
    out = run(model, X.astype(dtype))
    if dtype == np.float64:
        check_outputs(pipe, out, X)
    else:  # float32: labels agree away from the boundaries
        assert np.mean(out["label"] == pipe.predict(X)) > 0.97
        np.testing.assert_allclose(out["probabilities"], pipe.predict_proba(X), atol=1e-4)


def test_skl2onnx_refuses_zipmap_and_unknown_classes() -> None:
    from skl2onnx import to_onnx as skl2onnx_to_onnx
    from sklearn.svm import SVC

    clf, X = fitted_model("binary SparseSVC")
    register_converters()
    with pytest.raises(ValueError, match="zipmap"):
        skl2onnx_to_onnx(clf, X[:1], options={SparseSVC: {"zipmap": True}})
    with pytest.raises(ValueError, match="SVC cannot be exported to ONNX"):
        register_converters(SVC)


class _Ridge(Formulation):
    """Kernel ridge regression declared in cvxpy: a formulation's regressor, not built in."""

    name = "onnx_test_ridge"
    task = "regressor"

    def __init__(self, alpha: float = 1.0) -> None:
        self.alpha = alpha

    def declare(self, out: Any) -> Declaration:
        b = cp.Variable()
        loss = cp.sum_squares(out.f + b - out.y)
        return Declaration(cp.Minimize(loss + self.alpha * out.norm_w2), [], b)


class _SparseRidge(SparseKernelRegressor):
    formulation_class = _Ridge


def test_register_converters_takes_a_formulations_regressor_class() -> None:
    from skl2onnx import to_onnx as skl2onnx_to_onnx
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    X, t = X1[:60], T1[:60]
    pipe = _fit(make_pipeline(StandardScaler(), _SparseRidge(4, alpha=0.1, gamma=0.5,
                                                             max_iter=3, random_state=0)), X, t)
    register_converters(_SparseRidge)
    check_outputs(pipe, run(skl2onnx_to_onnx(pipe, X[:1]), X), X)


# --------------------------------------------------------------------------- errors


def test_bad_input_is_refused_with_what_to_change() -> None:
    from sklearn.svm import SVC

    clf, X = fitted_model("binary SparseSVC")
    with pytest.raises(NotFittedError):
        to_onnx(SparseSVC())
    with pytest.raises(ValueError, match=r"SVC cannot be exported to ONNX: .*skl2onnx's own"):
        to_onnx(SVC().fit(X, Y2))
    with pytest.raises(ValueError, match=r"X_sample has shape \(1, 3\), but SparseSVC was "
                                         r"fitted on 2 features"):
        to_onnx(clf, np.zeros((1, 3)))
    with pytest.raises(ValueError, match=re.escape(
            "The 'dtype' parameter of to_onnx must be 'float64', 'float32' or None. Got "
            "'float16' instead.")):
        to_onnx(clf, dtype="float16")
    for opset in (8, 1000, True):
        with pytest.raises(ValueError, match=r"The 'target_opset' parameter of to_onnx must be "
                                             r"an int in the range \[9, \d+\] \(the newest "
                                             rf".*Got {opset} instead\."):
            to_onnx(clf, target_opset=opset)


def test_missing_onnx_is_an_import_error_saying_what_to_install(monkeypatch) -> None:
    clf, _ = fitted_model("binary SparseSVC")
    monkeypatch.setitem(sys.modules, "skl2onnx", None)  # import skl2onnx raises ImportError
    with pytest.raises(ImportError, match=r"needs skl2onnx, which is not installed; install "
                                          r"them with: pip install onnx skl2onnx"):
        to_onnx(clf)


def test_import_sparsify_imports_no_onnx() -> None:
    code = ("import sys, sparsify; from sparsify import SparseSVC; sparsify.to_onnx; "
            "import sparsify.onnx; "
            "print(sorted(m for m in ('onnx', 'skl2onnx', 'onnxruntime') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=120)
    assert out.stdout.strip() == "[]"
    # nor does the command line until an export runs (-X importtime lists every import)
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "sparsify", "export",
                           "--help"], capture_output=True, text=True, check=True, timeout=120)
    assert "--onnx OUT" in proc.stdout
    modules = {line.split("|")[-1].strip().split(".")[0]
               for line in proc.stderr.splitlines() if line.startswith("import time:")}
    assert "sparsify" in modules and not modules & {"onnx", "skl2onnx", "onnxruntime"}


# --------------------------------------------------------------------------- sparsify export


@pytest.fixture
def model_file(tmp_path: Path) -> tuple[Path, Any]:
    clf = fitted_model("3-class SparseSVC")[0]
    return save_model(clf, tmp_path / "blobs.spm"), clf


def test_export_writes_the_graph_of_the_model_file(model_file, tmp_path: Path,
                                                   capsys) -> None:
    path, clf = model_file
    out_path = tmp_path / "blobs.onnx"
    assert main(["export", str(path), "--onnx", str(out_path)]) == 0
    text = capsys.readouterr().out
    assert f"wrote {out_path} (" in text and "SparseSVC (ovr_argmax, kernel rbf, Nz = 15) in " \
        "float64, opset 17" in text
    assert "input X (N, 2); outputs label (N,), probabilities (N, 3), scores (N, 3)" in text
    import onnx

    check_outputs(clf, run(onnx.load(out_path), X3), X3)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["blobs.onnx", "blobs.spm"]


def test_export_json_and_float32(model_file, tmp_path: Path, capsys) -> None:
    import json

    path, _ = model_file
    out_path = tmp_path / "blobs32.onnx"
    assert main(["export", str(path), "--onnx", str(out_path), "--dtype", "float32",
                 "--opset", "13", "--json"]) == 0
    obj = json.loads(capsys.readouterr().out)
    assert obj["dtype"] == "float32" and obj["opset"] == 13 and obj["bytes"] > 0
    assert obj["outputs"] == {"label": ["N"], "probabilities": ["N", 3], "scores": ["N", 3]}
    assert obj["estimator"] == "SparseSVC" and obj["probability"] == "platt"


def test_export_never_overwrites_its_model_file(model_file, capsys) -> None:
    path, _ = model_file
    before = path.read_bytes()
    assert main(["export", str(path), "--onnx", str(path)]) == 2
    assert "is the same file as MODEL" in capsys.readouterr().err
    assert path.read_bytes() == before


def test_export_refuses_a_file_that_is_not_a_model(tmp_path: Path, capsys) -> None:
    bad = tmp_path / "junk.spm"
    bad.write_bytes(b"not a model")
    assert main(["export", str(bad), "--onnx", str(tmp_path / "x.onnx")]) == 2
    assert "Cannot load the model file" in capsys.readouterr().err
    assert not (tmp_path / "x.onnx").exists()


def test_export_without_onnx_says_what_to_install(model_file, tmp_path: Path, capsys,
                                                  monkeypatch) -> None:
    path, _ = model_file
    monkeypatch.setitem(sys.modules, "onnx", None)
    assert main(["export", str(path), "--onnx", str(tmp_path / "x.onnx")]) == 2
    err = capsys.readouterr().err
    assert "sparsify: error: sparsify export --onnx needs onnx, which is not installed" in err
    assert not (tmp_path / "x.onnx").exists()
