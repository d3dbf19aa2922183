"""What the generic paths share, and cvxpy's DPP path, the reference.

For fixed XVs Z the sparse problem is the formulation's convex problem plus two
linking constraints that the core owns::

    f == K_XZ @ β        (dual ν)
    u == R @ β           (dual η),   ‖w‖² := ‖u‖²,  RᵀR = K_ZZ

Z enters the Lagrangian only through ``K_XZ`` and ``K_ZZ``; with cvxpy's sign
convention (Lagrangian = objective + ν·(f − K_XZ β) + η·(u − R β))::

    ∂W/∂K_XZ = −ν βᵀ        ∂W/∂K_ZZ = Σ_k c_k β_k β_kᵀ,  c_k = −η_k·u_k / (2‖u_k‖²)

where c_k = ∂L/∂‖w_k‖² follows from stationarity in u. The kernel's
vector-Jacobian products turn these into ∂W/∂Z in O(N·Nz·d)
(`sparsify.core.kernel_blocks.link_gradient`).

`DeclaredMarginal` holds the declaration, its checks, Lemma 1 and the failure
reports; `CvxpyMarginal` makes ``K_XZ`` and ``R`` cvxpy Parameters, so the
problem is DPP: compiled once per fit and re-solved with new parameter values
at each evaluation. `sparsify.core.conic.ConicMarginal`, the default, adds the
links to the conic data itself.
"""

from __future__ import annotations

import warnings
from abc import abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import cvxpy as cp
import numpy as np
from numpy.typing import NDArray

from sparsify.core.formulation import (
    Declaration,
    Formulation,
    Outputs,
    count_pairs,
    ranking_pairs,
)
from sparsify.core.kernel_blocks import (
    conditioning_note,
    diagonal_scale,
    expansion_factor,
    kernel_blocks,
    link_gradient,
)
from sparsify.core.marginal import (
    Evaluation,
    Marginal,
    NonDifferentiableWarning,
    check_expansion_vectors,
)
from sparsify.core.memory import check_memory
from sparsify.core.solvers import (
    SolverBackend,
    SolverError,
    Unsolved,
    resolve_backends,
    solve_problem,
    status_hint,
)
from sparsify.kernels import Kernel
from sparsify.plugins.plugin_code import is_plugin, plugin_code

__all__ = ["CvxpyMarginal", "DeclaredMarginal", "LinkSolution", "check_declaration",
           "check_intercept", "check_variables", "declare", "formulation_label", "n_outputs",
           "norm_multiplier", "point_data", "solution_variables"]

Array = NDArray[np.float64]


