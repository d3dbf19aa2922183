"""Hyperparameter checks of the built-in formulations' constructors, and of a cost's scale.

A formulation checks its hyperparameters when it is made, so ``SVM(C=-5)``
fails at once with scikit-learn's wording ("The 'C' parameter of SVM must be a
float in the range (0.0, inf). Got -5 instead."), not later inside a solve.
`check_cost_scale` refuses a cost C too large for float64 solvers before a fit
starts (the estimators and the command line call it).
"""

from __future__ import annotations

from collections.abc import Mapping
from numbers import Real
from typing import Any

from sklearn.utils._param_validation import InvalidParameterError, validate_parameter_constraints

__all__ = ["MAX_C", "check_cost_scale", "check_params"]

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
