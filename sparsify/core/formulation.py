"""The formulation contract: what a plugin declares and what the core hands it.

A formulation is a convex kernel learning algorithm written as a cvxpy problem
over two framework-owned objects, the outputs ``f`` on the training points and
the squared norm ``‖w‖²`` of the weight vector, plus variables of its own. The
core adds the constraint ``w = Σ_j β_j φ(z_j)`` behind those two objects, so a
formulation never sees β, Z or a kernel matrix and never writes gradient code.
"""

from __future__ import annotations

import copy
import inspect
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import cvxpy as cp
import numpy as np
from numpy.typing import NDArray

from sparsify.plugins.plugin_code import plugin_code

if TYPE_CHECKING:
    from sparsify.core.data_source import BlockProblem, RowBlocks, RowTarget
    from sparsify.core.marginal import Marginal
    from sparsify.kernels import Kernel

__all__ = ["Declaration", "Formulation", "FullSolution", "Outputs", "count_pairs",
           "make_formulation", "ranking_pairs"]


@dataclass(frozen=True)
class Outputs:
    """The framework-owned cvxpy objects a formulation declares its problem over.

    Attributes
    ----------
    f : cvxpy.Variable
        Outputs ``f_i = ⟨w, φ(x_i)⟩`` on the training points, shape (N,) for a
        single output or (N, K) for K outputs.
    norm_w2 : cvxpy.Expression
        ``‖w‖²`` summed over the outputs.
    norms_w2 : tuple of cvxpy.Expression
        ``‖w_k‖²`` for each output k (one element for a single output).
    y : ndarray or None
        The targets the estimator passed (for classifiers: -1/+1, or class
        indices for multi-output formulations); None for unsupervised ones.
    n_samples, n_outputs : int
        N and K.
    norm_w : cvxpy.Expression
        ``‖w‖`` (over all outputs), a second-order-cone expression: for
        regularisers such as √(aᵀΣa + ρ‖w‖²) = ‖(Σ^½a, √ρ‖w‖)‖, which are not
        DCP over ``norm_w2``. Any function of the norms keeps Lemma 1's gradient
        exact.
    X : ndarray of shape (N, d) or None
        The training inputs, for a structure built from them (a k-nearest-neighbour
        graph's Laplacian, say); constants to the problem, so Lemma 1's gradient
        stays exact. None in a fit over row blocks (dask collections), where the
        rows stay on the workers: a formulation that needs X refuses it then.
    weights : ndarray of shape (N,)
        Each point's weight in the loss: ones (the default), or the weights the
        formulation was given (`Formulation.weigh`: the estimator's class and
        sample weights). A formulation that declares `Formulation.weighted`
        multiplies each point's loss by it.
    groups : ndarray of shape (N,) or None
        Each point's group (query) as an integer code 0..G−1, where the fit was
        given groups (`Formulation.group`: a ranker's ``fit(X, y, groups=...)``);
        None otherwise.
    pairs : ndarray of shape (P, 2) or None
        For a formulation whose `Formulation.task` is "ranker": the preference
        pairs (i, j), point i ranked above point j, of every two points of the
        same group (all points one group without ``groups``) whose targets
        differ, y_i > y_j (`ranking_pairs`); None for other tasks.
    kernel_diagonal : ndarray of shape (N,)
        k(x_i, x_i) on the training points: constants of the problem, which
        ‖φ(x_i) − w‖² = k(x_i, x_i) − 2 f_i + ‖w‖² needs (SVDD with any kernel).
        Computed when first read (over row blocks, on the workers).
    """

    f: cp.Variable
    norm_w2: cp.Expression
    norms_w2: tuple[cp.Expression, ...]
    y: NDArray[Any] | None
    n_samples: int
    n_outputs: int
    norm_w: cp.Expression | None = None
    X: NDArray[np.float64] | None = None
    weights: NDArray[np.float64] = None  # type: ignore[assignment]  # ones: __post_init__
    groups: NDArray[np.intp] | None = None
    pairs: NDArray[np.intp] | None = None
    #: k(x_i, x_i), or a function that computes it (read through `kernel_diagonal`)
    diagonal: NDArray[np.float64] | Callable[[], NDArray[np.float64]] | None = field(
        default=None, repr=False)

    def __post_init__(self) -> None:
        if self.weights is None:  # frozen: set once, here
            object.__setattr__(self, "weights", np.ones(self.n_samples))

    @property
    def kernel_diagonal(self) -> NDArray[np.float64]:
        """k(x_i, x_i) on the training points, shape (N,) (see the class docstring)."""
        diagonal = self.diagonal
        if callable(diagonal):
            diagonal = np.asarray(diagonal(), dtype=np.float64)
            object.__setattr__(self, "diagonal", diagonal)  # computed once
        if diagonal is None:
            raise ValueError("The kernel diagonal k(x_i, x_i) is not known here: this "
                             "Outputs was made without a kernel.")
        return diagonal