class DeclaredMarginal(Marginal):
    """What the generic paths share: the declaration, its checks, Lemma 1 and the reports.

    A subclass adds the linking constraints f = K_XZ β and u = R β its own way
    and implements `_solve_links`, which returns the solution at the current
    kernel blocks. Not for direct use: `ConicMarginal` (the default) and
    `CvxpyMarginal` (cvxpy's DPP path, the reference) are the two.
    """

    #: whether the path solves through cvxpy's own ``solve`` (backends with a cvxpy name)
    _cvxpy_only = False

    def __init__(
        self,
        formulation: Formulation,
        X: Array,
        y: NDArray[Any] | None,
        kernel: Kernel,
        n_expansion: int,
        solver: str = "auto",
        tol: float = 1e-9,
        jitter: float = 1e-10,
    ) -> None:
        self.formulation = formulation
        self.formulation_name = formulation.name or type(formulation).__name__
        self.X = np.asarray(X, dtype=float)
        self._check_inputs(y, n_expansion)
        self.y = y
        self.kernel = kernel
        self.n_expansion = int(n_expansion)
        self.tol = tol
        #: mean kernel diagonal on X: far from 1, the solvers meet a badly scaled problem
        self.kernel_scale = diagonal_scale(kernel, self.X, self.formulation_name)
        self.jitter = jitter * max(self.kernel_scale, 1e-300)
        self.backends = resolve_backends(solver, cvxpy_only=self._cvxpy_only)
        self._warned = False
        self._K_zz = np.zeros((0, 0))

    # -- construction -------------------------------------------------------------------------

    def _check_inputs(self, y: NDArray[Any] | None, n_expansion: int) -> None:
        # the estimators validate their data; a direct caller gets the same clear errors
        X, name = self.X, self.formulation_name
        if X.ndim != 2 or X.shape[0] < 1 or X.shape[1] < 1:
            raise ValueError(f"The {name!r} formulation needs X of shape (n_samples, "
                             f"n_features) with at least one of each; got shape {X.shape}.")
        if not np.isfinite(X).all():
            raise ValueError(f"X passed to the {name!r} formulation contains NaN or infinity; "
                             "remove or impute those values.")
        if y is not None and len(y) != len(X):
            raise ValueError(f"X has {len(X)} samples but y has {len(y)}; pass one target per "
                             "sample.")
        if int(n_expansion) < 1:
            raise ValueError(f"n_expansion must be at least 1; got {n_expansion}.")

    def _fail(self, what: str) -> ValueError:
        return ValueError(f"The {self.formulation_name!r} formulation {what}")

    def _declare(self) -> Declaration:
        """Hand the formulation f and u (plain variables) and check what it declares."""
        self.declaration, self.f, self.u, self.n_outputs = declare(
            self.formulation, self.y, len(self.X), self.n_expansion, self.X,
            lambda: self.kernel.diag(self.X))
        return self.declaration

    # -- evaluation ---------------------------------------------------------------------------

    @abstractmethod
    def _solve_links(self, K_xz: Array, K_zz: Array) -> LinkSolution:
        """Solve with w = Σ_j β_j φ(z_j) at these kernel blocks (K_ZZ with its jitter)."""

    def _report(self, failed: Unsolved, backends: list[SolverBackend]) -> SolverError:
        codes = [status for _, status in failed.statuses]
        error = SolverError(
            f"The {' then '.join(b.name for b in backends)} solver did not solve the "
            f"{self.formulation_name!r} formulation (N={len(self.X)}, Nz={self.n_expansion}): "
            f"{failed}. {status_hint(codes)}{self._scale_note()}{conditioning_note(self._K_zz)}"
        )
        error.__cause__ = failed.cause
        return error

    def _scale_note(self) -> str:
        if 1e-6 <= abs(self.kernel_scale) <= 1e6:
            return ""
        return (f" The kernel's diagonal on X averages {self.kernel_scale:.1e}, far from 1: "
                "standardise the features or lower gamma.")

    def evaluate(self, Z: Array, grad: bool = True) -> Evaluation:
        Z = check_expansion_vectors(Z, self.n_expansion, self.X.shape[1], self.formulation_name)
        K_xz, K_zz = kernel_blocks(self.kernel, self.X, Z)
        self._K_zz = K_zz
        sol = self._solve_links(K_xz, K_zz + self.jitter * np.eye(len(Z)))
        intercept = self.declaration.intercept
        b_array = np.asarray(
            intercept.value if isinstance(intercept, cp.Expression) else intercept, dtype=float)
        b = float(b_array) if b_array.ndim == 0 else b_array
        accuracy = sol.accuracy * max(1.0, abs(sol.value))
        kept: dict[str, Any] = {"variables": solution_variables(self.declaration),
                                "diagonal_coef": self.declaration.diagonal_coef}
        if not grad:
            return Evaluation(sol.value, None, sol.beta, b, sol.backend, accuracy, **kept)
        gradient = link_gradient(self.kernel, self.X, Z, K_xz, K_zz, sol.nu, sol.beta, sol.c)
        if not self._warned:
            with plugin_code(self.formulation, "nondifferentiable()"):
                reason = self.formulation.nondifferentiable(self.y, sol.nu)
            if reason:
                self._warned = True
                warnings.warn(
                    f"W(Z) of the {self.formulation_name!r} formulation is not differentiable "
                    f"here: {reason}. The returned gradient is one subgradient.",
                    NonDifferentiableWarning,
                    stacklevel=2,
                )
        return Evaluation(sol.value, gradient, sol.beta, b, sol.backend, accuracy, **kept)


@dataclass(frozen=True)
class LinkSolution:
    """A generic path's solution: W, β, the dual ν of the link f = K_XZ β (cvxpy's sign:
    Lagrangian = objective + ν·(f − K_XZ β)) and c_k = ∂L/∂‖w_k‖² per output."""

    value: float
    beta: Array
    nu: Array
    c: Array
    backend: str
    accuracy: float


