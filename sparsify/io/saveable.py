"""Which fitted estimators a model file can hold, and what it records of each.

A model file holds a kernel machine: decision values ``f(X) = K(X, Z) @ β.T + b``
followed by one decision rule (`DECISION_RULES`) and, optionally, one way to
turn decision values into probabilities (`PROBABILITY_METHODS`). An estimator
can be saved only if its own ``decision_function``, ``predict`` and
``predict_proba`` are exactly that. Two ways say so:

- the public hook ``model_file_rule(self)`` (`sparsify.core.model_rule`): every
  estimator of a task of the fit driver has it (classifier, multi-output
  classifier, regressor, outlier detector; the built-ins and any estimator of
  a declared formulation, made on the spot or written by a plugin), and a
  plugin's estimator that predicts otherwise defines its own (the example
  plugin's ``SparseSVDD``). A subclass that overrides how it predicts without
  declaring its rule is refused with a message naming the hook;
- a table of the baselines, which have no task (`saveable_estimators`),
  matched by identity: a subclass may predict differently, so it is refused.

Examples
--------
>>> import numpy as np
>>> from sklearn.datasets import make_moons
>>> from sparsify import SparseSVC
>>> X, y = make_moons(40, noise=0.1, random_state=0)
>>> clf = SparseSVC(n_expansion=3, gamma=2.0, max_iter=5, random_state=0).fit(X, y)
>>> d = describe_estimator(clf)
>>> d.decision_rule, d.formulation, d.kernel
('binary_sign', 'svm', {'name': 'rbf', 'gamma': 2.0})
>>> sorted(d.arrays)
['expansion_coef', 'expansion_vectors', 'intercept']
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from sparsify.io.kernel_spec import KernelSpecError, describe_kernel

if TYPE_CHECKING:
    from sparsify.kernels import Kernel

__all__ = [
    "DECISION_RULES",
    "PROBABILITY_METHODS",
    "Description",
    "describe_estimator",
    "json_value",
    "saveable_estimators",
]

Array = NDArray[np.float64]

#: How decision values f (n_samples, n_outputs) become predictions.
DECISION_RULES = {
    "binary_sign": "one output; classes[1] where f > 0, else classes[0]",
    "ovr_argmax": "one output per class (one-vs-rest); classes[argmax_k f_k]",
    "softmax_argmax": "one output per class (a joint softmax model); classes[argmax_k f_k]",
    "multioutput_argmax": "one output per class, fitted in one problem (a multi-output "
                          "formulation); classes[argmax_k f_k]",
    "outlier_sign": "one output, no classes; +1 (inlier) where f >= 0, else -1 (outlier)",
    "identity": "one output, no classes (a regressor); the prediction is f itself",
}

#: How decision values become class probabilities (columns in the order of classes).
PROBABILITY_METHODS = {
    "logistic": "two classes: P(classes[1]) = 1 / (1 + exp(-f)), P(classes[0]) = 1 - that",
    "softmax": "P_k = exp(f_k) / sum_j exp(f_j)",
    "ovr_logistic": "s_k = 1 / (1 + exp(-f_k)); P_k = s_k / sum_j s_j",
    "platt": "s_k = 1 / (1 + exp(A_k f_k + B_k)) (arrays prob_a, prob_b); two classes: "
             "P(classes[1]) = s, P(classes[0]) = 1 - s; more: P_k = s_k / sum_j s_j (where "
             "every s_k underflows to 0, the same normalisation of log s_k)",
}

#: The probability methods each decision rule may come with.
RULE_PROBABILITIES: dict[str, tuple[str | None, ...]] = {
    "binary_sign": (None, "logistic", "platt"),
    "ovr_argmax": (None, "ovr_logistic", "platt"),
    "softmax_argmax": (None, "softmax"),
    "multioutput_argmax": (None,),
    "outlier_sign": (None,),
    "identity": (None,),
}

#: The rules with one output and no classes.
RULES_WITHOUT_CLASSES = ("outlier_sign", "identity")

#: The model format version each decision rule first appeared in (1 when not listed): a file
#: is written with the lowest version that holds its rule, so older readers read every file
#: they can, and refuse the others as "newer: upgrade sparsify".
RULE_FORMAT_VERSIONS = {"identity": 2, "multioutput_argmax": 3}

#: The keys ``model_file_rule()`` may return (`sparsify.core.model_rule.ModelFileRule`).
RULE_KEYS = ("decision_rule", "probability", "formulation")


@dataclass(frozen=True)
class _Entry:
    """How one baseline class predicts (beyond decision values)."""

    formulation: str | None = None
    multi_rule: str = "ovr_argmax"  # the rule with more than one output
    probability: Callable[[Any, int], str | None] = lambda est, n_outputs: None


def _logistic(est: Any, n_outputs: int) -> str:
    return "logistic" if n_outputs == 1 else "softmax"


def _rvm(est: Any, n_outputs: int) -> str:
    return "logistic" if n_outputs == 1 else "ovr_logistic"


def _rule_table() -> dict[type, _Entry]:
    """The estimators without a task (no ``model_file_rule``) a model file holds: exactly these
    classes."""
    import sparsify

    return {
        sparsify.SemiSupervisedSVC: _Entry("s3vm"),
        sparsify.ReducedSVC: _Entry(),
        sparsify.ReducedSetSVC: _Entry(),
        sparsify.RVMClassifier: _Entry(probability=_rvm),
        sparsify.ImportVectorMachine: _Entry(multi_rule="softmax_argmax", probability=_logistic),
        sparsify.KernelMatchingReduction: _Entry(),
    }


def saveable_estimators() -> tuple[type, ...]:
    """sparsify's estimator classes a model file can hold (and `sparsify.to_onnx` exports).

    The built-ins of the fit driver's tasks, which say their rule through
    ``model_file_rule`` (as does any estimator of a declared formulation), and
    the baselines of a fixed table.

    Examples
    --------
    >>> sorted(cls.__name__ for cls in saveable_estimators())[:3]
    ['ImportVectorMachine', 'KernelMatchingReduction', 'RVMClassifier']
    """
    import sparsify

    return (sparsify.SparseSVC, sparsify.SparseKFD, sparsify.SparseOneClassSVM,
            sparsify.SparseKernelLogisticRegression, sparsify.SparseKernelRidge,
            sparsify.SparseSVR, *_rule_table())


@dataclass
class Description:
    """Everything a model file records of one fitted estimator (see `describe_estimator`)."""

    estimator_class: str
    estimator_module: str
    params: dict[str, Any]
    params_not_saved: list[str]
    formulation: str | None
    kernel: dict[str, Any]
    n_features_in: int
    feature_names_in: list[str] | None
    classes: NDArray[Any] | None
    decision_rule: str
    probability: str | None
    offset: float | None
    arrays: dict[str, Array] = field(default_factory=dict)


def json_value(value: Any, where: str) -> Any:
    """``value`` as plain JSON (numpy scalars become Python ones); ValueError if it is not one.

    Examples
    --------
    >>> json_value({"a": [1, 2.5, None], "b": np.float64(0.25)}, "metadata")
    {'a': [1, 2.5, None], 'b': 0.25}
    >>> json_value({"a": float("nan")}, "metadata")
    Traceback (most recent call last):
    ...
    ValueError: metadata['a'] is nan; JSON has no NaN or infinity: store None or a string.
    """
    if isinstance(value, np.generic) and not isinstance(value, np.void | np.datetime64
                                                        | np.timedelta64):
        value = value.item()
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{where} is {value}; JSON has no NaN or infinity: store None or "
                             "a string.")
        return float(value)
    if isinstance(value, list | tuple):
        return [json_value(v, f"{where}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, Mapping):
        out = {}
        for key, v in value.items():
            if not isinstance(key, str):
                raise ValueError(f"{where} has the key {key!r}; JSON keys are strings.")
            out[key] = json_value(v, f"{where}[{key!r}]")
        return out
    raise ValueError(f"{where} is a {type(value).__name__}; a model file holds JSON values "
                     "only (str, int, float, bool, None, and lists and dicts of them): convert "
                     "it, e.g. with .tolist() or str().")


def _params(est: Any) -> tuple[dict[str, Any], list[str]]:
    """Constructor parameters that are plain JSON values, and the names of the others."""
    kept, dropped = {}, []
    for key, value in sorted(est.get_params(deep=False).items()):
        try:
            kept[key] = json_value(value, key)
        except ValueError:
            dropped.append(key)  # a Kernel, a callback, a RandomState: not data
    return kept, dropped


def _float_array(value: Any, what: str, shape: tuple[int, ...] | None = None) -> Array:
    out = np.asarray(value, dtype=np.float64)
    if shape is not None and out.shape != shape:
        raise ValueError(f"{what} has shape {out.shape}; expected {shape}.")
    if not np.isfinite(out).all():
        raise ValueError(f"{what} holds NaN or infinite values; a model file holds finite "
                         "numbers only. Refit the estimator.")
    return np.ascontiguousarray(out)


def check_saveable(est: Any, kernel: Kernel | None = None) -> None:
    """Refuse, before any fitting, an estimator (and kernel) a model file cannot hold.

    Parameters
    ----------
    est : estimator
        Fitted or not: only its class is checked.
    kernel : Kernel, optional
        The kernel it will use; checked when given.

    Raises
    ------
    ValueError
        Saying why and what to do instead.

    Examples
    --------
    >>> from sparsify import RBF, SparseSVC
    >>> check_saveable(SparseSVC(), RBF(0.5))
    >>> from sklearn.svm import SVC
    >>> check_saveable(SVC())  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: sklearn.svm._classes.SVC cannot be saved as a model file: ...
    """
    from sparsify.kernels.manifold import ManifoldKernel

    _check_saveable(est)
    # a manifold kernel is stored bound to the fitted XVs, which do not exist yet
    if kernel is not None and not isinstance(kernel, ManifoldKernel):
        try:
            describe_kernel(kernel, np.zeros((1, 1)))
        except KernelSpecError as exc:
            raise ValueError(f"{type(est).__name__} cannot be saved as a model file: {exc}") \
                from exc


def _has_rule_hook(est: Any) -> bool:
    from sparsify.core.estimator import KernelMachineMixin

    return callable(getattr(est, "model_file_rule", None)) and isinstance(est, KernelMachineMixin)


def _check_saveable(est: Any) -> None:
    """ValueError unless the estimator declares its rule (``model_file_rule``) or is in the
    baselines' table; a task's estimator that overrides how it predicts is refused here too."""
    from sparsify.core.model_rule import refuse_overridden

    cls = type(est)
    if cls in _rule_table():
        return
    if _has_rule_hook(est):
        refuse_overridden(cls)
        return
    names = ", ".join(sorted(c.__name__ for c in saveable_estimators()))
    raise ValueError(
        f"{cls.__module__}.{cls.__qualname__} cannot be saved as a model file: a model file "
        "holds kernel machines whose predictions it can describe by data: the estimators of "
        "sparsify's tasks (SparseKernelClassifier, SparseMultiOutputClassifier, "
        "SparseKernelRegressor, SparseOutlierDetector and their subclasses, the estimators "
        "of declared formulations included), which say their decision rule through "
        f"model_file_rule(), and {names}. An estimator that predicts by one of the model "
        "file's rules can define model_file_rule() (docs/plugins.md, \"Model files\"); "
        "otherwise save it with pickle or joblib.dump, and load only pickles you trust."
    )


def _rule(est: Any, n_outputs: int) -> tuple[str, str | None, str | None]:
    """(decision rule, probability method, formulation) of a saveable estimator."""
    cls = type(est).__name__
    entry = _rule_table().get(type(est))
    if entry is not None:
        rule = "binary_sign" if n_outputs == 1 else entry.multi_rule
        return rule, entry.probability(est, n_outputs), entry.formulation
    info = est.model_file_rule()  # raises ValueError when this fitted model cannot be saved
    where = f"{cls}.model_file_rule()"
    if np.any(np.asarray(getattr(est, "diagonal_coef_", 0.0)) != 0):
        raise ValueError(
            f"{cls} cannot be saved as a model file: its decision function has a k(x, x) term "
            "(diagonal_coef_, from Declaration.diagonal_coef), which a model file does not "
            "describe. Save it with pickle or joblib.dump instead.")
    if not isinstance(info, Mapping) or not set(info) <= set(RULE_KEYS):
        raise ValueError(f"{where} returned {info!r}; it must return a dict with the keys "
                         f"'decision_rule' and, optionally, 'probability' and 'formulation'.")
    rule, probability = info.get("decision_rule"), info.get("probability")
    formulation = info.get("formulation")
    if rule not in DECISION_RULES:
        raise ValueError(f"{where} returned the decision rule {rule!r}; it must be one of "
                         f"{sorted(DECISION_RULES)}.")
    if probability not in RULE_PROBABILITIES[rule]:
        raise ValueError(f"{where} returned the probability method {probability!r} with the "
                         f"decision rule {rule!r}, which takes {list(RULE_PROBABILITIES[rule])}.")
    if probability == "platt" and not all(getattr(est, a, None) is not None
                                          for a in ("probA_", "probB_")):
        raise ValueError(f"{where} returned the probability method 'platt', which reads the "
                         f"fitted Platt parameters probA_ and probB_; {cls} has none. Fit it "
                         "with probabilities, or return 'probability': None.")
    if formulation is not None and not isinstance(formulation, str):
        raise ValueError(f"{where} returned the formulation {formulation!r}; it must be a "
                         "formulation's name (a str) or None.")
    return rule, probability, formulation


def _classes(est: Any, rule: str, n_outputs: int) -> NDArray[Any] | None:
    if rule in RULES_WITHOUT_CLASSES:
        if n_outputs != 1:
            raise ValueError(f"{type(est).__name__} has {n_outputs} outputs; the decision rule "
                             f"{rule!r} has one.")
        return None
    classes = np.asarray(est.classes_)
    wanted = 2 if rule == "binary_sign" else n_outputs
    if classes.ndim != 1 or len(classes) != wanted:
        raise ValueError(f"{type(est).__name__} has {classes.shape} classes_ for {n_outputs} "
                         f"output(s) under the decision rule {rule!r}; expected {wanted}.")
    return classes


def describe_estimator(est: Any) -> Description:
    """What a model file records of a fitted estimator; ValueError if it cannot hold it.

    Parameters
    ----------
    est : estimator
        A fitted estimator that declares its rule (``model_file_rule``: every
        estimator of a task of the fit driver) or of the baselines' table.

    Returns
    -------
    Description

    Raises
    ------
    sklearn.exceptions.NotFittedError
        If ``est`` is not fitted.
    ValueError
        If its class, its kernel or a fitted value cannot be described by
        data, naming what and saying what to do.
    """
    from sklearn.utils.validation import check_is_fitted

    _check_saveable(est)
    check_is_fitted(est)
    cls = type(est).__name__
    coef = np.asarray(est.expansion_coef_, dtype=np.float64)
    if coef.ndim != 2:
        raise ValueError(f"{cls}.expansion_coef_ has shape {coef.shape}; expected "
                         "(n_outputs, Nz).")
    n_outputs, n_expansion = coef.shape
    rule, probability, formulation = _rule(est, n_outputs)
    intercept = est.intercept_
    if rule == "multioutput_argmax" and n_outputs == 2:
        # argmax over two outputs is the sign of τ_1 − τ_0, the estimator's decision_function
        coef, intercept = coef[1:] - coef[:1], np.diff(np.asarray(intercept, dtype=np.float64))
        rule, n_outputs = "binary_sign", 1
    Z = _float_array(est.expansion_vectors_, f"{cls}.expansion_vectors_")
    if Z.ndim != 2 or len(Z) != n_expansion:
        raise ValueError(f"{cls}.expansion_vectors_ has shape {Z.shape}; expected ({n_expansion}, "
                         "n_features) to match expansion_coef_.")
    arrays = {
        "expansion_vectors": Z,
        "expansion_coef": _float_array(coef, f"{cls}.expansion_coef_"),
        "intercept": _float_array(intercept, f"{cls}.intercept_", (n_outputs,)),
    }
    if probability == "platt":
        arrays["prob_a"] = _float_array(est.probA_, f"{cls}.probA_", (n_outputs,))
        arrays["prob_b"] = _float_array(est.probB_, f"{cls}.probB_", (n_outputs,))
    if type(est) is _kmra_class():
        # KernelMatchingReduction: one Gaussian width per XV instead of a kernel
        arrays["kernel.widths"] = _float_array(est.widths_, f"{cls}.widths_", (n_expansion,))
        kernel: dict[str, Any] = {"name": "gaussian_widths", "widths": "kernel.widths"}
    else:
        try:
            kernel, kernel_arrays = describe_kernel(est.kernel_, Z)
        except KernelSpecError as exc:
            raise ValueError(f"{cls} cannot be saved as a model file: {exc}") from exc
        arrays.update({k: _float_array(v, f"{cls}.kernel_ ({k})")
                       for k, v in kernel_arrays.items()})
    offset = getattr(est, "offset_", None) if rule == "outlier_sign" else None
    names = getattr(est, "feature_names_in_", None)
    params, dropped = _params(est)
    return Description(
        estimator_class=cls,
        estimator_module=type(est).__module__,
        params=params,
        params_not_saved=dropped,
        formulation=formulation,
        kernel=kernel,
        n_features_in=int(est.n_features_in_),
        feature_names_in=None if names is None else [str(n) for n in names],
        classes=_classes(est, rule, n_outputs),
        decision_rule=rule,
        probability=probability,
        offset=None if offset is None else float(_float_array([offset], f"{cls}.offset_")[0]),
        arrays=arrays,
    )


def _kmra_class() -> type:
    """`sparsify.KernelMatchingReduction`, whose features are Gaussians of per-XV widths."""
    from sparsify.baselines.kmra import KernelMatchingReduction

    return KernelMatchingReduction
