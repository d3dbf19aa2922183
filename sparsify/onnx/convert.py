"""skl2onnx converters for sparsify's kernel machines, and `to_onnx`.

`register_converters` registers, for each exportable estimator class, a parser
(the outputs: `sparsify.onnx.machine.OnnxMachine.outputs`), a shape calculator
and a converter (the nodes of `sparsify.onnx.graph.emit_machine`) with
skl2onnx, so ``skl2onnx.to_onnx`` converts a scikit-learn pipeline that ends in
one. `to_onnx` registers them and converts one estimator (or a loaded model
file) with skl2onnx, so both routes build the same graph.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from sparsify.onnx.graph import emit_machine, label_values
from sparsify.onnx.machine import OnnxMachine, describe_machine, exportable, refusal

if TYPE_CHECKING:
    import onnx

__all__ = ["DEFAULT_OPSET", "MAX_GRAPH_NODES", "MIN_OPSET", "check_graph", "max_opset",
           "register_converters", "require_onnx", "to_onnx"]

#: The ai.onnx opset `to_onnx` targets unless told: onnxruntime runs it since 1.13 (2022).
DEFAULT_OPSET = 17
#: The oldest opset the graphs need (every operator they use exists there with its meaning).
MIN_OPSET = 9
#: The most nodes an exported graph may have: skl2onnx's conversion time grows faster than
#: the nodes (measured: 0.4 s at 300 nodes, 8 s at 3000, 160 s at 12 000); a Taylor kernel of
#: order k costs about 2k nodes, a sum its parts'.
MAX_GRAPH_NODES = 4096

_INSTALL_HINT = (
    "install them with: pip install onnx skl2onnx (in a checkout of sparsify: pip install -e "
    "'.[onnx]'); onnxruntime runs the exported graphs: pip install onnxruntime"
)


def require_onnx(what: str = "sparsify.to_onnx") -> None:
    """Fail with an ImportError that says what to install, unless onnx and skl2onnx import.

    Examples
    --------
    >>> require_onnx()  # nothing happens where both are installed
    """
    missing = []
    for name in ("onnx", "skl2onnx"):
        try:
            __import__(name)
        except ImportError:
            missing.append(name)
    if missing:
        raise ImportError(f"{what} needs {' and '.join(missing)}, which "
                          f"{'is' if len(missing) == 1 else 'are'} not installed; "
                          f"{_INSTALL_HINT}.")


def _alias(cls: type) -> str:
    return f"Sparsify{cls.__qualname__}"


def _float_dtype(variable_type: Any, cls: str) -> np.dtype[Any]:
    """The graph's float type from its input's skl2onnx type (float or double only)."""
    from skl2onnx.common.data_types import DoubleTensorType, FloatTensorType

    if isinstance(variable_type, DoubleTensorType):
        return np.dtype(np.float64)
    if isinstance(variable_type, FloatTensorType):
        return np.dtype(np.float32)
    raise ValueError(f"{cls} converts float or double input to ONNX; got "
                     f"{type(variable_type).__name__}. Give the input as "
                     "DoubleTensorType (float64) or FloatTensorType (float32).")


def _label_type(classes: NDArray[Any]) -> Any:
    from skl2onnx.common.data_types import (
        BooleanTensorType,
        DoubleTensorType,
        Int64TensorType,
        StringTensorType,
    )

    kind = label_values(classes).dtype.kind
    return {"i": Int64TensorType, "f": DoubleTensorType, "b": BooleanTensorType}.get(
        kind, StringTensorType)


def _output_types(machine: OnnxMachine, input_type: Any) -> list[Any]:
    """The skl2onnx type of each output (shapes are set by the shape calculator)."""
    from skl2onnx.common.data_types import DoubleTensorType, FloatTensorType, Int64TensorType

    real = (FloatTensorType if _float_dtype(input_type, machine.estimator_class) == np.float32
            else DoubleTensorType)
    types = []
    for name in machine.outputs:
        if name != "label":
            types.append(real)
        elif machine.classes is None:  # an outlier detector: +1 / -1
            types.append(Int64TensorType)
        else:
            types.append(_label_type(machine.classes))
    return types


def _parse(scope: Any, model: Any, inputs: list[Any], custom_parsers: Any = None) -> list[Any]:
    """Declare the operator and its outputs (label, probabilities, scores; or variable)."""
    machine = describe_machine(model)
    operator = scope.declare_local_operator(_alias(type(model)), model)
    operator.inputs = inputs
    for name, kind in zip(machine.outputs, _output_types(machine, inputs[0].type), strict=True):
        operator.outputs.append(scope.declare_local_variable(name, kind()))
    return list(operator.outputs)


def _calculate_shapes(operator: Any) -> None:
    """Output shapes: labels (N,), real outputs (N, K), (N, n_classes) for probabilities."""
    machine = describe_machine(operator.raw_operator)
    source = operator.inputs[0].type
    width = source.shape[1] if len(source.shape) == 2 else None
    if width is not None and width != machine.n_features:
        raise ValueError(f"{machine.estimator_class} was fitted on {machine.n_features} "
                         f"features, but its ONNX input has {width}; declare the input with "
                         f"shape [None, {machine.n_features}].")
    n = source.shape[0] if source.shape else None
    for variable, kind in zip(operator.outputs, _output_types(machine, source), strict=True):
        if variable.raw_name == "label":
            shape = [n]
        elif variable.raw_name == "probabilities":
            assert machine.classes is not None
            shape = [n, len(machine.classes)]
        else:
            shape = [n, machine.n_outputs]
        variable.type = kind(shape)


class _SklearnOnnxEmitter:
    """`sparsify.onnx.graph.Emitter` on skl2onnx's scope (names) and container (nodes)."""

    def __init__(self, scope: Any, container: Any, dtype: np.dtype[Any]) -> None:
        self.scope, self.container, self.dtype = scope, container, dtype

    def const(self, value: NDArray[Any], hint: str, *, keep_dtype: bool = False) -> str:
        from onnx import TensorProto, numpy_helper

        value = np.asarray(value)
        if value.dtype.kind == "f" and not keep_dtype:
            value = value.astype(self.dtype)
        name = self.scope.get_unique_variable_name(hint)
        if value.dtype == object:  # labels
            self.container.add_initializer(name, TensorProto.STRING, list(value.shape),
                                           [str(v).encode() for v in value.ravel()])
        else:  # raw bytes: every float64 bit is kept
            tensor = numpy_helper.from_array(np.ascontiguousarray(value), name)
            self.container.add_initializer(name, tensor.data_type, list(value.shape), tensor)
        return name

    def op(self, op_type: str, inputs: list[str], hint: str, output: str | None = None,
           **attrs: Any) -> str:
        out = output if output is not None else self.scope.get_unique_variable_name(hint)
        self.container.add_node(op_type, inputs, [out],
                                name=self.scope.get_unique_operator_name(op_type), **attrs)
        return out


