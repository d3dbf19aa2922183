"""The exact line search of the distributed Newton methods, over Dask row blocks.

Both the squared hinge's finite Newton method (`distributed_squared_hinge`) and
the smoothed hinge's Newton path (`distributed_smoothed`) minimise a convex
piecewise quadratic along a direction d whose pieces the blocks know: each block
keeps its rows' change along d and, for a step t, returns its sums on the piece
around t and its breakpoints nearest to t; only a few numbers per step travel.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from sparsify.core.errors import SolverError

if TYPE_CHECKING:
    from sparsify.algorithms.svm.distributed import _Rows

__all__ = ["MAX_LINE_STEPS", "line_search_over_blocks"]

Array = NDArray[np.float64]

#: Steps of one line search before it counts as stalled: the derivative has finitely
#: many pieces, and bisection halves the bracket between Newton steps.
MAX_LINE_STEPS = 200


def _direction(rows: _Rows, d_u: Array, d_b: float) -> None:
    """Keep δ_i = P_i d for the line search along d."""
    assert rows.B is not None
    rows.delta = rows.B @ d_u + rows.y * d_b


def line_search_over_blocks(map_: Callable[..., list[Any]], slope_task: Any,
                            args: tuple[Any, ...], a: float, c: float, d: Array,
                            weight: float, cap: float, title: str) -> tuple[float, int]:
    """The minimiser t in [0, ``cap``] of a convex piecewise quadratic along d, and the steps.

    Its derivative on the piece around t is a + c t − weight·(s0 − t s1), where
    ``slope_task(rows, t, *args)`` returns each block's (s0, s1, nearest breakpoint at or
    below t, nearest above). Each step takes the root of that line; where the root lies on
    the piece it came from it is the answer (exact), else a safeguarded Newton step on the
    piecewise linear derivative, bisection where it leaves the bracket. The blocks first keep
    their rows' change along d.
    """
    map_(_direction, d[:-1], float(d[-1]))
    lo, hi, t = 0.0, cap, 1.0
    for step in range(1, MAX_LINE_STEPS + 1):
        parts = map_(slope_task, t, *args)
        s0, s1 = sum(p[0] for p in parts), sum(p[1] for p in parts)
        left, right = max(p[2] for p in parts), min(p[3] for p in parts)
        slope, curvature = a + c * t - weight * (s0 - t * s1), c + weight * s1
        if t >= cap and slope <= 0.0:
            return cap, step  # the whole step: still decreasing at its end
        root = (weight * s0 - a) / curvature if curvature > 0.0 else np.nan
        if left <= root <= right:
            return float(min(max(root, 0.0), cap)), step
        if slope > 0.0:
            hi = t
        else:
            lo = t
        t = root if lo < root < hi else (2.0 * t if np.isinf(hi) else 0.5 * (lo + hi))
    raise SolverError(
        f"The distributed {title} solver's line search did not settle in {MAX_LINE_STEPS} "
        "steps (formulation 'svm'). Fit on the data in memory (numpy arrays).")