@dataclass(frozen=True)
class FullSolution:
    """The full kernel problem's solution (Z = X) from `Formulation.solve_precomputed`.

    Attributes
    ----------
    coef : ndarray of shape (N,)
        β on every training point (zero off the support vectors).
    intercept : float
        b.
    value : float
        The optimal value (the S3VM's: ½ βᵀKβ + Σ_i c_i max(0, 1 − y_i (Kβ + b)_i)).
    outputs : ndarray of shape (N,)
        g = Kβ + b on the training points.
    """

    coef: NDArray[np.float64]
    intercept: float
    value: float
    outputs: NDArray[np.float64]


@dataclass
class Declaration:
    """What a formulation returns: a convex problem over `Outputs`.

    Attributes
    ----------
    objective : cvxpy.Minimize
        The objective; its optimal value is W(Z).
    constraints : list of cvxpy constraints
        Constraints over ``f``, ``‖w‖²`` and the formulation's own variables.
    intercept : cvxpy.Expression or float
        The bias b of the kernel machine (shape () or (K,)); 0 when there is none.
    variables : mapping of str to cvxpy.Expression
        Other global quantities of the solution that the fitted model keeps,
        by name: an ordinal regression's K − 1 thresholds, a margin ρ, a
        radius. Each is an expression of any shape over variables the problem
        uses (not over per-point ones such as slacks: a fit over row blocks
        keeps those on the workers); after a fit its value is in the estimator's
        ``declared_variables_`` (one dict per problem), and a task may need some
        of them (`Formulation.required_variables`: the ordinal task's
        ``"thresholds"``).
    diagonal_coef : float or ndarray of shape (K,)
        The coefficient d of k(x, x) in the decision function
        τ(x) = Σ_j β_j k(z_j, x) + b + d·k(x, x); 0 (the default) for the
        kernel machine without it. SVDD's (R² − ‖φ(x) − a‖²)/2 has d = −½,
        which makes it right for kernels whose diagonal is not constant.
    """

    objective: cp.Minimize
    constraints: list[cp.Constraint] = field(default_factory=list)
    intercept: cp.Expression | float = 0.0
    variables: Mapping[str, cp.Expression] = field(default_factory=dict)
    diagonal_coef: float | NDArray[np.float64] = 0.0


