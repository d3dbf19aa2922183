"""Kernel algorithms a plugin author declares, each as its convex problem and nothing else.

Each class below is a `sparsify.Formulation`: its hyperparameters, checked when it is
made, and its problem over the outputs f = ⟨w, φ(x_i)⟩ and the norms of w. The core adds
w = Σ_j β_j φ(z_j) and derives ∇W(Z) from the duals; no class writes gradient code.
Register them all with ``sparsify.register_plugin(module)``, where ``module`` is this
file imported, or through the ``sparsify`` entry-point group of a package.

    python examples/declared_formulations.py
"""

from __future__ import annotations

import sys
from numbers import Integral, Real

import cvxpy as cp
import numpy as np
import scipy.sparse as sp
from sklearn.utils._param_validation import Interval

from sparsify import Declaration, Formulation, Outputs, SparseKernelClassifier, hookimpl
from sparsify.core.multioutput import SparseMultiOutputClassifier
from sparsify.core.params import check_params

_POSITIVE = Interval(Real, 0.0, None, closed="neither")
_NONNEGATIVE = Interval(Real, 0.0, None, closed="left")


class EpsilonSVR(Formulation):
    """ε-insensitive support vector regression (Vapnik 1995; Smola & Schölkopf 2004).

    Minimise ½‖w‖² + C Σ_i max(0, |f_i + b − y_i| − ε).

    Parameters
    ----------
    C : float, default=1.0
        Weight of the ε-insensitive loss, > 0.
    epsilon : float, default=0.1
        Half-width of the tube in which errors cost nothing, ≥ 0.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsify import ConicMarginal, RBF
    >>> X = np.linspace(-2, 2, 20)[:, None]
    >>> y = np.sin(X[:, 0])
    >>> ev = ConicMarginal(EpsilonSVR(C=10.0, epsilon=0.05), X, y, RBF(1.0), 4).evaluate(X[::5])
    >>> bool(np.max(np.abs(RBF(1.0)(X, X[::5]) @ ev.coef + ev.intercept - y)) < 0.1)
    True
    >>> EpsilonSVR(epsilon=-1)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: The 'epsilon' parameter of EpsilonSVR must be a float in the range [0.0, inf)...
    """

    name = "eps_svr"  # "svr" is the built-in formulation's name
    weighted = True  # each point's loss times out.weights: samples of the points can stand in

    def __init__(self, C: float = 1.0, epsilon: float = 0.1) -> None:
        check_params("EpsilonSVR", {"C": [_POSITIVE], "epsilon": [_NONNEGATIVE]},
                     C=C, epsilon=epsilon)
        self.C = C
        self.epsilon = epsilon

    def declare(self, out: Outputs) -> Declaration:
        b = cp.Variable()
        r = out.f + b - out.y
        # max(r − ε, −r − ε, 0) is one epigraph variable and three rows per point;
        # pos(abs(r) − ε) compiles to two and four, and the backend's solve grows with them
        loss = out.weights @ cp.maximum(r - self.epsilon, -r - self.epsilon, 0)
        return Declaration(cp.Minimize(0.5 * out.norm_w2 + self.C * loss), [], intercept=b)