class _DryRun:
    """An `sparsify.onnx.graph.Emitter` that builds nothing: it counts the nodes and finds the
    first real constant that its graph's float type cannot hold (overflow, or a nonzero that
    underflows to 0)."""

    def __init__(self, dtype: np.dtype[Any]) -> None:
        self.dtype, self.nodes = dtype, 0
        self.problem: str | None = None

    def const(self, value: NDArray[Any], hint: str, *, keep_dtype: bool = False) -> str:
        value = np.asarray(value)
        if (self.problem is None and value.dtype.kind == "f" and not keep_dtype
                and self.dtype != value.dtype and value.size):
            self.problem = _unrepresentable(value, self.dtype, f"the constant {hint!r}")
        return hint

    def op(self, op_type: str, inputs: list[str], hint: str, output: str | None = None,
           **attrs: Any) -> str:
        self.nodes += 1
        return output or hint


def _unrepresentable(values: NDArray[Any], dtype: np.dtype[Any], what: str) -> str | None:
    """Why ``values`` cannot be held in ``dtype`` (a magnitude beyond its range), or None."""
    info = np.finfo(dtype)
    magnitude = np.abs(values[np.isfinite(values)])
    if magnitude.size and magnitude.max() > info.max:
        return f"{what} reaches {magnitude.max():.3g}, beyond {dtype.name}'s largest {info.max:.3g}"
    nonzero = magnitude[magnitude > 0]
    if nonzero.size and nonzero.min() < info.smallest_subnormal:
        return (f"{what} holds {nonzero.min():.3g}, which {dtype.name} rounds to 0 (its "
                f"smallest is {info.smallest_subnormal:.3g})")
    return None


