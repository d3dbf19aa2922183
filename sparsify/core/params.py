"""Hyperparameter checks of the built-in formulations' constructors.

A formulation checks its hyperparameters when it is made, so ``SVM(C=-5)``
fails at once with scikit-learn's wording ("The 'C' parameter of SVM must be a
float in the range (0.0, inf). Got -5 instead."), not later inside a solve.
"""

from __future__ import annotations

from typing import Any

from sklearn.utils._param_validation import InvalidParameterError, validate_parameter_constraints

__all__ = ["check_params"]


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
