"""The ONNX nodes of a kernel machine: kernel block, decision values, rule, probabilities.

Every node is a standard ``ai.onnx`` operator that exists since opset 9 with the
same meaning (MatMul, Mul, Add, Sub, Div, Neg, Abs, Max, Exp, Log, Pow,
Sigmoid, Softmax on 2-D input, ArgMax, Greater, Less, Where, Cast, Gather,
Concat, Reshape, Identity), so the graph runs in any runtime and at any opset
from 9 up. Each value is computed with the operations of sparsify's own
prediction, in the same order (`sparsify.kernels`, `sparsify.io.kernel_spec`,
`sparsify.io.machine`), so a float64 graph gives the estimator's values to
round-off.

The nodes go through a small `Emitter` (named constants and nodes), which the
skl2onnx converter (`sparsify.onnx.convert`) implements on skl2onnx's scope and
container; this module imports neither onnx nor skl2onnx.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray

from sparsify.onnx.machine import OnnxMachine

__all__ = ["Emitter", "emit_machine"]

Array = NDArray[np.float64]

# onnx.TensorProto.INT64, for Cast (this module does not import onnx)
_INT64 = 7


class Emitter(Protocol):
    """Where the nodes go: a graph under construction.

    ``dtype`` is the graph's float type (float32 or float64): every real
    constant made by `const` from a float array is cast to it.
    """

    dtype: np.dtype[Any]

    def const(self, value: NDArray[Any], hint: str, *, keep_dtype: bool = False) -> str:
        """Add a constant tensor (an initializer); return its name.

        A float array is cast to ``dtype`` unless ``keep_dtype``.
        """

    def op(self, op_type: str, inputs: list[str], hint: str, output: str | None = None,
           **attrs: Any) -> str:
        """Add one node with one output (named ``output``, else a fresh name); return it."""


class _SquaredNorms:
    """‖x‖² of the input rows, shape (N, 1), made on first use and shared."""

    def __init__(self, g: Emitter, X: str, n_features: int) -> None:
        self.g, self.X, self.n_features = g, X, n_features
        self._name: str | None = None

    def __call__(self) -> str:
        if self._name is None:
            squares = self.g.op("Mul", [self.X, self.X], "x_squares")
            ones = self.g.const(np.ones((self.n_features, 1)), "ones")
            self._name = self.g.op("MatMul", [squares, ones], "x_sq")
        return self._name


class _Block:
    """Products of the input rows with one fixed set of rows R (Z, or a manifold's graph points).

    X Rᵀ and the squared distances are made once and shared by the parts of a sum.
    """

    def __init__(self, g: Emitter, X: str, x_sq: _SquaredNorms, R: Array, hint: str) -> None:
        self.g, self.X, self.x_sq, self.R, self.hint = g, X, x_sq, R, hint
        self._inner: str | None = None
        self._sqdist: str | None = None

    def r_sq(self) -> Array:
        """‖r‖² per row of R."""
        return (self.R * self.R).sum(1)

    def inner(self) -> str:
        """X Rᵀ, shape (N, len(R))."""
        if self._inner is None:
            RT = self.g.const(np.ascontiguousarray(self.R.T), f"{self.hint}_T")
            self._inner = self.g.op("MatMul", [self.X, RT], f"{self.hint}_inner")
        return self._inner

    def sqdist(self) -> str:
        """max(‖x‖² + ‖r‖² − 2⟨x, r⟩, 0), as `sparsify.kernels._sqdist`."""
        if self._sqdist is None:
            g = self.g
            r_sq = g.const(self.r_sq()[None, :], f"{self.hint}_sq")
            total = g.op("Add", [self.x_sq(), r_sq], "sq_sum")
            twice = g.op("Mul", [self.inner(), _scalar(g, 2.0, "two")], "inner_x2")
            diff = g.op("Sub", [total, twice], "sqdist_raw")
            self._sqdist = g.op("Max", [diff, _scalar(g, 0.0, "zero")], "sqdist")
        return self._sqdist


def _scalar(g: Emitter, value: float, hint: str) -> str:
    return g.const(np.array(value, dtype=np.float64), hint)


def _partial_exp(g: Emitter, t: str, order: int) -> str:
    """Σ_{k=0..order} t^k / k! for order ≥ 1, the operations of `sparsify.kernels.taylor`."""
    total = g.op("Add", [t, _scalar(g, 1.0, "one")], "taylor_sum")  # 1 + t/1
    term = t
    for k in range(1, order):
        term = g.op("Div", [g.op("Mul", [term, t], "taylor_term"),
                            _scalar(g, float(k + 1), f"k{k + 1}")], "taylor_term")
        total = g.op("Add", [total, term], "taylor_sum")
    return total


def _kernel(g: Emitter, spec: Mapping[str, Any], arrays: Mapping[str, Array], Z: _Block,
            blocks: dict[str, _Block]) -> str:
    """K(X, Z) of a kernel description, shape (N, Nz)."""
    name = spec["name"]
    if name == "rbf":
        scaled = g.op("Mul", [Z.sqdist(), _scalar(g, -spec["gamma"], "neg_gamma")],
                      "rbf_arg")
        return g.op("Exp", [scaled], "rbf")
    if name == "linear":
        return Z.inner()
    if name == "poly":
        base = g.op("Add", [g.op("Mul", [Z.inner(), _scalar(g, spec["gamma"], "gamma")],
                                 "poly_scaled"),
                            _scalar(g, spec["coef0"], "coef0")], "poly_base")
        return g.op("Pow", [base, _scalar(g, float(spec["degree"]), "degree")], "poly")
    if name == "taylor_rbf":
        gamma = spec["gamma"]
        x_factor = g.op("Exp", [g.op("Mul", [Z.x_sq(), _scalar(g, -gamma, "neg_gamma")],
                                     "taylor_x_arg")], "taylor_x")
        z_factor = g.const(np.exp(-gamma * Z.r_sq())[None, :], "taylor_z")
        scale = g.op("Mul", [x_factor, z_factor], "taylor_scale")
        if spec["order"] == 0:  # the series is 1
            return scale
        t = g.op("Mul", [Z.inner(), _scalar(g, 2 * gamma, "two_gamma")], "taylor_t")
        return g.op("Mul", [scale, _partial_exp(g, t, spec["order"])], "taylor_rbf")
    if name == "gaussian_widths":
        widths = arrays[spec["widths"]]
        negated = g.op("Neg", [Z.sqdist()], "neg_sqdist")
        scaled = g.op("Div", [negated, g.const((2.0 * widths * widths)[None, :], "two_var")],
                      "gaussian_arg")
        return g.op("Exp", [scaled], "gaussian_widths")
    if name == "sum":
        weights = spec["weights"] or [1.0] * len(spec["parts"])
        total = None
        for w, part in zip(weights, spec["parts"], strict=True):
            K = _kernel(g, part, arrays, Z, blocks)
            if w != 1.0:
                K = g.op("Mul", [K, _scalar(g, w, "weight")], "weighted")
            total = K if total is None else g.op("Add", [total, K], "kernel_sum")
        assert total is not None  # a sum has parts (validated)
        return total
    if name == "manifold":
        points = spec["graph_points"]
        if points not in blocks:
            blocks[points] = _Block(g, Z.X, Z.x_sq, arrays[points], "graph_points")
        base = _kernel(g, spec["base"], arrays, Z, blocks)
        to_graph = _kernel(g, spec["base"], arrays, blocks[points], blocks)
        coef = g.const(arrays[spec["graph_coef"]], "graph_coef")
        return g.op("Sub", [base, g.op("MatMul", [to_graph, coef], "graph_term")], "manifold")
    raise ValueError(f"the kernel {name!r} has no ONNX export.")  # validated specs never get here


def _log_sigmoid(g: Emitter, t: str) -> str:
    """log σ(t) = −(max(−t, 0) + log(1 + e^−|t|)), stable for either sign of t."""
    hinge = g.op("Max", [g.op("Neg", [t], "minus_t"), _scalar(g, 0.0, "zero")], "hinge")
    decay = g.op("Exp", [g.op("Neg", [g.op("Abs", [t], "abs_t")], "neg_abs_t")], "decay")
    tail = g.op("Log", [g.op("Add", [decay, _scalar(g, 1.0, "one")], "one_plus")], "log1p")
    return g.op("Neg", [g.op("Add", [hinge, tail], "softplus")], "log_sigmoid")


def _probabilities(g: Emitter, m: OnnxMachine, f: str, output: str) -> str:
    """The probability method of `sparsify.io.machine.SavedKernelMachine.predict_proba`."""
    method = m.probability
    if method == "softmax":
        return g.op("Softmax", [f], "softmax", output=output, axis=1)
    if method == "platt":
        assert m.prob_a is not None and m.prob_b is not None
        t = g.op("Add", [g.op("Mul", [f, g.const(m.prob_a[None, :], "prob_a")], "platt_af"),
                         g.const(m.prob_b[None, :], "prob_b")], "platt_t")
        arg = g.op("Neg", [t], "platt_arg")  # P(+1 | f) = σ(−(A f + B))
    else:  # logistic (two classes) or ovr_logistic
        arg = f
    if m.n_outputs == 1:
        p = g.op("Sigmoid", [arg], "p_positive")
        p_negative = g.op("Sub", [_scalar(g, 1.0, "one"), p], "p_negative")
        return g.op("Concat", [p_negative, p], "proba", output=output, axis=1)
    # one-vs-rest sigmoids s_k normalised: s_k / Σ s_j = softmax(log s)_k, which is also
    # the package's log-domain form where every s_k underflows
    return g.op("Softmax", [_log_sigmoid(g, arg)], "ovr_proba", output=output, axis=1)


def _label(g: Emitter, m: OnnxMachine, f: str, output: str) -> str:
    """The decision rule of `sparsify.io.machine.SavedKernelMachine.predict`."""
    if m.rule in ("binary_sign", "outlier_sign"):
        flat = g.op("Reshape", [f, g.const(np.array([-1], dtype=np.int64), "flat")], "f_flat")
        if m.rule == "outlier_sign":  # +1 where f >= 0, else -1
            negative = g.op("Less", [flat, _scalar(g, 0.0, "zero")], "is_outlier")
            return g.op("Where", [negative, g.const(np.array(-1, dtype=np.int64), "minus_one"),
                                  g.const(np.array(1, dtype=np.int64), "plus_one")],
                        "outlier_label", output=output)
        positive = g.op("Greater", [flat, _scalar(g, 0.0, "zero")], "is_positive")
        index = g.op("Cast", [positive], "class_index", to=_INT64)
    else:  # ovr_argmax, softmax_argmax: the first maximum on ties, as numpy's argmax
        index = g.op("ArgMax", [f], "class_index", axis=1, keepdims=0)
    assert m.classes is not None
    classes = g.const(label_values(m.classes), "classes", keep_dtype=True)
    return g.op("Gather", [classes, index], "label", output=output, axis=0)


def label_values(classes: NDArray[Any]) -> NDArray[Any]:
    """The labels as an ONNX tensor holds them: int64, float64, bool or str.

    Examples
    --------
    >>> label_values(np.array([1, 2], dtype=np.uint8)).dtype, label_values(np.array(["a"])).dtype
    (dtype('int64'), dtype('O'))
    """
    kind = classes.dtype.kind
    if kind in "iu":
        if kind == "u" and classes.size and int(classes.max()) > np.iinfo(np.int64).max:
            raise ValueError(f"the class labels {classes.tolist()} do not fit int64, the widest "
                             "integer of ONNX labels; refit with smaller integer labels or "
                             "string labels.")
        return classes.astype(np.int64)
    if kind == "f":
        return classes.astype(np.float64)
    if kind == "b":
        return classes.astype(bool)
    return np.array([str(c) for c in classes.tolist()], dtype=object)


def emit_machine(g: Emitter, m: OnnxMachine, X: str, outputs: Mapping[str, str]) -> None:
    """Add the nodes computing the machine's outputs from the input ``X`` (N, d).

    Parameters
    ----------
    g : Emitter
    m : OnnxMachine
    X : str
        The input's name; of type ``g.dtype``.
    outputs : dict of str to str
        The graph name of each output in ``m.outputs`` (``label``,
        ``probabilities``, ``scores``, ``variable``).
    """
    x_sq = _SquaredNorms(g, X, m.n_features)
    Z = _Block(g, X, x_sq, m.expansion_vectors, "Z")
    K = _kernel(g, m.kernel, m.kernel_arrays, Z, {})
    coef = g.const(np.ascontiguousarray(m.expansion_coef.T), "coef")
    raw = g.op("MatMul", [K, coef], "machine")
    scores = outputs.get("scores") or outputs.get("variable")
    f = g.op("Add", [raw, g.const(m.intercept[None, :], "intercept")], "decision", output=scores)
    if "label" in outputs:
        _label(g, m, f, outputs["label"])
    if "probabilities" in outputs:
        _probabilities(g, m, f, outputs["probabilities"])