def norm_multiplier(u: Array, eta: Array) -> Array:
    """c_k = ∂L/∂‖w_k‖² per output from the stationarity in u of a formulation that sees u
    only through its norms: ∂L/∂u_k = 2 c_k u_k, read off the dual η_k of the row it is in.

    Examples
    --------
    >>> u = np.array([[3.0], [4.0]]); norm_multiplier(u, -2 * 0.5 * u)
    array([0.5])
    """
    uu = (u * u).sum(0)
    return np.where(uu > 0, -(eta * u).sum(0) / (2 * np.where(uu > 0, uu, 1.0)), 0.0)


class CvxpyMarginal(DeclaredMarginal):
    """W(Z) and ∇W(Z) of a formulation through cvxpy's DPP compilation (the reference path).

    The links are cvxpy constraints with ``K_XZ`` and ``R`` as Parameters, so
    the problem compiles once and cvxpy re-solves it with new parameter
    values. Compiling densifies cvxpy's parameter tensor, about N·(N·Nz)
    numbers: this path is for small problems and for the tests, where it is the
    reference of `sparsify.core.conic.ConicMarginal`, the default generic path.

    Parameters
    ----------
    formulation : Formulation
        The convex kernel learning algorithm.
    X : ndarray of shape (N, d)
        Training inputs.
    y : ndarray of shape (N,) or None
        Targets as the formulation expects them.
    kernel : Kernel
        Kernel with vector-Jacobian products.
    n_expansion : int
        Number of XVs Nz.
    solver : str, default="auto"
        A registered backend that cvxpy can call, or "auto": Clarabel, falling
        back to OSQP (quadratic programs only) and then ECOS when a backend does
        not return an optimal status.
    tol : float, default=1e-9
        Solver accuracy (gap and feasibility).
    jitter : float, default=1e-10
        Added to the diagonal of K_ZZ, relative to the mean kernel diagonal on
        X, so that XVs that come close keep K_ZZ positive definite.

    Examples
    --------
    >>> import numpy as np, cvxpy as cp
    >>> from sparsify import Formulation, Declaration, RBF
    >>> class Ridge(Formulation):
    ...     name = "ridge"
    ...     def declare(self, out):
    ...         return Declaration(cp.Minimize(cp.sum_squares(out.f - out.y) + out.norm_w2))
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(20, 2)); y = np.sin(X[:, 0])
    >>> W = CvxpyMarginal(Ridge(), X, y, RBF(0.5), n_expansion=3)
    >>> ev = W.evaluate(X[:3])
    >>> ev.grad.shape, ev.coef.shape
    ((3, 2), (3,))
    """

    _cvxpy_only = True

    def __init__(
        self,
        formulation: Formulation,
        X: Array,
        y: NDArray[Any] | None,
        kernel: Kernel,
        n_expansion: int,
        solver: str = "auto",
        tol: float = 1e-9,
        jitter: float = 1e-10,
    ) -> None:
        super().__init__(formulation, X, y, kernel, n_expansion, solver, tol, jitter)
        N, Nz = len(self.X), self.n_expansion
        # compiling densifies cvxpy's parameter tensor: a row per constraint entry that
        # holds a Parameter (f's N·K link rows at least) by a column per parameter entry
        K = n_outputs(formulation, y)
        check_memory(8 * N * K * (N * Nz + Nz * Nz + 1),
                     f"cvxpy's DPP path for the {self.formulation_name!r} formulation with "
                     f"N={N}, Nz={Nz}",
                     "Use sparsify.core.conic.ConicMarginal (solver names select it through "
                     "make_marginal), whose memory grows like N·Nz.")
        decl = self._declare()
        self.K_xz = cp.Parameter((N, Nz), name="K_XZ")
        self.R = cp.Parameter((Nz, Nz), name="R")
        self.beta = cp.Variable(self.u.shape, name="beta")
        self.link_f = self.f == self.K_xz @ self.beta
        self.link_u = self.u == self.R @ self.beta
        # a solver that stalls may retry with the objective rescaled (SolverBackend.attempts)
        self.objective_scale = cp.Parameter(nonneg=True, name="objective_scale", value=1.0)
        self.problem = cp.Problem(cp.Minimize(self.objective_scale * decl.objective.expr),
                                  [self.link_f, self.link_u, *decl.constraints])
        if not self.problem.is_dpp():
            raise self._fail("is not DPP: it must not multiply the framework's objects in a "
                             "way that puts a Parameter times a Parameter (for example "
                             "quad_form with a Parameter matrix).")
        if not self.problem.is_qp():
            capable = [b for b in self.backends if not b.quadratic_only]
            if not capable:
                raise ValueError(
                    f"The solver {self.backends[0].name!r} handles quadratic programs only and "
                    f"the {self.formulation_name!r} formulation is not one; use "
                    "solver='clarabel' or solver='ecos'."
                )
            self.backends = capable

    def _solve_links(self, K_xz: Array, K_zz: Array) -> LinkSolution:
        self.K_xz.value, self.R.value = K_xz, expansion_factor(K_zz)
        try:
            solved = solve_problem(self.problem, self.backends, self.tol,
                                   has_solution=lambda: self.link_f.dual_value is not None,
                                   objective_scale=self.objective_scale)
        except Unsolved as failed:
            raise self._report(failed, self.backends) from failed.cause
        s = solved.objective_scale
        Nz = self.n_expansion
        eta = np.asarray(self.link_u.dual_value, dtype=float).reshape(Nz, -1) / s
        return LinkSolution(
            value=float(self.problem.value) / s,
            beta=np.asarray(self.beta.value, dtype=float),
            nu=np.asarray(self.link_f.dual_value, dtype=float) / s,
            c=norm_multiplier(np.asarray(self.u.value, dtype=float).reshape(Nz, -1), eta),
            backend=solved.backend.name,
            accuracy=solved.accuracy,
        )


