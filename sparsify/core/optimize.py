"""Minimise W(Z) over the XVs with L-BFGS, from a random, class-balanced or k-means start.

Duplicate training points are removed before the initial XVs are chosen (paper
§5.6): two equal XVs make K_ZZ singular. L-BFGS runs on U = Z / d, one scale d_j
per XV, powers of two so that Z = U·d is exact (`row_scales`). It starts with
d_j = s for every XV: L-BFGS-B's tests are absolute (its projected-gradient
tolerance, its first step), so XVs far from unit scale (inputs of 1e150 give
gradients of 1e-150, which look converged at the start) are optimised in
coordinates Z / s, s a power of two (`coordinate_scale`; 1 for ordinary data).
Every `RESCALE_EVERY` iterations the scales are read from β, d_j ∝ 1/√‖β_j‖, a
diagonal preconditioner (∂W/∂z_j carries β_j, so W is stiff along the XVs of
large |β_j| and flat along the others); where one of them has moved by a factor
of 2^`RESCALE_STEP` from the current ones, L-BFGS goes on in the new coordinates
with its memory of pairs carried over to them (`sparsify.core.lbfgs.Pairs`).
The run starts as scipy's L-BFGS-B and goes on at the first change of scales
with our own L-BFGS (scipy's takes no memory to start from): L-BFGS-B's steps
without bounds, scipy's strong Wolfe line search. Measured in docs/theory.md,
"Scaling the XVs". A fit that stops within 20 iterations, or whose scales never
move that far, is one run of scipy's L-BFGS-B. Where W is flat at the start (every
β_j = 0 at a hinge's corner, so ∂W/∂z_j = 0), the first iteration is a step along the
gradient, or against it, long enough to leave the flat (`_Run.leave_flat_start`;
docs/theory.md, "A flat start").
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray
from scipy.optimize import OptimizeResult as ScipyOptimizeResult
from scipy.optimize import line_search, minimize
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state

from sparsify.core.distinct import distinct_rows
from sparsify.core.lbfgs import Pairs
from sparsify.core.marginal import Evaluation, Marginal
from sparsify.core.solvers import SolverError

__all__ = [
    "FLAT",
    "FLAT_DOUBLINGS",
    "PLATEAU_FROM",
    "PLATEAU_WINDOW",
    "RESCALE_EVERY",
    "RESCALE_STEP",
    "IterationInfo",
    "OptimizeResult",
    "coordinate_scale",
    "initial_expansion_vectors",
    "minimize_marginal",
    "problem_line",
    "row_scales",
    "sampling_plateau",
    "warn_if_no_step",
    "warn_if_not_converged",
]

Array = NDArray[np.float64]
INIT_METHODS = ("random", "kmeans")
#: ``n_iter_no_change="auto"``: the iterations over which W must fall by its sampling error
#: (`sampling_plateau`), and the number of points from which the test applies.
PLATEAU_WINDOW, PLATEAU_FROM = 3, 5000
#: L-BFGS's iterations between two readings of the XVs' scales (`row_scales`), and the
#: powers of two one of them must have moved by for L-BFGS to go on in new coordinates.
RESCALE_EVERY, RESCALE_STEP = 20, 2
#: W is flat at the initial XVs where a unit step changes it by at most this of itself to
#: first order (√ε); then steps of up to 2^FLAT_DOUBLINGS units are tried
#: (`_Run.leave_flat_start`).
FLAT, FLAT_DOUBLINGS = float(np.sqrt(np.finfo(float).eps)), 6
# "balanced" needs class labels, so only classifiers offer it
CLASSIFIER_INIT_METHODS = ("random", "balanced", "kmeans")


def initial_expansion_vectors(
    X: Array,
    n_expansion: int,
    init: str = "random",
    random_state: int | None = None,
    y: NDArray[np.generic] | None = None,
    distinct: NDArray[np.intp] | None = None,
) -> Array:
    """Choose Nz distinct initial XVs from the training inputs.

    Parameters
    ----------
    X : ndarray of shape (N, d)
        Training inputs; duplicate rows are removed first.
    n_expansion : int
        Number of XVs Nz, between 1 and the number of distinct rows.
    init : {"random", "balanced", "kmeans"}
        A random subset of the distinct rows (paper Table 1); the same drawn
        evenly from the classes of ``y``; or the k-means centres (paper Table 2).
    random_state : int, RandomState instance or None
        Seed of the choice.
    y : ndarray of shape (N,) or None
        Class labels; needed by "balanced" only.
    distinct : ndarray of shape (n_distinct,) or None
        ``sparsify.core.distinct.distinct_rows(X)`` where the caller has it (the
        problems of a one-vs-rest fit share X); found here otherwise.

    Returns
    -------
    Z : ndarray of shape (Nz, d)

    Notes
    -----
    "balanced" is for a one-vs-rest problem: a random subset gives its one
    class about 1/K of the XVs, and L-BFGS does not move enough of them over
    to it. On USPS (K = 10) a balanced start ends 200 iterations with a W(Z)
    about 9 % lower and a test error 0.1 to 0.3 points lower. On two classes
    it does no better than "random" (docs/results/init_choice.md).

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[0.0, 0.0], [0.0, 0.0], [1.0, 1.0], [2.0, 0.0]])
    >>> initial_expansion_vectors(X, 3, random_state=0).shape
    (3, 2)
    >>> X = np.arange(10.0).reshape(-1, 1)
    >>> y = np.array([1, -1, -1, -1, -1, -1, -1, -1, -1, 1])
    >>> Z = initial_expansion_vectors(X, 4, "balanced", random_state=0, y=y)
    >>> int(np.isin(Z.ravel(), [0.0, 9.0]).sum())
    2
    """
    X = np.asarray(X, dtype=float)
    first = distinct_rows(X) if distinct is None else distinct
    rows = X[first]
    if not 1 <= n_expansion <= len(rows):
        raise ValueError(
            f"The number of expansion vectors must be between 1 and the number of distinct "
            f"training points ({len(rows)}); got {n_expansion}."
        )
    rng = check_random_state(random_state)
    if init == "random":
        drawn: Array = rows[np.sort(rng.choice(len(rows), n_expansion, replace=False))]
        return drawn.copy()
    if init == "balanced":
        if y is None:
            raise ValueError(
                "init='balanced' draws the XVs evenly from the classes and needs the class "
                "labels y; use init='random' where there are none."
            )
        labels = np.asarray(y)
        if len(labels) != len(X):
            raise ValueError(f"y has {len(labels)} labels but X has {len(X)} rows.")
        # a row with two labels counts in the class of its first occurrence only,
        # so no row is drawn twice
        return _balanced_rows(rows, labels[first], n_expansion, rng)
    if init == "kmeans":
        from sklearn.cluster import KMeans

        km = KMeans(n_clusters=n_expansion, n_init=3, random_state=rng.randint(2**31 - 1))
        centres: Array = km.fit(rows).cluster_centers_.astype(float)
        return centres
    raise ValueError(f"init must be one of {CLASSIFIER_INIT_METHODS}; got {init!r}.")


def _balanced_rows(
    rows: Array, labels: NDArray[np.generic], n_expansion: int, rng: np.random.RandomState
) -> Array:
    """Nz of the distinct ``rows``, as evenly shared among their classes as the sizes allow."""
    pools = [rng.permutation(np.flatnonzero(labels == c)) for c in np.unique(labels)]
    share = np.zeros(len(pools), dtype=int)
    # deal one XV at a time, in a random class order, to every class with rows left
    order = rng.permutation(len(pools))
    while share.sum() < n_expansion:
        for k in order:
            if share.sum() < n_expansion and share[k] < len(pools[k]):
                share[k] += 1
    chosen = np.concatenate([pool[:n] for pool, n in zip(pools, share, strict=True)])
    balanced: Array = rows[np.sort(chosen)]
    return balanced.copy()


@dataclass(frozen=True)
class IterationInfo:
    """What a callback sees after each L-BFGS iteration.

    Attributes
    ----------
    iteration : int
        Iterations done so far (1 after the first).
    value : float
        W(Z) after this iteration.
    grad_norm : float
        ‖∇W(Z)‖ at the last evaluation.
    Z : ndarray of shape (Nz, d)
        The XVs after this iteration.
    seconds : float
        Time since the optimisation started.
    problem : str
        Which problem this is, for a fit of several (for example
        ``"class 3 vs rest, start 1"``); empty for a single one.
    """

    iteration: int
    value: float
    grad_norm: float
    Z: Array
    seconds: float
    problem: str = ""


@dataclass
class OptimizeResult:
    """Outcome of `minimize_marginal`.

    Attributes
    ----------
    Z : ndarray of shape (Nz, d)
        The XVs with the lowest W found.
    evaluation : Evaluation
        W, ∇W, β and b at ``Z``.
    history : ndarray
        W at the start and after each iteration.
    n_iter, n_evaluations : int
        L-BFGS iterations and W(Z) evaluations.
    message : str
        Why the optimisation stopped.
    seconds : float
        Time the optimisation took.
    converged : bool
        False when ``max_iter`` (or the evaluation budget) stopped L-BFGS before
        its ``tol`` test was met, or a failed solve stopped it early.
    stop : str
        What stopped it: "converged" (L-BFGS's ``tol`` test), "plateau" (the
        plateau test), "callback" (the callback returned True), "max_iter" (the
        iteration or evaluation budget), "failed solve", or "max_iter=0".
    n_stages : int
        The coordinates L-BFGS ran in: one, and one more each time the XVs'
        scales moved (`row_scales`, module docstring).
    """

    Z: Array
    evaluation: Evaluation
    history: Array
    n_iter: int
    n_evaluations: int
    message: str
    seconds: float = field(default=0.0)
    converged: bool = True
    stop: str = "converged"
    n_stages: int = 1


def _check_finite(marginal: Marginal, ev: Evaluation) -> None:
    """A non-finite W or ∇W would send L-BFGS astray: report it like a failed solve."""
    if np.isfinite(ev.value) and (ev.grad is None or np.isfinite(ev.grad).all()):
        return
    name = getattr(marginal, "formulation_name", "") or type(marginal).__name__
    raise SolverError(
        f"The {ev.solver} solver returned a non-finite W(Z) = {ev.value} or gradient for the "
        f"{name!r} formulation at these XVs; rescale the data (standardise the features), or "
        "try another solver= or a looser tol."
    )


def minimize_marginal(
    marginal: Marginal,
    Z0: Array,
    max_iter: int = 200,
    tol: float = 1e-6,
    callback: Callable[[IterationInfo], bool | None] | None = None,
    verbose: int = 0,
    problem: str = "",
    plateau: tuple[int, float] | None = None,
    rescale_every: int | None = None,
) -> OptimizeResult:
    """Minimise W(Z) with L-BFGS (scipy) from ``Z0``.

    Parameters
    ----------
    marginal : Marginal
        Gives W(Z) and ∇W(Z).
    Z0 : ndarray of shape (Nz, d)
        Initial XVs.
    max_iter : int, default=200
        Maximum L-BFGS iterations (W(Z) evaluations are capped at 4× this + 20);
        0 evaluates W at ``Z0`` and keeps it (β and b for fixed XVs).
    tol : float, default=1e-6
        Stop when the relative decrease of W in an iteration falls below ``tol``
        (L-BFGS-B's ``ftol``, on W scaled so that the test is relative for
        |W| below 1 too, down to |W(Z0)|).
    callback : callable, optional
        Called with an `IterationInfo` after each iteration; returning
        True stops the optimisation.
    verbose : int, default=0
        Print one line per iteration when > 0.
    problem : str, optional
        Names the problem in the verbose lines and in `IterationInfo`
        (``"class 3 vs rest"``) when a fit solves several.
    plateau : (int, float), optional
        ``(n, rtol)``: also stop, as converged, when the last n iterations
        together lowered W by at most ``rtol · |W|``: W has levelled off. See
        `sampling_plateau` for the estimators' choice.
    rescale_every : int, optional
        Read the XVs' scales from β (`row_scales`) every this many iterations,
        and go on in the new coordinates where they have moved by
        `RESCALE_STEP` powers of two (module docstring); 0 keeps
        `coordinate_scale` for the whole run. By default `RESCALE_EVERY`.

    Returns
    -------
    OptimizeResult
        ``converged`` says whether L-BFGS met its ``tol`` test; the caller warns
        (the estimators raise a `sklearn.exceptions.ConvergenceWarning` naming
        the problem, as scikit-learn's estimators do when ``max_iter`` stops them).

    Notes
    -----
    Where a unit step from ``Z0`` changes W by at most √ε of itself (W flat around
    the initial XVs, as where every β_j = 0), the first iteration tries steps of
    1, 2, 4, … units along the gradient and against it, and takes the lowest W once
    it has fallen; elsewhere the run is L-BFGS-B's from ``Z0``.

    If the solver fails after the first evaluation (for example an inaccurate
    solve where two XVs collide), or returns a non-finite W or gradient, the
    optimisation stops, keeps the best XVs found so far and warns with a
    `ConvergenceWarning` naming the solver and the formulation. A failure at
    the first evaluation is a `SolverError`.
    """
    Z0 = np.asarray(Z0, dtype=float)
    if Z0.ndim != 2 or Z0.size == 0:
        raise ValueError(f"Z0 must be a non-empty array of shape (Nz, n_features); got shape "
                         f"{Z0.shape}.")
    if not np.isfinite(Z0).all():
        raise ValueError("Z0 contains NaN or infinity; pass finite initial XVs.")
    every = RESCALE_EVERY if rescale_every is None else int(rescale_every)
    run = _Run(marginal, max_iter, callback, verbose, problem, plateau)
    run.history.append(run.evaluate(Z0).value)
    # L-BFGS-B's ftol test divides the decrease by max(|W|, 1): absolute where |W| < 1.
    # Handing it W / scale with scale = min(1, |W(Z0)|) keeps the test relative, as
    # documented, for objectives that start below 1 (a kernel ridge fitting its data
    # well); at |W(Z0)| ≥ 1 nothing changes (scale 1 divides exactly).
    if 0.0 < abs(run.history[0]) < 1.0:
        run.scale = abs(run.history[0])
    message, n_iter, converged = "max_iter=0: the initial XVs are kept", 0, True
    stop = "max_iter=0"
    d = row_scales(None, Z0)
    try:
        if max_iter > 0:
            try:
                start: Array | None = run.leave_flat_start(Z0, d, tol)
            except StopIteration:  # the callback or the plateau test, after the step
                start = None
            walked = len(run.history) - 1
            if start is None:
                status, message, n_iter = 99, "STOP: the callback or the plateau test", walked
            elif walked == max_iter:
                status, message, n_iter = 1, "STOP: max_iter reached", walked
            else:
                # scipy's L-BFGS-B until the end, or until the XVs' scales have moved (read
                # every `every` iterations); then `_Run.carry_on` from there with its pairs on
                # the new scales
                res = run.first_stage(start / d, d, max_iter - walked, tol, every, Z0)
                n_iter = int(res.nit) + walked
                if run.rescaled is not None:
                    d, u = run.rescaled, res.x.reshape(Z0.shape) * (d / run.rescaled)
                    n_iter, status, message = run.carry_on(u, d, n_iter, tol, every, Z0)
                else:
                    status, message = int(res.status), str(res.message)
            message = run.levelled or message
            # status 1: the iteration or evaluation budget ran out before ftol held (99, the
            # callback's StopIteration, is the caller's choice)
            converged = status != 1
            stop = run.stopped_by or ("converged" if converged else "max_iter")
    except SolverError as exc:
        n_iter, converged, stop = len(run.history) - 1, False, "failed solve"
        message = f"stopped early: {exc}"
        warnings.warn(
            f"L-BFGS stopped after {n_iter} iterations because the solver failed; keeping the "
            f"best XVs found. {exc}",
            ConvergenceWarning,
            stacklevel=2,
        )
    Z_best, ev_best = run.best
    return OptimizeResult(Z_best, ev_best, np.asarray(run.history), n_iter, run.n_eval, message,
                          time.perf_counter() - run.start, converged, stop, run.n_stages)


def row_scales(coef: Array | None, Z0: Array) -> Array:
    """The XVs' coordinate scales d, shape (Nz, 1): L-BFGS runs on U = Z / d.

    ∂W/∂z_j carries the factor β_j (Lemma 1), so W's curvature along z_j grows
    with |β_j|: XVs of large |β_j| are stiff and those of small |β_j| hardly move
    under one step length. d_j ∝ 1/√‖β_j‖ evens the curvature out (a diagonal
    preconditioner); ‖β_j‖ is floored at 10⁻³ of the largest, and d_j is a power
    of two, so that Z = U·d is exact. The scales' geometric mean is
    `coordinate_scale` (1 for ordinary data). Without ``coef`` (or with β = 0)
    every d_j is that scale.

    Examples
    --------
    >>> Z0 = np.zeros((3, 2)) + 0.5
    >>> row_scales(np.array([4.0, 1.0, 0.25]), Z0).ravel().tolist()
    [0.5, 1.0, 2.0]
    >>> row_scales(None, Z0).ravel().tolist()
    [1.0, 1.0, 1.0]
    """
    s = coordinate_scale(Z0)
    d = np.full((len(Z0), 1), s)
    if coef is None:
        return d
    size = np.linalg.norm(np.asarray(coef, dtype=float).reshape(len(Z0), -1), axis=1)
    if not np.isfinite(size).all() or size.max() <= 0.0:
        return d
    size = np.maximum(size, 1e-3 * size.max())
    exponent = np.round(-0.5 * np.log2(size / np.exp(np.mean(np.log(size)))))
    scales: Array = d * np.exp2(exponent)[:, None]
    return scales


class _Run:
    """The state of one `minimize_marginal` run across its stages: the evaluations
    (cached: scipy re-asks for x0), the best point, W's history and the stopping
    tests of the callback and the plateau."""

    def __init__(self, marginal: Marginal, max_iter: int,
                 callback: Callable[[IterationInfo], bool | None] | None, verbose: int,
                 problem: str, plateau: tuple[int, float] | None) -> None:
        self.marginal, self.max_iter, self.callback = marginal, max_iter, callback
        self.verbose, self.problem, self.plateau = verbose, problem, plateau
        self.max_fun = 4 * max_iter + 20
        self.start = time.perf_counter()
        self.best: tuple[Array, Evaluation]  # the lowest W so far, set by the first evaluation
        self.last: tuple[Array, Evaluation] | None = None  # the last evaluation
        self.history: list[float] = []
        #: why the callback or the plateau test stopped the run ("callback", "plateau"), and
        #: the plateau's message
        self.stopped_by, self.levelled = "", ""
        self.n_eval = 0
        self.scale = 1.0
        #: the scales `carry_on` takes, where the first stage ended for them (`first_stage`)
        self.rescaled: Array | None = None
        #: L-BFGS's memory, and the coordinate systems it has run in (`carry_on`)
        self.pairs = Pairs()  # as many pairs as L-BFGS-B keeps by default
        self.n_stages = 1

    def evaluate(self, Z: Array) -> Evaluation:
        """W, ∇W at ``Z``, the last one (or the best, then the last again) where ``Z`` is
        that one's."""
        if self.last is not None and np.array_equal(Z, self.last[0]):
            return self.last[1]
        if self.n_eval and np.array_equal(Z, self.best[0]):
            self.last = self.best  # as an evaluation there would have made it
            return self.best[1]
        ev = self.marginal.evaluate(Z)
        self.n_eval += 1
        _check_finite(self.marginal, ev)
        self.last = (Z.copy(), ev)
        if self.n_eval == 1 or ev.value < self.best[1].value:
            self.best = self.last
        return ev

    def fun(self, u: Array, d: Array) -> tuple[float, Array]:
        """W and its gradient in L-BFGS's coordinates U = Z / d, both divided by `scale`."""
        ev = self.evaluate(u.reshape(d.shape[0], -1) * d)
        assert ev.grad is not None
        return ev.value / self.scale, (ev.grad * d).ravel() / self.scale

    def value(self, u: Array, d: Array) -> float:
        """`fun`'s W alone, for scipy's line search."""
        return self.fun(u, d)[0]

    def grad(self, u: Array, d: Array) -> Array:
        """`fun`'s gradient alone, for scipy's line search."""
        return self.fun(u, d)[1]

    def moved(self, d: Array, Z0: Array, every: int) -> Array | None:
        """At a reading of the scales (every ``every`` iterations of the run; 0: never), the
        XVs' scales (`row_scales`) at the last evaluation where one of them has moved from
        ``d`` by `RESCALE_STEP` powers of two; else None."""
        if every <= 0 or (len(self.history) - 1) % every:
            return None
        assert self.last is not None
        new = row_scales(self.last[1].coef, Z0)
        return new if np.max(np.abs(np.log2(new / d))) >= RESCALE_STEP else None

    def leave_flat_start(self, Z0: Array, d: Array, tol: float) -> Array:
        """Where W is flat at ``Z0``, one steepest-descent step long enough to leave the
        flat; the XVs L-BFGS starts from (``Z0`` where there is no such step).

        Flat: a unit step (L-BFGS-B's first) changes W by at most `FLAT` of itself to first
        order. It is where every β_j is 0, so ∂W/∂z_j = 0 (Lemma 1): a hinge-type loss is
        then at a corner whose multipliers accommodate every nearby Z, and W is constant
        around ``Z0``. The gradient an interior point returns there (β_j of its gap's size)
        still points along a line where an XV would earn a coefficient, but a unit step
        stays on the flat, and L-BFGS-B's line search backtracks on rounding. Steps of 1,
        2, 4, …, 2^`FLAT_DOUBLINGS` along it are tried until W has fallen by more than
        ``tol`` of itself and then stops falling, or W rises at once (no flat: a minimum),
        or the solver fails at a step (taken as a rise); then the same the other way, for
        the gradient's sign is the stopped iterate's. The lowest point of both walks is
        taken, one iteration.
        """
        ev = self.best[1]
        W0, grad = ev.value, ev.grad
        assert grad is not None
        norm = float(np.linalg.norm(grad * d))
        if norm == 0.0 or norm > FLAT * abs(W0):
            return Z0
        direction = -(grad * d) / norm * d  # unit length in L-BFGS's coordinates U = Z / d
        margin = tol * abs(W0)  # (W0 ≠ 0 here: a flat W0 = 0 has a zero gradient)
        lowest, lowest_W = Z0, W0
        # (which basin each side leads to: image's one-XV fit left the flat both ways, to
        # W 1.9 times apart)
        for side in (direction, -direction):
            side_W = W0  # the lowest of this walk: each walk stops where it stops falling
            for k in range(FLAT_DOUBLINGS + 1):
                Z = Z0 + 2.0**k * side
                try:
                    W = self.evaluate(Z).value
                except SolverError:  # (far out, say, where the kernel underflows): as a rise
                    break
                if W < side_W - margin:
                    side_W = W
                    if W < lowest_W - margin:
                        lowest, lowest_W = Z, W
                elif side_W < W0 or W > W0 + margin:
                    break
        if lowest is Z0:
            return Z0
        self.evaluate(lowest)  # (cached as the best so far) the last evaluation is the lowest's
        self.on_iteration(lowest, lowest_W)
        return lowest

    def first_stage(self, u0: Array, d: Array, length: int, tol: float, every: int, Z0: Array
                    ) -> ScipyOptimizeResult:
        """Up to ``length`` iterations of scipy's L-BFGS-B on U = Z / d from ``u0``, its pairs
        kept in `pairs`; it ends early, with `rescaled` set, where the XVs' scales have moved
        at a reading (`moved`)."""
        shape = u0.shape
        previous: tuple[Array, Array] | None = (u0.ravel(), self.grad(u0.ravel(), d))

        def callback(intermediate_result: ScipyOptimizeResult) -> None:
            # scipy passes the result (not only x) to a parameter of this name
            nonlocal previous
            u = intermediate_result.x.copy()
            assert self.last is not None
            # L-BFGS-B's line search ends at its new point, so the last evaluation is there
            # (a pair is skipped, never evaluated again, where it is not)
            g = self.grad(u, d) if np.array_equal(self.last[0], u.reshape(shape) * d) else None
            if g is not None and previous is not None:
                self.pairs.push(u - previous[0], g - previous[1])
            previous = None if g is None else (u, g)
            self.on_iteration(u.reshape(shape) * d, float(intermediate_result.fun) * self.scale)
            self.rescaled = self.moved(d, Z0, every)
            if self.rescaled is not None:
                raise StopIteration

        return minimize(self.fun, u0.ravel(), args=(d,), jac=True, method="L-BFGS-B",
                        callback=callback,
                        # its first call, at u0, is answered from the cache
                        options={"maxiter": length, "maxfun": self.max_fun - self.n_eval + 1,
                                 "ftol": tol, "gtol": 1e-10})

    def carry_on(self, u: Array, d: Array, n_iter: int, tol: float, every: int, Z0: Array
                 ) -> tuple[int, int, str]:
        """L-BFGS on U = Z / d from iteration ``n_iter`` to the end, with `pairs` (in these
        coordinates) as its memory, going on in new coordinates where the scales have moved
        at a reading (`moved`), the pairs with them (`Pairs.rescale`). The
        steps are L-BFGS-B's without bounds; the line search is scipy's strong Wolfe search
        with L-BFGS-B's constants. Returns the iterations done in all, scipy's status (0
        converged, 1 the budget ran out, 2 no step found, 99 stopped by a test) and a
        message."""
        self.n_stages += 1
        u = u.ravel()
        f, g = self.fun(u, d)
        while n_iter < self.max_iter:
            if self.n_eval >= self.max_fun:
                return n_iter, 1, "STOP: the evaluation budget ran out"
            if np.max(np.abs(g)) <= 1e-10:
                return n_iter, 0, "CONVERGENCE: the gradient is below 1e-10"
            p = self.pairs.direction(g)
            if not float(g @ p) < 0.0:
                self.pairs.clear()
                p = -g
            if not len(self.pairs):
                # L-BFGS-B's first step without pairs: unit length
                p = p / float(np.linalg.norm(p))
            with warnings.catch_warnings():
                # a failed search is handled below, as L-BFGS-B handles it
                warnings.filterwarnings("ignore", "The line search algorithm")
                alpha = line_search(self.value, self.grad, u, p, g, f, args=(d,), c1=1e-3,
                                    c2=0.9, maxiter=20)[0]
            if alpha is None:
                if len(self.pairs):
                    self.pairs.clear()
                    continue
                return n_iter, 2, "ABNORMAL: the line search found no lower W"
            u_new = u + alpha * p
            f_new, g_new = self.fun(u_new, d)
            self.pairs.push(u_new - u, g_new - g)
            n_iter += 1
            try:
                self.on_iteration(u_new.reshape(d.shape[0], -1) * d, f_new * self.scale)
            except StopIteration:
                return n_iter, 99, "STOP: the callback or the plateau test"
            if f - f_new <= tol * max(abs(f), abs(f_new), 1.0):
                return n_iter, 0, "CONVERGENCE: the relative reduction of W is below tol"
            u, f, g = u_new, f_new, g_new
            new = self.moved(d, Z0, every)
            if new is not None:
                ratio = np.broadcast_to(d / new, (len(d), len(u) // len(d))).ravel()
                self.pairs.rescale(ratio)
                u, g, d = u * ratio, g / ratio, new
                self.n_stages += 1
        return n_iter, 1, "STOP: max_iter reached"

    def on_iteration(self, Z: Array, value: float) -> None:
        """After each iteration: the history, the verbose line and the two stopping tests."""
        history, plateau = self.history, self.plateau
        history.append(value)
        assert self.last is not None and self.last[1].grad is not None
        info = IterationInfo(len(history) - 1, value, float(np.linalg.norm(self.last[1].grad)),
                             Z, time.perf_counter() - self.start, self.problem)
        if self.verbose:
            where = f"{self.problem}: " if self.problem else ""
            print(f"[sparsify] {where}iter {info.iteration:4d}/{self.max_iter}  W = {value:.8g}  "
                  f"|grad| = {info.grad_norm:.3g}  {info.seconds:.2f}s", flush=True)
        if self.callback is not None and self.callback(info):
            self.stopped_by = "callback"
            raise StopIteration
        if plateau is not None and len(history) > plateau[0]:
            n, rtol = plateau
            if history[-1 - n] - value <= rtol * abs(value):
                self.levelled = (f"W(Z) decreased by at most {rtol:.2g} (relative) over the "
                                 f"last {n} iterations")
                self.stopped_by = "plateau"
                raise StopIteration


def sampling_plateau(n_samples: int, n_iter_no_change: int | str | None
                     ) -> tuple[int, float] | None:
    """The estimators' plateau test for `minimize_marginal`: W's own sampling error.

    W(Z) sums N per-point losses, so as an estimate of the objective on the
    population it is uncertain by about 1/√N of itself: a decrease below that
    over ``n_iter_no_change`` iterations moves XVs by less than the data can
    tell apart. ``"auto"`` is `PLATEAU_WINDOW` iterations from `PLATEAU_FROM`
    points on, where an evaluation costs enough for the slow tail that
    L-BFGS's per-iteration ``tol`` would run on through to matter; smaller
    fits run to ``tol`` or ``max_iter``. Measured (docs/results/fit_speed.md,
    docs/theory.md): on a9a (N = 32 561) 3 iterations fit at Nz = 100 in 18.2 s
    against 37.2 s for 10, at the same test accuracy (85.08 % and 85.05 %).

    Examples
    --------
    >>> sampling_plateau(40_000, "auto")
    (3, 0.005)
    >>> sampling_plateau(400, "auto") is None
    True
    >>> sampling_plateau(400, 5)
    (5, 0.05)
    """
    if n_iter_no_change is None or (n_iter_no_change == "auto"
                                    and n_samples < PLATEAU_FROM):
        return None
    n = PLATEAU_WINDOW if n_iter_no_change == "auto" else int(n_iter_no_change)
    return n, 1.0 / float(np.sqrt(n_samples))


def warn_if_not_converged(estimator: str, results: list[tuple[str, OptimizeResult]],
                          max_iter: int) -> None:
    """One `ConvergenceWarning` naming every problem of a fit that L-BFGS left unfinished.

    As scikit-learn's estimators do when ``max_iter`` stops them: the fit is
    kept, the warning says which problems and what to change.

    Parameters
    ----------
    estimator : str
        The estimator's name, for the message.
    results : list of (str, OptimizeResult)
        Each problem's name (empty for a single problem) and its result.
    max_iter : int
        The iteration limit the fit had.

    Examples
    --------
    >>> import warnings
    >>> from sparsify.core.marginal import Evaluation
    >>> ev = Evaluation(1.0, None, np.zeros(1), 0.0, "svm-dual")
    >>> res = OptimizeResult(np.zeros((1, 1)), ev, np.ones(3), 2, 3, "limit", converged=False)
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     warn_if_not_converged("SparseSVC", [("class 'a' vs rest", res)], max_iter=2)
    >>> print(caught[0].message)  # doctest: +NORMALIZE_WHITESPACE
    SparseSVC: L-BFGS stopped at max_iter=2 before W(Z) levelled off for 1 of 1 problem
    (class 'a' vs rest: last relative decrease 0); the XVs are usable but not optimised to
    tol. Increase max_iter or loosen tol.
    """
    stopped = [(name, res) for name, res in results if not res.converged]
    if not stopped or max_iter == 0:
        return
    parts = []
    for name, res in stopped[:5]:
        h = res.history
        last = abs(h[-2] - h[-1]) / max(abs(h[-1]), 1e-300) if len(h) > 1 else float("nan")
        failed = res.message.startswith("stopped early")
        why = "a solve failed" if failed else f"last relative decrease {last:.2g}"
        parts.append(f"{name}: {why}" if name else why)
    more = f", and {len(stopped) - 5} more" if len(stopped) > 5 else ""
    noun = "problem" if len(results) == 1 else "problems"
    warnings.warn(
        f"{estimator}: L-BFGS stopped at max_iter={max_iter} before W(Z) levelled off for "
        f"{len(stopped)} of {len(results)} {noun} ({'; '.join(parts)}{more}); the XVs are "
        "usable but not optimised to tol. Increase max_iter or loosen tol.",
        ConvergenceWarning,
        stacklevel=3,
    )


def problem_line(name: str, res: OptimizeResult) -> str:
    """The ``verbose=1`` line for one finished problem: iterations, W and time.

    Examples
    --------
    >>> from sparsify.core.marginal import Evaluation
    >>> ev = Evaluation(12.5, None, np.zeros(1), 0.0, "svm-dual")
    >>> res = OptimizeResult(np.zeros((1, 1)), ev, np.ones(3), 7, 9, "ok", seconds=0.25)
    >>> problem_line("class 3 vs rest", res)
    '[sparsify] class 3 vs rest: 7 iterations, W = 12.5, 0.25 s, converged'
    >>> res.stop = "callback"
    >>> problem_line("", res)
    '[sparsify] 7 iterations, W = 12.5, 0.25 s, stopped by the callback'
    """
    status = {"converged": "converged", "plateau": "converged (W levelled off)",
              "callback": "stopped by the callback", "max_iter": "stopped by max_iter",
              "failed solve": "stopped by a failed solve",
              "max_iter=0": "initial XVs kept (max_iter=0)"}.get(res.stop, res.stop)
    where = f"{name}: " if name else ""
    return (f"[sparsify] {where}{res.n_iter} iterations, W = {res.evaluation.value:.8g}, "
            f"{res.seconds:.2f} s, {status}")


def coordinate_scale(Z0: Array) -> float:
    """The power of two L-BFGS divides the XVs by: 1 unless their largest entry is outside
    [2⁻²⁰, 2²⁰], else the power of two nearest to it (so dividing is exact).

    Examples
    --------
    >>> coordinate_scale(np.array([[3.0, -1.0]])), coordinate_scale(np.array([[1e150]])) > 1e149
    (1.0, True)
    """
    largest = float(np.max(np.abs(Z0)))
    if largest == 0.0 or 2.0**-20 <= largest <= 2.0**20:
        return 1.0
    return float(2.0 ** round(np.log2(largest)))


def warn_if_no_step(estimator: str, results: list[tuple[str, OptimizeResult]]) -> None:
    """A `ConvergenceWarning` for the problems where L-BFGS stopped at its start.

    L-BFGS ends at once where ∇W(Z) is zero at the initial XVs: either they are
    already optimal (Nz equal to the distinct training points), or W does not
    depend on the XVs at all (a kernel that is constant on the data, or that
    vanishes between any two points), which a fit must not pass over in silence.

    Examples
    --------
    >>> import warnings
    >>> from sparsify.core.marginal import Evaluation
    >>> ev = Evaluation(2.0, np.zeros((1, 1)), np.zeros(1), 0.0, "svm-dual")
    >>> res = OptimizeResult(np.zeros((1, 1)), ev, np.ones(1), 0, 1, "pgtol", stop="converged")
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     warn_if_no_step("SparseSVC", [("", res)])
    >>> print(caught[0].message)  # doctest: +ELLIPSIS
    SparseSVC: L-BFGS made no step from the initial XVs (W(Z) = 2, |∇W(Z)| = 0): ...
    """
    still = [(name, res) for name, res in results if res.n_iter == 0 and res.stop == "converged"]
    if not still:
        return
    name, res = still[0]
    grad = res.evaluation.grad
    norm = float(np.linalg.norm(grad)) if grad is not None else 0.0
    which = "" if len(results) == 1 else (
        f" for {len(still)} of {len(results)} problems ({name or 'the problem'}, ...)")
    warnings.warn(
        f"{estimator}: L-BFGS made no step from the initial XVs{which} (W(Z) = "
        f"{res.evaluation.value:.6g}, |∇W(Z)| = {norm:.3g}): the gradient is zero there, so "
        "the XVs were kept. Either they are already optimal (as many XVs as distinct training "
        "points), or W does not depend on them: the kernel is constant on these data or "
        "vanishes between any two points; check gamma against the features' scale "
        "(gamma='scale' adapts to it).", ConvergenceWarning, stacklevel=3)
