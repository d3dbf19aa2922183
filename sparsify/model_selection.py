"""`SparseSearchCV`: a cross-validated grid search that warm-starts each fit from a neighbour.

`sklearn.model_selection.GridSearchCV` fits every setting of every fold from scratch.
A sparse kernel machine refitted at a neighbouring C, γ or Nz starts better from the
last fit's XVs and solution (`sparsify.core.warm`): within a fold, `SparseSearchCV`
fits the settings in an order where each has a fitted neighbour — Nz ascending (the
expansion path: each size from the next smaller one plus new XVs where its loss is
largest), then the other parameters, γ, and C innermost (a path over C as LIBLINEAR
warm-starts it) — and starts each from its nearest fitted neighbour of no larger Nz.
Folds run in parallel (``n_jobs``); nothing crosses from one fold to another, so no
fold's model has seen its validation points. The refit on all data is the chosen
setting fitted from scratch, as the estimator alone (and GridSearchCV) would fit it: a
warm start from a fold's model may end in another local minimum of W, and the refit is
the model the user keeps (measured in docs/theory.md, "The smallest good model").

With ``n_expansion`` in the grid the default choice is the smallest model whose
cross-validated score is within one standard error of the best (Hastie, Tibshirani &
Friedman, *The Elements of Statistical Learning*, §7.10): a sparse model is chosen for
its cost, and a larger one whose score is not distinguishable from it buys nothing;
``select="best"`` takes the best score instead.

Where every fold trains on many points (``halving="auto"``: at least
`sparsify.core.optimize.PLATEAU_FROM`), the grid holds no ``n_expansion`` and the
estimator takes ``sample_weight``, the settings are first compared on samples of the
folds' training points: successive halving (Jamieson & Talwalkar 2016; scikit-learn's
``HalvingGridSearchCV``). Each round fits the remaining settings on a nested sample
``factor`` times larger than the last's, each point weighing its share of the fold,
scores them on the whole validation part, and keeps the best 1/``factor`` of them; the
last round trains on every point. The ranking of the settings is what a round needs,
not their final models, and a sample ranks them for a fraction of the cost (measured
in docs/theory.md, "The smallest good model").
"""

from __future__ import annotations

import copy
import numbers
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from joblib import Parallel, delayed
from numpy.typing import ArrayLike, NDArray
from scipy.stats import rankdata
from sklearn.base import BaseEstimator, clone, is_classifier
from sklearn.exceptions import FitFailedWarning
from sklearn.metrics import check_scoring
from sklearn.model_selection import ParameterGrid, check_cv
from sklearn.model_selection._search import BaseSearchCV
from sklearn.utils import _safe_indexing, check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import has_fit_parameter, indexable

from sparsify.core.continuation import nested_sample
from sparsify.core.optimize import PLATEAU_FROM, PLATEAU_WINDOW
from sparsify.persistence import VersionedPickleMixin
from sparsify.validation import is_dask_collection

__all__ = ["SearchStep", "SparseSearchCV", "expansion_sizes", "halving_rounds", "warm_plan"]

#: Parameters whose neighbouring values share XVs well; a grid that varies any other
#: parameter warm-starts only between settings equal in it.
NUMERIC_PATH = ("n_expansion", "gamma", "C")


def expansion_sizes(largest: int) -> list[int]:
    """Nz = 1, 2, 4, … up to ``largest`` (included): an expansion path's sizes.

    Examples
    --------
    >>> expansion_sizes(64)
    [1, 2, 4, 8, 16, 32, 64]
    >>> expansion_sizes(100)
    [1, 2, 4, 8, 16, 32, 64, 100]
    """
    if largest < 1:
        raise ValueError(f"The largest Nz must be at least 1; got {largest}.")
    sizes = [1]
    while sizes[-1] * 2 < largest:
        sizes.append(sizes[-1] * 2)
    if sizes[-1] != largest:
        sizes.append(largest)
    return sizes