def declare(formulation: Formulation, y: NDArray[Any] | None, n_samples: int,
            n_expansion: int, X: Array | None = None,
            diagonal: Array | Callable[[], Array] | None = None
            ) -> tuple[Declaration, cp.Variable, cp.Variable, int]:
    """The formulation's declaration over new variables f and u, checked.

    Returns the declaration, f, u and the number of outputs K. ``X`` is what the
    formulation sees as ``out.X`` (None where the rows are not on this machine:
    over row blocks), ``diagonal`` the kernel's k(x_i, x_i) (or a function that
    computes it, called only if the formulation reads it). The formulation's
    code runs inside `plugin_code`, so a plugin that exits is an error naming
    it; what it returns is checked by `check_declaration`.
    """
    N, Nz = n_samples, n_expansion
    K = n_outputs(formulation, y)
    f = cp.Variable((N,) if K == 1 else (N, K), name="f")
    u = cp.Variable((Nz,) if K == 1 else (Nz, K), name="u")
    norms = ((cp.sum_squares(u),) if K == 1
             else tuple(cp.sum_squares(u[:, k]) for k in range(K)))
    outputs = Outputs(f=f, norm_w2=cp.sum_squares(u), norms_w2=norms, y=y,
                      n_samples=N, n_outputs=K, norm_w=cp.norm(cp.vec(u, order="F")), X=X,
                      **point_data(formulation, y, N, diagonal))
    with plugin_code(formulation, "declare()"):
        decl = formulation.declare(outputs)
    check_declaration(formulation, decl, f, K, y)
    return decl, f, u, K


#: Bytes a preference pair costs once compiled (its index pair, a row of the problem with
#: its slack, the backend's share), for the estimate before a ranking problem is built.
PAIR_BYTES = 600


