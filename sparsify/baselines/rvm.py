"""Relevance vector machine for classification (Tipping 2001; Tipping & Faul 2003).

The model is a logistic regression on the design matrix Φ = [1, K(X, X)]
(a bias column and one kernel column per training point), with an independent
Gaussian prior w_m ~ N(0, α_m⁻¹) on every weight. The posterior is replaced by
its Laplace approximation: the mode μ is found by Newton's method (IRLS) and
Σ = (Φᵀ B Φ + A)⁻¹ with B = diag(σ(1 − σ)). The precisions α are set by
maximising the (approximate) marginal likelihood; most go to infinity and their
basis functions drop out, and the training points left are the relevance vectors.

Two ways to maximise the marginal likelihood:

``method="fast"`` (Tipping & Faul 2003)
    Start from the bias alone and, at every step, add, re-estimate or delete the
    one basis function whose action raises the marginal likelihood most, using
    its sparsity and quality factors s_m and q_m. With the Laplace approximation
    at the mode, Q_m = φ_mᵀ(t − σ) and S_m = φ_mᵀBφ_m − φ_mᵀBΦ_A Σ Φ_AᵀBφ_m,
    so a step costs O(N² M) for M basis functions in the model, never more.
``method="em"`` (Tipping 2001)
    Start from all N + 1 basis functions and iterate MacKay's update
    α_m ← γ_m / μ_m² with γ_m = 1 − α_m Σ_mm, pruning α_m above 1e9. The first
    steps cost O(N³): suited to a few hundred training points.

Basis columns are scaled to unit length before fitting (as SparseBayes does);
the marginal likelihood is invariant to this, which only helps conditioning.
"""

from __future__ import annotations

import warnings
from numbers import Integral, Real
from typing import Any, ClassVar

import numpy as np
import scipy.linalg
from numpy.typing import ArrayLike, NDArray
from scipy.special import expit, log_expit
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils._param_validation import Interval, StrOptions
from threadpoolctl import threadpool_limits

from sparsify.core.classifier import validate_classification
from sparsify.core.estimator import KernelMachineMixin
from sparsify.kernels import RBF, Kernel, resolve_gamma

__all__ = ["RVMClassifier", "posterior_mode"]

Array = NDArray[np.float64]

#: EM prunes a basis function once its precision passes this (its weight is then ~0).
_ALPHA_MAX = 1e9
#: The fast method never adds a column this aligned (cosine) with one in the model:
#: a duplicate training point would only split a weight in two.
_ALIGN_MAX = 1.0 - 1e-3


def _neg_log_posterior(f: Array, t: Array, alpha: Array, w: Array) -> float:
    """−log p(t | w) + ½ Σ α_m w_m² for outputs f = Φw and 0/1 targets t."""
    return float(np.sum(np.logaddexp(0.0, f) - t * f) + 0.5 * alpha @ (w * w))


def _hessian_factor(Phi: Array, b: Array, alpha: Array) -> Array:
    """Lower Cholesky factor of H = Φᵀ diag(b) Φ + diag(α)."""
    H = (Phi.T * b) @ Phi
    H[np.diag_indices_from(H)] += alpha
    try:
        return np.linalg.cholesky(H)
    except np.linalg.LinAlgError:
        # α ≥ 1e-? keeps H positive definite in exact arithmetic; rounding can still bite
        jitter = 1e-10 * max(1.0, float(np.max(np.diag(H))))
        H[np.diag_indices_from(H)] += jitter
        return np.linalg.cholesky(H)


