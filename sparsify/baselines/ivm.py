"""Import vector machine (Zhu & Hastie 2005): greedy forward selection for kernel LR.

After Zhu & Hastie, "Kernel Logistic Regression and the Import Vector Machine". The
model is f(x) = b + Σ_{s∈S} a_s k(x, x_s) over a growing set S of import
points taken from the training set, fitted to the KLR objective
H = (1/N) Σ_i loss_i + (λ/2) Σ_k a_kᵀ K_q a_k (Zhu & Hastie, eq. 3). Each round
scores every candidate (or a random subset) by the loss after one Newton step
with the candidate added (K_a = [1, K(X, S ∪ {x_l})], K_q = K(S ∪ {x_l}, ·)),
adds the best, then takes a few damped Newton steps on the enlarged set. It
stops when |H_k − H_{k−1}| / H_k < η or at ``max_import_points``.

Candidates are scored together (one bordered Newton system per class, solved for
all of them through a Schur complement), so a round costs O(N·q·m·K) for q
import points and m candidates; on large data ``n_candidates`` bounds m.

Multi-class data use the softmax loss with one output per class; the Newton
step is then taken per class (the block-diagonal part of the Hessian, each
block (1/N) K_aᵀ W_k K_a + λ K_q with W_k = diag(p_k (1 − p_k))), with a
backtracking line search so that H never increases.
"""

from __future__ import annotations

from numbers import Integral, Real
from typing import Any, ClassVar

import numpy as np
import scipy.linalg
from numpy.typing import ArrayLike, NDArray
from scipy.special import expit, softmax
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions

from sparsify.algorithms.klr.estimator import LogisticMixin
from sparsify.core.classifier import validate_classification
from sparsify.kernels import Kernel, make_kernel

__all__ = ["ImportVectorMachine"]

Array = NDArray[np.float64]


def _mean_loss(F: Array, T: Array) -> Array:
    """Mean log-loss over axis 0 of outputs F (N, ..., K) with targets T (N, K).

    One output column is the binary logistic loss with T ∈ {0, 1}; several are
    the softmax cross-entropy with one-hot T. The log-sum-exp is written out:
    scipy's generic one is several times slower on the (N, candidates, K)
    arrays of the candidate scoring, which dominate the fit.
    """
    if F.shape[-1] == 1:
        f = F[..., 0]
        t = T[:, 0].reshape((-1,) + (1,) * (f.ndim - 1))
        return np.mean(np.logaddexp(0.0, f) - t * f, axis=0)
    t = T.reshape((T.shape[0],) + (1,) * (F.ndim - 2) + (T.shape[1],))
    top = F.max(axis=-1, keepdims=True)
    lse = np.log(np.sum(np.exp(F - top), axis=-1)) + top[..., 0]
    return np.mean(lse - np.sum(t * F, axis=-1), axis=0)


def _candidate_loss(outs: Array, T: Array) -> Array:
    """Mean log-loss per candidate of outputs ``outs`` (K, N, m), targets T (N, K).

    ``outs`` is overwritten (the largest array of a fit: no copy).
    """
    if len(outs) == 1:
        return np.mean(np.logaddexp(0.0, outs[0]) - T[:, :1] * outs[0], axis=0)
    true = outs[T.argmax(1), np.arange(outs.shape[1]), :]  # output of the true class, (N, m)
    top = outs.max(axis=0)
    outs -= top
    np.exp(outs, out=outs)
    lse = np.log(outs.sum(axis=0)) + top
    return np.mean(lse - true, axis=0)


def _probs(F: Array) -> Array:
    return expit(F) if F.shape[1] == 1 else softmax(F, axis=1)


