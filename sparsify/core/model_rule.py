"""How a fitted estimator predicts, told as a rule a model file can hold: `model_file_rule`.

A model file (`sparsify.io`) holds a kernel machine as data: the decision
values f(x) = Σ_j β_j k(z_j, x) + b, then a decision rule (binary sign,
one-vs-rest argmax, multi-output argmax, identity, outlier sign) and,
optionally, a way to turn f into probabilities. Each task of the fit driver
knows its rule and says it through the public hook ``model_file_rule(self)``,
which every estimator of the task inherits: `sparsify fit --out`,
`sparsify.io.save_model`, `sparsify.to_onnx` and ``sparsify export`` call it.
It returns a `ModelFileRule` (a dict), or raises ValueError for a fitted model
a file cannot describe.

A subclass that changes how it predicts (overrides ``predict``,
``decision_function``, adds ``predict_proba`` …) may no longer follow its
task's rule: the task's hook then refuses it, naming the methods
(`refuse_overridden`), unless the subclass defines ``model_file_rule`` itself
to declare the rule it does follow (the example plugin's ``SparseSVDD``). The
rules and probability methods are listed in docs/model-format.md.

Examples
--------
>>> import numpy as np
>>> from sklearn.datasets import make_moons
>>> from sparsify import SparseKernelRegressor, SparseOneClassSVM
>>> X, y = make_moons(40, noise=0.1, random_state=0)
>>> det = SparseOneClassSVM(n_expansion=3, gamma=2.0, max_iter=5, random_state=0).fit(X)
>>> det.model_file_rule()
{'decision_rule': 'outlier_sign', 'probability': None, 'formulation': 'oneclass'}
>>> class Shifted(SparseOneClassSVM):
...     def predict(self, X):
...         return -super().predict(X)
>>> prediction_overrides(Shifted)
['predict']
"""

from __future__ import annotations

from typing import Any, TypedDict

__all__ = ["ModelFileRule", "prediction_overrides", "refuse_overridden", "task_rule"]


class ModelFileRule(TypedDict, total=False):
    """What ``model_file_rule()`` returns: how the model file describes an estimator.

    Keys: ``decision_rule`` (required; one of
    `sparsify.io.saveable.DECISION_RULES`), ``probability`` (a method of
    `sparsify.io.saveable.PROBABILITY_METHODS` the rule allows, or None, the
    default: no ``predict_proba``) and ``formulation`` (the formulation's
    registered name, recorded in the file; None for none). A plain dict with
    these keys is one.
    """

    decision_rule: str
    probability: str | None
    formulation: str | None


def _rule_owner(cls: type) -> type | None:
    """The class whose ``model_file_rule`` ``cls`` uses (None: it has none)."""
    return next((c for c in cls.__mro__ if "model_file_rule" in c.__dict__), None)


def prediction_overrides(cls: type) -> list[str]:
    """The prediction methods ``cls`` overrides below the class whose rule it inherits.

    A task base (`sparsify.core.classifier.SparseKernelClassifier`, …) lists the
    methods its rule stands for in ``_prediction_methods``. The class that
    defines the ``model_file_rule`` that ``cls`` uses answers for its own
    methods; a subclass that changes one of them is no longer described by it.

    Parameters
    ----------
    cls : type
        An estimator class.

    Returns
    -------
    list of str
        The method names whose definition differs from the task base's (one
        the base lacks, such as ``predict_proba``, counts when ``cls`` has it).
    """
    owner = _rule_owner(cls)
    methods = getattr(owner, "_prediction_methods", None)
    if owner is None or methods is None:
        return []
    return [name for name in methods if _definition(cls, name) is not _definition(owner, name)]


def _definition(cls: type, name: str) -> object:
    """The object ``name`` is bound to in ``cls``'s MRO, not what getattr makes of it (a
    descriptor such as scikit-learn's ``available_if`` gives a new function per access)."""
    return next((c.__dict__[name] for c in cls.__mro__ if name in c.__dict__), None)


def refuse_overridden(cls: type) -> None:
    """ValueError naming the hook when ``cls`` predicts otherwise than its task's rule.

    Examples
    --------
    >>> from sparsify import SparseOneClassSVM
    >>> class Shifted(SparseOneClassSVM):
    ...     def score_samples(self, X):
    ...         return super().score_samples(X) + 1
    >>> refuse_overridden(Shifted)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: Shifted cannot be saved as a model file: it overrides score_samples, so ...
    """
    overridden = prediction_overrides(cls)
    if not overridden:
        return
    owner = _rule_owner(cls)
    assert owner is not None
    names = ", ".join(overridden)
    raise ValueError(
        f"{cls.__name__} cannot be saved as a model file: it overrides {names}, so its "
        f"predictions may differ from the decision rule of its task ({owner.__name__}), which "
        "is all a model file holds. If it still predicts by one of the model file's rules, "
        f"define {cls.__name__}.model_file_rule() to return it, e.g. {{'decision_rule': "
        "'binary_sign', 'probability': None, 'formulation': 'name'} (docs/plugins.md, "
        "\"Model files\"); otherwise save it with pickle or joblib.dump, and load only pickles "
        "you trust.")


def task_rule(estimator: Any, one_output: str, several_outputs: str | None = None
              ) -> ModelFileRule:
    """A task's ``model_file_rule``: ``estimator`` checked, then its rule and formulation.

    Refuses a class that predicts otherwise (`refuse_overridden`) and an unfitted
    estimator, then gives ``one_output`` as the decision rule, or
    ``several_outputs`` where the fitted machine has more than one output.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.datasets import make_moons
    >>> from sparsify import SparseSVC
    >>> X, y = make_moons(40, noise=0.1, random_state=0)
    >>> clf = SparseSVC(n_expansion=3, max_iter=5, random_state=0).fit(X, y)
    >>> task_rule(clf, "binary_sign", "ovr_argmax")["decision_rule"]
    'binary_sign'
    """
    from sklearn.utils.validation import check_is_fitted

    refuse_overridden(type(estimator))
    check_is_fitted(estimator)
    rule = one_output
    if several_outputs is not None and len(estimator.intercept_) > 1:
        rule = several_outputs
    return {"decision_rule": rule, "probability": None,
            "formulation": estimator._formulation_name()}

