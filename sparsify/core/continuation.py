"""Continuation over the data: the early L-BFGS iterations on growing nested samples.

W(Z) sums a loss over the N training points. On a random sample of m of them
whose losses count N/m times each it estimates the same objective, uncertain by
about 1/√m of itself, at m/N of the cost per evaluation; far from a minimum the
XVs move the same way on the sample as on the whole set. So a fit on many points
starts on a sample of at least `SMALLEST_SAMPLE` points (and `POINTS_PER_XV` per
XV), runs L-BFGS there until W levels off within that sample's own sampling
error (it fell by at most 1/√m of itself over the last `STAGE_WINDOW`
iterations), doubles the sample (each sample holds the previous one, drawn
stratified by the problem's targets) and goes on from the XVs reached, up to
the whole set, where the estimator's own stopping rule ends the fit. Byrd, Chin,
Nocedal & Wu (2012) grow the sample when the gradient's sampling variance
exceeds its norm; the plateau of W within its sampling error is the same test
on the quantity the driver already watches (`sparsify.core.optimize.sampling_plateau`).

The rule needs a formulation whose points can be weighted (`Continuation.weighted`:
an estimator whose ``_formulation_params(weights)`` multiplies each point's loss,
as the SVM's and the SVR's cost C does); docs/theory.md has the figures.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray
from sklearn.utils import check_random_state

from sparsify.core.formulation import Formulation
from sparsify.core.marginal import Marginal

__all__ = ["POINTS_PER_XV", "SMALLEST_SAMPLE", "STAGE_WINDOW", "Continuation", "Stage",
           "nested_order", "sample_sizes"]

Array = NDArray[np.float64]

#: The smallest sample a fit starts on: below it W's sampling error (1/√m, 2 % at 2000
#: points) is larger than the decreases that still move the XVs usefully.
SMALLEST_SAMPLE = 2000
#: The smallest sample per XV: fewer points per XV fit the sample, not the problem.
POINTS_PER_XV = 40
#: Iterations over which a sample's W must have levelled off before the sample doubles.
STAGE_WINDOW = 3


def sample_sizes(n_samples: int, n_expansion: int) -> list[int]:
    """The nested sample sizes of a fit: N/2ᵏ down to the smallest allowed, then N.

    ``[N]`` (no continuation) where N is below twice the smallest sample,
    max(`SMALLEST_SAMPLE`, `POINTS_PER_XV` · Nz).

    Examples
    --------
    >>> sample_sizes(32561, 20)
    [2035, 4070, 8140, 16280, 32561]
    >>> sample_sizes(32561, 100)
    [4070, 8140, 16280, 32561]
    >>> sample_sizes(3000, 10)
    [3000]
    """
    smallest = max(SMALLEST_SAMPLE, POINTS_PER_XV * n_expansion)
    sizes = [n_samples]
    while sizes[0] // 2 >= smallest:
        sizes.insert(0, sizes[0] // 2)
    return sizes


def nested_order(targets: NDArray[Any] | None, n_samples: int,
                 random_state: int | np.random.RandomState | None) -> NDArray[np.intp]:
    """A random order of the points whose every prefix is a stratified sample.

    With class targets (±1, and NaN for unlabelled points: each value a
    stratum), the first m points of the order hold each stratum in its share
    of the whole to within two points; real targets (a regression) or None give
    a plain random order.

    Examples
    --------
    >>> y = np.array([1, 1, 1, 1, 1, 1, -1, -1, 1, 1])
    >>> order = nested_order(y, 10, 0)
    >>> sorted(order.tolist()) == list(range(10)), int((y[order[:5]] == -1).sum())
    (True, 1)
    """
    rng = check_random_state(random_state)
    plain: NDArray[np.intp] = rng.permutation(n_samples)
    if targets is None:
        return plain
    values = np.asarray(targets, dtype=float)
    strata = np.where(np.isnan(values), np.inf, values)
    levels, codes = np.unique(strata, return_inverse=True)
    if len(levels) > 3:  # real targets (a regression), not ±1 and NaN: no strata
        return plain
    # each point's place within its stratum, spread over [0, 1): sorting by it interleaves
    # the strata in proportion
    key = np.empty(n_samples)
    for code in range(len(levels)):
        members = np.flatnonzero(codes == code)
        key[members] = (rng.permutation(len(members)) + rng.uniform(size=len(members))) / len(
            members)
    order: NDArray[np.intp] = np.argsort(key, kind="stable")
    return order


@dataclass(frozen=True)
class Stage:
    """One sample of a continuation: its size and how to make its marginal when it is reached.

    ``index`` holds the sample's points (sorted) of the ``n_total`` of the whole set, and
    ``make`` makes the marginal on them, their losses weighted N/m, so that one sample's
    arrays live at a time.
    """

    n_points: int
    n_total: int
    index: NDArray[np.intp]
    make: Callable[[], Marginal]


@dataclass(frozen=True)
class Continuation:
    """What the fit driver needs to run a problem's early iterations on nested samples.

    Parameters
    ----------
    sizes : tuple of int
        The sample sizes, the last one all N points (`sample_sizes`).
    make_formulation : callable
        Makes the formulation for per-point loss weights (the estimator's
        ``_make_formulation``; weights of shape (m,) or a number).
    weights : ndarray of shape (N,) or None
        The fit's own per-point weights (class and sample weights), which the
        samples' weights N/m multiply.
    """

    sizes: tuple[int, ...]
    make_formulation: Callable[[Any], Formulation]
    weights: Array | None = None

    def stages(self, X: Array, y: NDArray[Any] | None, seed: int,
               make: Callable[[Formulation, Array, NDArray[Any] | None], Marginal]
               ) -> list[Stage]:
        """The samples before the whole set, drawn from ``seed``, with their marginals' makers.

        ``make(formulation, X_sample, y_sample)`` makes a marginal.
        """
        N = len(X)
        order = nested_order(y, N, seed)
        out = []
        for m in self.sizes[:-1]:
            index = np.sort(order[:m])
            factor = N / m
            weights = factor if self.weights is None else self.weights[index] * factor
            formulation = self.make_formulation(weights)
            out.append(Stage(m, N, index, _maker(make, formulation, X, y, index)))
        return out


def _maker(make: Callable[[Formulation, Array, NDArray[Any] | None], Marginal],
           formulation: Formulation, X: Array, y: NDArray[Any] | None,
           index: NDArray[np.intp]) -> Callable[[], Marginal]:
    """``make`` on one sample, its rows taken when the stage is reached."""
    return lambda: make(formulation, X[index], None if y is None else y[index])