def check_graph(machine: OnnxMachine, dtype: Any = np.float64) -> int:
    """Refuse, before skl2onnx runs, a graph too large to convert or a float type too narrow.

    The graph is emitted once without being built: more than `MAX_GRAPH_NODES`
    nodes, or (float32) a constant beyond float32's range or decision values at
    the model's own XVs beyond it, is a ValueError saying what to change.
    Returns the number of nodes.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsify.onnx.machine import OnnxMachine
    >>> m = OnnxMachine("X", {"name": "rbf", "gamma": 1.0}, {}, np.zeros((2, 1)),
    ...                 np.array([[1e300, 1.0]]), np.zeros(1), "identity")
    >>> check_graph(m) > 0
    True
    >>> check_graph(m, np.float32)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: X cannot be exported in float32: the constant 'coef' reaches 1e+300, ...
    """
    from sparsify.io.kernel_spec import kernel_features

    dtype = np.dtype(dtype)
    dry = _DryRun(dtype)
    emit_machine(dry, machine, "X", {name: name for name in machine.outputs})
    if dry.nodes > MAX_GRAPH_NODES:
        raise ValueError(f"The ONNX graph of this {machine.estimator_class} would have "
                         f"{dry.nodes} nodes, more than the {MAX_GRAPH_NODES} an export "
                         "converts in reasonable time (a Taylor kernel of order k takes about 2k "
                         "nodes, a sum of kernels its parts' sum); refit with fewer kernels in the "
                         "sum or a lower Taylor order.")
    problem = dry.problem
    if problem is None and dtype != np.float64 and len(machine.expansion_vectors):
        Z = machine.expansion_vectors[:256]
        with np.errstate(all="ignore"):
            scores = (kernel_features(machine.kernel, machine.kernel_arrays, Z,
                                      machine.expansion_vectors) @ machine.expansion_coef.T
                      + machine.intercept)
            if machine.prob_a is not None and machine.prob_b is not None:
                scores = scores * machine.prob_a + machine.prob_b
        magnitude = np.abs(scores[np.isfinite(scores)])
        if magnitude.size and magnitude.max() > np.finfo(dtype).max:
            problem = (f"its decision values reach {magnitude.max():.3g} at its own XVs, beyond "
                       f"{dtype.name}'s largest {np.finfo(dtype).max:.3g}")
    if problem is not None:
        raise ValueError(f"{machine.estimator_class} cannot be exported in {dtype.name}: "
                         f"{problem}, so the graph would compute infinities or NaN. Export it in "
                         "float64 (dtype='float64'; sparsify export --dtype float64), which "
                         "gives the model's own values.")
    return dry.nodes


def max_opset() -> int:
    """The newest ai.onnx opset both the installed onnx and skl2onnx know."""
    import onnx
    import skl2onnx

    return int(min(onnx.defs.onnx_opset_version(),
                   getattr(skl2onnx, "__max_supported_opset__", DEFAULT_OPSET)))


def _convert(scope: Any, operator: Any, container: Any) -> None:
    machine = describe_machine(operator.raw_operator)
    source = operator.inputs[0]
    emitter = _SklearnOnnxEmitter(scope, container,
                                  _float_dtype(source.type, machine.estimator_class))
    outputs = {name: variable.full_name
               for name, variable in zip(machine.outputs, operator.outputs, strict=True)}
    emit_machine(emitter, machine, source.full_name, outputs)


