"""What an ONNX graph needs of a fitted kernel machine, read from an estimator or a model file.

An exportable machine is the model file's kernel machine (`sparsify.io.saveable`):
decision values ``f(X) = K(X, Z) @ β.T + b``, the kernel as data
(`sparsify.io.kernel_spec`), then a decision rule and optionally a probability
method. `describe_machine` reads one from

- any estimator a model file can hold (`sparsify.io.saveable.describe_estimator`,
  so export and model files agree on which estimators predict by a rule);
- a `sparsify.io.SavedKernelMachine` (a loaded model file: ``sparsify export``);
- a `sparsify.SparseKernelTransformer` such as `sparsify.SparseKernelPCA`, whose
  ``transform`` is f itself (the rule ``"transform"``, which model files do not hold).

It imports neither onnx nor skl2onnx.

Examples
--------
>>> import numpy as np
>>> from sklearn.datasets import make_moons
>>> from sparsify import SparseSVC
>>> X, y = make_moons(40, noise=0.1, random_state=0)
>>> clf = SparseSVC(n_expansion=3, gamma=2.0, max_iter=5, random_state=0).fit(X, y)
>>> machine = describe_machine(clf)
>>> machine.rule, machine.kernel, machine.expansion_vectors.shape, machine.outputs
('binary_sign', {'name': 'rbf', 'gamma': 2.0}, (3, 2), ('label', 'scores'))
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "MAX_TAYLOR_ORDER", "OnnxMachine", "describe_machine", "exportable", "refusal",
]

Array = NDArray[np.float64]

#: The highest Taylor order exported: the graph unrolls the series, a few nodes per term.
MAX_TAYLOR_ORDER = 100

# the estimator methods a transformer's or regressor's export reproduces; a subclass that
# overrides one may compute something else, so it is refused
_TRANSFORMER_METHODS = ("transform", "_machine", "_kernel_features")


@dataclass(frozen=True)
class OnnxMachine:
    """A fitted kernel machine as data: f(X) = K(X, Z) @ β.T + b, a rule, probabilities.

    Attributes
    ----------
    estimator_class : str
        The class it was read from (in messages and the model's metadata).
    kernel : dict
        The kernel description of a model file (`sparsify.io.kernel_spec`).
    kernel_arrays : dict of str to ndarray
        The arrays ``kernel`` names (manifold graphs, Gaussian widths).
    expansion_vectors : ndarray of shape (Nz, d)
    expansion_coef : ndarray of shape (K, Nz)
    intercept : ndarray of shape (K,)
    rule : str
        A model file's decision rule ("binary_sign", "ovr_argmax",
        "softmax_argmax", "outlier_sign", "identity"), or "transform" (the K
        values themselves, a transformer's output).
    probability : str or None
        A model file's probability method ("logistic", "softmax",
        "ovr_logistic", "platt") or None.
    prob_a, prob_b : ndarray of shape (K,) or None
        Platt's A and B (probability "platt" only).
    classes : ndarray of shape (n_classes,) or None
        The labels in the order of the outputs (classifiers only).
    """

    estimator_class: str
    kernel: dict[str, Any]
    kernel_arrays: dict[str, Array]
    expansion_vectors: Array
    expansion_coef: Array
    intercept: Array
    rule: str
    probability: str | None = None
    prob_a: Array | None = None
    prob_b: Array | None = None
    classes: NDArray[Any] | None = field(default=None)

    @property
    def n_features(self) -> int:
        """d, the number of input features."""
        return int(self.expansion_vectors.shape[1])

    @property
    def n_outputs(self) -> int:
        """K, the number of decision values per input."""
        return int(self.expansion_coef.shape[0])

    @property
    def outputs(self) -> tuple[str, ...]:
        """The graph's output names, in order (skl2onnx's names where it has one).

        A classifier: ``label``, ``probabilities`` (with a probability method),
        ``scores`` (the decision values); an outlier detector: ``label`` (+1/−1),
        ``scores``; a regressor or transformer: ``variable``.
        """
        if self.rule in ("identity", "transform"):
            return ("variable",)
        if self.probability is not None:
            return ("label", "probabilities", "scores")
        return ("label", "scores")


def exportable(estimator: Any) -> bool:
    """Whether `describe_machine` can read this estimator (or estimator class), fitted or not.

    Examples
    --------
    >>> from sklearn.svm import SVC
    >>> from sparsify import SparseKernelPCA, SparseSVC
    >>> exportable(SparseSVC()), exportable(SparseKernelPCA), exportable(SVC())
    (True, True, False)
    """
    from sparsify.core.estimator import KernelMachineMixin
    from sparsify.io.machine import SavedKernelMachine
    from sparsify.io.saveable import saveable_estimators

    cls = estimator if isinstance(estimator, type) else type(estimator)
    if cls is SavedKernelMachine or cls in saveable_estimators() or _is_plain_transformer(cls):
        return True
    return callable(getattr(cls, "model_file_rule", None)) and issubclass(cls, KernelMachineMixin)


def _is_plain_transformer(cls: type) -> bool:
    """A transformer whose output is the kernel machine f (no override of how it is computed)."""
    from sparsify.core.transformer import SparseKernelTransformer

    return issubclass(cls, SparseKernelTransformer) and all(
        getattr(cls, name) is getattr(SparseKernelTransformer, name)
        for name in _TRANSFORMER_METHODS)


def refusal(cls: type) -> ValueError:
    """The error for a class that cannot be exported, listing those that can."""
    from sparsify.io.saveable import saveable_estimators

    names = ", ".join(sorted(c.__name__ for c in saveable_estimators()))
    return ValueError(
        f"{cls.__module__}.{cls.__qualname__} cannot be exported to ONNX: sparsify exports the "
        f"kernel machines a model file can hold ({names}, and every estimator of a task that "
        "says its decision rule through model_file_rule(), those of declared formulations "
        "included: docs/plugins.md, \"Model files\"), SparseKernelPCA "
        "and the other SparseKernelTransformer estimators, and a SavedKernelMachine read from "
        "a model file. For a scikit-learn estimator use skl2onnx's own converters.")


def describe_machine(estimator: Any) -> OnnxMachine:
    """The kernel machine a fitted estimator (or a loaded model file) predicts with.

    Parameters
    ----------
    estimator : estimator
        A fitted estimator of a class a model file can hold, a fitted
        `sparsify.SparseKernelTransformer` (`sparsify.SparseKernelPCA`), or a
        `sparsify.io.SavedKernelMachine`.

    Returns
    -------
    OnnxMachine

    Raises
    ------
    sklearn.exceptions.NotFittedError
        If the estimator is not fitted.
    ValueError
        If its class or its kernel cannot be exported, or its Taylor kernel's
        order is above `MAX_TAYLOR_ORDER`.
    """
    from sklearn.utils.validation import check_is_fitted

    from sparsify.io.machine import SavedKernelMachine

    if not exportable(estimator):
        raise refusal(type(estimator))
    check_is_fitted(estimator)
    if type(estimator) is SavedKernelMachine:
        machine = _from_saved(estimator)
    elif _is_plain_transformer(type(estimator)):
        machine = _from_transformer(estimator)
    else:
        machine = _from_saveable(estimator)
    _check_taylor_order(machine.kernel, machine.estimator_class)
    return machine


def _from_saveable(est: Any) -> OnnxMachine:
    from sparsify.io.saveable import describe_estimator

    d = describe_estimator(est)
    arrays = dict(d.arrays)
    return OnnxMachine(
        estimator_class=d.estimator_class,
        kernel=d.kernel,
        kernel_arrays={k: v for k, v in arrays.items() if k.startswith("kernel.")},
        expansion_vectors=arrays["expansion_vectors"],
        expansion_coef=arrays["expansion_coef"],
        intercept=arrays["intercept"],
        rule=d.decision_rule,
        probability=d.probability,
        prob_a=arrays.get("prob_a"),
        prob_b=arrays.get("prob_b"),
        classes=d.classes,
    )


def _from_saved(machine: Any) -> OnnxMachine:
    return OnnxMachine(
        estimator_class=f"SavedKernelMachine ({machine.estimator_class_})",
        kernel=machine.kernel_spec_,
        kernel_arrays=dict(machine.kernel_arrays_),
        expansion_vectors=machine.expansion_vectors_,
        expansion_coef=machine.expansion_coef_,
        intercept=machine.intercept_,
        rule=machine.decision_rule_,
        probability=machine.probability_,
        prob_a=getattr(machine, "prob_a_", None),
        prob_b=getattr(machine, "prob_b_", None),
        classes=getattr(machine, "classes_", None),
    )


def _from_transformer(est: Any) -> OnnxMachine:
    from sparsify.io.kernel_spec import KernelSpecError, describe_kernel

    cls = type(est).__name__
    Z = np.ascontiguousarray(est.expansion_vectors_, dtype=np.float64)
    try:
        kernel, arrays = describe_kernel(est.kernel_, Z)
    except KernelSpecError as exc:
        raise ValueError(f"{cls} cannot be exported to ONNX: {exc}") from exc
    coef = np.asarray(est.expansion_coef_, dtype=np.float64)
    return OnnxMachine(
        estimator_class=cls,
        kernel=kernel,
        kernel_arrays=arrays,
        expansion_vectors=Z,
        expansion_coef=coef.reshape(len(est.intercept_), -1),
        intercept=np.asarray(est.intercept_, dtype=np.float64),
        rule="transform",
    )


def _check_taylor_order(spec: dict[str, Any], cls: str) -> None:
    name = spec["name"]
    if name == "taylor_rbf" and spec["order"] > MAX_TAYLOR_ORDER:
        raise ValueError(
            f"{cls} has a Taylor kernel of order {spec['order']}; the ONNX graph unrolls the "
            f"series (a few nodes per term) and exports orders up to {MAX_TAYLOR_ORDER}. "
            f"Refit with TaylorRBF(order <= {MAX_TAYLOR_ORDER}), or with the RBF kernel, which "
            "the series approximates.")
    for part in spec.get("parts", ()):
        _check_taylor_order(part, cls)
    if name == "manifold":
        _check_taylor_order(spec["base"], cls)