class HuberSVM(Formulation):
    """SVM classifier with the Huber (smoothed) hinge loss of Chapelle (2007), labels -1/+1.

    Minimise ½‖w‖² + C Σ_i L_h(y_i (f_i + b)), where L_h(m) is 0 for m > 1 + h,
    (1 + h − m)² / (4h) for |1 − m| ≤ h and 1 − m for m < 1 − h: the hinge with its
    kink rounded over a width 2h. It is ``cvxpy.huber(pos(1 + h − m), 2h) / (4h)``.

    Parameters
    ----------
    C : float, default=1.0
        Weight of the loss, > 0.
    h : float, default=0.5
        Half-width of the quadratic part, > 0 (h → 0 gives the hinge).

    Examples
    --------
    >>> import numpy as np
    >>> from sparsify import ConicMarginal, RBF
    >>> X = np.array([[0.0, 0.0], [0.2, 0.1], [1.0, 1.0], [0.9, 1.2]])
    >>> y = np.array([-1, -1, 1, 1])
    >>> ev = ConicMarginal(HuberSVM(C=10.0), X, y, RBF(1.0), 2).evaluate(X[[0, 2]])
    >>> np.sign(RBF(1.0)(X, X[[0, 2]]) @ ev.coef + ev.intercept).astype(int).tolist()
    [-1, -1, 1, 1]
    """

    name = "huber_svm"

    def __init__(self, C: float = 1.0, h: float = 0.5) -> None:
        check_params("HuberSVM", {"C": [_POSITIVE], "h": [_POSITIVE]}, C=C, h=h)
        self.C = C
        self.h = h

    def declare(self, out: Outputs) -> Declaration:
        b = cp.Variable()
        slack = cp.pos(1 + self.h - cp.multiply(out.y, out.f + b))
        loss = cp.sum(cp.huber(slack, 2 * self.h)) / (4 * self.h)
        return Declaration(cp.Minimize(0.5 * out.norm_w2 + self.C * loss), [], intercept=b)


class KernelRidgeRegression(Formulation):
    """Kernel ridge regression with a free intercept (Saunders, Gammerman & Vovk 1998).

    Minimise λ‖w‖² + Σ_i (f_i + b − y_i)².

    Parameters
    ----------
    lam : float, default=1.0
        Weight λ of ‖w‖², > 0.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsify import ConicMarginal, RBF
    >>> X = np.linspace(-2, 2, 20)[:, None]
    >>> y = np.sin(X[:, 0])
    >>> ev = ConicMarginal(KernelRidgeRegression(lam=1e-3), X, y, RBF(1.0), 4).evaluate(X[::5])
    >>> bool(np.max(np.abs(RBF(1.0)(X, X[::5]) @ ev.coef + ev.intercept - y)) < 0.1)
    True
    """

    name = "kridge"

    def __init__(self, lam: float = 1.0) -> None:
        check_params("KernelRidgeRegression", {"lam": [_POSITIVE]}, lam=lam)
        self.lam = lam

    def declare(self, out: Outputs) -> Declaration:
        b = cp.Variable()
        loss = cp.sum_squares(out.f + b - out.y)
        return Declaration(cp.Minimize(self.lam * out.norm_w2 + loss), [], intercept=b)


class QuantileRegression(Formulation):
    """Kernel quantile regression (Koenker & Bassett 1978; Takeuchi, Le, Sears & Smola 2006).

    Minimise λ‖w‖² + Σ_i ρ_τ(y_i − f_i − b), with the pinball loss
    ρ_τ(r) = max(τ r, (τ − 1) r): f + b estimates the τ-quantile of y given x.

    Parameters
    ----------
    tau : float, default=0.5
        The quantile, in (0, 1).
    lam : float, default=1.0
        Weight λ of ‖w‖², > 0.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsify import ConicMarginal, RBF
    >>> X = np.linspace(-2, 2, 40)[:, None]
    >>> y = np.sin(X[:, 0]) + np.random.default_rng(0).normal(0, 0.2, 40)
    >>> form = QuantileRegression(tau=0.9, lam=1e-3)
    >>> ev = ConicMarginal(form, X, y, RBF(1.0), 4).evaluate(X[::10])
    >>> above = y > RBF(1.0)(X, X[::10]) @ ev.coef + ev.intercept
    >>> bool(above.mean() <= 0.2)  # about a tenth of the points lie above the 0.9-quantile
    True
    """

    name = "quantile"
    weighted = True

    def __init__(self, tau: float = 0.5, lam: float = 1.0) -> None:
        check_params("QuantileRegression",
                     {"tau": [Interval(Real, 0.0, 1.0, closed="neither")], "lam": [_POSITIVE]},
                     tau=tau, lam=lam)
        self.tau = tau
        self.lam = lam

    def declare(self, out: Outputs) -> Declaration:
        b = cp.Variable()
        r = out.y - out.f - b
        loss = out.weights @ cp.maximum(self.tau * r, (self.tau - 1) * r)
        return Declaration(cp.Minimize(self.lam * out.norm_w2 + loss), [], intercept=b)