def register_converters(*classes: type) -> None:
    """Register sparsify's converters with skl2onnx (idempotent).

    Registers every class sparsify exports (those a model file can hold,
    `sparsify.SparseKernelPCA`, `sparsify.io.SavedKernelMachine`) and the
    ``classes`` given: a plugin's estimator class, or a regressor or
    transformer class made from a formulation. Then ``skl2onnx.to_onnx``
    converts a pipeline ending in one of them; the graph is `to_onnx`'s.

    Parameters
    ----------
    *classes : type
        More estimator classes to register.

    Raises
    ------
    ImportError
        If onnx or skl2onnx is not installed.
    ValueError
        If a class given cannot be exported.

    Examples
    --------
    >>> import numpy as np
    >>> from skl2onnx import to_onnx as skl2onnx_to_onnx
    >>> from sklearn.datasets import make_moons
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import StandardScaler
    >>> from sparsify import SparseSVC
    >>> X, y = make_moons(60, noise=0.1, random_state=0)
    >>> pipe = make_pipeline(StandardScaler(), SparseSVC(4, max_iter=10, random_state=0))
    >>> pipe = pipe.fit(X, y)
    >>> register_converters()
    >>> model = skl2onnx_to_onnx(pipe, X[:1], target_opset=17)
    >>> [output.name for output in model.graph.output]
    ['label', 'scores']
    """
    require_onnx("sparsify.onnx.register_converters")
    from skl2onnx import update_registered_converter

    from sparsify.algorithms.kernel_pca.estimator import SparseKernelPCA
    from sparsify.io.machine import SavedKernelMachine
    from sparsify.io.saveable import saveable_estimators

    for cls in classes:
        if not exportable(cls):
            raise refusal(cls)
    for cls in (*saveable_estimators(), SparseKernelPCA, SavedKernelMachine, *classes):
        # no ZipMap: probabilities are one (N, n_classes) tensor; {"zipmap": False} is accepted
        update_registered_converter(cls, _alias(cls), _calculate_shapes, _convert,
                                    parser=_parse, options={"zipmap": [False]})


def _graph_dtype(dtype: Any, X_sample: NDArray[Any] | None) -> np.dtype[Any]:
    if dtype is None:
        return np.dtype(np.float32 if X_sample is not None and X_sample.dtype == np.float32
                        else np.float64)
    try:
        out = np.dtype(dtype)
    except TypeError:
        out = None
    if out not in (np.float32, np.float64):
        raise ValueError(f"The 'dtype' parameter of to_onnx must be 'float64', 'float32' or "
                         f"None. Got {dtype!r} instead.")
    return out


