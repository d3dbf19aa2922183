"""The fit driver every sparse kernel estimator is built on.

`KernelMachineMixin` is the prediction side of a fitted kernel machine
τ(x) = Σ_j β_j k(z_j, x) + b. `SparseKernelEstimator` is the fit side, shared by
every task: the parameters (``n_expansion``, the kernel, the initial XVs,
``n_init`` starts through joblib, the L-BFGS budget), one fit per problem and
start, the convergence warning and progress lines, and uniform fitted
attributes. The task mixins say what the problems are: `sparsify.core.classifier`
(binary or one-vs-rest, weights, Platt scaling), `sparsify.core.regressor`,
`sparsify.core.outlier` and `sparsify.core.transformer`. The rows come from a data
source (`sparsify.core.data_source`): numpy arrays, or the row blocks of Dask
collections where the formulation's marginal takes them. A subclass that names
its `formulation_class` and writes no ``__init__`` gets one made from the shared
parameters and the formulation's own, so an algorithm's estimator is a few lines.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from numbers import Integral, Real
from typing import Any, ClassVar

import numpy as np
from joblib import Parallel, delayed
from numpy.typing import ArrayLike, NDArray
from sklearn.base import BaseEstimator
from sklearn.utils import Tags, TransformerTags, check_random_state, gen_batches
from sklearn.utils._param_validation import Interval, RealNotInt, StrOptions
from sklearn.utils.validation import _check_sample_weight, check_is_fitted, validate_data

from sparsify.core.conic import make_marginal
from sparsify.core.continuation import nested_sample, sample_plateau, strata
from sparsify.core.data_source import (
    DataSource,
    InMemoryRows,
    RowBlocks,
    RowTarget,
)
from sparsify.core.declared_blocks import DeclaredBlocks
from sparsify.core.distinct import count_distinct, distinct_rows, has_distinct
from sparsify.core.formulation import Formulation
from sparsify.core.kernel_blocks import check_gamma
from sparsify.core.marginal import Evaluation, Marginal
from sparsify.core.optimize import (
    INIT_METHODS,
    initial_expansion_vectors,
    minimize_marginal,
    problem_line,
    sampling_plateau,
    warn_if_no_step,
    warn_if_not_converged,
)
from sparsify.core.params import (
    check_cost_scale,
    check_cost_weights,
    check_no_bools,
    check_positive_weight,
)
from sparsify.core.shared_params import SHARED, SHARED_PARAMS, parameter_docs
from sparsify.core.threads import limit_blas_threads
from sparsify.core.warm import WarmStart, previous_problems, resize
from sparsify.kernels import Kernel, make_kernel, scale_gamma
from sparsify.persistence import VersionedPickleMixin
from sparsify.plugins.plugin_code import plugin_code
from sparsify.plugins.registry import get_registry

__all__ = ["SHARED_PARAMS", "KernelMachineMixin", "SparseKernelEstimator", "check_solver",
           "estimator_for", "optimise_start"]

Array = NDArray[np.float64]


def check_solver(solver: str) -> None:
    """Fail on an unknown solver name before any expensive work, listing the known ones."""
    if solver != "auto":
        get_registry().get("solver", solver)


def _fit_start(
    X: Array,
    y: NDArray[Any] | None,
    formulation: Formulation,
    kernel: Kernel,
    n_expansion: int,
    init: str | Array,
    solver: str,
    solver_tol: float,
    max_iter: int,
    tol: float,
    seed: int,
    callback: Callable[..., Any] | None,
    verbose: int,
    problem: str = "",
    plateau: tuple[int, float] | None = None,
    solution: Evaluation | None = None,
    distinct: NDArray[np.intp] | None = None,
) -> dict[str, Any]:
    """One start of one problem on rows in memory; module level so joblib can ship it.

    ``problem`` names it in the ``verbose=2`` lines, in `IterationInfo` and in
    the convergence warning; ``verbose=1`` prints one line when it is done.
    ``plateau`` is `minimize_marginal`'s; ``solution`` (a warm start's β and b at
    the XVs ``init``) guesses the first inner solution; ``distinct``, X's distinct
    rows where the caller found them for every problem.
    """
    # BLAS threads sized to this problem, in whichever process runs it (the main one, or a
    # joblib worker holding its share of the CPUs)
    with limit_blas_threads(len(X), n_expansion, X.shape[1]):
        Z0 = (np.array(init, dtype=np.float64) if not isinstance(init, str)
              else initial_expansion_vectors(X, n_expansion, init, seed, y=y,
                                             distinct=distinct))
        marginal = make_marginal(formulation, X, y, kernel, n_expansion, solver, solver_tol)
        if solution is not None:
            marginal.warm_start(Z0, solution)
        return optimise_start(marginal, Z0, max_iter, tol, callback, verbose, problem, plateau)


def optimise_start(marginal: Marginal, Z0: Array, max_iter: int, tol: float,
                   callback: Callable[..., Any] | None, verbose: int, problem: str,
                   plateau: tuple[int, float] | None) -> dict[str, Any]:
    """L-BFGS over the XVs from ``Z0``, its progress line, and the start's result.

    The one L-BFGS run of every fit: each start of each problem, in memory or over
    row blocks, and each convex stage of the semi-supervised SVM.

    Returns
    -------
    dict
        Z, value, coef, intercept, variables (the declaration's named variables),
        diagonal_coef, n_iter, history, problem and the
        `sparsify.core.optimize.OptimizeResult` (key ``result``).

    Examples
    --------
    >>> from sparsify import RBF
    >>> from sparsify.algorithms.kernel_ridge.closed_form import RidgeMarginal
    >>> X = np.linspace(-2, 2, 30)[:, None]
    >>> marginal = RidgeMarginal(1e-3, X, np.sin(X[:, 0]), RBF(1.0), 3)
    >>> run = optimise_start(marginal, X[::10], 5, 1e-6, None, 0, "", None)
    >>> run["Z"].shape, run["n_iter"] <= 5
    ((3, 1), True)
    """
    res = minimize_marginal(marginal, Z0, max_iter=max_iter, tol=tol, callback=callback,
                            verbose=verbose >= 2, problem=problem, plateau=plateau)
    if verbose:
        print(problem_line(problem, res), flush=True)
    return {
        "Z": res.Z,
        "value": res.evaluation.value,
        "coef": np.asarray(res.evaluation.coef, dtype=float),
        "intercept": res.evaluation.intercept,
        "variables": dict(res.evaluation.variables),
        "diagonal_coef": res.evaluation.diagonal_coef,
        "n_iter": res.n_iter,
        "history": res.history,
        "problem": problem,
        "result": res,
    }


def _point_losses(target: NDArray[Any] | None) -> Callable[[Array], Array]:
    """Each point's loss under a model's decision values, for placing new XVs
    (`sparsify.core.warm.grow`): the hinge max(0, 1 − y f) for ±1 targets, |y − f| for real
    ones, 1 without targets; 0 for an unlabelled point (NaN)."""
    if target is None:
        return lambda decision: np.ones(len(decision))
    y = np.asarray(target, dtype=float)
    labelled = np.isfinite(y)
    y0 = np.where(labelled, y, 0.0)
    if np.isin(y[labelled], (-1.0, 1.0)).all():
        return lambda decision: np.where(labelled, np.maximum(0.0, 1.0 - y0 * decision[:, 0]), 0.0)
    return lambda decision: np.where(labelled, np.abs(y0 - decision[:, 0]), 0.0)


def _problem_name(classes: NDArray[Any], k: int, n_problems: int, j: int, n_init: int) -> str:
    """How a fit's binary problem and start are named in progress lines and warnings.

    Examples
    --------
    >>> import numpy as np
    >>> _problem_name(np.array(["a", "b", "c"]), 1, 3, 0, 1)
    "class 'b' vs rest"
    >>> _problem_name(np.array([0, 1]), 0, 1, 1, 2)
    'start 2'
    """
    parts = [f"class {classes.tolist()[k]!r} vs rest"] if n_problems > 1 else []
    if n_init > 1:
        parts.append(f"start {j + 1}")
    return ", ".join(parts)


class KernelMachineMixin(VersionedPickleMixin):
    """Prediction of a fitted kernel machine τ(x) = Σ_j β_j k(z_j, x) + b.

    Needs the fitted attributes ``kernel_``, ``expansion_vectors_`` (Nz, d),
    ``expansion_coef_`` (n_outputs, Nz), ``intercept_`` (n_outputs,) and
    ``classes_``; one output is a binary decision, several are one per class.

    Also gives the feature map `transform` (x ↦ k(x, z_j), one column
    per XV) and pickling that records the sparsify version and refuses a model
    saved by another major.minor version (`VersionedPickleMixin`).
    """

    # What the mixin reads, for the type checker: the host estimator's fit sets the attributes
    # and defines fit (`fit_transform` calls it).
    kernel_: Kernel
    expansion_vectors_: Array
    expansion_coef_: Array
    intercept_: Array
    classes_: NDArray[Any]
    fit: Callable[..., Any]

    def _kernel_features(self, X: Array) -> Array:
        """k(x_i, z_j) for a block of validated rows; a machine with another kernel overrides it."""
        return self.kernel_(X, self.expansion_vectors_)

    def _block_rows(self) -> int:
        """Rows per block of `transform` and `decision_function`: about 4 million kernel values."""
        return max(1, 2**22 // max(1, len(self.expansion_vectors_)))

    def transform(self, X: ArrayLike) -> Array:
        """The feature map x ↦ (k(x, z_1), …, k(x, z_Nz)): one column per XV.

        The model is linear in these features: ``transform(X) @ expansion_coef_.T
        + intercept_`` is `decision_function` (one column per output; ravel
        it for one output; plus ``diagonal_coef_`` times k(x, x) where the
        formulation declares that term), so prediction can run wherever a linear
        model runs.
        A one-vs-rest model returns the stacked XVs of all its binary problems,
        per-class blocks in ``expansion_vectors_`` order, and each row of
        ``expansion_coef_`` is zero outside its own block.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, n_expansion_vectors)
            Computed in row blocks so memory stays bounded.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn.datasets import make_moons
        >>> from sparsify import SparseSVC
        >>> X, y = make_moons(60, noise=0.1, random_state=0)
        >>> clf = SparseSVC(n_expansion=4, gamma=2.0, max_iter=10, random_state=0).fit(X, y)
        >>> features = clf.transform(X)
        >>> features.shape
        (60, 4)
        >>> scores = features @ clf.expansion_coef_.T + clf.intercept_
        >>> bool(np.allclose(scores.ravel(), clf.decision_function(X)))
        True
        """
        check_is_fitted(self)
        X_valid: Array = validate_data(self, X, dtype=np.float64, reset=False)
        out = np.empty((len(X_valid), len(self.expansion_vectors_)))
        for rows in gen_batches(len(X_valid), self._block_rows()):
            out[rows] = self._kernel_features(X_valid[rows])
        return out

    def fit_transform(self, X: ArrayLike, y: ArrayLike | None = None, **fit_params: Any) -> Array:
        """Fit, then return `transform` of the training inputs.

        Returns
        -------
        ndarray of shape (n_samples, n_expansion_vectors)
        """
        fitted: KernelMachineMixin = self.fit(X, y, **fit_params)
        return fitted.transform(X)

    def decision_function(self, X: ArrayLike) -> Array:
        """Decision values τ(x) = Σ_j β_j k(z_j, x) + b.

        Computed in row blocks so memory stays bounded; the cost is proportional
        to the number of XVs.

        Returns
        -------
        ndarray of shape (n_samples,) for two classes, else (n_samples, n_classes)
        """
        return self._machine(X)

    def _machine(self, X: ArrayLike) -> Array:
        """τ(x) in row blocks: `decision_function`, and a regressor's `predict`."""
        check_is_fitted(self)
        X_valid: Array = validate_data(self, X, dtype=np.float64, reset=False)
        out = np.empty((len(X_valid), len(self.intercept_)))
        # a formulation's d·k(x, x) (Declaration.diagonal_coef); machines without it have none
        diagonal = np.asarray(getattr(self, "diagonal_coef_", 0.0), dtype=float)
        with_diagonal = bool(np.any(diagonal != 0))
        for rows in gen_batches(len(X_valid), self._block_rows()):
            out[rows] = self._kernel_features(X_valid[rows]) @ self.expansion_coef_.T
            if with_diagonal:
                out[rows] += np.outer(self.kernel_.diag(X_valid[rows]), diagonal)
        out += self.intercept_
        return out.ravel() if out.shape[1] == 1 else out

    def predict(self, X: ArrayLike) -> NDArray[Any]:
        """Predict class labels.

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        scores = self.decision_function(X)
        idx = (scores > 0).astype(int) if scores.ndim == 1 else scores.argmax(1)
        labels: NDArray[Any] = self.classes_[idx]
        return labels

    def __sklearn_tags__(self) -> Tags:
        # BaseEstimator's, which follows this mixin in the host's MRO: mypy sees only object
        tags = super().__sklearn_tags__()  # type: ignore[misc]
        # transform makes it a transformer as well (a feature map of float64 columns)
        tags.transformer_tags = TransformerTags(preserves_dtype=["float64"])
        return tags


#: The most starts per problem (``n_init``).
MAX_N_INIT = 1000

#: The constraint on the shared parameter ``n_iter_no_change`` (`SparseKernelEstimator._plateau`
#: reads it).
N_ITER_NO_CHANGE_CONSTRAINT: list[Any] = [Interval(Integral, 1, None, closed="left"),
                                          StrOptions({"auto"}), None]

class SparseKernelEstimator(KernelMachineMixin, BaseEstimator):
    """The fit driver of every sparse kernel estimator; use a task mixin's subclass.

    A subclass names its algorithm with `formulation_class` and inherits a task:
    `sparsify.core.classifier.SparseKernelClassifier`,
    `sparsify.core.regressor.SparseKernelRegressor`,
    `sparsify.core.outlier.SparseOutlierDetector` or
    `sparsify.core.transformer.SparseKernelTransformer`. Without an ``__init__`` of its
    own it gets one whose parameters are `SHARED_PARAMS` (defaults from the
    task's `default_params`) followed by the formulation constructor's, so
    adding a hyperparameter to a formulation adds it to its estimator. The
    formulation's hyperparameters are passed through to it unchanged (the
    formulation checks them).

    Fitted attributes, the same for every task: ``kernel_``,
    ``expansion_vectors_`` (sum of Nz, d), ``expansion_coef_`` (outputs, sum
    of Nz), ``intercept_`` (outputs,), ``diagonal_coef_`` (outputs,: the
    coefficient of k(x, x) in τ(x), zero unless the formulation declares one),
    and per problem ``n_expansion_``, ``n_iter_``, ``objective_`` (W at the
    kept XVs), ``objective_history_`` and ``declared_variables_`` (a dict of
    the declaration's named variables at the solution,
    `sparsify.core.formulation.Declaration.variables`; empty for an exact
    solver of its own); ``full_n_support_`` when a ratio ``n_expansion``
    refers to a full model.
    """

    #: The algorithm: a `Formulation` subclass made with the estimator's parameters of the same
    #: names.
    formulation_class: ClassVar[type[Formulation] | None] = None

    #: Whether ``_formulation_params(weights)`` multiplies each point's loss by its weight (the
    #: SVM's and the SVR's cost C per point): ``fit`` then takes ``sample_weight``.
    weighted_points: ClassVar[bool] = False

    #: The task's defaults of `SHARED_PARAMS` that differ.
    default_params: ClassVar[dict[str, Any]] = {}

    #: What a ratio ``n_expansion`` is a ratio of, for the generated docstring.
    ratio_meaning: ClassVar[str] = "a ratio of the distinct training points"

    #: scikit-learn's parameter validation: a list of constraints per parameter, or
    #: "no_validation" (a formulation's own parameters in a generated ``__init__``).
    _parameter_constraints: ClassVar[dict[str, Any]] = {
        "n_expansion": [
            Interval(Integral, 1, None, closed="left"),
            Interval(RealNotInt, 0.0, 1.0, closed="right"),
        ],
        "kernel": [str, Kernel],
        "gamma": [StrOptions({"scale", "auto"}), Interval(Real, 0.0, None, closed="neither")],
        "degree": [Interval(Integral, 1, None, closed="left")],
        "coef0": [Real],
        "init": [StrOptions(set(INIT_METHODS))],
        # each start is a whole fit: a million of them is a typing error, not a plan
        "n_init": [Interval(Integral, 1, MAX_N_INIT, closed="both")],
        "warm_start": ["boolean"],
        "n_iter_no_change": N_ITER_NO_CHANGE_CONSTRAINT,
        "continuation": [Interval(RealNotInt, 0.0, 1.0, closed="neither"), None],
        "solver": [str],
        "max_iter": [Interval(Integral, 0, None, closed="left")],
        "tol": [Interval(Real, 0.0, None, closed="left")],
        "solver_tol": [Interval(Real, 0.0, None, closed="neither")],
        "random_state": ["random_state"],
        "n_jobs": [Interval(Integral, None, -1, closed="right"),
                   Interval(Integral, 1, None, closed="left"), None],
        "verbose": ["verbose"],
        "callback": [callable, None],
    }

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if isinstance(cls.__dict__.get("formulation_name"), str):
            raise TypeError(f"{cls.__name__} names its formulation by a string "
                            "(formulation_name); set formulation_class to the Formulation "
                            "subclass instead.")
        if "__init__" not in cls.__dict__ and cls.__dict__.get("formulation_class") is not None:
            _generate_init(cls)
        if "fit" not in cls.__dict__ and cls.formulation_class is not None:
            _show_sample_weight(cls)

    @classmethod
    def _takes_sample_weight(cls) -> bool:
        """Whether ``fit`` takes ``sample_weight``: the estimator weighs points itself
        (`weighted_points`), or its formulation does (`Formulation.weighted`)."""
        form = cls.formulation_class
        return bool(cls.weighted_points or (form is not None and form.weighted))

    def _sample_weight(self, sample_weight: ArrayLike | None, X: Array) -> Array | None:
        """``sample_weight`` checked (one per row, finite, ≥ 0, one of them > 0), or None;
        refused with the reason where the formulation does not weigh its points."""
        if sample_weight is None:
            return None
        self._check_takes_weights()
        weights: Array = _check_sample_weight(sample_weight, X, dtype=np.float64,
                                              ensure_non_negative=True)
        check_positive_weight(weights)
        return weights

    def _weighs_points(self) -> bool:
        """Whether this fit weighs its points: the estimator itself (`weighted_points`) or
        its formulation (`Formulation.weighted`)."""
        return bool(self.weighted_points or self._formulation_type().weighted)

    def _check_takes_weights(self) -> None:
        """Refuse per-point weights, with the reason, where the formulation cannot weigh."""
        if not self._weighs_points():
            form = self._formulation_type()
            raise ValueError(
                f"{type(self).__name__}.fit does not take sample_weight: the "
                f"{form.name or form.__name__!r} formulation does not weigh its points' "
                f"losses ({form.__name__}.weighted is False). Fit without sample_weight; a "
                "formulation of your own takes them once it declares its loss with "
                "out.weights and sets weighted = True.")

    # ------------------------------------------------------------------ the formulation

    def _validate_params(self) -> None:
        """scikit-learn's parameter checks, then True or False for a numeric parameter, which they
        let through (`sparsify.core.params.check_no_bools`), and a cost C (or C*) too large for
        float64 solvers (`sparsify.core.params.check_cost_scale`), before any work."""
        super()._validate_params()
        params = self.get_params(deep=False)
        check_no_bools(type(self).__name__, self._parameter_constraints, params)
        check_cost_scale(params)

    def _formulation_type(self) -> type[Formulation]:
        """The formulation class; an estimator may choose it per instance (SparseKFD's
        ``method``)."""
        if self.formulation_class is None:
            raise TypeError(f"{type(self).__name__} names no formulation_class.")
        return self.formulation_class

    def _formulation_name(self) -> str | None:
        """The formulation's registered name, for a model file (None when it has none)."""
        return self._formulation_type().name or None

    def _takes_unlabelled(self) -> bool:
        """Whether the formulation takes unlabelled points (`Formulation.unlabelled`)."""
        return bool(self._formulation_type().unlabelled)

    @classmethod
    def _formulation_param_names(cls) -> list[str]:
        """The formulation constructor's parameters that this estimator also has."""
        assert cls.formulation_class is not None
        init = cls.formulation_class.__init__
        names = [n for n, p in inspect.signature(init).parameters.items()
                 if n != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
        own = cls._get_param_names()
        return [n for n in names if n in own]

    def _formulation_params(self, weights: Array | None = None) -> dict[str, Any]:
        """The formulation's hyperparameters, from the estimator's of the same names.

        ``weights`` (shape (N,)) are per-point weights; an estimator that takes
        ``sample_weight`` overrides this to pass them on (the SVM scales C).
        """
        return {name: getattr(self, name) for name in self._formulation_param_names()}

    def _make_formulation(self, weights: Array | None = None) -> Formulation:
        """The formulation with the estimator's hyperparameters and the points' ``weights``:
        through `_formulation_params` (the SVM's C per point), or `Formulation.weigh` for a
        formulation that declares `Formulation.weighted`."""
        if weights is not None:
            check_cost_weights(self.get_params(deep=False), weights)
        params = (self._formulation_params() if weights is None
                  else self._formulation_params(weights))
        cls = self._formulation_type()
        try:
            with plugin_code(cls, "its constructor"):
                formulation = cls(**params)
        except TypeError as exc:
            raise ValueError(f"The {cls.__name__} formulation does not take the parameters "
                             f"{sorted(params)}: {exc}") from exc
        return formulation if weights is None or not cls.weighted else formulation.weigh(weights)

    # ------------------------------------------------------------------ the fit

    def _plateau(self, n_samples: int) -> tuple[int, float] | None:
        """`minimize_marginal`'s plateau test for a fit on ``n_samples`` points, from the
        estimator's ``n_iter_no_change`` (`sparsify.core.optimize.sampling_plateau`)."""
        return sampling_plateau(n_samples, getattr(self, "n_iter_no_change", None))

    def _resolve_n_expansion(self, X: Array, target: NDArray[Any] | None, kernel: Kernel,
                             weights: Array | None) -> tuple[int, int | None]:
        """Nz of one problem, and the full model's number of support vectors for a ratio.

        Here a ratio is of the distinct training points; a task or an algorithm
        with a full model overrides this (the classifiers: the full SVM's NSV).
        """
        if isinstance(self.n_expansion, Integral):
            if not has_distinct(X, int(self.n_expansion)):
                raise ValueError(
                    f"n_expansion={self.n_expansion} asks for more expansion vectors than the "
                    f"{count_distinct(X)} distinct training points (n_samples={len(X)}); lower "
                    "n_expansion or pass a ratio in (0, 1].")
            return int(self.n_expansion), None
        n_distinct = count_distinct(X)
        return min(max(1, round(float(self.n_expansion) * n_distinct)), n_distinct), None

    def _gamma(self, source: DataSource, weights: Array | None = None) -> float | str:
        """The kernel's gamma: "scale" is 1 / (d · Var(X)) with Var weighted by ``weights``
        (a weight counting as repeats of its row), "auto" 1 / d; a number as given."""
        if not isinstance(self.kernel, str) or not isinstance(self.gamma, str):
            return self.gamma  # type: ignore[no-any-return]
        if self.gamma == "auto":
            return 1.0 / source.n_features
        return scale_gamma(source.variance(weights), source.n_features)

    def _run_problems(self, source: DataSource, targets: Sequence[Any],
                      formulation: Formulation, kernel: Kernel, sizes: list[int],
                      init: str | Array,
                      names: list[str], rng: np.random.RandomState,
                      previous: list[tuple[Array, Array, Any]] | None = None,
                      plateau: tuple[int, float] | None = None, warn: bool = True
                      ) -> list[dict[str, Any]]:
        """Fit every (problem, start) pair; the best start of each.

        In memory the pairs run in parallel with ``n_jobs``; over row blocks one
        after the other, each evaluation a map over the blocks. ``names`` name the
        problems in progress lines and warnings; the starts are named after them.
        ``previous`` holds each problem's (Z, β, b) of the last fit, a warm start
        (`sparsify.core.warm`): one start from its XVs, resized to the problem's
        Nz. ``plateau`` replaces the estimator's plateau test (`_plateau`). With
        ``warn``, warns once for the problems ``max_iter`` stopped.
        """
        n_init = 1 if previous is not None or not isinstance(init, str) else self.n_init
        seeds = rng.randint(np.iinfo(np.int32).max, size=(len(targets), n_init))
        starts = [[", ".join(p for p in (names[k], f"start {j + 1}" if n_init > 1 else "") if p)
                   for j in range(n_init)] for k in range(len(targets))]
        if plateau is None:
            plateau = self._plateau(source.n_samples)
        if isinstance(source, RowBlocks):
            inits = ([init] * len(targets) if previous is None
                     else [Z for Z, _, _ in previous])  # over blocks: the XVs only
            runs = [run for k in range(len(targets)) for run in self._run_on_blocks(
                source, targets[k], formulation, kernel, sizes[k], inits[k], seeds[k],
                starts[k], plateau)]
        else:
            assert isinstance(source, InMemoryRows)
            n_runs = len(targets) * n_init
            warm: list[WarmStart | None] = [None] * len(targets)
            if previous is not None:
                warm = [resize(source.X, Z, coef, b, kernel, sizes[k], _point_losses(targets[k]),
                               np.random.RandomState(seeds[k, 0]))
                        for k, (Z, coef, b) in enumerate(previous)]
            starting = [(init, None) if w is None else w for w in warm]
            # every problem and start draws from the same rows: hash them once (USPS's ten
            # one-vs-rest problems: 0.08 s each)
            drawn = sum(isinstance(start[0], str) for start in starting) * n_init
            distinct = distinct_rows(source.X) if drawn > 1 else None
            runs = Parallel(n_jobs=self.n_jobs if n_runs > 1 else None)(
                delayed(_fit_start)(
                    source.X, targets[k], formulation, kernel, sizes[k], starting[k][0],
                    self.solver, self.solver_tol, self.max_iter, self.tol, int(seeds[k, j]),
                    self.callback, self.verbose, starts[k][j], plateau, starting[k][1],
                    distinct)
                for k in range(len(targets))
                for j in range(n_init)
            )
        fits = [min(runs[k * n_init:(k + 1) * n_init], key=lambda run: run["value"])
                for k in range(len(targets))]
        if not warn:
            return fits
        warn_if_not_converged(type(self).__name__, [(f["problem"], f["result"]) for f in fits],
                              self.max_iter)
        warn_if_no_step(type(self).__name__, [(f["problem"], f["result"]) for f in fits])
        return fits

    def _run_on_blocks(self, source: RowBlocks, target: RowTarget, formulation: Formulation,
                       kernel: Kernel, n_expansion: int, init: str | Array,
                       seeds: NDArray[np.int_], names: list[str],
                       plateau: tuple[int, float] | None, report: bool = True
                       ) -> list[dict[str, Any]]:
        """The starts of one problem over row blocks; its blocks are built once for them.

        Initial rows are drawn on the blocks, or, where the rows were collected
        to the driver (`RowBlocks.collect`), from them as in memory. Without
        ``report`` (Platt scaling's fold models) neither ``callback`` nor
        ``verbose`` hear of it, as in memory.
        """
        callback, verbose = (self.callback, self.verbose) if report else (None, 0)
        with plugin_code(formulation, "row_blocks()"):
            problem = formulation.row_blocks(source, target, kernel, n_expansion,
                                             self.solver_tol)
        if problem is None:
            problem = DeclaredBlocks(formulation, source, target, kernel, n_expansion,
                                     self.solver_tol)
        try:
            runs = []
            for seed, name in zip(seeds, names, strict=True):
                if not isinstance(init, str):
                    Z0 = np.array(init, dtype=np.float64)
                elif source.rows is not None:
                    rows, y, _ = self._collected(source, target)
                    Z0 = initial_expansion_vectors(rows.X, n_expansion, init, int(seed), y=y)
                else:
                    Z0 = problem.initial_rows(n_expansion, init == "balanced", int(seed))
                runs.append(optimise_start(problem.marginal(), Z0, self.max_iter, self.tol,
                                      callback, verbose, name, plateau))
        finally:
            problem.close()
        return runs

    def _refuse_on_blocks(self, refused: dict[str, bool]) -> None:
        """Refuse, before any work, what a fit over row blocks cannot do, saying why."""
        reasons = {
            f"solver={self.solver!r} (the generic cvxpy path needs the rows in memory; "
            "use solver='auto')": self.solver != "auto",
            f"init={self.init!r} (k-means needs every row in one place; use init='random' or "
            "'balanced')": self.init == "kmeans" and isinstance(self.n_expansion, Integral),
            f"continuation={getattr(self, 'continuation', None)!r} (its sample is drawn from rows "
            "in memory; use continuation=None)": getattr(self, "continuation", None) is not None,
            **refused,
        }
        used = [why for why, on in reasons.items() if on]
        if used:
            raise ValueError(f"{type(self).__name__}.fit on dask collections does not take "
                             f"{'; '.join(used)}. Or fit on numpy arrays.")

    @staticmethod
    def _collected(source: RowBlocks, target: RowTarget
                   ) -> tuple[InMemoryRows, NDArray[Any], Array | None]:
        """The collected rows with the problem's targets and per-row weights, as in memory."""
        rows = source.collect("a ratio n_expansion")
        labels = np.asarray(rows.y)
        y = (labels.astype(float) if target.positive is None
             else np.where(labels == target.positive, 1, -1))
        weights = None
        if target.label_weights or target.row_weight is not None:
            weights = np.array([target.label_weights.get(label, 1.0)
                                for label in labels.tolist()], dtype=float)
            if target.row_weight is not None:
                weights *= np.asarray(target.row_weight.compute(), dtype=float)
        return rows, y, weights

    def _fit_problems(self, source: DataSource | Array, targets: Sequence[Any],
                      weights: Array | None = None, *, scale_weights: Array | None = None,
                      init: str | Array | None = None, names: list[str] | None = None,
                      rng: np.random.RandomState | None = None,
                      groups: NDArray[np.intp] | None = None) -> Kernel:
        """The driver: kernel, formulation, Nz per problem, the fits, the fitted attributes.

        ``source`` holds the rows (an array: rows in memory); ``targets`` are one
        problem's targets each (arrays, or `RowTarget` over row blocks).
        ``weights`` are per-point cost factors (in memory), ``scale_weights``
        the row weights of gamma="scale"'s variance; ``init`` overrides the
        initial-XV method, ``names`` the problems' names; ``rng`` is drawn from
        for the starts' seeds; ``groups`` the points' groups, which the
        formulation sees as ``out.groups`` (`Formulation.group`). Returns the
        resolved kernel.
        """
        if not isinstance(source, DataSource):
            source = InMemoryRows(source)
        previous = self._previous_problems(source, len(targets))
        kernel = make_kernel(self.kernel, None, self._gamma(source, scale_weights),
                             self.degree, self.coef0)
        if isinstance(source, InMemoryRows):
            check_gamma(kernel, source.X, type(self).__name__)
        formulation = self._make_formulation(weights)
        if groups is not None:
            formulation = formulation.group(groups)
        check_solver(self.solver)
        if isinstance(source, RowBlocks):
            resolved = [self._block_n_expansion(source, t, kernel) for t in targets]
        else:
            assert isinstance(source, InMemoryRows)
            X = source.X
            resolved = Parallel(n_jobs=self.n_jobs if len(targets) > 1 else None)(
                delayed(self._resolve_n_expansion)(X, t, kernel, weights) for t in targets)
        rng = check_random_state(self.random_state) if rng is None else rng
        sizes, init = [nz for nz, _ in resolved], self.init if init is None else init
        names = names or [""] * len(targets)
        sampled = None
        if getattr(self, "continuation", None) is not None and previous is None:
            sampled = self._fit_sample(source, targets, weights, groups, kernel, sizes, init,
                                       names, rng)
            previous = [(fit["Z"], fit["coef"], fit["intercept"]) for fit in sampled]
        fits = self._run_problems(source, targets, formulation, kernel, sizes, init, names, rng,
                                  previous)
        for fit, first in zip(fits, sampled or (), strict=False):
            fit["n_iter"] += first["n_iter"]
            fit["history"] = np.concatenate([first["history"], fit["history"]])
        nsv = [n for _, n in resolved]
        self._set_expansions(kernel, fits, None if nsv[0] is None else np.array(nsv))
        return kernel

    def _fit_sample(self, source: DataSource, targets: Sequence[Any], weights: Array | None,
                    groups: NDArray[np.intp] | None, kernel: Kernel, sizes: list[int],
                    init: str | Array, names: list[str], rng: np.random.RandomState
                    ) -> list[dict[str, Any]]:
        """The first phase of ``continuation`` (`sparsify.core.continuation`): every problem
        fitted on a sample of the rows, each weight times N / m where the formulation weighs
        its points, to W's plateau on the sample; its best start per problem."""
        assert isinstance(source, InMemoryRows)  # over row blocks `_refuse_on_blocks` refused it
        n = source.n_samples
        m = round(float(self.continuation) * n)
        rows = np.sort(nested_sample(np.arange(n), strata(targets), rng)[:m])
        X = source.X[rows]
        if not has_distinct(X, max(sizes)):
            raise ValueError(
                f"continuation={self.continuation} samples {m} of the {n} training points, "
                f"fewer distinct ones than n_expansion={max(sizes)}: raise continuation, or "
                "fit with continuation=None.")
        sample_weights = (np.ones(m) if weights is None else weights[rows]) * (n / m)
        formulation = self._make_formulation(sample_weights if self._weighs_points() else None)
        if groups is not None:
            formulation = formulation.group(groups[rows])
        named = [", ".join(p for p in (name, f"sample of {m} points") if p) for name in names]
        return self._run_problems(
            InMemoryRows(X), [None if t is None else t[rows] for t in targets],
            formulation, kernel, sizes, init, named, rng,
            plateau=sample_plateau(m, getattr(self, "n_iter_no_change", None)), warn=False)

    def _previous_problems(self, source: DataSource, n_problems: int
                           ) -> list[tuple[Array, Array, Any]] | None:
        """The last fit's (Z, β, b) per problem, where ``warm_start`` asks for them and that fit
        had as many problems on as many features; None for a cold start."""
        if not getattr(self, "warm_start", False):
            return None
        previous = previous_problems(self)
        if (previous is None or len(previous) != n_problems
                or previous[0][0].shape[1] != source.n_features):
            return None
        return previous

    def _block_n_expansion(self, source: RowBlocks, target: RowTarget,
                           kernel: Kernel) -> tuple[int, int | None]:
        """Nz over row blocks: a count as it is (the draw of the initial rows checks it), a
        ratio as in memory, on the rows collected for it."""
        if isinstance(self.n_expansion, Integral):
            return int(self.n_expansion), None
        rows, y, weights = self._collected(source, target)
        return self._resolve_n_expansion(rows.X, y, kernel, weights)

    def _set_expansions(self, kernel: Kernel, fits: list[dict[str, Any]],
                        full_n_support: NDArray[np.intp] | None) -> None:
        """The fitted attributes from one fit per problem (keys Z, coef, intercept, n_iter,
        history, value), their XVs stacked in problem order; a problem's coef (Nz,) is one
        output, (Nz, K) K outputs."""
        self.kernel_ = kernel
        sizes = [len(fit["Z"]) for fit in fits]
        coefs = [np.asarray(fit["coef"], dtype=float).reshape(size, -1).T
                 for fit, size in zip(fits, sizes, strict=True)]
        self.expansion_vectors_ = np.vstack([fit["Z"] for fit in fits])
        coef = np.zeros((sum(len(c) for c in coefs), sum(sizes)))
        row = col = 0
        for c in coefs:
            coef[row:row + len(c), col:col + c.shape[1]] = c
            row, col = row + len(c), col + c.shape[1]
        self.expansion_coef_ = coef

        def per_output(key: str) -> Array:
            # a problem with K outputs and one number declared has it for each output
            return np.concatenate([np.broadcast_to(np.atleast_1d(np.asarray(
                fit.get(key, 0.0), dtype=float)), len(c))
                for fit, c in zip(fits, coefs, strict=True)])

        self.intercept_ = per_output("intercept")
        self.diagonal_coef_ = per_output("diagonal_coef")
        self.declared_variables_ = [dict(fit.get("variables", {})) for fit in fits]
        self.n_expansion_ = np.array(sizes)
        self.n_iter_ = np.array([fit["n_iter"] for fit in fits])
        self.objective_history_ = [fit["history"] for fit in fits]
        self.objective_ = np.array([fit["value"] for fit in fits])
        self.full_n_support_ = full_n_support


def _generate_init(cls: type[SparseKernelEstimator]) -> None:
    """Give ``cls`` an ``__init__`` over `SHARED_PARAMS` and its formulation's parameters.

    scikit-learn reads an estimator's parameters from the signature of
    ``__init__``, and ``**kwargs`` is not allowed there; the generated one has
    an explicit signature (``__signature__``), stores each argument unchanged
    and validates nothing, as scikit-learn asks.
    """
    shared = {**SHARED_PARAMS, **cls.default_params}
    form = cls.formulation_class
    assert form is not None
    own = [p for n, p in inspect.signature(form.__init__).parameters.items()
           if n != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    clash = [p.name for p in own if p.name in shared]
    if clash:
        raise TypeError(f"{cls.__name__}: the {form.__name__} formulation's parameters {clash} "
                        "have the names of shared estimator parameters; rename them.")
    missing = [p.name for p in own if p.default is inspect.Parameter.empty]
    if missing:
        raise TypeError(f"{cls.__name__}: give the {form.__name__} formulation's parameters "
                        f"{missing} defaults, so that {cls.__name__}() can be made.")
    params = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD),
              inspect.Parameter("n_expansion", inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                default=shared["n_expansion"])]
    params += [inspect.Parameter(p.name, inspect.Parameter.KEYWORD_ONLY, default=p.default,
                                 annotation=p.annotation) for p in own]
    params += [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default)
               for name, default in shared.items() if name != "n_expansion"]
    signature = inspect.Signature(params)

    def __init__(self: SparseKernelEstimator, *args: Any, **kwargs: Any) -> None:
        bound = signature.bind(self, *args, **kwargs)
        bound.apply_defaults()
        for name, value in list(bound.arguments.items())[1:]:
            setattr(self, name, value)

    # typeshed does not declare __signature__ on functions (inspect.signature reads it)
    __init__.__signature__ = signature  # type: ignore[attr-defined]
    __init__.__qualname__ = f"{cls.__qualname__}.__init__"
    # the point of this function: a constructor made at run time, which mypy cannot follow
    cls.__init__ = __init__  # type: ignore[method-assign, assignment]
    cls._parameter_constraints = {**cls._parameter_constraints,
                                  **{p.name: "no_validation" for p in own}}
    if not cls.__doc__:
        cls.__doc__ = (f"The sparse {form.__name__}: the direct sparse method on the "
                       f"{form.name!r} formulation, with Nz optimised XVs.\n\n"
                       "    Parameters\n    ----------\n"
                       + "\n".join(parameter_docs(shared, cls.ratio_meaning, {}, list(SHARED)))
                       + f"\n\n    The {form.__name__} formulation's own parameters: "
                       + ", ".join(f"``{p.name}``" for p in own) + ".\n")