class NuSVM(Formulation):
    """The ν-support vector classifier (Schölkopf, Smola, Williamson & Bartlett 2000), labels -1/+1.

    Minimise N (½‖w‖² − νρ) + Σ_i ξ_i (the textbook objective times N) subject
    to y_i (f_i + b) ≥ ρ − ξ_i, ξ ≥ 0, ρ ≥ 0: ν bounds the fraction of margin
    errors from above and that of support vectors from below.

    Parameters
    ----------
    nu : float, default=0.5
        In (0, 1].

    Examples
    --------
    >>> import numpy as np
    >>> from sparsify import ConicMarginal, RBF
    >>> X = np.array([[0.0, 0.0], [0.2, 0.1], [1.0, 1.0], [0.9, 1.2]])
    >>> y = np.array([-1, -1, 1, 1])
    >>> ev = ConicMarginal(NuSVM(nu=0.5), X, y, RBF(1.0), 2).evaluate(X[[0, 2]])
    >>> np.sign(RBF(1.0)(X, X[[0, 2]]) @ ev.coef + ev.intercept).astype(int).tolist()
    [-1, -1, 1, 1]
    """

    name = "nu_svm"

    def __init__(self, nu: float = 0.5) -> None:
        check_params("NuSVM", {"nu": [Interval(Real, 0.0, 1.0, closed="right")]}, nu=nu)
        self.nu = nu

    def declare(self, out: Outputs) -> Declaration:
        b, rho = cp.Variable(), cp.Variable(nonneg=True)
        xi = cp.pos(rho - cp.multiply(out.y, out.f + b))
        # times N, as the one-class SVM: the multipliers of f are then in [0, 1], not
        # [0, 1/N], so the backends' absolute tolerances leave the gradient accurate
        objective = out.n_samples * (0.5 * out.norm_w2 - self.nu * rho) + cp.sum(xi)
        return Declaration(cp.Minimize(objective), [], intercept=b)


class MinimaxProbabilityMachine(Formulation):
    """The regularised minimax probability machine (Lanckriet, El Ghaoui et al. 2002).

    Minimise N (√(wᵀΣ₊w + ρ‖w‖²) + √(wᵀΣ₋w + ρ‖w‖²)) subject to wᵀ(μ₊ − μ₋) = 1,
    with the classes' means μ± and covariances Σ± in feature space, labels -1/+1.
    Over the outputs, wᵀμ± is the class mean of f and wᵀΣ±w its class variance,
    so each root is the norm of (centred f of the class / √N±, √ρ‖w‖): a
    second-order cone in f and ‖w‖ (`Outputs.norm_w`), which is not DCP over
    ‖w‖². The intercept puts the threshold midway between the class means,
    b = −(wᵀμ₊ + wᵀμ₋)/2 (Lanckriet's κ-weighted threshold is a ratio of the
    two roots, which a convex declaration cannot state; it is the same when the
    classes spread alike).

    Parameters
    ----------
    rho : float, default=1e-2
        Regulariser ρ of both covariances, > 0.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsify import ConicMarginal, RBF
    >>> X = np.array([[0.0, 0.0], [0.2, 0.1], [0.1, 0.3], [1.0, 1.0], [0.9, 1.2], [1.1, 0.8]])
    >>> y = np.array([-1, -1, -1, 1, 1, 1])
    >>> ev = ConicMarginal(MinimaxProbabilityMachine(), X, y, RBF(1.0), 2).evaluate(X[[0, 3]])
    >>> np.sign(RBF(1.0)(X, X[[0, 3]]) @ ev.coef + ev.intercept).astype(int).tolist()
    [-1, -1, -1, 1, 1, 1]
    """

    name = "mpm"

    def __init__(self, rho: float = 1e-2) -> None:
        check_params("MinimaxProbabilityMachine", {"rho": [_POSITIVE]}, rho=rho)
        self.rho = rho

    def declare(self, out: Outputs) -> Declaration:
        if out.norm_w is None:
            raise ValueError("MinimaxProbabilityMachine needs Outputs.norm_w (sparsify >= 0.2).")
        y = np.asarray(out.y)
        plus, minus = np.flatnonzero(y > 0), np.flatnonzero(y < 0)
        means = [cp.sum(out.f[idx]) / len(idx) for idx in (plus, minus)]
        # ‖w‖ enters through t ≥ ‖w‖: the roots grow with t, so t = ‖w‖ at the optimum
        t = cp.Variable(nonneg=True)
        roots = [cp.norm(cp.hstack([(out.f[idx] - mean) / np.sqrt(len(idx)),
                                    cp.reshape(np.sqrt(self.rho) * t, (1,), order="C")]))
                 for idx, mean in zip((plus, minus), means, strict=True)]
        constraints = [out.norm_w <= t, means[0] - means[1] == 1]
        # times N: each f_i's multiplier is then of order 1, not 1/N, so the backends'
        # absolute tolerances leave the gradient accurate (the one-class SVM does the same)
        return Declaration(cp.Minimize(out.n_samples * (roots[0] + roots[1])), constraints,
                           intercept=-(means[0] + means[1]) / 2)