def to_onnx(
    estimator: Any,
    X_sample: ArrayLike | None = None,
    *,
    dtype: Any = None,
    target_opset: int | None = None,
) -> onnx.ModelProto:
    """Export a fitted kernel machine to ONNX: its predictions as a graph of standard operators.

    The graph computes the decision values f(X) = K(X, Z) β.T + b with the
    kernel of the estimator (rbf, poly, linear, Taylor, sums, manifold), then
    its decision rule and, where it has one, its probability method, with the
    operations sparsify uses itself. Its input is ``X``, shape (N, d); its
    outputs:

    - a classifier: ``label`` (N,), the labels of `predict`; ``probabilities``
      (N, n_classes), those of `predict_proba` (fitted with probabilities
      only); ``scores`` (N, K), `decision_function` (K = 1 for two classes);
    - an outlier detector: ``label`` (N,), +1 or −1 as `predict`;
      ``scores`` (N, 1), `decision_function`;
    - a regressor: ``variable`` (N, 1), `predict`;
    - a transformer (`sparsify.SparseKernelPCA`): ``variable`` (N, k), `transform`.

    In float64 the outputs are the estimator's to round-off (the tests check
    10⁻⁶ relative and identical labels). float32 halves the model and runs
    faster; its decision values differ from float64's by the rounding of
    float32 arithmetic (on USPS 7 × 10⁻⁶ of their largest magnitude, no label
    changed: docs/results/onnx.md; the bound is in docs/onnx.md), which can
    change the label of a point within that distance of a decision boundary.

    Parameters
    ----------
    estimator : estimator
        Fitted: any estimator a model file can hold (`SparseSVC`,
        `SparseKernelRidge`, `SparseSVR`, `SparseOneClassSVM`, ...), a
        `sparsify.SparseKernelTransformer` (`SparseKernelPCA`), or a
        `sparsify.io.SavedKernelMachine` (a loaded model file).
    X_sample : array-like of shape (n_samples, n_features), optional
        Rows of the input; only their width (checked against the estimator)
        and their dtype (see ``dtype``) are used.
    dtype : {"float64", "float32"} or None, default=None
        The graph's input and arithmetic. None: float32 if ``X_sample`` is a
        float32 array, else float64.
    target_opset : int or None, default=None
        The ai.onnx opset; None: `DEFAULT_OPSET` (17). The graph's own operators
        need 9 or later.

    Returns
    -------
    onnx.ModelProto
        With metadata ``sparsify_version``, ``estimator``, ``decision_rule``,
        ``probability``, ``kernel`` (JSON) and ``dtype``.

    Raises
    ------
    ImportError
        If onnx or skl2onnx is not installed.
    sklearn.exceptions.NotFittedError
        If the estimator is not fitted.
    ValueError
        If the estimator, its kernel or ``X_sample`` cannot be exported, saying why.

    Examples
    --------
    >>> import numpy as np
    >>> import onnxruntime as ort
    >>> from sklearn.datasets import make_moons
    >>> from sparsify import SparseSVC, to_onnx
    >>> X, y = make_moons(100, noise=0.1, random_state=0)
    >>> clf = SparseSVC(n_expansion=6, gamma=2.0, random_state=0).fit(X, y)
    >>> model = to_onnx(clf, X[:1])
    >>> session = ort.InferenceSession(model.SerializeToString(),
    ...                                providers=["CPUExecutionProvider"])
    >>> label, scores = session.run(None, {"X": X})
    >>> bool((label == clf.predict(X)).all())
    True
    >>> bool(np.allclose(scores.ravel(), clf.decision_function(X), rtol=1e-12, atol=0))
    True
    """
    require_onnx()
    machine = describe_machine(estimator)  # every check before skl2onnx runs
    sample = None
    if X_sample is not None:
        sample = np.asarray(X_sample)
        if sample.ndim != 2 or sample.shape[1] != machine.n_features:
            raise ValueError(f"X_sample has shape {sample.shape}, but {machine.estimator_class} "
                             f"was fitted on {machine.n_features} features; give rows of shape "
                             f"(n_samples, {machine.n_features}).")
    graph_dtype = _graph_dtype(dtype, sample)
    newest = max_opset()
    if target_opset is not None and (isinstance(target_opset, bool)
                                     or not isinstance(target_opset, int)
                                     or not MIN_OPSET <= target_opset <= newest):
        raise ValueError(f"The 'target_opset' parameter of to_onnx must be an int in the range "
                         f"[{MIN_OPSET}, {newest}] (the newest opset the installed onnx and "
                         f"skl2onnx know) or None. Got {target_opset!r} instead.")
    check_graph(machine, graph_dtype)
    register_converters(type(estimator))
    from onnx import helper
    from skl2onnx import convert_sklearn
    from skl2onnx.common.data_types import DoubleTensorType, FloatTensorType

    import sparsify

    tensor = FloatTensorType if graph_dtype == np.float32 else DoubleTensorType
    model = convert_sklearn(estimator, initial_types=[("X", tensor([None, machine.n_features]))],
                            target_opset=DEFAULT_OPSET if target_opset is None else target_opset)
    helper.set_model_props(model, {
        "sparsify_version": sparsify.__version__,
        "estimator": machine.estimator_class,
        "decision_rule": machine.rule,
        "probability": str(machine.probability),
        "kernel": json.dumps(machine.kernel),
        "dtype": graph_dtype.name,
    })
    return model