class ImportVectorMachine(LogisticMixin, ClassifierMixin, BaseEstimator):
    """Import vector machine: kernel logistic regression on greedily chosen training points.

    Parameters
    ----------
    lam : float, default=1e-3
        Regularisation λ > 0 of (λ/2)‖w‖² in the mean log-loss objective H
        (the same objective as `SparseKernelLogisticRegression`).
    kernel : str or Kernel, default="rbf"
        "rbf", "poly", "linear", names joined by "+", or a `sparsify.Kernel`.
    gamma : {"scale", "auto"} or float, default="scale"
        Kernel coefficient for "rbf" and "poly".
    degree : int, default=3
        Degree of "poly".
    coef0 : float, default=0.0
        Constant of "poly".
    max_import_points : int, default=50
        Largest number of import points.
    eta : float, default=1e-3
        Stop when the relative change of H in a round, |H_k − H_{k−1}| / H_k, is below η.
    n_candidates : int or None, default=None
        Score this many random candidates per round (all remaining points if None).
    n_newton : int, default=5
        Damped Newton steps on the enlarged set after each addition.
    refine : bool, default=False
        After the selection, use the import points as initial XVs of
        `SparseKernelLogisticRegression` and move them by L-BFGS (the
        direct sparse method); prediction then uses the refined machine.
    refine_max_iter : int, default=50
        L-BFGS iterations of the refinement.
    solver : str, default="auto"
        Solver of the refinement's fixed-Z problems: "auto" takes the KLR
        formulation's exact Newton fast path, "clarabel" or "ecos" the generic
        path.
    random_state : int, RandomState instance or None, default=None
        Seed of the candidate subsets.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    import_vectors_ : ndarray of shape (n_import, n_features)
        The selected training points, in order of selection.
    import_indices_ : ndarray of shape (n_import,)
        Their indices in the training set.
    expansion_vectors_ : ndarray of shape (n_import, n_features)
        Points of the final expansion (the import vectors, or the refined XVs).
    expansion_coef_ : ndarray of shape (n_outputs, n_import)
    intercept_ : ndarray of shape (n_outputs,)
    loss_history_ : ndarray of shape (n_import + 1,)
        H with no import point (bias only) and after each round.
    n_import_ : int
    refined_ : SparseKernelLogisticRegression or None
    kernel_ : Kernel

    Examples
    --------
    >>> from sklearn.datasets import make_moons
    >>> from sparsify.baselines.ivm import ImportVectorMachine
    >>> X, y = make_moons(100, noise=0.1, random_state=0)
    >>> ivm = ImportVectorMachine(lam=1e-3, gamma=2.0, max_import_points=8).fit(X, y)
    >>> ivm.import_vectors_.shape
    (8, 2)
    >>> bool(ivm.score(X, y) > 0.9)
    True
    """

    _parameter_constraints: ClassVar[dict[str, list[Any]]] = {
        "lam": [Interval(Real, 0.0, None, closed="neither")],
        "kernel": [str, Kernel],
        "gamma": [StrOptions({"scale", "auto"}), Interval(Real, 0.0, None, closed="neither")],
        "degree": [Interval(Integral, 1, None, closed="left")],
        "coef0": [Real],
        "max_import_points": [Interval(Integral, 1, None, closed="left")],
        "eta": [Interval(Real, 0.0, None, closed="left")],
        "n_candidates": [Interval(Integral, 1, None, closed="left"), None],
        "n_newton": [Interval(Integral, 0, None, closed="left")],
        "refine": ["boolean"],
        "refine_max_iter": [Interval(Integral, 0, None, closed="left")],
        "solver": [str],
        "random_state": ["random_state"],
    }

    def __init__(
        self,
        lam: float = 1e-3,
        *,
        kernel: str | Kernel = "rbf",
        gamma: float | str = "scale",
        degree: int = 3,
        coef0: float = 0.0,
        max_import_points: int = 50,
        eta: float = 1e-3,
        n_candidates: int | None = None,
        n_newton: int = 5,
        refine: bool = False,
        refine_max_iter: int = 50,
        solver: str = "auto",
        random_state: int | np.random.RandomState | None = None,
    ) -> None:
        self.lam = lam
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.max_import_points = max_import_points
        self.eta = eta
        self.n_candidates = n_candidates
        self.n_newton = n_newton
        self.refine = refine
        self.refine_max_iter = refine_max_iter
        self.solver = solver
        self.random_state = random_state

    # -- objective pieces -----------------------------------------------------------------------

    def _H(self, A: Array, D: Array, Kq: Array, T: Array) -> float:
        pen = sum(float(A[1:, k] @ Kq @ A[1:, k]) for k in range(A.shape[1]))
        return float(_mean_loss(D @ A, T)) + 0.5 * self.lam * pen

    def _newton(self, A: Array, D: Array, Kq: Array, T: Array, H: float) -> tuple[Array, float]:
        """Damped (block-)Newton steps on fixed import points; H never increases."""
        N = len(D)
        P = np.zeros((len(A), len(A)))
        P[1:, 1:] = Kq
        for _ in range(self.n_newton):
            prob = _probs(D @ A)
            step = np.empty_like(A)
            for k in range(A.shape[1]):
                w = prob[:, k] * (1 - prob[:, k])
                Ds = D * np.sqrt(w)[:, None]
                M = Ds.T @ Ds / N + self.lam * P  # AᵀA: one symmetric rank-k update
                g = D.T @ (prob[:, k] - T[:, k]) / N + self.lam * P @ A[:, k]
                step[:, k] = scipy.linalg.lstsq(M, g)[0]
            t = 1.0
            while t > 1e-6:
                A_try = A - t * step
                H_try = self._H(A_try, D, Kq, T)
                if H_try <= H:
                    break
                t /= 2
            else:
                break
            done = H - H_try <= 1e-12 * abs(H)
            A, H = A_try, H_try
            if done:
                break
        return A, H

    def _score_candidates(
        self, A: Array, D: Array, KS: Array, Kc: Array, KSc: Array, kcc: Array, T: Array
    ) -> tuple[Array, Array]:
        """One Newton step (Zhu & Hastie, eq. 3) per added candidate; return H and coefficients.

        The bordered system [[M, c], [cᵀ, δ]] is solved for all candidates at
        once through the Schur complement of the common block M.
        """
        N, m = Kc.shape
        q1 = D.shape[1]
        n_out = A.shape[1]
        F = D @ A
        prob = _probs(F)
        Knew = np.empty((q1 + 1, m, n_out))
        # outputs per candidate, one contiguous (N, m) slab per class: the loss below
        # then works in place on them, the largest arrays of the fit
        outputs = np.empty((n_out, N, m))
        pen = np.zeros(m)
        cross = np.vstack([np.zeros((1, m)), KSc])
        Kc2 = Kc**2
        for k in range(n_out):
            w = prob[:, k] * (1 - prob[:, k])
            z = w * F[:, k] + T[:, k] - prob[:, k]
            Dw = D * w[:, None]
            Ds = D * np.sqrt(w)[:, None]
            M = Ds.T @ Ds / N
            M[1:, 1:] += self.lam * KS
            C = Dw.T @ Kc / N + self.lam * cross
            delta = (w @ Kc2) / N + self.lam * kcc
            lu = scipy.linalg.lu_factor(M + 1e-12 * np.trace(M) * np.eye(q1))
            x0 = scipy.linalg.lu_solve(lu, D.T @ z / N)
            V = scipy.linalg.lu_solve(lu, C)
            schur = delta - np.sum(C * V, axis=0)
            schur = np.where(schur > 1e-12 * delta, schur, np.nan)  # duplicate of an import point
            t = (Kc.T @ z / N - C.T @ x0) / schur
            coef = x0[:, None] - V * t
            Knew[:q1, :, k], Knew[q1, :, k] = coef, t
            np.matmul(D, coef, out=outputs[k])
            outputs[k] += Kc * t
            a = coef[1:]
            pen += np.sum(a * (KS @ a), axis=0) + 2 * t * np.sum(a * KSc, axis=0) + t**2 * kcc
        H = _candidate_loss(outputs, T) + 0.5 * self.lam * pen
        return np.where(np.isnan(H), np.inf, H), Knew

    # -- scikit-learn API -----------------------------------------------------------------------

    def fit(self, X: ArrayLike, y: ArrayLike) -> ImportVectorMachine:
        """Select import points greedily and fit the KLR on them.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)

        Returns
        -------
        self
        """
        self._validate_params()
        X, codes = validate_classification(self, X, y)
        n_classes = len(self.classes_)
        T = codes[:, None].astype(float) if n_classes == 2 else np.eye(n_classes)[codes]
        kernel = make_kernel(self.kernel, X, self.gamma, self.degree, self.coef0)
        rng = check_random_state(self.random_state)
        N = len(X)
        # candidates: one index per distinct point (duplicates would make K_q singular)
        _, first = np.unique(X, axis=0, return_index=True)
        remaining = np.sort(first)
        kdiag = kernel.diag(X)
        # start from the best bias-only model
        freq = T.mean(0)
        A = (np.log(freq / (1 - freq)) if n_classes == 2 else np.log(freq) - np.log(freq).mean())
        A = np.asarray(A, dtype=float)[None, :]
        D = np.ones((N, 1))
        S: list[int] = []
        KS = np.zeros((0, 0))
        H = self._H(A, D, KS, T)
        history = [H]
        while len(S) < self.max_import_points and len(remaining):
            cand = remaining
            if self.n_candidates is not None and self.n_candidates < len(remaining):
                cand = np.sort(rng.choice(remaining, self.n_candidates, replace=False))
            Kc = kernel(X, X[cand])
            KSc = Kc[S]
            H_cand, coefs = self._score_candidates(A, D, KS, Kc, KSc, kdiag[cand], T)
            best = int(np.argmin(H_cand))
            if not np.isfinite(H_cand[best]):
                break
            S.append(int(cand[best]))
            remaining = remaining[remaining != cand[best]]
            D = np.column_stack([D, Kc[:, best]])
            KS = D[S, 1:]
            KS = 0.5 * (KS + KS.T)
            A, H_new = self._newton(coefs[:, best, :], D, KS, T, self._H(coefs[:, best, :], D,
                                                                         KS, T))
            history.append(H_new)
            converged = abs(H_new - H) / abs(H_new) < self.eta
            H = H_new
            if converged:
                break
        self.kernel_ = kernel
        self.import_indices_ = np.asarray(S, dtype=int)
        self.import_vectors_ = X[S].copy()
        self.n_import_ = len(S)
        self.loss_history_ = np.asarray(history)
        self.expansion_vectors_ = self.import_vectors_
        self.expansion_coef_ = A[1:].T.copy()
        self.intercept_ = A[0].copy()
        self.refined_ = None
        if self.refine and S:
            from sparsify.algorithms.klr.estimator import SparseKernelLogisticRegression

            target = y
            self.refined_ = SparseKernelLogisticRegression(
                lam=self.lam, kernel=kernel, init=self.import_vectors_,
                max_iter=self.refine_max_iter, solver=self.solver,
            ).fit(X, target)
            self.expansion_vectors_ = self.refined_.expansion_vectors_
            self.expansion_coef_ = self.refined_.expansion_coef_
            self.intercept_ = self.refined_.intercept_
        return self