class LSSVM(Formulation):
    """The least-squares SVM classifier (Suykens & Vandewalle 1999), labels -1/+1.

    Minimise ½‖w‖² + (γ/2) Σ_i e_i² with e_i = 1 − y_i (f_i + b), which for ±1
    labels is (γ/2) Σ_i (y_i − f_i − b)²: equality constraints and squares only, so
    the structured backend solves it in one Newton step.

    Parameters
    ----------
    gamma_reg : float, default=1.0
        The weight γ of the squared errors, > 0.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsify import ConicMarginal, RBF
    >>> X = np.array([[0.0, 0.0], [0.2, 0.1], [1.0, 1.0], [0.9, 1.2]])
    >>> y = np.array([-1, -1, 1, 1])
    >>> ev = ConicMarginal(LSSVM(gamma_reg=10.0), X, y, RBF(1.0), 2).evaluate(X[[0, 2]])
    >>> np.sign(RBF(1.0)(X, X[[0, 2]]) @ ev.coef + ev.intercept).astype(int).tolist()
    [-1, -1, 1, 1]
    """

    name = "ls_svm"
    task = "classifier"

    def __init__(self, gamma_reg: float = 1.0) -> None:
        check_params("LSSVM", {"gamma_reg": [_POSITIVE]}, gamma_reg=gamma_reg)
        self.gamma_reg = gamma_reg

    def declare(self, out: Outputs) -> Declaration:
        b = cp.Variable()
        errors = cp.sum_squares(out.y - out.f - b)
        return Declaration(cp.Minimize(0.5 * out.norm_w2 + 0.5 * self.gamma_reg * errors),
                           [], intercept=b)


def knn_edges(X: np.ndarray, k: int) -> np.ndarray:
    """The edges (i, j), i < j, of the symmetrised k-nearest-neighbour graph of X's rows."""
    from sklearn.neighbors import NearestNeighbors

    k = min(k, len(X) - 1)
    _, neighbours = NearestNeighbors(n_neighbors=k + 1).fit(X).kneighbors(X)
    rows = np.repeat(np.arange(len(X)), k)
    cols = neighbours[:, 1:].ravel()  # the first neighbour is the point itself
    pairs = np.sort(np.column_stack([rows, cols]), axis=1)
    return np.unique(pairs[pairs[:, 0] != pairs[:, 1]], axis=0)