def point_data(formulation: Formulation, y: NDArray[Any] | None, n_samples: int,
               diagonal: Array | Callable[[], Array] | None = None) -> dict[str, Any]:
    """What `Outputs` holds beside f, ‖w‖² and y: weights, groups, pairs, the kernel diagonal.

    The weights and groups come from the formulation (`Formulation.weigh`,
    `Formulation.group`); a "ranker"'s pairs are made from y and the groups
    (`sparsify.core.formulation.ranking_pairs`), after their memory is estimated.

    Examples
    --------
    >>> from sparsify.core.formulation import make_formulation
    >>> data = point_data(make_formulation("svm"), np.array([-1, 1]), 2)
    >>> data["weights"].tolist(), data["pairs"]
    ([1.0, 1.0], None)
    """
    given = formulation.point_weights
    weights = np.broadcast_to(np.asarray(1.0 if given is None else given, dtype=np.float64),
                              (n_samples,)).copy()
    groups = formulation.point_groups
    if groups is not None and len(groups) != n_samples:
        raise ValueError(f"The {formulation_label(formulation)} was given groups for "
                         f"{len(groups)} points, but the problem has {n_samples}; pass one "
                         "group per point.")
    pairs = None
    if formulation.task == "ranker" and y is not None:
        count = count_pairs(y, groups)
        check_memory(PAIR_BYTES * count + 2**20,
                     f"The ranking problem of the {formulation_label(formulation)} "
                     f"({count} preference pairs of {n_samples} points)",
                     "Split the points into smaller groups (fit(X, y, groups=...): pairs are "
                     "made within a group only), or rank a subsample.")
        pairs = ranking_pairs(y, groups)
    return {"weights": weights, "groups": groups, "pairs": pairs, "diagonal": diagonal}


def n_outputs(formulation: Formulation, y: NDArray[Any] | None) -> int:
    """K, the formulation's number of outputs for these targets: its `Formulation.n_outputs`,
    run as a plugin's code, and checked to be a positive integer.

    Examples
    --------
    >>> from sparsify.core.formulation import make_formulation
    >>> n_outputs(make_formulation("svm"), np.array([-1, 1]))
    1
    """
    with plugin_code(formulation, "n_outputs()"):
        K = formulation.n_outputs(y)
    if isinstance(K, bool) or not isinstance(K, (int, np.integer)) or K < 1:
        raise ValueError(f"The {formulation_label(formulation)} returned n_outputs = {K!r}; it "
                         "must be an integer >= 1 (the columns of β and f).")
    return int(K)


def formulation_label(formulation: Formulation) -> str:
    """How messages name a formulation ("The {label} ..."): a plugin's with its class.

    Examples
    --------
    >>> from sparsify.core.formulation import make_formulation
    >>> formulation_label(make_formulation("svm"))
    "'svm' formulation"
    """
    name = formulation.name or type(formulation).__name__
    if not is_plugin(formulation):
        return f"{name!r} formulation"
    cls = type(formulation)
    return f"{name!r} formulation ({cls.__module__}.{cls.__qualname__}, a plugin)"