def posterior_mode(
    Phi: Array, t: Array, alpha: Array, w0: Array | None = None, max_steps: int = 50
) -> tuple[Array, Array, Array]:
    """Mode of the RVM's weight posterior by damped Newton steps (IRLS).

    Minimises E(w) = −Σ_i [t_i log σ_i + (1 − t_i) log(1 − σ_i)] + ½ Σ_m α_m w_m²
    with σ = σ(Φw); every step is a Newton step halved until E does not rise.

    Parameters
    ----------
    Phi : ndarray of shape (N, M)
        Design matrix of the basis functions in the model.
    t : ndarray of shape (N,)
        Targets in {0, 1}.
    alpha : ndarray of shape (M,)
        Prior precisions, all > 0.
    w0 : ndarray of shape (M,), optional
        Starting point (a warm start from the previous mode); zeros if None.
    max_steps : int, default=50
        Maximum Newton steps.

    Returns
    -------
    w : ndarray of shape (M,)
        The mode μ.
    L : ndarray of shape (M, M)
        Lower Cholesky factor of the Hessian H = ΦᵀBΦ + A at μ (Σ = H⁻¹).
    sigma : ndarray of shape (N,)
        σ(Φμ).

    Examples
    --------
    >>> import numpy as np
    >>> Phi = np.array([[1.0, -1.0], [1.0, 0.0], [1.0, 1.0], [1.0, 2.0]])
    >>> t = np.array([0.0, 0.0, 1.0, 1.0])
    >>> w, L, s = posterior_mode(Phi, t, np.array([1.0, 1.0]))
    >>> grad = Phi.T @ (t - s) - w          # zero at the mode
    >>> bool(np.abs(grad).max() < 1e-10)
    True
    """
    w = np.zeros(Phi.shape[1]) if w0 is None else np.array(w0, dtype=float)
    f = Phi @ w
    E = _neg_log_posterior(f, t, alpha, w)
    for _ in range(max_steps):
        sigma = expit(f)
        L = _hessian_factor(Phi, sigma * (1.0 - sigma), alpha)
        g = Phi.T @ (t - sigma) - alpha * w
        step = scipy.linalg.cho_solve((L, True), g)
        # the Newton decrement gᵀH⁻¹g is twice the predicted decrease of E
        if g @ step <= 1e-20 * max(1.0, abs(E)) or np.max(np.abs(g)) <= 1e-12:
            return w, L, sigma
        lr = 1.0
        while lr > 1e-12:
            w_new = w + lr * step
            f_new = Phi @ w_new
            E_new = _neg_log_posterior(f_new, t, alpha, w_new)
            if E_new <= E + 1e-13 * abs(E):
                break
            lr *= 0.5
        else:
            break
        w, f, E = w_new, f_new, E_new
    sigma = expit(f)
    return w, _hessian_factor(Phi, sigma * (1.0 - sigma), alpha), sigma


def _log_evidence(Phi: Array, t: Array, alpha: Array, w: Array, L: Array) -> float:
    """Laplace approximation of log p(t | α), up to a constant."""
    E = _neg_log_posterior(Phi @ w, t, alpha, w)
    return float(-E + 0.5 * np.sum(np.log(alpha)) - np.sum(np.log(np.diag(L))))


def _ell(alpha: Array, s: Array, q: Array) -> Array:
    """The part of the log marginal likelihood that depends on one α_m (s, q exclude m)."""
    return 0.5 * (np.log(alpha / (alpha + s)) + q * q / (alpha + s))