def _show_sample_weight(cls: type[SparseKernelEstimator]) -> None:
    """Show ``sample_weight`` in the signature of ``cls.fit`` only where it takes weights.

    Every task's ``fit`` has ``sample_weight``; scikit-learn reads from the
    signature whether an estimator takes weights (``has_fit_parameter``), so an
    estimator whose formulation does not weigh its points gets a ``fit``
    without it in its signature. Passed all the same, it is refused with the
    reason (`SparseKernelEstimator._sample_weight`).
    """
    fit = cls.fit
    task_fit = getattr(fit, "_task_fit", fit)
    if cls._takes_sample_weight():
        if task_fit is not fit:
            cls.fit = task_fit
        return
    signature = inspect.signature(task_fit)
    if "sample_weight" not in signature.parameters:
        return

    def fit_without_weights(self: Any, X: Any, *args: Any, **kwargs: Any) -> Any:
        return task_fit(self, X, *args, **kwargs)

    fit_without_weights.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=[p for name, p in signature.parameters.items() if name != "sample_weight"])
    fit_without_weights.__doc__ = task_fit.__doc__
    fit_without_weights.__name__ = "fit"
    fit_without_weights.__qualname__ = f"{cls.__qualname__}.fit"
    fit_without_weights._task_fit = task_fit  # type: ignore[attr-defined]
    cls.fit = fit_without_weights


