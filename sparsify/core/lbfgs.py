"""L-BFGS's memory of pairs, kept across a change of coordinates.

`sparsify.core.optimize` runs L-BFGS on U = Z / d and changes the XVs' scales d as
β moves (`row_scales`). scipy's L-BFGS-B takes no memory to start from, so a change of
scales used to cost L-BFGS its pairs. Under U' = U·d/d' they carry over exactly: a
step becomes s' = s·d/d', a change of gradient y' = y·d'/d, and sᵀy (the curvature
the pair measured) is unchanged. `Pairs` holds them and gives the search direction
by the two-loop recursion, as L-BFGS-B does without bounds: the last ``m`` pairs,
the initial inverse Hessian sᵀy/yᵀy of the newest pair, and a pair skipped where
it measures no positive curvature (sᵀy ≤ ε·yᵀy; L-BFGS-B compares sᵀy with
ε·|gᵀs| instead, the same test of sign to rounding). scipy's
``LbfgsInvHessProduct`` runs the same recursion but from the identity, not from
sᵀy/yᵀy, so its steps would not be L-BFGS-B's.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

__all__ = ["Pairs"]

Array = NDArray[np.float64]


class Pairs:
    """The last ``m`` L-BFGS pairs (s, y) in the current coordinates.

    Parameters
    ----------
    m : int, default=10
        Pairs kept (L-BFGS-B's ``maxcor`` in scipy).

    Examples
    --------
    On a quadratic of Hessian diag(1, 100), two pairs span the space and the
    direction is the Newton step:

    >>> pairs = Pairs()
    >>> hess = np.array([1.0, 100.0])
    >>> pairs.push(np.array([1.0, 0.0]), hess * [1.0, 0.0])
    True
    >>> pairs.push(np.array([0.0, 1.0]), hess * [0.0, 1.0])
    True
    >>> pairs.direction(np.array([2.0, 300.0])).tolist()
    [-2.0, -3.0]

    In coordinates U' = U·(1, 2) the gradient is (2, 150) and the pairs give the
    same step, twice as long in the second coordinate:

    >>> pairs.rescale(np.array([1.0, 2.0]))
    >>> pairs.direction(np.array([2.0, 150.0])).tolist()
    [-2.0, -6.0]
    """

    def __init__(self, m: int = 10) -> None:
        self.m = m
        self.s: list[Array] = []
        self.y: list[Array] = []

    def __len__(self) -> int:
        return len(self.s)

    def push(self, s: Array, y: Array) -> bool:
        """Keep the pair unless it measures no positive curvature; the oldest goes
        beyond ``m``. Returns whether it was kept."""
        sy = float(s @ y)
        if not sy > np.finfo(float).eps * float(y @ y):
            return False
        self.s.append(s.copy())
        self.y.append(y.copy())
        if len(self.s) > self.m:
            del self.s[0], self.y[0]
        return True

    def clear(self) -> None:
        """Forget every pair (after a step that was not a descent)."""
        self.s.clear()
        self.y.clear()

    def rescale(self, ratio: Array) -> None:
        """The coordinates become U' = U·``ratio`` (ratio = d/d'): s' = s·ratio, y' = y/ratio."""
        self.s = [s * ratio for s in self.s]
        self.y = [y / ratio for y in self.y]

    def direction(self, g: Array) -> Array:
        """-H·g by the two-loop recursion; -g where there are no pairs."""
        q = g.copy()
        rho = [1.0 / float(s @ y) for s, y in zip(self.s, self.y, strict=True)]
        alpha = []
        for s, y, r in zip(reversed(self.s), reversed(self.y), reversed(rho), strict=True):
            a = r * float(s @ q)
            q -= a * y
            alpha.append(a)
        if self.s:
            q *= float(self.s[-1] @ self.y[-1]) / float(self.y[-1] @ self.y[-1])
        for s, y, r, a in zip(self.s, self.y, rho, reversed(alpha), strict=True):
            q += (a - r * float(y @ q)) * s
        direction: Array = -q
        return direction