def _fit_fast(
    Phi: Array, t: Array, max_iter: int, tol: float
) -> tuple[NDArray[np.intp], Array, Array, int, bool]:
    """Tipping & Faul's sequential algorithm on unit-norm columns; column 0 is the bias.

    Returns the columns in the model, their α, a warm start for their mode (the
    caller recomputes the mode for the final α), the steps taken and convergence.
    """
    n_basis = Phi.shape[1]
    Phi2 = Phi * Phi
    # start from the bias alone, its weight fitted to slightly shrunk logit targets
    target = np.log((0.9 * (2 * t - 1) + 1) / (1 - 0.9 * (2 * t - 1)))
    mu0 = float(Phi[:, 0] @ target)
    active = [0]
    alpha = np.array([np.clip(1.0 / max(mu0 * mu0, 1e-12), 1e-3, 1e3)])
    w = np.zeros(1)
    in_model = np.zeros(n_basis, dtype=bool)
    in_model[0] = True
    blocked = np.zeros(n_basis, dtype=int)
    aligned = {0: np.flatnonzero(Phi.T @ Phi[:, 0] > _ALIGN_MAX)}
    blocked[aligned[0]] += 1
    converged = False
    n_iter = 0
    for n_iter in range(1, max_iter + 1):  # noqa: B007 (n_iter is returned)
        PhiA = Phi[:, active]
        w, L, sigma = posterior_mode(PhiA, t, alpha, w)
        b = sigma * (1.0 - sigma)
        # S and Q of every candidate at once: the O(N² M) heart of each step
        U = scipy.linalg.solve_triangular(L, (PhiA * b[:, None]).T @ Phi, lower=True)
        own = Phi2.T @ b
        S = own - np.einsum("ij,ij->j", U, U)
        Q = Phi.T @ (t - sigma)
        s, q = S.copy(), Q.copy()
        idx = np.asarray(active)
        denom = np.maximum(alpha - S[idx], 1e-12 * alpha)
        s[idx] = alpha * S[idx] / denom
        q[idx] = alpha * Q[idx] / denom
        s = np.maximum(s, 1e-300)
        theta = q * q - s
        new_alpha = np.where(theta > 0, s * s / np.where(theta > 0, theta, 1.0), np.inf)
        gain = np.full(n_basis, -np.inf)
        # a column the model already explains to rounding error (S ≈ 0) has no reliable s, q
        add = ~in_model & (theta > 0) & (blocked == 0) & (S > 1e-10 * own)
        gain[add] = 0.5 * ((q[add] ** 2 - s[add]) / s[add] + np.log(s[add] / q[add] ** 2))
        old = _ell(alpha, s[idx], q[idx])
        keep = theta[idx] > 0
        gain[idx[keep]] = _ell(new_alpha[idx[keep]], s[idx[keep]], q[idx[keep]]) - old[keep]
        if len(idx) > 1:  # never delete the last basis function
            gain[idx[~keep]] = -old[~keep]
        j = int(np.argmax(gain))
        if not gain[j] > 0:
            converged = True
            break
        if in_model[j] and theta[j] > 0:
            pos = active.index(j)
            change = abs(np.log(new_alpha[j] / alpha[pos]))
            if change < tol and np.all(keep):
                converged = True
                break
            alpha[pos] = new_alpha[j]
        elif in_model[j]:
            pos = active.index(j)
            del active[pos]
            alpha = np.delete(alpha, pos)
            w = np.delete(w, pos)
            in_model[j] = False
            blocked[aligned.pop(j)] -= 1
        else:
            active.append(j)
            alpha = np.append(alpha, new_alpha[j])
            w = np.append(w, 0.0)
            in_model[j] = True
            near = np.flatnonzero(Phi.T @ Phi[:, j] > _ALIGN_MAX)
            aligned[j] = near
            blocked[near] += 1
    return np.asarray(active), alpha, w, n_iter, converged


def _fit_em(
    Phi: Array, t: Array, max_iter: int, tol: float
) -> tuple[NDArray[np.intp], Array, Array, int, bool]:
    """MacKay's re-estimation α ← γ / μ² from all basis functions, pruning α > 1e9.

    Returns what `_fit_fast` returns.
    """
    n_basis = Phi.shape[1]
    active = np.arange(n_basis)
    alpha = np.ones(n_basis)
    w = np.zeros(n_basis)
    converged = False
    n_iter = 0
    for n_iter in range(1, max_iter + 1):  # noqa: B007 (n_iter is returned)
        w, L, _ = posterior_mode(Phi[:, active], t, alpha, w)
        Linv = scipy.linalg.solve_triangular(L, np.eye(len(active)), lower=True)
        gamma = np.clip(1.0 - alpha * np.einsum("ij,ij->j", Linv, Linv), 1e-12, 1.0)
        with np.errstate(divide="ignore"):
            new = gamma / (w * w)
        keep = new < _ALPHA_MAX
        if not keep.any():
            keep[np.argmin(new)] = True
            new[keep] = _ALPHA_MAX
        change = np.max(np.abs(np.log(new[keep] / alpha[keep])))
        active, alpha, w = active[keep], new[keep], w[keep]
        if change < tol and keep.all():
            converged = True
            break
    return active, alpha, w, n_iter, converged