#: The task a formulation declares (`Formulation.task`) and the module of its estimator base.
_TASKS = {
    "classifier": ("sparsify.core.classifier", "SparseKernelClassifier"),
    "multioutput_classifier": ("sparsify.core.multioutput", "SparseMultiOutputClassifier"),
    "ordinal_regressor": ("sparsify.core.ordinal", "SparseOrdinalRegressor"),
    "regressor": ("sparsify.core.regressor", "SparseKernelRegressor"),
    "ranker": ("sparsify.core.ranking", "SparseKernelRanker"),
    "outlier_detector": ("sparsify.core.outlier", "SparseOutlierDetector"),
    "transformer": ("sparsify.core.transformer", "SparseKernelTransformer"),
}


def estimator_for(
    formulation: str | type[Formulation],
) -> tuple[type[BaseEstimator], dict[str, Any]]:
    """The estimator class that fits a formulation, and the parameters that select it.

    A registered estimator (the ``register_estimators`` hook) comes first;
    otherwise the formulation's `Formulation.task` gives one made on the spot:
    the task's estimator with this formulation and its parameters.

    Parameters
    ----------
    formulation : str or Formulation subclass
        A registered name or the class itself.

    Returns
    -------
    estimator : type
    params : dict
        Parameters to set on it (``{"method": "rayleigh"}`` for the Rayleigh KFD).

    Examples
    --------
    >>> estimator_for("svm")
    (<class 'sparsify.algorithms.svm.estimator.SparseSVC'>, {})
    >>> import cvxpy as cp
    >>> from sparsify import Declaration, Formulation
    >>> class Ridge(Formulation):
    ...     name, task = "doc_ridge", "regressor"
    ...     def __init__(self, alpha=1.0):
    ...         self.alpha = alpha
    ...     def declare(self, out):
    ...         b = cp.Variable()
    ...         loss = cp.sum_squares(out.f + b - out.y)
    ...         return Declaration(cp.Minimize(loss + self.alpha * out.norm_w2), [], b)
    >>> cls, _ = estimator_for(Ridge)
    >>> cls(n_expansion=5, alpha=0.1)
    SparseRidge(alpha=0.1, n_expansion=5)
    """
    registry = get_registry()
    cls = (registry.get("formulation", formulation) if isinstance(formulation, str)
           else formulation)
    registered = registry.entries["estimator"].get(cls.name)
    if registered is not None and getattr(registered.obj[0], "formulation_class", None) in (
            None, cls):
        est, params = registered.obj
        return est, dict(params)
    if cls.task not in _TASKS:
        raise ValueError(
            f"The {cls.name!r} formulation has no estimator: register one with the "
            "register_estimators hook, or set its task to one of "
            f"{sorted(_TASKS)} to get one made from it.")
    return _made_estimator(cls), {}