class LapRLS(Formulation):
    """Laplacian regularised least squares (Belkin, Niyogi & Sindhwani 2006), semi-supervised.

    Minimise (1/l) Σ_{i labelled} (y_i − f_i − b)² + γ_A ‖w‖² + (γ_I / N²) fᵀ L f,
    with L the Laplacian of the k-nearest-neighbour graph of all N training points
    (labelled or not) and l the labelled ones: fᵀ L f = Σ_edges (f_i − f_j)². The
    graph is built from the inputs (`Outputs.X`); NaN in y marks an unlabelled
    point. Labels ±1 give a classifier (the sign of the output).

    Parameters
    ----------
    gamma_a : float, default=1e-2
        Weight γ_A of ‖w‖², > 0.
    gamma_i : float, default=1.0
        Weight γ_I of the graph's smoothness, ≥ 0.
    n_neighbors : int, default=8
        k of the graph.

    Examples
    --------
    Two moons with four labels:

    >>> import numpy as np
    >>> from sklearn.datasets import make_moons
    >>> from sparsify import ConicMarginal, RBF
    >>> X, labels = make_moons(100, noise=0.05, random_state=0)
    >>> y = np.full(100, np.nan)
    >>> for c in (0, 1):
    ...     y[np.flatnonzero(labels == c)[:2]] = 2 * c - 1
    >>> form = LapRLS(gamma_a=1e-4, gamma_i=100.0, n_neighbors=6)
    >>> Z = X[::10]
    >>> ev = ConicMarginal(form, X, y, RBF(2.0), 10).evaluate(Z)
    >>> scores = RBF(2.0)(X, Z) @ ev.coef + ev.intercept
    >>> bool(np.mean((scores > 0) == labels) > 0.95)
    True
    """

    name = "laprls"
    task = "classifier"
    unlabelled = True

    def __init__(self, gamma_a: float = 1e-2, gamma_i: float = 1.0,
                 n_neighbors: int = 8) -> None:
        check_params("LapRLS", {"gamma_a": [_POSITIVE], "gamma_i": [_NONNEGATIVE],
                                "n_neighbors": [Interval(Integral, 1, None, closed="left")]},
                     gamma_a=gamma_a, gamma_i=gamma_i, n_neighbors=n_neighbors)
        self.gamma_a = gamma_a
        self.gamma_i = gamma_i
        self.n_neighbors = n_neighbors

    def declare(self, out: Outputs) -> Declaration:
        if out.X is None:
            raise ValueError("LapRLS builds its graph from Outputs.X (sparsify >= 0.2).")
        y = np.asarray(out.y, dtype=float)
        labelled = np.flatnonzero(~np.isnan(y))
        edges = knn_edges(out.X, self.n_neighbors)
        n_edges, n = len(edges), out.n_samples
        # the incidence matrix: row e is f_i − f_j for edge (i, j)
        D = sp.csr_matrix((np.tile([1.0, -1.0], n_edges),
                           (np.repeat(np.arange(n_edges), 2), edges.ravel())),
                          shape=(n_edges, n))
        b = cp.Variable()
        fit = cp.sum_squares(y[labelled] - out.f[labelled] - b) / len(labelled)
        smooth = cp.sum_squares(D @ out.f) * (self.gamma_i / n**2)
        return Declaration(cp.Minimize(fit + self.gamma_a * out.norm_w2 + smooth), [],
                           intercept=b)