class RVMClassifier(KernelMachineMixin, ClassifierMixin, BaseEstimator):
    """Relevance vector machine classifier: sparse Bayesian kernel logistic regression.

    A bias and one Gaussian kernel function per training point, each weight with
    its own prior precision α_m; maximising the Laplace-approximated marginal
    likelihood over α switches off all but a few basis functions (Tipping 2001).
    More than two classes are fitted one-vs-rest, each class with its own
    relevance vectors; prediction evaluates the kernel on their union.

    Parameters
    ----------
    kernel : "rbf" or Kernel, default="rbf"
        The Gaussian kernel exp(−γ‖x − x'‖²), or any `sparsify.Kernel`
        instance (then ``gamma`` is ignored).
    gamma : {"scale", "auto"} or float, default="scale"
        Width of the Gaussian kernel, as in `sklearn.svm.SVC`.
    method : {"fast", "em"}, default="fast"
        ``"fast"``: Tipping & Faul's sequential add / re-estimate / delete, from
        the bias alone (O(N² M) per step for M functions in the model);
        ``"em"``: MacKay's re-estimation from all N + 1 functions (O(N³) at first).
    max_iter : int, default=1000
        Maximum steps of the chosen method (per class for one-vs-rest).
    tol : float, default=1e-3
        Convergence: the change of log α below which a re-estimation counts as
        no change (for "fast", of the best step; for "em", of every α).

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    relevance_indices_ : ndarray of shape (n_relevance,)
        Indices of the relevance vectors in the training set (union over classes).
    relevance_vectors_ : ndarray of shape (n_relevance, n_features)
    n_relevance_ : int
        Number of relevance vectors: kernel evaluations per prediction.
    expansion_vectors_ : ndarray of shape (n_relevance, n_features)
        The relevance vectors (shared with `KernelMachineMixin`).
    expansion_coef_ : ndarray of shape (n_outputs, n_relevance)
        Posterior-mode weights μ (0 where a class does not use a vector);
        one output for two classes, else one per class.
    intercept_ : ndarray of shape (n_outputs,)
        Bias weight (0 where the bias was pruned).
    alpha_ : ndarray of shape (n_outputs, n_relevance)
        Prior precision of each weight (inf where pruned), on the scale of ``expansion_coef_``.
    intercept_alpha_ : ndarray of shape (n_outputs,)
        Prior precision of the bias (inf where pruned).
    log_evidence_ : ndarray of shape (n_outputs,)
        Laplace approximation of the log marginal likelihood, up to a constant.
    n_iter_ : ndarray of shape (n_outputs,)
        Steps taken per output.
    gamma_ : float or None
        The resolved ``gamma`` (None for a Kernel instance).
    kernel_ : Kernel

    Examples
    --------
    >>> from sparsify.datasets import load_banana
    >>> from sparsify.baselines.rvm import RVMClassifier
    >>> X, y, X_test, y_test = load_banana()
    >>> rvm = RVMClassifier(gamma=1.0).fit(X[:200], y[:200])
    >>> bool(rvm.n_relevance_ < 20), bool(rvm.score(X_test, y_test) > 0.85)
    (True, True)
    """

    _parameter_constraints: ClassVar[dict[str, list[Any]]] = {
        "kernel": [StrOptions({"rbf"}), Kernel],
        "gamma": [StrOptions({"scale", "auto"}), Interval(Real, 0.0, None, closed="neither")],
        "method": [StrOptions({"fast", "em"})],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0.0, None, closed="left")],
    }

    def __init__(
        self,
        kernel: str | Kernel = "rbf",
        *,
        gamma: float | str = "scale",
        method: str = "fast",
        max_iter: int = 1000,
        tol: float = 1e-3,
    ) -> None:
        self.kernel = kernel
        self.gamma = gamma
        self.method = method
        self.max_iter = max_iter
        self.tol = tol

    def fit(self, X: ArrayLike, y: ArrayLike) -> RVMClassifier:
        """Fit the relevance vector machine.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training inputs.
        y : array-like of shape (n_samples,)
            Class labels, of any type.

        Returns
        -------
        self
        """
        self._validate_params()
        X, codes = validate_classification(self, X, y)
        if isinstance(self.kernel, Kernel):
            self.gamma_ = None
            kernel = self.kernel
        else:
            self.gamma_ = resolve_gamma(self.gamma, X)
            kernel = RBF(self.gamma_)
        N = len(X)
        Phi = np.empty((N, N + 1))
        Phi[:, 0] = 1.0
        Phi[:, 1:] = kernel(X, X)
        scale = np.linalg.norm(Phi, axis=0)
        scale[scale == 0] = 1.0  # a kernel column can vanish (e.g. a zero input, linear kernel)
        Phi /= scale
        n_classes = len(self.classes_)
        targets = [codes == 1] if n_classes == 2 else [codes == k for k in range(n_classes)]
        solve = _fit_fast if self.method == "fast" else _fit_em
        fits = []
        # Hundreds of small products with thin (M-column) matrices: one BLAS thread is
        # as fast, and threaded BLAS oversubscribes a busy machine (docs/theory.md).
        with threadpool_limits(limits=1, user_api="blas"):
            for target in targets:
                t = target.astype(float)
                active, alpha, w, n_iter, converged = solve(Phi, t, self.max_iter, self.tol)
                if not converged:
                    warnings.warn(
                        f"RVMClassifier (method={self.method!r}) did not converge in "
                        f"max_iter={self.max_iter} steps; increase max_iter or tol.",
                        ConvergenceWarning, stacklevel=2)
                w_mode, L, _ = posterior_mode(Phi[:, active], t, alpha, w)
                fits.append((active, alpha, w_mode, n_iter,
                             _log_evidence(Phi[:, active], t, alpha, w_mode, L)))
        used = np.unique(np.concatenate([a[a > 0] for a, *_ in fits]))
        n_out = len(fits)
        coef = np.zeros((n_out, len(used)))
        alphas = np.full((n_out, len(used)), np.inf)
        intercept = np.zeros(n_out)
        intercept_alpha = np.full(n_out, np.inf)
        for k, (active, alpha, w, _, _) in enumerate(fits):
            # back to unscaled columns: weight w / scale, precision α · scale²
            orig_w, orig_alpha = w / scale[active], alpha * scale[active] ** 2
            pos = np.searchsorted(used, active[active > 0])
            coef[k, pos] = orig_w[active > 0]
            alphas[k, pos] = orig_alpha[active > 0]
            bias = active == 0
            if bias.any():
                intercept[k], intercept_alpha[k] = orig_w[bias][0], orig_alpha[bias][0]
        self.kernel_ = kernel
        self.relevance_indices_ = used - 1
        self.relevance_vectors_ = X[self.relevance_indices_].copy()
        self.n_relevance_ = len(used)
        self.expansion_vectors_ = self.relevance_vectors_
        self.expansion_coef_ = coef
        self.intercept_ = intercept
        self.alpha_ = alphas
        self.intercept_alpha_ = intercept_alpha
        self.log_evidence_ = np.array([f[4] for f in fits])
        self.n_iter_ = np.array([f[3] for f in fits])
        return self

    def predict_log_proba(self, X: ArrayLike) -> Array:
        """Log class probabilities, shape (n_samples, n_classes), in ``classes_`` order.

        Two classes: log σ(∓τ). More: the one-vs-rest log σ(τ_k), normalised over k.
        """
        scores = self.decision_function(X)
        if scores.ndim == 1:
            return np.column_stack([log_expit(-scores), log_expit(scores)])
        log_p = log_expit(scores)
        return log_p - scipy.special.logsumexp(log_p, axis=1, keepdims=True)

    def predict_proba(self, X: ArrayLike) -> Array:
        """Class probabilities, shape (n_samples, n_classes); rows sum to 1.

        Two classes: σ(τ) for ``classes_[1]`` (the posterior mode, not the
        moderated output). More: one-vs-rest σ(τ_k), normalised over k.
        """
        return np.exp(self.predict_log_proba(X))