#: The estimator classes made for formulations, by formulation class: one class each, so that
#: ``isinstance`` and pickles see the same class every time.
_MADE: dict[type[Formulation], type[SparseKernelEstimator]] = {}


def _made_estimator(cls: type[Formulation]) -> type[SparseKernelEstimator]:
    """The estimator made for a formulation from its `Formulation.task` (made once).

    Its instances pickle by the formulation class (which must be importable, as
    any pickled class): the class is made again where they load.
    """
    import importlib

    made = _MADE.get(cls)
    if made is None:
        module, base_name = _TASKS[str(cls.task)]
        base = getattr(importlib.import_module(module), base_name)
        made = type("Sparse" + cls.__name__, (base,),
                    {"formulation_class": cls, "__module__": cls.__module__,
                     "__qualname__": "Sparse" + cls.__qualname__,
                     "__reduce_ex__": _reduce_made})
        _MADE[cls] = made
    return made


def _reduce_made(self: SparseKernelEstimator, protocol: Any) -> tuple[Any, ...]:
    """Pickle an instance of a made estimator class as its formulation class and its state."""
    formulation_class = type(self).formulation_class
    return (_new_made, (formulation_class,), self.__getstate__())


def _new_made(formulation_class: type[Formulation]) -> SparseKernelEstimator:
    """An empty instance of the estimator made for ``formulation_class`` (for unpickling)."""
    made = _made_estimator(formulation_class)
    instance: SparseKernelEstimator = made.__new__(made)
    return instance