class CrammerSinger(Formulation):
    """The Crammer–Singer multi-class SVM (2001): one weight vector per class, one problem.

    Minimise ½ Σ_k ‖w_k‖² + C Σ_i ξ_i with ξ_i = max_k (f_ik + [k ≠ y_i]) − f_{i y_i}:
    the true class's output must exceed every other by a margin of 1. K outputs
    (task "multioutput_classifier": ``out.y`` holds the class codes 0..K−1), no
    intercept (as in the paper).

    Parameters
    ----------
    C : float, default=1.0
        Weight of the loss, > 0.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsify import ConicMarginal, RBF
    >>> X = np.array([[0.0, 0.0], [0.1, 0.2], [2.0, 0.0], [2.1, 0.1], [0.0, 2.0], [0.2, 2.1]])
    >>> y = np.array([0, 0, 1, 1, 2, 2])
    >>> ev = ConicMarginal(CrammerSinger(C=10.0), X, y, RBF(1.0), 3).evaluate(X[[0, 2, 4]])
    >>> (RBF(1.0)(X, X[[0, 2, 4]]) @ ev.coef).argmax(1).tolist()
    [0, 0, 1, 1, 2, 2]
    """

    name = "crammer_singer"
    task = "multioutput_classifier"

    def __init__(self, C: float = 1.0) -> None:
        check_params("CrammerSinger", {"C": [_POSITIVE]}, C=C)
        self.C = C

    def declare(self, out: Outputs) -> Declaration:
        y = np.asarray(out.y).astype(int)
        n, k = out.n_samples, out.n_outputs
        onehot = np.eye(k)[y]
        true = cp.sum(cp.multiply(out.f, onehot), axis=1)
        margins = out.f + (1 - onehot) - cp.reshape(true, (n, 1), order="C") @ np.ones((1, k))
        loss = cp.sum(cp.max(margins, axis=1))
        return Declaration(cp.Minimize(0.5 * out.norm_w2 + self.C * loss))


class SparseLSSVM(SparseKernelClassifier):
    """The sparse LS-SVM: the shared parameters and LSSVM's ``gamma_reg``."""

    formulation_class = LSSVM


class SparseLapRLS(SparseKernelClassifier):
    """Sparse LapRLS: the shared parameters and LapRLS's; NaN in y marks an unlabelled point."""

    formulation_class = LapRLS


class SparseCrammerSinger(SparseMultiOutputClassifier):
    """The sparse Crammer–Singer SVM: one problem with an output per class."""

    formulation_class = CrammerSinger


FORMULATIONS: tuple[type[Formulation], ...] = (
    EpsilonSVR, HuberSVM, KernelRidgeRegression, QuantileRegression, NuSVM,
    MinimaxProbabilityMachine, LSSVM, LapRLS, CrammerSinger,
)


@hookimpl
def register_formulations(register):  # type: ignore[no-untyped-def]
    for formulation in FORMULATIONS:
        register(formulation)


@hookimpl
def register_estimators(register):  # type: ignore[no-untyped-def]
    for estimator in (SparseLSSVM, SparseLapRLS, SparseCrammerSinger):
        register(estimator)


def example_data(formulation: Formulation, n_samples: int = 40, seed: int = 0
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Small data for ``formulation``: real targets for the regressors, class codes 0..2 for
    the Crammer–Singer SVM, -1/+1 labels else (LapRLS: a quarter of them NaN, unlabelled)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_samples, 3))
    if isinstance(formulation, EpsilonSVR | KernelRidgeRegression | QuantileRegression):
        return X, np.sin(X[:, 0]) + 0.1 * rng.normal(size=n_samples)
    if isinstance(formulation, CrammerSinger):
        return X, np.digitize(X[:, 0] + 0.5 * X[:, 1], [-0.5, 0.5])
    y = np.where(X[:, 0] + 0.5 * X[:, 1] > 0, 1, -1)
    if isinstance(formulation, LapRLS):
        y = y.astype(float)
        y[rng.permutation(n_samples)[:n_samples // 4]] = np.nan
    return X, y


def main() -> None:
    """Check every formulation's gradient with the default backend and print the table."""
    import sparsify
    from sparsify.core.gradcheck import check_gradient

    if "eps_svr" not in sparsify.plugins.registry.get_registry().names("formulation"):
        sparsify.register_plugin(sys.modules[__name__], name="declared_formulations")
    for cls in FORMULATIONS:
        X, y = example_data(cls())
        check = check_gradient(cls.name, "rbf", solver="clarabel", X=X, y=y, tol=1e-9)
        print(f"{cls.name:10s} gradient relative error {check.rel_error:.1e} "
              f"({'passed' if check.passed(1e-6) else 'FAILED'} at 1e-6)")


if __name__ == "__main__":
    main()
