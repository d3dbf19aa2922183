"""Hyperparameter checks of the built-in formulations' constructors, and of a cost's scale.

A formulation checks its hyperparameters when it is made, so ``SVM(C=-5)``
fails at once with scikit-learn's wording ("The 'C' parameter of SVM must be a
float in the range (0.0, inf). Got -5 instead."), not later inside a solve.
`check_cost_scale` refuses a cost C too large for float64 solvers before a fit
starts (the estimators and the command line call it).
"""

from __future__ import annotations

from collections.abc import Mapping
from numbers import Integral, Real
from typing import Any

import numpy as np
from sklearn.utils._param_validation import (
    Interval,
    InvalidParameterError,
    validate_parameter_constraints,
)

__all__ = ["MAX_C", "MAX_TARGET", "check_cost_scale", "check_cost_weights", "check_no_bools",
           "check_params", "check_positive_weight", "check_target_scale"]

#: The largest target magnitude of a regressor: squared errors of larger targets overflow
#: float64 in the solvers' sums.
MAX_TARGET = 1e100

#: The largest cost C (or C*) a fit takes: beyond it ½‖w‖² falls below the rounding of C·Σξ in
#: float64, the problem is a hard margin the solvers cannot tell from infeasible, and they fail
#: or stall.
MAX_C = 1e12


def check_cost_scale(params: Mapping[str, object]) -> None:
    """Refuse a cost ``C`` or ``C_star`` above `MAX_C`, saying why and what to use.

    Examples
    --------
    >>> check_cost_scale({"C": 100.0, "gamma": "scale"})
    >>> check_cost_scale({"C": 1e300})
    Traceback (most recent call last):
    ...
    ValueError: C=1e+300 is too large: above 1e+12 the margin term ½‖w‖² is lost in the rounding of C·Σξ (float64), and the solvers cannot solve the problem. Use C <= 1e+12: its margin is as hard as float64 can tell.
    """  # noqa: E501
    for name in ("C", "C_star"):
        value = params.get(name)
        if isinstance(value, Real) and not isinstance(value, bool) and float(value) > MAX_C:
            raise ValueError(
                f"{name}={value:g} is too large: above {MAX_C:g} the margin term ½‖w‖² is lost "
                f"in the rounding of {name}·Σξ (float64), and the solvers cannot solve the "
                f"problem. Use {name} <= {MAX_C:g}: its margin is as hard as float64 can tell.")


def check_cost_weights(params: Mapping[str, object], weights: Any) -> None:
    """Refuse per-point weights that make a cost C·w (or C*·w) exceed `MAX_C`.

    Examples
    --------
    >>> check_cost_weights({"C": 1.0}, np.array([1.0, 2.0]))
    >>> check_cost_weights({"C": 1.0}, np.array([1.0, 1e300]))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: sample_weight reaches 1e+300: with C=1 a point costs up to C·sample_weight = ...
    """
    largest = float(np.max(weights)) if np.size(weights) else 0.0
    for name in ("C", "C_star"):
        value = params.get(name)
        if isinstance(value, Real) and not isinstance(value, bool) and \
                float(value) * largest > MAX_C:
            raise ValueError(
                f"sample_weight reaches {largest:g}: with {name}={value:g} a point costs up to "
                f"{name}·sample_weight = {float(value) * largest:g}, above {MAX_C:g}, where "
                "float64 solvers lose the margin term. Only the weights' ratios and "
                f"{name} matter: divide sample_weight by its mean (and choose {name} "
                "again), or give rare points smaller weights.")


def check_positive_weight(weights: Any) -> None:
    """Refuse sample weights that are all 0, in scikit-learn 1.9's words, whatever its version.

    scikit-learn checks this in ``_check_sample_weight`` from 1.9 on; before, an
    all-zero weight left no point and failed later with an unrelated message.

    Examples
    --------
    >>> check_positive_weight(np.array([0.0, 2.0]))
    >>> check_positive_weight(np.zeros(3))
    Traceback (most recent call last):
    ...
    ValueError: Sample weights must contain at least one non-zero number.
    """
    if not (np.asarray(weights) > 0).any():
        raise ValueError("Sample weights must contain at least one non-zero number.")


def check_target_scale(y: Any, source: str) -> None:
    """Refuse regression targets above `MAX_TARGET`, saying what to do.

    Examples
    --------
    >>> check_target_scale(np.array([1.0, -2.0]), "y")
    >>> check_target_scale(np.array([1e200]), "y")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: The targets of y reach 1e+200: above 1e+100 their squares overflow ...
    """
    values = np.asarray(y, dtype=np.float64)
    finite = values[np.isfinite(values)]
    largest = float(np.max(np.abs(finite))) if finite.size else 0.0
    if largest > MAX_TARGET:
        raise ValueError(f"The targets of {source} reach {largest:g}: above {MAX_TARGET:g} "
                         "their squares overflow float64 in the solvers. Rescale them "
                         "(divide by their standard deviation) and scale the predictions "
                         "back.")


def _takes_bool(constraint: Any) -> bool:
    if constraint in ("boolean", "verbose") or constraint is bool:
        return True
    if isinstance(constraint, Interval) or constraint in (Integral, Real, int, float):
        return False
    return isinstance(constraint, type) and isinstance(True, constraint)


def check_no_bools(owner: str, constraints: Mapping[str, Any], params: Mapping[str, Any]) -> None:
    """Refuse True or False for a numeric parameter, which scikit-learn's checks let through.

    ``bool`` is an ``int`` to Python, so ``Interval(Integral, 1, None)`` takes True:
    ``n_expansion=True`` would be one XV, ``n_jobs=True`` one job.

    Examples
    --------
    >>> from sklearn.utils._param_validation import Interval
    >>> check_no_bools("SparseSVC", {"n_expansion": [Interval(Integral, 1, None, closed="left")]},
    ...                {"n_expansion": True})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    sklearn.utils._param_validation.InvalidParameterError: The 'n_expansion' parameter of ...
    """
    for name, value in params.items():
        allowed = constraints.get(name)
        if not isinstance(value, (bool, np.bool_)) or not isinstance(allowed, list):
            continue
        if not any(_takes_bool(c) for c in allowed):
            raise InvalidParameterError(
                f"The {name!r} parameter of {owner} must be a number, not a bool. Got {value!r} "
                "instead.")


def check_params(owner: str, constraints: dict[str, list[Any]], **params: Any) -> None:
    """Check ``params`` against scikit-learn parameter ``constraints``; errors name ``owner``.

    Raises a plain ``ValueError``: scikit-learn's ``InvalidParameterError`` is
    a ``TypeError`` too, which `sparsify.core.formulation.make_formulation` reads
    as "the formulation does not take this parameter".

    Examples
    --------
    >>> from numbers import Real
    >>> from sklearn.utils._param_validation import Interval
    >>> positive = {"mu": [Interval(Real, 0.0, None, closed="neither")]}
    >>> check_params("KFD", positive, mu=0.5)
    >>> check_params("KFD", positive, mu=-1)
    Traceback (most recent call last):
    ...
    ValueError: The 'mu' parameter of KFD must be a float in the range (0.0, inf). Got -1 instead.
    """
    try:
        validate_parameter_constraints(constraints, params, caller_name=owner)
    except InvalidParameterError as exc:
        raise ValueError(str(exc)) from None