def check_declaration(formulation: Formulation, decl: Any, f: cp.Variable, K: int,
                      y: NDArray[Any] | None = None) -> None:
    """Refuse, before anything is compiled, a declaration the direct sparse method cannot use.

    The core's rules, each a ValueError naming the formulation (and its class for
    a plugin's): a `Declaration` with a ``cp.Minimize`` objective; DCP; no cvxpy
    Parameters of its own; the outputs ``f`` used; continuous variables only
    (W(Z)'s gradient comes from the duals, which a mixed-integer problem has
    not); finite constants (a NaN or infinity in the problem's data would be
    "solved" into nonsense); an intercept the fitted machine can hold
    (`check_intercept`); named variables it can keep, among them those the
    formulation's task needs for the targets ``y`` (`check_variables`); and a
    finite ``diagonal_coef`` of shape () or (K,).
    """
    label = formulation_label(formulation)

    def fail(what: str) -> ValueError:
        return ValueError(f"The {label} {what}")

    if not isinstance(decl, Declaration):
        raise fail(f"must return a sparsify.Declaration from declare(); got "
                   f"{type(decl).__name__}.")
    if not isinstance(decl.objective, cp.Minimize):
        raise fail("must declare a cp.Minimize objective (negate a Maximize one).")
    constraints = list(decl.constraints)
    odd = [c for c in constraints if not isinstance(c, cp.constraints.constraint.Constraint)]
    if odd:
        bad = odd[0]
        raise fail(f"declares a constraint that is not a cvxpy constraint: {bad!r} (a "
                   f"{type(bad).__name__}); write constraints with ==, <= or >= over cvxpy "
                   "expressions.")
    problem = cp.Problem(decl.objective, constraints)
    discrete = sorted({f"{v.name()} of shape {tuple(v.shape)}" for v in problem.variables()
                       if v.attributes.get("integer") or v.attributes.get("boolean")})
    if discrete:
        raise fail(f"declares the integer or boolean variable(s) {', '.join(discrete)}: the "
                   "direct sparse method needs a convex problem with continuous variables "
                   "(the gradient of W(Z) comes from its duals, which a mixed-integer problem "
                   "does not have), and no backend solves one. Declare them without "
                   "integer=True or boolean=True.")
    if not problem.is_dcp():
        raise fail("is not DCP (disciplined convex): check the curvature of its "
                   "objective and constraints.")
    parts = [decl.objective, *constraints]
    if isinstance(decl.intercept, cp.Expression):
        parts.append(decl.intercept)
    if not isinstance(decl.variables, Mapping):
        raise fail(f"declares variables of type {type(decl.variables).__name__}; "
                   "Declaration.variables maps names to cvxpy expressions, such as "
                   "{'thresholds': theta}.")
    parts += [v for v in decl.variables.values() if isinstance(v, cp.Expression)]
    if any(part.parameters() for part in parts):
        raise fail("creates cvxpy Parameters of its own; pass hyperparameters as "
                   "plain numbers (the core owns every Parameter).")
    used = {v.id for part in (decl.objective, *constraints) for v in part.variables()}
    if f.id not in used:
        raise fail("ignores the outputs f: declare the loss or constraints over "
                   "out.f so that the data enter the problem.")
    parts_named: list[tuple[str, Any]] = [("its objective", decl.objective)]
    parts_named += [(f"its constraint {i}", c) for i, c in enumerate(constraints)]
    for where, part in parts_named:
        found = _non_finite(part)
        if found:
            raise fail(f"declares non-finite data in {where}: {found}. A solver would answer "
                       "nonsense (W(Z) of 1e40, say) rather than fail; check what declare() "
                       "computes from out.y and its hyperparameters (np.log of a negative "
                       "target, a division by zero).")
    check_intercept(decl.intercept, K, used, fail)
    with plugin_code(formulation, "required_variables()"):
        required = formulation.required_variables(y)
    check_variables(decl.variables, required, used, fail)
    coef = decl.diagonal_coef
    if (isinstance(coef, bool) or not isinstance(coef, (int, float, np.integer, np.floating,
                                                          np.ndarray))
            or np.shape(coef) not in ((), (1,), (K,))
            or not np.isfinite(np.asarray(coef, dtype=float)).all()):
        raise fail(f"declares diagonal_coef = {coef!r}; it must be a finite number, or an "
                   f"array of shape ({K},) (one per output): the coefficient of k(x, x) in "
                   "the decision function.")


def check_variables(variables: Mapping[str, Any], required: Mapping[str, tuple[int, ...]],
                    used: set[int], fail: Any) -> None:
    """The rule for `Declaration.variables`: named quantities a fitted model can keep.

    Each name is a non-empty ``str``; each value a cvxpy expression over
    variables the problem uses (else the solve gives it no value), or a finite
    number. ``required`` names those the formulation's task needs, with their
    shapes (`Formulation.required_variables`): each must be there, with that
    shape. ``fail(what)`` makes the error naming the formulation.

    Examples
    --------
    >>> import cvxpy as cp
    >>> theta = cp.Variable(2)
    >>> check_variables({"thresholds": theta}, {"thresholds": (2,)}, {theta.id}, ValueError)
    >>> check_variables({}, {"thresholds": (3,)}, set(), ValueError)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: declares no variable 'thresholds', which its task needs (shape (3,)): ...
    """
    for name, value in variables.items():
        if not isinstance(name, str) or not name:
            raise fail(f"declares a variable named {name!r}; name each of "
                       "Declaration.variables by a non-empty str.")
        if isinstance(value, cp.Expression):
            unused = [v.name() for v in value.variables() if v.id not in used]
            if unused:
                raise fail(f"declares the variable {name!r} over the variable(s) "
                           f"{', '.join(unused)}, which neither its objective nor its "
                           "constraints use, so the solve gives them no value: declare it "
                           "over variables the problem uses.")
        elif isinstance(value, bool) or not isinstance(
                value, (int, float, np.integer, np.floating, np.ndarray)) or not np.isfinite(
                np.asarray(value, dtype=float)).all():
            raise fail(f"declares the variable {name!r} as {value!r}; give a cvxpy expression "
                       "over its variables (or a finite number).")
    for name, shape in required.items():
        if name not in variables:
            raise fail(f"declares no variable {name!r}, which its task needs (shape "
                       f"{tuple(shape)}): return Declaration(..., variables={{{name!r}: "
                       "...}}).")
        got = tuple(np.shape(variables[name]))
        if got != tuple(shape):
            raise fail(f"declares the variable {name!r} of shape {got}; its task needs shape "
                       f"{tuple(shape)} for these targets.")


