"""L-BFGS whose curvature memory outlives one run: the optimiser of a continuation over the data.

scipy's L-BFGS-B starts each run with an empty memory and a steepest-descent step, and
its line search asks for the strong Wolfe conditions, which gradients solved only
approximately (a marginal whose `sparsify.core.marginal.Marginal.exact` is False) fail
often, at several evaluations each. A continuation over the data
(`sparsify.core.continuation`) runs L-BFGS on one sample of the points after
another: the curvature pairs (s, y) learnt on a sample describe the next one too,
since each sample's W estimates the same objective. So this L-BFGS keeps its pairs
in a `CurvatureMemory` that the next run takes over, and its line search is
backtracking to Armijo's condition, which one evaluation satisfies almost always;
pairs with no positive curvature are skipped rather than forced by the line search
(Nocedal & Wright, §7.2 and §3.1).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

__all__ = ["CurvatureMemory", "LBFGSRun", "lbfgs"]

Array = NDArray[np.float64]

#: Curvature pairs kept (scipy's L-BFGS-B keeps 10 too).
MEMORY = 10
#: Armijo's sufficient-decrease constant.
ARMIJO = 1e-4
#: Backtracking steps before a line search gives up.
MAX_BACKTRACKS = 20


@dataclass
class CurvatureMemory:
    """The last `MEMORY` pairs (s, y) = (x_{k+1} − x_k, g_{k+1} − g_k) of L-BFGS.

    Examples
    --------
    >>> memory = CurvatureMemory()
    >>> memory.add(np.array([1.0, 0.0]), np.array([2.0, 0.0]))
    True
    >>> memory.direction(np.array([4.0, 2.0]))  # H₀ = (sᵀy / yᵀy) I = I/2, then the pair
    array([-2., -1.])
    """

    pairs: deque[tuple[Array, Array]] = field(default_factory=lambda: deque(maxlen=MEMORY))

    def add(self, s: Array, y: Array) -> bool:
        """Keep the pair where its curvature sᵀy is positive; say whether it was kept."""
        sy = float(s @ y)
        if sy <= 1e-10 * float(np.linalg.norm(s) * np.linalg.norm(y)):
            return False
        self.pairs.append((s.copy(), y.copy()))
        return True

    def direction(self, g: Array) -> Array:
        """−H g by the two-loop recursion; −g where the memory is empty."""
        q = g.copy()
        alphas = []
        for s, y in reversed(self.pairs):
            a = float(s @ q) / float(s @ y)
            q -= a * y
            alphas.append(a)
        if self.pairs:
            s, y = self.pairs[-1]
            q *= float(s @ y) / float(y @ y)
        for (s, y), a in zip(self.pairs, reversed(alphas), strict=True):
            q += (a - float(y @ q) / float(s @ y)) * s
        d: Array = -q
        return d

    def clear(self) -> None:
        """Forget every pair (a direction that was not a descent direction)."""
        self.pairs.clear()


@dataclass
class LBFGSRun:
    """Where `lbfgs` stopped: the last point, its value and gradient, and why."""

    x: Array
    f: float
    g: Array
    n_iter: int
    n_evaluations: int
    status: str  # "ftol", "max_iter", "max_evaluations", "line search", "stopped"


def lbfgs(fun: Callable[[Array], tuple[float, Array]], x0: Array, memory: CurvatureMemory,
          max_iter: int, ftol: float, max_evaluations: int,
          on_iteration: Callable[[Array, float], bool] | None = None,
          start: tuple[float, Array] | None = None) -> LBFGSRun:
    """Minimise ``fun`` (value and gradient) from ``x0`` with L-BFGS on ``memory``.

    Parameters
    ----------
    fun : callable
        x ↦ (f(x), ∇f(x)).
    x0 : ndarray
        Start.
    memory : CurvatureMemory
        Pairs from an earlier run (updated in place, for the next one).
    max_iter, max_evaluations : int
        Budgets; ``start`` (f and ∇f at ``x0``, already known) costs none.
    ftol : float
        Stop when an iteration lowers f by at most ``ftol · max(|f|, 1)``
        (L-BFGS-B's ``ftol`` test).
    on_iteration : callable, optional
        Called with (x, f) after each iteration; True stops the run ("stopped").

    Returns
    -------
    LBFGSRun

    Examples
    --------
    >>> A = np.diag([1.0, 10.0])
    >>> run = lbfgs(lambda x: (0.5 * x @ A @ x, A @ x), np.array([1.0, 1.0]),
    ...             CurvatureMemory(), max_iter=50, ftol=1e-14, max_evaluations=100)
    >>> bool(np.allclose(run.x, 0.0, atol=1e-6)), run.status
    (True, 'ftol')
    """
    x = np.asarray(x0, dtype=float).copy()
    f, g = start if start is not None else fun(x)
    n_eval = 0 if start is not None else 1
    for k in range(max_iter):
        d = memory.direction(g)
        slope = float(g @ d)
        if slope >= 0:  # an inexact gradient or stale pairs: start the memory afresh
            memory.clear()
            d, slope = -g, -float(g @ g)
        if slope == 0:
            return LBFGSRun(x, f, g, k, n_eval, "ftol")
        # without pairs the step has no scale: one of unit length, as L-BFGS-B's first
        t = 1.0 if memory.pairs else min(1.0, 1.0 / float(np.linalg.norm(d)))
        for _ in range(MAX_BACKTRACKS):
            if n_eval >= max_evaluations:
                return LBFGSRun(x, f, g, k, n_eval, "max_evaluations")
            f_new, g_new = fun(x + t * d)
            n_eval += 1
            if np.isfinite(f_new) and f_new <= f + ARMIJO * t * slope:
                break
            # the minimiser of the quadratic through f, the slope and f_new, kept in [0.1t, 0.5t]
            dq = f_new - f - t * slope
            t = (float(np.clip(-slope * t * t / (2 * dq), 0.1 * t, 0.5 * t))
                 if np.isfinite(f_new) and dq > 0 else 0.5 * t)
        else:
            return LBFGSRun(x, f, g, k, n_eval, "line search")
        memory.add(t * d, g_new - g)
        decrease = f - f_new
        x, f, g = x + t * d, f_new, g_new
        if on_iteration is not None and on_iteration(x, f):
            return LBFGSRun(x, f, g, k + 1, n_eval, "stopped")
        if decrease <= ftol * max(abs(f), abs(f + decrease), 1.0):
            return LBFGSRun(x, f, g, k + 1, n_eval, "ftol")
    return LBFGSRun(x, f, g, max_iter, n_eval, "max_iter")