def halving_rounds(n_candidates: int, n_train: int, factor: int,
                   min_resources: int) -> list[tuple[int, int]]:
    """Successive halving's rounds: (settings fitted, training points per fold) in each.

    As many rounds as keeping the best ``ceil(n / factor)`` of ``n`` settings
    takes to leave at most ``factor`` of them (scikit-learn's
    ``HalvingGridSearchCV``), fewer where the first round would train on fewer
    than ``min_resources`` points; each round trains on ``factor`` times the
    last's points, the last on all ``n_train``. One round is no halving.

    Examples
    --------
    >>> halving_rounds(25, 6667, 3, 500)
    [(25, 741), (9, 2223), (3, 6667)]
    >>> halving_rounds(25, 2000, 3, 500)  # a ninth would be under 500 points
    [(25, 667), (9, 2000)]
    >>> halving_rounds(25, 1000, 3, 500)
    [(25, 1000)]
    """
    n_rounds = 1
    while factor ** n_rounds <= n_candidates:
        n_rounds += 1
    while n_rounds > 1 and n_train < min_resources * factor ** (n_rounds - 1):
        n_rounds -= 1
    rounds, n = [], n_candidates
    for r in range(n_rounds):
        rounds.append((n, -(-n_train // factor ** (n_rounds - 1 - r))))
        n = -(-n // factor)
    return rounds


def _nested_sample(train: NDArray[np.intp], y: Any, stratify: bool,
                   rng: np.random.RandomState) -> NDArray[np.intp]:
    """``train`` in an order whose every prefix is a random sample of it, stratified by
    ``y`` for a classifier with one output (`sparsify.core.continuation.nested_sample`)."""
    labels = (np.asarray(_safe_indexing(y, train)) if stratify and y is not None
              and np.ndim(y) == 1 else None)
    return nested_sample(train, labels, rng)


def _ranks(candidates: Sequence[dict[str, Any]]) -> dict[str, dict[Any, int]]:
    """Each parameter's values in order (numbers ascending, others by their text)."""
    ranks: dict[str, dict[Any, int]] = {}
    for name in {key for c in candidates for key in c}:
        values = [c[name] for c in candidates if name in c]
        numeric = all(isinstance(v, numbers.Real) and not isinstance(v, bool) for v in values)
        distinct = []
        for v in values:
            if not any(v is w or (type(v) is type(w) and v == w) for w in distinct):
                distinct.append(v)
        distinct.sort(key=(lambda v: float(v)) if numeric else repr)
        ranks[name] = {_key(v): i for i, v in enumerate(distinct)}
    return ranks


def _key(value: Any) -> Any:
    """A hashable stand-in for a parameter value (an array or a dict by its text)."""
    try:
        hash(value)
    except TypeError:
        return repr(value)
    return (type(value).__name__, value)


def warm_plan(candidates: Sequence[dict[str, Any]]) -> tuple[list[int], list[int | None]]:
    """The order a fold fits the candidates in, and the candidate each one starts from.

    The order sorts by ``n_expansion``, then the other parameters, then ``gamma``,
    with ``C`` innermost. Each candidate starts from the nearest one fitted before
    it (in steps along each parameter's sorted values) that has no larger
    ``n_expansion`` and equal values of every parameter outside `NUMERIC_PATH`;
    None where there is none (a cold start).

    Examples
    --------
    >>> grid = [{"C": c, "n_expansion": n} for n in (2, 4) for c in (1.0, 10.0)]
    >>> order, parent = warm_plan(grid)
    >>> [(grid[i]["n_expansion"], grid[i]["C"]) for i in order]
    [(2, 1.0), (2, 10.0), (4, 1.0), (4, 10.0)]
    >>> parent  # ties go to the latest fitted: (4, 10.0) starts from (4, 1.0)
    [None, 0, 0, 2]
    """
    ranks = _ranks(candidates)
    names = sorted(ranks, key=lambda n: (n == "C", n == "gamma", n != "n_expansion", n))

    def position(c: dict[str, Any]) -> tuple[int, ...]:
        return tuple(ranks[n][_key(c[n])] if n in c else -1 for n in names)

    pos = [position(c) for c in candidates]
    order = sorted(range(len(candidates)), key=lambda i: pos[i])
    free = [j for j, n in enumerate(names) if n in NUMERIC_PATH]
    fixed = [j for j, n in enumerate(names) if n not in NUMERIC_PATH]
    nz = names.index("n_expansion") if "n_expansion" in names else None
    parent: list[int | None] = [None] * len(candidates)
    done: list[int] = []
    for i in order:
        best, best_distance = None, None
        for j in reversed(done):  # the latest fitted wins ties
            if any(pos[i][f] != pos[j][f] for f in fixed):
                continue
            if nz is not None and pos[j][nz] > pos[i][nz]:
                continue
            distance = sum(abs(pos[i][f] - pos[j][f]) for f in free)
            if best_distance is None or distance < best_distance:
                best, best_distance = j, distance
        parent[i] = best
        done.append(i)
    return order, parent


@dataclass(frozen=True)
class SearchStep:
    """What `SparseSearchCV`'s ``callback`` hears after each fit of a fold.

    Attributes
    ----------
    fold, n_folds : int
        The fold (from 0) and how many there are.
    candidate, n_candidates : int
        The setting's index in ``cv_results_["params"]`` and how many there are.
    params : dict
        The setting.
    score : float
        Its validation score on this fold (the refit metric's).
    fit_time : float
        Seconds its fit took.
    warm : bool
        Whether it started from a neighbour's fit.
    round : int, default=0
        The successive halving round (from 0; always 0 without halving).
    n_resources : int or None, default=None
        The training points of this fit (the round's sample of the fold).
    """

    fold: int
    n_folds: int
    candidate: int
    n_candidates: int
    params: dict[str, Any]
    score: float
    fit_time: float
    warm: bool
    round: int = 0
    n_resources: int | None = None


def _score(scorer: Any, estimator: Any, X: Any, y: Any,
           weights: Any = None) -> dict[str, float]:
    """Every metric of ``scorer`` on (X, y), as a dict ("score" for a single metric)."""
    value = scorer(estimator, X, y) if weights is None else scorer(estimator, X, y,
                                                                   sample_weight=weights)
    if isinstance(value, dict):
        return {name: float(v) for name, v in value.items()}
    return {"score": float(value)}


def _fold_path(base: BaseEstimator, X: Any, y: Any, train: NDArray[np.intp],
               test: NDArray[np.intp], candidates: Sequence[dict[str, Any]],
               order: Sequence[int], parent: Sequence[int | None], scorer: Any,
               fit_params: dict[str, Any], score_weights: Any, error_score: Any,
               return_train_score: bool, warm: bool, plateau: int | None,
               report: Callable[[int, dict[str, Any]], None] | None = None,
               starts: Sequence[BaseEstimator | None] | None = None, keep: bool = False,
               weigh: float = 1.0) -> list[dict[str, Any]]:
    """Fit one fold's candidates in ``order``, each from its parent's fit; their records.

    ``plateau`` is the fits' ``n_iter_no_change`` (None: the estimator's own);
    ``score_weights`` (per sample, or None) weigh the scores, as GridSearchCV's
    ``sample_weight`` does where the scorer takes it. ``starts``: per candidate, a
    fit to start from where it has no parent (its own on a halving round's smaller
    sample); ``keep``: each record holds its fitted estimator as ``"model"``;
    ``weigh``: each training point's ``sample_weight`` (1 where none) times it.
    """
    X_train, X_test = _safe_indexing(X, train), _safe_indexing(X, test)
    y_train = None if y is None else _safe_indexing(y, train)
    y_test = None if y is None else _safe_indexing(y, test)
    params = {k: _safe_indexing(v, train) if _per_sample(v, X) else v
              for k, v in fit_params.items()}
    if weigh != 1.0:
        weights = params.get("sample_weight")
        params["sample_weight"] = weigh * (np.ones(len(train)) if weights is None
                                           else np.asarray(weights, dtype=float))
    fitted: dict[int, BaseEstimator] = {}
    records: list[dict[str, Any]] = [{} for _ in candidates]
    for i in order:
        source = fitted.get(parent[i]) if warm and parent[i] is not None else None
        if source is None and warm and starts is not None:
            source = starts[i]
        estimator = copy.deepcopy(source) if source is not None else clone(base)
        if warm:
            estimator.set_params(warm_start=source is not None)
        estimator.set_params(**candidates[i])
        if plateau is not None and "n_iter_no_change" in estimator.get_params():
            estimator.set_params(n_iter_no_change=plateau)
        record: dict[str, Any] = {"warm": source is not None}
        start = time.perf_counter()
        try:
            estimator.fit(X_train, y_train, **params)
        except Exception as exc:
            if error_score == "raise":
                raise
            record.update(fit_time=time.perf_counter() - start, score_time=0.0, failed=True,
                          test={}, train={})
            warnings.warn(f"Fitting {type(base).__name__} with {candidates[i]} failed on a fold "
                          f"and scored error_score={error_score!r}: {exc!r}",
                          FitFailedWarning, stacklevel=2)
            records[i] = record
            if report is not None:
                report(i, record)
            continue
        record["fit_time"] = time.perf_counter() - start
        start = time.perf_counter()
        record["test"] = _score(scorer, estimator, X_test, y_test,
                                None if score_weights is None else score_weights[test])
        record["score_time"] = time.perf_counter() - start
        record["train"] = (_score(scorer, estimator, X_train, y_train,
                                  None if score_weights is None else score_weights[train])
                           if return_train_score else {})
        record["failed"] = False
        fitted[i] = estimator
        if keep:
            record["model"] = estimator
        records[i] = record
        if report is not None:
            report(i, record)
    return records


def _table(records: list[list[dict[str, Any]]], key: str, metric: str | None,
           error_score: Any) -> NDArray[np.float64]:
    """A record field per candidate (rows) and fold (columns): ``key``'s value, or its
    ``metric`` where ``key`` holds scores (``error_score`` where the fit failed)."""
    out = np.empty((len(records[0]), len(records)))
    for k, fold in enumerate(records):
        for i, r in enumerate(fold):
            if metric is None:
                out[i, k] = r[key]
            else:
                out[i, k] = (r[key].get(metric, float("nan")) if not r["failed"]
                             else float(error_score))
    return out


def _per_sample(value: Any, X: Any) -> bool:
    """Whether a fit parameter has one entry per sample (split with the folds)."""
    return hasattr(value, "__len__") and not isinstance(value, str | dict) and (
        len(value) == len(X))


class SparseSearchCV(VersionedPickleMixin, BaseSearchCV):
    """Cross-validated grid search over a sparse kernel estimator, each fit warm-started.

    `sklearn.model_selection.GridSearchCV`'s interface and attributes (``cv_results_``,
    ``best_params_``, ``best_score_``, ``best_index_``, ``best_estimator_``,
    ``refit_time_``, prediction and scoring through the refitted best), for
    sparsify's estimators: within a fold the settings are fitted one after the
    other, each from its nearest fitted neighbour's XVs and solution (`warm_plan`,
    `sparsify.core.warm`); ``n_expansion`` in the grid is an expansion path. Pickles
    record the sparsify version, as the estimators' do.

    Parameters
    ----------
    estimator : estimator
        A sparsify estimator (one with ``warm_start``; another estimator's fits
        start cold).
    param_grid : dict or list of dicts
        As `sklearn.model_selection.GridSearchCV`'s; `expansion_sizes` gives
        an expansion path's ``n_expansion`` values.
    scoring : str, callable, list, tuple, dict or None, default=None
        As GridSearchCV's; None is the estimator's ``score``.
    n_jobs : int or None, default=None
        Folds fitted in parallel (each fold's path is one job).
    refit : bool, str or callable, default=True
        As GridSearchCV's: refit the chosen setting on all data (the metric's
        name with several metrics; a callable of ``cv_results_`` returns the
        index and overrides ``select``).
    cv : int, cross-validation generator or iterable, default=None
        As GridSearchCV's (5-fold, stratified for a classifier).
    verbose : int, default=0
        1: a line per fold; 2: a line per fit.
    pre_dispatch : int or str, default="2*n_jobs"
        As GridSearchCV's.
    error_score : "raise" or float, default=np.nan
        The score of a fit that fails, or "raise".
    return_train_score : bool, default=False
        Also score each fit on its training part.
    select : {"one_standard_error", "best"}, default="one_standard_error"
        With ``n_expansion`` in the grid: the smallest Nz whose mean score is at
        least the best mean minus its standard error (std / √folds), the best
        score among those; or the best score. Without it both are the best.
    warm_start : bool, default=True
        False fits every setting from scratch, as GridSearchCV does.
    n_iter_no_change : int or None, default=3
        The folds' fits stop when the last ``n_iter_no_change`` iterations
        lowered W by less than 1/√N of it, W's sampling error on the fold's N
        points (`sparsify.core.optimize.sampling_plateau`): further decreases
        fit the fold's sample, not the setting's merit, and a warm-started fit
        reaches that plateau in a few iterations. None keeps the estimator's own
        rule. The refit keeps the estimator's own rule either way.
    callback : callable or None, default=None
        Called with a `SearchStep` after each fit (per fold, in fold order when
        ``n_jobs`` runs folds in parallel).
    halving : "auto" or bool, default="auto"
        Successive halving over samples of each fold's training points
        (`halving_rounds`): each round fits the remaining settings on a nested
        sample ``factor`` times the last's and keeps the best 1/``factor`` of
        them for the next; the last trains on every point. Each point of a
        sample weighs the fold's points per sample point (``factor`` to the
        power of the rounds left, times its own ``sample_weight``), so that the
        sample's objective estimates the fold's at the same C. "auto" halves
        where every fold trains on at least
        `sparsify.core.optimize.PLATEAU_FROM` points, the grid holds no
        ``n_expansion`` (the one-standard-error rule compares every size on all
        points) and the estimator's ``fit`` takes ``sample_weight``; True
        wherever the folds hold enough points for two rounds (unweighted where
        ``fit`` takes no weights: a sample then favours stronger
        regularisation); False fits every setting on every point.
    factor : int, default=4
        With halving: each round's sample grows, and its settings shrink, by
        this factor (4 rather than ``HalvingGridSearchCV``'s 3: on a9a it chose
        as well in 0.6 of the time, docs/theory.md).
    min_resources : int, default=400
        With halving: the fewest training points per fold of the first round
        (a 5 × 5 grid on folds of 6400 points or more: three rounds, 25, 7
        and 2 settings).
    random_state : int, RandomState instance or None, default=None
        With halving: draws the samples (nested, stratified for a classifier).

    Attributes
    ----------
    cv_results_ : dict of numpy (masked) ndarrays
        As GridSearchCV's, plus ``warm_start`` (the fraction of folds where the
        setting started from a neighbour), and with halving ``iter`` (the last
        round each setting was fitted in) and ``n_resources`` (that round's
        training points per fold): its scores are that round's, and the ranks
        put every setting of a later round first, as ``HalvingGridSearchCV``'s.
    best_estimator_ : estimator
        The chosen setting refitted on all data (where ``refit``).
    best_score_ : float
        Its mean cross-validated score.
    best_params_ : dict
    best_index_ : int
    scorer_ : callable or dict
    n_splits_ : int
    refit_time_ : float
    multimetric_ : bool

    Examples
    --------
    >>> from sklearn.datasets import make_moons
    >>> from sparsify import SparseSVC, SparseSearchCV
    >>> X, y = make_moons(200, noise=0.2, random_state=0)
    >>> search = SparseSearchCV(SparseSVC(random_state=0, max_iter=30),
    ...                         {"n_expansion": [1, 2, 4, 8], "C": [1.0, 10.0]}, cv=3)
    >>> search.fit(X, y).best_params_["n_expansion"] <= 8
    True
    >>> int(search.cv_results_["params"].__len__()), bool(search.score(X, y) > 0.8)
    (8, True)
    """

    _parameter_constraints: ClassVar[dict[str, list[Any]]] = {
        **BaseSearchCV._parameter_constraints,
        "param_grid": [dict, list],
        "select": [StrOptions({"one_standard_error", "best"})],
        "warm_start": ["boolean"],
        "n_iter_no_change": [Interval(numbers.Integral, 1, None, closed="left"), None],
        "callback": [callable, None],
        "halving": [StrOptions({"auto"}), "boolean"],
        "factor": [Interval(numbers.Integral, 2, None, closed="left")],
        "min_resources": [Interval(numbers.Integral, 1, None, closed="left")],
        "random_state": ["random_state"],
    }

    def __init__(self, estimator: BaseEstimator, param_grid: dict[str, Any] | list[Any], *,
                 scoring: Any = None, n_jobs: int | None = None, refit: Any = True,
                 cv: Any = None, verbose: int = 0, pre_dispatch: int | str = "2*n_jobs",
                 error_score: Any = np.nan, return_train_score: bool = False,
                 select: str = "one_standard_error", warm_start: bool = True,
                 n_iter_no_change: int | None = PLATEAU_WINDOW,
                 callback: Callable[[SearchStep], Any] | None = None,
                 halving: str | bool = "auto", factor: int = 4, min_resources: int = 400,
                 random_state: Any = None) -> None:
        super().__init__(estimator=estimator, scoring=scoring, n_jobs=n_jobs, refit=refit,
                         cv=cv, verbose=verbose, pre_dispatch=pre_dispatch,
                         error_score=error_score, return_train_score=return_train_score)
        self.param_grid = param_grid
        self.select = select
        self.warm_start = warm_start
        self.n_iter_no_change = n_iter_no_change
        self.callback = callback
        self.halving = halving
        self.factor = factor
        self.min_resources = min_resources
        self.random_state = random_state

    def _run_search(self, evaluate_candidates: Callable[..., Any], **kwargs: Any) -> None:
        """BaseSearchCV's cold evaluation of the grid (`fit` warm-starts instead)."""
        evaluate_candidates(ParameterGrid(self.param_grid))

    def fit(self, X: ArrayLike, y: ArrayLike | None = None, **params: Any) -> SparseSearchCV:
        """Fit every setting on every fold, warm-started, and refit the chosen one.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,) or None
        **params : dict
            ``groups`` for the splitter; the rest goes to the estimator's ``fit``,
            arrays of one entry per sample split with the folds
            (``sample_weight``).

        Returns
        -------
        self
        """
        self._validate_params()
        dask = [name for name, value in (("X", X), ("y", y)) if is_dask_collection(value)]
        if dask:
            raise ValueError(f"SparseSearchCV.fit does not take dask collections (got "
                             f"{' and '.join(dask)}): its folds index rows in this process's "
                             "memory. Search on a sample that fits in memory (X.compute()), "
                             "then fit the chosen setting over the row blocks.")
        groups = params.pop("groups", None)
        X, y, groups = indexable(X, y, groups)
        candidates = list(ParameterGrid(self.param_grid))
        if not candidates:
            raise ValueError("param_grid gives no setting to fit; give each parameter a "
                             "non-empty list of values.")
        cv = check_cv(self.cv, y, classifier=is_classifier(self.estimator))
        splits = list(cv.split(X, y, groups))
        self.n_splits_ = len(splits)
        self.multimetric_ = isinstance(self.scoring, list | tuple | set | dict)
        self.scorer_ = check_scoring(self.estimator, self.scoring)
        refit_metric = self._refit_metric()
        warm = self.warm_start and "warm_start" in self.estimator.get_params()
        rounds = self._halving_rounds(candidates, splits)
        records = self._run_rounds(X, y, splits, candidates, rounds, warm, params,
                                   refit_metric)
        self.cv_results_ = self._results(candidates, records)
        if len(rounds) > 1:
            self._halving_results(records, refit_metric)
        if self.refit is not False or not self.multimetric_:
            self.best_index_ = self._best_index(candidates, refit_metric)
            self.best_params_ = candidates[self.best_index_]
            self.best_score_ = float(self.cv_results_[f"mean_test_{refit_metric}"][
                self.best_index_])
        if self.refit is not False:
            self._refit(X, y, params)
        return self

    # ------------------------------------------------------------------ the rounds

    def _halving_rounds(self, candidates: list[dict[str, Any]],
                        splits: list[tuple[Any, Any]]) -> list[tuple[int, int]]:
        """(settings, training points of the smallest fold) per round; one round: none."""
        n_train = min(len(train) for train, _ in splits)
        whole = [(len(candidates), n_train)]
        if self.halving is False or (self.halving == "auto" and (
                n_train < PLATEAU_FROM or any("n_expansion" in c for c in candidates)
                or not has_fit_parameter(self.estimator, "sample_weight"))):
            return whole
        return halving_rounds(len(candidates), n_train, self.factor, self.min_resources)

    def _run_rounds(self, X: Any, y: Any, splits: list[tuple[Any, Any]],
                    candidates: list[dict[str, Any]], rounds: list[tuple[int, int]],
                    warm: bool, fit_params: dict[str, Any], metric: str
                    ) -> list[list[dict[str, Any]]]:
        """Each fold's records (one per candidate). Under halving each is the candidate's
        last round's, with the round (``"round"``) and its training points
        (``"n_resources"``) added."""
        if len(rounds) == 1:
            order, parent = warm_plan(candidates)
            return self._run_folds(X, y, splits, candidates, order, parent, warm,
                                   fit_params, metric)
        rng = check_random_state(self.random_state)
        stratify = is_classifier(self.estimator)
        nested = [_nested_sample(train, y, stratify, rng) for train, _ in splits]
        # a sample's points weigh its fold's points per sample point, so that its objective
        # estimates the fold's at the same C (unweighted, a sample favours stronger
        # regularisation: measured in docs/theory.md), where the estimator takes weights
        weighs = has_fit_parameter(self.estimator, "sample_weight")
        records: list[list[dict[str, Any]]] = [[{} for _ in candidates] for _ in splits]
        models: list[dict[int, BaseEstimator]] = [{} for _ in splits]
        alive = list(range(len(candidates)))
        for r in range(len(rounds)):
            shrink = self.factor ** (len(rounds) - 1 - r)  # each fold's points over the round's
            sample = [(np.sort(order[:-(-len(order) // shrink)]) if shrink > 1 else train, test)
                      for order, (train, test) in zip(nested, splits, strict=True)]
            subset = [candidates[i] for i in alive]
            plan_order, parent = warm_plan(subset)
            # a setting with no fitted neighbour in this round starts from its own fit on
            # the last round's sample (a cold start otherwise: measured in docs/theory.md)
            starts = [[fold.get(i) for i in alive] for fold in models]
            last = r + 1 == len(rounds)
            out = self._run_folds(X, y, sample, subset, plan_order, parent, warm, fit_params,
                                  metric, alive, r, len(candidates), starts, not last,
                                  shrink if weighs else 1)
            for k, fold in enumerate(out):
                models[k] = {j: record.pop("model") for j, record in zip(alive, fold,
                                                                          strict=True)
                             if "model" in record}
                for j, record in zip(alive, fold, strict=True):
                    records[k][j] = {**record, "round": r, "n_resources": len(sample[k][0])}
            if r + 1 < len(rounds):
                mean = _table(out, "test", metric, self.error_score).mean(axis=1)
                best = np.argsort(-np.nan_to_num(mean, nan=-np.inf), kind="stable")
                alive = sorted(alive[j] for j in best[:rounds[r + 1][0]])
        return records

    def _halving_results(self, records: list[list[dict[str, Any]]], metric: str) -> None:
        """``iter``, ``n_resources`` and the ranks of ``cv_results_`` under halving."""
        results = self.cv_results_
        last = np.array([r["round"] for r in records[0]])
        results["iter"] = last
        results["n_resources"] = np.array([max(fold[i]["n_resources"] for fold in records)
                                           for i in range(len(last))])
        for key in [k for k in results if k.startswith("rank_test_")]:
            mean = np.nan_to_num(np.asarray(results[f"mean_test_{key[10:]}"], dtype=float),
                                 nan=-np.inf)
            # later rounds first, then the score; ties share the smallest rank
            _, tie, count = np.unique(np.c_[-last, -mean], axis=0, return_inverse=True,
                                      return_counts=True)
            results[key] = (np.cumsum(count) - count + 1)[tie.ravel()].astype(np.int32)

    # ------------------------------------------------------------------ the folds

    def _refit_metric(self) -> str:
        """The metric that chooses: "score", or ``refit``'s name among several metrics."""
        if not self.multimetric_:
            return "score"
        names = (list(self.scoring) if not isinstance(self.scoring, dict)
                 else list(self.scoring.keys()))
        if self.refit is False or callable(self.refit):
            return str(names[0])
        if not isinstance(self.refit, str) or self.refit not in names:
            raise ValueError("For multi-metric scoring, refit must be one of the metrics' "
                             f"names {names}, a callable, or False; got {self.refit!r}.")
        return self.refit

    def _run_folds(self, X: Any, y: Any, splits: list[tuple[Any, Any]],
                   candidates: list[dict[str, Any]], order: list[int],
                   parent: list[int | None], warm: bool, fit_params: dict[str, Any],
                   metric: str, index: list[int] | None = None, round_: int = 0,
                   n_all: int | None = None,
                   starts: list[list[BaseEstimator | None]] | None = None, keep: bool = False,
                   weigh: float = 1.0) -> list[list[dict[str, Any]]]:
        """Each fold's records (one per candidate), folds in parallel with ``n_jobs``.

        A halving round's subset: ``index``, the candidates' indices among all ``n_all``
        of the grid (for the callback), ``round_`` the round, ``starts`` (per fold),
        ``keep`` and ``weigh`` as `_fold_path` takes them.
        """
        index = list(range(len(candidates))) if index is None else index
        n = len(candidates) if n_all is None else n_all

        def report(fold: int) -> Callable[[int, dict[str, Any]], None]:
            n_points = len(splits[fold][0])

            def heard(i: int, record: dict[str, Any]) -> None:
                score = record["test"].get(metric, float("nan"))
                if self.verbose >= 2:
                    print(f"[SparseSearchCV] fold {fold + 1}/{len(splits)}, "
                          f"{candidates[i]}: score {score:.4g}, {record['fit_time']:.2f} s"
                          f"{' (warm)' if record['warm'] else ''}", flush=True)
                if self.callback is not None:
                    self.callback(SearchStep(fold, len(splits), index[i], n, candidates[i],
                                             score, record["fit_time"], record["warm"],
                                             round_, n_points))
            return heard

        args = (candidates, order, parent, self.scorer_, fit_params, self._score_weights(
            fit_params), self.error_score, self.return_train_score, warm, self.n_iter_no_change)
        if self.n_jobs in (None, 1) or len(splits) == 1:
            out = []
            for fold, (train, test) in enumerate(splits):
                out.append(_fold_path(self.estimator, X, y, train, test, *args, report(fold),
                                      starts and starts[fold], keep, weigh))
                self._fold_line(fold, len(splits), out[-1], len(train))
            return out
        out = Parallel(n_jobs=self.n_jobs, pre_dispatch=self.pre_dispatch)(
            delayed(_fold_path)(self.estimator, X, y, train, test, *args, None,
                                starts and starts[fold], keep, weigh)
            for fold, (train, test) in enumerate(splits))
        for fold, records in enumerate(out):
            heard = report(fold)
            for i in order:
                heard(i, records[i])
            self._fold_line(fold, len(splits), records, len(splits[fold][0]))
        return list(out)

    def _score_weights(self, fit_params: dict[str, Any]) -> Any:
        """``sample_weight`` for the scorer, as GridSearchCV passes it (scikit-learn ≥ 1.8,
        where the scorer takes it), else None."""
        weights = fit_params.get("sample_weight")
        accepts = getattr(self, "_check_scorers_accept_sample_weight", None)
        if weights is None or accepts is None or not accepts():
            return None
        return np.asarray(weights)

    def _fold_line(self, fold: int, n_folds: int, records: list[dict[str, Any]],
                   n_points: int) -> None:
        if self.verbose >= 1:
            seconds = sum(r["fit_time"] for r in records)
            warm = sum(r["warm"] for r in records)
            print(f"[SparseSearchCV] fold {fold + 1}/{n_folds}: {len(records)} fits "
                  f"({warm} warm) on {n_points} points in {seconds:.1f} s", flush=True)

    def _results(self, candidates: list[dict[str, Any]],
                 records: list[list[dict[str, Any]]]) -> dict[str, Any]:
        """``cv_results_`` in GridSearchCV's layout."""
        n_folds = len(records)
        results: dict[str, Any] = {}

        def store(name: str, table: NDArray[np.float64], splits: bool, rank: bool) -> None:
            if splits:
                for k in range(n_folds):
                    results[f"split{k}_{name}"] = table[:, k]
            mean = table.mean(axis=1)
            results[f"mean_{name}"] = mean
            results[f"std_{name}"] = table.std(axis=1)
            if rank:
                filled = np.where(np.isnan(mean), np.nanmin(mean) - 1 if np.isfinite(
                    mean).any() else 0.0, mean)
                results[f"rank_{name}"] = rankdata(-filled, method="min").astype(np.int32)

        def table(key: str, metric: str | None = None) -> NDArray[np.float64]:
            return _table(records, key, metric, self.error_score)

        store("fit_time", table("fit_time"), False, False)
        store("score_time", table("score_time"), False, False)
        for name in sorted({key for c in candidates for key in c}):
            column = np.ma.MaskedArray(np.empty(len(candidates), dtype=object),
                                       mask=True)
            for i, c in enumerate(candidates):
                if name in c:
                    column[i] = c[name]
            results[f"param_{name}"] = column
        results["params"] = candidates
        metrics = next((sorted(r["test"]) for fold in records for r in fold if not r["failed"]),
                       [self._refit_metric()])
        for metric in metrics:
            store(f"test_{metric}", table("test", metric), True, True)
            if self.return_train_score:
                store(f"train_{metric}", table("train", metric), True, False)
        results["warm_start"] = table("warm").mean(axis=1)
        if np.any(~np.isfinite(results[f"mean_test_{metrics[0]}"])):
            warnings.warn("One or more of the test scores are non-finite: "
                          f"{results[f'mean_test_{metrics[0]}']}", UserWarning, stacklevel=3)
        return results

    def _best_index(self, candidates: list[dict[str, Any]], metric: str) -> int:
        """The chosen setting: ``refit``'s callable, the best score, or the one-SE rule."""
        results = self.cv_results_
        if callable(self.refit):
            index = self.refit(results)
            if not isinstance(index, numbers.Integral) or not 0 <= index < len(candidates):
                raise ValueError(f"refit returned {index!r}, not the index of a setting "
                                 f"(0 to {len(candidates) - 1}).")
            return int(index)
        mean = np.nan_to_num(np.asarray(results[f"mean_test_{metric}"], dtype=float),
                             nan=-np.inf)
        if "iter" in results:  # halving: only the last round's settings trained on all points
            mean[results["iter"] < results["iter"].max()] = -np.inf
        best = int(np.argmax(mean))
        if self.select == "best" or not any("n_expansion" in c for c in candidates):
            return best
        se = float(results[f"std_test_{metric}"][best]) / np.sqrt(self.n_splits_)
        eligible = [i for i in range(len(candidates))
                    if np.isfinite(mean[i]) and mean[i] >= mean[best] - se]
        size = {i: _size(candidates[i].get("n_expansion")) for i in eligible}
        smallest = min(size.values())
        return max((i for i in eligible if size[i] == smallest), key=lambda i: mean[i])

    def _refit(self, X: Any, y: Any, fit_params: dict[str, Any]) -> None:
        """The chosen setting fitted on all data from scratch, with the estimator's own rule."""
        start = time.perf_counter()
        estimator = clone(self.estimator).set_params(**self.best_params_)
        estimator.fit(X, y, **fit_params)
        self.refit_time_ = time.perf_counter() - start
        self.best_estimator_ = estimator


def _size(n_expansion: Any) -> float:
    """An ``n_expansion`` value's size for the one-SE rule (an absent one counts as 0)."""
    return 0.0 if n_expansion is None else float(n_expansion)
