"""The marginal function W(Z) as the optimiser sees it: the interface and its result.

A `Marginal` returns W(Z), the optimal value of the sparse problem at fixed XVs
Z, and its gradient ∇W(Z) by Lemma 1, as an `Evaluation`. The generic paths
(`sparsify.core.conic.ConicMarginal`, the default, and
`sparsify.core.declared.CvxpyMarginal`, the reference) provide it for any
declared formulation; a formulation may supply its own (`Formulation.marginal`),
and `sparsify.core.conic.make_marginal` picks which one a fit uses.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "Evaluation",
    "Marginal",
    "NonDifferentiableWarning",
    "check_expansion_vectors",
]

Array = NDArray[np.float64]


class NonDifferentiableWarning(UserWarning):
    """W(Z) is not differentiable at the current XVs (the gradient is one of many)."""


@dataclass(frozen=True)
class Evaluation:
    """W(Z), ∇W(Z) and the solution at one set of XVs.

    Attributes
    ----------
    value : float
        W(Z), the optimal value at fixed Z.
    grad : ndarray of shape (Nz, d) or None
        ∇W(Z); None when not requested.
    coef : ndarray of shape (Nz,) or (Nz, K)
        Expansion coefficients β.
    intercept : float or ndarray of shape (K,)
        Bias b.
    solver : str
        Backend that produced the solution.
    accuracy : float or None
        A bound on |W − W*| that the solver's stopping rule guarantees (for the
        generic path: the duality gap it stopped at); None where the provider
        states none (an exact solver accurate to round-off).
    variables : mapping of str to float or ndarray
        The declaration's named variables at the solution
        (`sparsify.core.formulation.Declaration.variables`); empty where there
        are none.
    diagonal_coef : float or ndarray of shape (K,)
        The coefficient of k(x, x) in the decision function
        (`sparsify.core.formulation.Declaration.diagonal_coef`); 0 by default.
    """

    value: float
    grad: Array | None
    coef: Array
    intercept: float | Array
    solver: str
    accuracy: float | None = None
    variables: Mapping[str, Any] = field(default_factory=dict)
    diagonal_coef: float | Array = 0.0


class Marginal(ABC):
    """Anything that returns W(Z) and ∇W(Z): the generic path or a formulation's own."""

    #: Formulation name, for messages.
    formulation_name: str = ""

    @abstractmethod
    def evaluate(self, Z: Array, grad: bool = True) -> Evaluation:
        """Solve at fixed XVs ``Z`` (Nz, d) and return W, ∇W and the solution."""

    def warm_start(self, Z: Array, solution: Evaluation) -> None:
        """Take a solution (β and b) at XVs ``Z`` as the guess of the next solve.

        The fit driver calls it for a warm start from another fit
        (`sparsify.core.warm`: a search's neighbouring setting, ``warm_start=True``).
        A marginal whose solver starts from a guess overrides it; by default the
        guess is not used.
        """
        return None


def check_expansion_vectors(
    Z: NDArray[Any], n_expansion: int, n_features: int, formulation_name: str = ""
) -> Array:
    """Return the XVs ``Z`` as float64 of shape (Nz, d), or a ValueError that says what to change.

    Every `Marginal.evaluate` should start with it, so that a wrong shape
    or a NaN reaches the user as such and not as an error deep in a solver.

    Parameters
    ----------
    Z : array-like
        The XVs to evaluate W at.
    n_expansion, n_features : int
        Nz the marginal was built for, and d of its training inputs.
    formulation_name : str, optional
        For the message.

    Examples
    --------
    >>> import numpy as np
    >>> check_expansion_vectors([[0, 1], [2, 3]], 2, 2).dtype
    dtype('float64')
    >>> check_expansion_vectors([[0.0, np.nan]], 1, 2)
    Traceback (most recent call last):
    ...
    ValueError: The expansion vectors Z contain NaN or infinity (row 0); pass finite XVs.
    """
    Z = np.asarray(Z, dtype=float)
    where = f" of the {formulation_name!r} formulation" if formulation_name else ""
    if Z.shape != (n_expansion, n_features):
        raise ValueError(
            f"The expansion vectors Z{where} must have shape ({n_expansion}, {n_features}) "
            f"(Nz, n_features); got {Z.shape}."
        )
    bad = ~np.isfinite(Z).all(axis=1)
    if bad.any():
        raise ValueError(f"The expansion vectors Z{where} contain NaN or infinity (row "
                         f"{int(np.argmax(bad))}); pass finite XVs.")
    return Z