class Formulation(ABC):
    """A convex kernel learning algorithm, declared once, made sparse by the core.

    Subclasses set `name`, take their hyperparameters in ``__init__`` and
    implement `declare`. They may override `n_outputs`,
    `nondifferentiable`, `marginal` (an exact solver of W(Z) and ∇W(Z) of their
    own) and `solve_precomputed` (an exact solver of the full kernel problem).

    Rules the core enforces when it builds the problem (each breach is a
    ``ValueError`` naming the formulation): the problem must be DCP and DPP, it
    must use ``f``, and it must not create cvxpy Parameters of its own
    (hyperparameters are plain numbers). A formulation defined for some kernels
    only names them in `supported_kernels`.

    Examples
    --------
    A least-squares kernel machine (kernel ridge regression) in four lines:

    >>> import cvxpy as cp
    >>> class Ridge(Formulation):
    ...     name = "ridge"
    ...     def __init__(self, alpha=1.0):
    ...         self.alpha = alpha
    ...     def declare(self, out):
    ...         b = cp.Variable()
    ...         loss = cp.sum_squares(out.f + b - out.y)
    ...         return Declaration(cp.Minimize(loss + self.alpha * out.norm_w2), [], b)
    """

    #: Name users pass (``formulation="svm"``).
    name: ClassVar[str] = ""

    #: The task of the estimator made for it when no plugin registers one
    #: (`sparsify.core.estimator.estimator_for`): "classifier" (``out.y`` is ±1, one
    #: problem per class beyond two), "multioutput_classifier" (``out.y`` the class
    #: codes 0..K−1, one problem with K outputs, the prediction the class of the
    #: largest), "ordinal_regressor" (``out.y`` the levels 0..M−1 of ordered classes,
    #: one output, and M − 1 thresholds declared as ``variables["thresholds"]``: the
    #: prediction is the number of thresholds below τ(x)), "regressor" (``out.y`` the
    #: real targets), "ranker" (``out.y`` the relevance of each point, ``out.pairs`` the
    #: pairs to order; the prediction is the score τ(x)), "outlier_detector" (no
    #: ``out.y``) or "transformer" (``out.y`` as given to fit, or None; the outputs are
    #: the features); None: it has no estimator unless one is registered
    #: (``register_estimators``).
    task: ClassVar[str | None] = None

    #: Whether the formulation takes unlabelled points (semi-supervised): its estimator
    #: then accepts NaN in y for them (None too for labels of another type), and
    #: ``out.y`` holds NaN there (floats: ±1, the class codes or the targets).
    unlabelled: ClassVar[bool] = False

    #: The kernels it is defined for, by registered name (``("rbf",)``), or None for every
    #: kernel. A formulation that needs a property of the kernel (a constant diagonal k(x, x),
    #: say) names the kernels that have it; `sparsify.core.gradcheck.check_gradient` refuses
    #: the others instead of reporting a gradient error, and a sum of kernels is supported
    #: when each of its parts is.
    supported_kernels: ClassVar[tuple[str, ...] | None] = None

    #: Whether `declare` multiplies each point's loss by ``out.weights`` (a loss that is a
    #: sum over the points, each term scaled by its weight): its estimator then passes the
    #: points' class and sample weights on (`weigh`).
    weighted: ClassVar[bool] = False

    #: The points' weights `weigh` gave this instance, or None (every point weighs 1).
    point_weights: NDArray[np.float64] | float | None = None

    #: The points' groups `group` gave this instance (codes 0..G−1), or None.
    point_groups: NDArray[np.intp] | None = None

    def weigh(self, weights: NDArray[np.float64] | float) -> Formulation:
        """A copy of this formulation whose points' losses are weighted (``out.weights``).

        Only for a formulation that declares `weighted`; the copy's `declare` sees the
        weights (a number weighs every point alike) in ``out.weights``. The fit driver
        weighs with an estimator's ``sample_weight``;
        `sparsify.core.gradcheck.check_gradient` and the conformance suite with their
        ``sample_weight``.

        Examples
        --------
        >>> import cvxpy as cp
        >>> class Ridge(Formulation):
        ...     name, weighted = "doc_weighted_ridge", True
        ...     def declare(self, out):
        ...         b = cp.Variable()
        ...         loss = cp.sum(cp.multiply(out.weights, cp.square(out.f + b - out.y)))
        ...         return Declaration(cp.Minimize(loss + out.norm_w2), [], b)
        >>> Ridge().weigh(4.0).point_weights
        4.0
        """
        if not self.weighted:
            raise ValueError(f"The {self.name or type(self).__name__!r} formulation does not "
                             "weigh its points' losses (its class sets weighted = False); "
                             "declare the loss with out.weights and set weighted = True.")
        clone = copy.copy(self)
        clone.point_weights = (float(weights) if np.ndim(weights) == 0
                               else np.asarray(weights, dtype=np.float64))
        return clone

    def group(self, groups: NDArray[Any] | None) -> Formulation:
        """A copy of this formulation whose points belong to ``groups`` (``out.groups``).

        ``groups`` holds one label per point (any hashable labels: a ranker's
        query ids); ``out.groups`` sees them as codes 0..G−1, and a ranker's
        ``out.pairs`` pair points of the same group only. None: no groups.

        Examples
        --------
        >>> import cvxpy as cp
        >>> class Rank(Formulation):
        ...     name, task = "doc_group_rank", "ranker"
        ...     def declare(self, out): ...
        >>> Rank().group(["q1", "q2", "q1"]).point_groups.tolist()
        [0, 1, 0]
        """
        clone = copy.copy(self)
        clone.point_groups = (None if groups is None
                              else np.unique(np.asarray(groups), return_inverse=True)[1]
                              .astype(np.intp).ravel())
        return clone

    def required_variables(self, y: NDArray[Any] | None) -> dict[str, tuple[int, ...]]:
        """The named variables (`Declaration.variables`) its task needs, with their shapes.

        The core refuses a declaration without them, or with another shape,
        before anything is solved. By default: ``{"thresholds": (M − 1,)}`` for an
        "ordinal_regressor" whose ``y`` holds the levels 0..M−1, nothing for the
        other tasks. Override it to require variables of your own.

        Examples
        --------
        >>> class Ordinal(Formulation):
        ...     name, task = "doc_required", "ordinal_regressor"
        ...     def declare(self, out): ...
        >>> Ordinal().required_variables(np.array([0, 2, 1, 2]))
        {'thresholds': (2,)}
        """
        if self.task == "ordinal_regressor" and y is not None:
            levels = np.asarray(y, dtype=float)
            return {"thresholds": (int(np.nanmax(levels)),)}
        return {}

    def n_outputs(self, y: NDArray[Any] | None) -> int:
        """Number of outputs K (columns of β and f).

        1 unless overridden; a "multioutput_classifier" has one per class code in
        ``y`` (unlabelled points, NaN, aside).
        """
        if self.task == "multioutput_classifier" and y is not None:
            labelled = np.asarray(y, dtype=float)
            return int(np.nanmax(labelled)) + 1
        return 1

    @abstractmethod
    def declare(self, out: Outputs) -> Declaration:
        """Return the objective, constraints and intercept over ``out``."""

    def nondifferentiable(self, y: NDArray[Any] | None, dual_f: NDArray[np.float64]) -> str | None:
        """Say why W(Z) is not differentiable at this solution, or None.

        ``dual_f`` holds the Lagrange multipliers of the link ``f = K_XZ β``
        (shape (N,) or (N, K)). The SVM uses it to detect support vectors from
        one class only (paper, Corollary 2).
        """
        return None

    def marginal(
        self,
        X: NDArray[np.float64],
        y: NDArray[Any] | None,
        kernel: Kernel,
        n_expansion: int,
        solver: str,
        tol: float,
    ) -> Marginal | None:
        """Return an object that computes W(Z) and ∇W(Z) itself, or None.

        Override this for a formulation that is not a cvxpy problem (an
        eigenproblem) or that has a faster exact solver; the generic path
        (``None``) stays its reference in the tests.
        """
        return None

    def solve_precomputed(self, K: NDArray[np.float64], y: NDArray[Any] | None,
                          tol: float = 1e-8) -> FullSolution | None:
        """Optional: solve the full kernel problem (Z = X) on a kernel matrix, or None.

        Override this for a formulation with an exact solver of its own on a
        precomputed kernel (the S3VM's is libsvm's SMO), which an estimator may
        use where no XV moves; the generic path with Z = X stays its reference in
        the tests. The default has none.
        """
        return None

    def row_blocks(self, source: RowBlocks, target: RowTarget, kernel: Kernel,
                   n_expansion: int, tol: float) -> BlockProblem | None:
        """Optional: this formulation's problem over row blocks on a Dask cluster, or None.

        Override this for a formulation with a faster exact W(Z) and ∇W(Z) over
        row blocks (the SVM's, kernel ridge's), each evaluation moving only
        Nz-sized objects. The default has none: the fit driver then solves the
        declared problem over the blocks with the structured interior point
        (`sparsify.core.declared_blocks.DeclaredBlocks`), or refuses, with the
        reason, a problem that does not split by row blocks.
        """
        return None

    def __repr__(self) -> str:
        # as scikit-learn prints estimators: a scalar left at its default is omitted
        defaults = {name: p.default for name, p in
                    inspect.signature(type(self).__init__).parameters.items()}

        def at_default(name: str, value: Any) -> bool:
            default = defaults.get(name, inspect.Parameter.empty)
            scalar = (str, bool, int, float, type(None))
            return (isinstance(value, scalar) and isinstance(default, scalar)
                    and type(value) is type(default) and value == default)

        params = ", ".join(f"{k}={v!r}" for k, v in vars(self).items()
                           if not at_default(k, v)
                           and k not in ("point_weights", "point_groups"))
        return f"{type(self).__name__}({params})"