def solution_variables(decl: Declaration) -> dict[str, Any]:
    """The declaration's named variables at the solution just unpacked, as arrays (or floats).

    Examples
    --------
    >>> import cvxpy as cp
    >>> from sparsify.core.formulation import Declaration
    >>> x = cp.Variable(2); x.value = np.array([1.0, 2.0])
    >>> solution_variables(Declaration(cp.Minimize(0), variables={"x": x, "c": 3.0}))
    {'x': array([1., 2.]), 'c': 3.0}
    """
    out: dict[str, Any] = {}
    for name, value in decl.variables.items():
        raw = value.value if isinstance(value, cp.Expression) else value
        array = np.array(raw, dtype=float)
        out[name] = float(array) if array.ndim == 0 else array
    return out


def check_intercept(intercept: Any, K: int, used: set[int],
                    fail: Any) -> None:
    """The one rule for `Declaration.intercept`: what a fitted kernel machine can keep.

    A fit keeps the XVs, the coefficients β and one bias per output, so the
    intercept is a number, or a cvxpy expression of shape () (one bias, shared
    by every output) or (K,) (one per output; (1,) for one output), over
    variables the problem uses (else the solve gives it no value). Anything else
    is refused here, before the fit, not after it. ``fail(what)`` makes the
    error naming the formulation.

    Examples
    --------
    >>> import cvxpy as cp
    >>> b = cp.Variable(3)
    >>> check_intercept(b, 3, {b.id}, ValueError)
    >>> check_intercept(cp.Variable(5), 1, set(), ValueError)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: declares an intercept of shape (5,): a fitted machine keeps one bias per output, ...
    """
    if isinstance(intercept, cp.Expression):
        shape = tuple(intercept.shape)
        unused = [v.name() for v in intercept.variables() if v.id not in used]
    elif isinstance(intercept, (int, float, np.integer, np.floating)) and not isinstance(
            intercept, bool):
        shape, unused = (), []
        if not np.isfinite(intercept):
            raise fail(f"declares the intercept {intercept}; give a finite number or a cvxpy "
                       "expression.")
    else:
        raise fail(f"declares an intercept of type {type(intercept).__name__}; give a number "
                   "or a cvxpy expression (a cp.Variable() of its own, say).")
    if shape not in ((), (1,), (K,)):
        outputs = "one output" if K == 1 else f"{K} outputs"
        raise fail(f"declares an intercept of shape {shape}: a fitted machine keeps one bias "
                   f"per output, so the intercept must have shape () or ({K},) ({outputs}). "
                   "Declare other quantities the model keeps (thresholds, a margin) by name "
                   "in Declaration.variables.")
    if unused:
        raise fail(f"declares an intercept over the variable(s) {', '.join(unused)}, which "
                   "neither its objective nor its constraints use, so the solve gives them no "
                   "value: declare the intercept over variables the problem uses.")


def _non_finite(part: Any) -> str:
    """Where a cvxpy objective or constraint holds NaN or infinity: a description, or ""."""
    for const in part.constants():
        value = const.value
        data = value.data if hasattr(value, "tocsr") else np.asarray(value, dtype=float)
        bad = ~np.isfinite(data)
        if bad.any():
            kind = "NaN" if np.isnan(data[bad]).any() else "infinity"
            return (f"a constant of shape {tuple(const.shape)} holds {kind} ({int(bad.sum())} "
                    f"of {data.size} values)")
    return ""