def make_formulation(formulation: str | Formulation, **params: Any) -> Formulation:
    """Return a formulation from a registered name and its hyperparameters, or an instance.

    Examples
    --------
    >>> make_formulation("svm", C=10.0)
    SVM(C=10.0)
    """
    if isinstance(formulation, Formulation):
        if params:
            raise ValueError(
                f"Pass hyperparameters {sorted(params)} to the formulation's constructor, not "
                "alongside an instance."
            )
        return formulation
    from sparsify.plugins.registry import get_registry

    cls: type[Formulation] = get_registry().get("formulation", formulation)
    try:
        with plugin_code(cls, "its constructor"):
            return cls(**params)
    except TypeError as exc:
        raise ValueError(
            f"The {formulation!r} formulation does not take the parameters {sorted(params)}: {exc}"
        ) from exc


def ranking_pairs(y: NDArray[Any], groups: NDArray[Any] | None = None) -> NDArray[np.intp]:
    """The preference pairs (i, j) of a ranking: same group, y_i > y_j; shape (P, 2).

    Every two points of one group (all points one group when ``groups`` is None)
    whose targets differ make one pair, the better first; points of equal
    target make none. Ordered by i, then j.

    Examples
    --------
    >>> ranking_pairs(np.array([2.0, 0.0, 1.0])).tolist()
    [[0, 1], [0, 2], [2, 1]]
    >>> ranking_pairs(np.array([2.0, 0.0, 1.0, 0.0]), np.array([0, 0, 1, 1])).tolist()
    [[0, 1], [2, 3]]
    """
    y = np.asarray(y, dtype=float)
    g = np.zeros(len(y), np.intp) if groups is None else np.unique(
        np.asarray(groups), return_inverse=True)[1].ravel()
    found = [np.zeros((0, 2), np.intp)]
    for code in np.unique(g):  # n_g² comparisons per group, not N²
        members = np.flatnonzero(g == code)
        i, j = np.nonzero(y[members][:, None] > y[members][None, :])
        found.append(np.column_stack([members[i], members[j]]))
    pairs = np.concatenate(found).astype(np.intp)
    return pairs[np.lexsort((pairs[:, 1], pairs[:, 0]))]


def count_pairs(y: NDArray[Any], groups: NDArray[Any] | None = None) -> int:
    """How many pairs `ranking_pairs` gives, counted without making them (O(N log N)).

    Examples
    --------
    >>> count_pairs(np.array([2.0, 0.0, 1.0, 0.0]))
    5
    """
    y = np.asarray(y, dtype=float)
    g = np.zeros(len(y), np.intp) if groups is None else np.unique(
        np.asarray(groups), return_inverse=True)[1].ravel()
    total = 0
    for code in np.unique(g):
        _, counts = np.unique(y[g == code], return_counts=True)
        n = int(counts.sum())
        total += (n * n - int((counts.astype(np.int64) ** 2).sum())) // 2
    return total
