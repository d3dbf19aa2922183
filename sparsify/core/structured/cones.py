"""Symmetric cones for the structured interior point: the orthant and second-order cones.

The interior point (`sparsify.core.structured.ipm`) works in Nesterov-Todd (NT)
scaled coordinates (Vandenberghe, "The CVXOPT linear and quadratic cone program
solvers", 2010, §4-5): for slacks s and multipliers z in the interior of the cone
there is a W with W z = W⁻ᵀ s = λ, the scaling point. Per cone:

- nonnegative orthant: W = diag(√(s/z)), λ = √(s z);
- second-order cone {(x₀, x₁): x₀ ≥ ‖x₁‖}: W = β (2 v vᵀ − J), with J = diag(1, −1, …),
  vᵀJv = 1 and β = (sᵀJs / zᵀJz)^¼; W is symmetric and W⁻¹ = (2 J v vᵀ J − J) / β.

Every operation is vectorised over the cones: the orthant's rows at once, the
second-order cones grouped by size (one (count, size) array per size), so a
problem with a million points costs a few numpy calls per operation.

Examples
--------
>>> import numpy as np
>>> cones = Cones(nonneg=2, soc=(3,))
>>> s = np.array([1.0, 2.0, 2.0, 0.5, 0.5]); z = np.array([4.0, 1.0, 3.0, -1.0, 1.0])
>>> W = cones.scaling(s, z)
>>> bool(np.allclose(W.apply(z), W.apply_inverse(s)))  # W z = W⁻¹ s = λ
True
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

__all__ = ["Cones", "Scaling"]

Array = NDArray[np.float64]


class Cones:
    """The cone rows of a problem: ``nonneg`` orthant rows, then second-order cones ``soc``.

    Parameters
    ----------
    nonneg : int
        Rows of the nonnegative orthant (they come first).
    soc : sequence of int
        Sizes of the second-order cones, in row order after the orthant.

    Attributes
    ----------
    size : int
        Rows in all.
    degree : int
        The barrier's degree: one per orthant row and per second-order cone (the
        complementarity μ = sᵀz / degree).
    groups : list of (int, ndarray)
        For each second-order cone size, the size and the (count, size) array of
        the cones' row indices.
    """

    def __init__(self, nonneg: int, soc: tuple[int, ...] | list[int] = ()) -> None:
        self.nonneg = int(nonneg)
        self.soc = tuple(int(q) for q in soc)
        if any(q < 1 for q in self.soc):
            raise ValueError(f"Second-order cones need at least one row; got sizes {self.soc}.")
        starts = self.nonneg + np.concatenate([[0], np.cumsum(self.soc)[:-1]]).astype(int)
        self.size = self.nonneg + sum(self.soc)
        self.degree = self.nonneg + len(self.soc)
        self.starts = starts if self.soc else np.zeros(0, int)
        self.groups: list[tuple[int, NDArray[np.intp]]] = []
        #: for each group, the cones' positions in ``soc``
        self.group_cones: list[NDArray[np.intp]] = []
        sizes = np.asarray(self.soc, dtype=int)
        for q in np.unique(sizes):
            which = np.flatnonzero(sizes == q)
            self.groups.append((int(q), self.starts[which][:, None] + np.arange(q)))
            self.group_cones.append(which)
        #: the head (x₀) row of each cone, by group, for the identity element
        self._heads = (np.concatenate([rows[:, 0] for _, rows in self.groups])
                       if self.groups else np.zeros(0, int))

    def identity(self) -> Array:
        """The cone's identity element e: ones on the orthant, (1, 0, …, 0) per cone."""
        e = np.zeros(self.size)
        e[:self.nonneg] = 1.0
        e[self._heads] = 1.0
        return e

    def min_eigenvalue(self, x: Array) -> float:
        """The smallest eigenvalue of ``x``: min over x_i (orthant) and x₀ − ‖x₁‖ (cones)."""
        low = np.inf
        if self.nonneg:
            low = float(x[:self.nonneg].min())
        for _, rows in self.groups:
            block = x[rows]
            low = min(low, float((block[:, 0] - np.linalg.norm(block[:, 1:], axis=1)).min()))
        return low

    def jordan(self, x: Array, y: Array) -> Array:
        """The Jordan product x ∘ y: x_i y_i (orthant), (xᵀy, x₀ y₁ + y₀ x₁) (cones)."""
        out = np.empty(self.size)
        np.multiply(x[:self.nonneg], y[:self.nonneg], out=out[:self.nonneg])
        for _, rows in self.groups:
            a, b = x[rows], y[rows]
            out[rows[:, 0]] = (a * b).sum(1)
            out[rows[:, 1:]] = a[:, :1] * b[:, 1:] + b[:, :1] * a[:, 1:]
        return out

    def jordan_divide(self, lam: Array, r: Array) -> Array:
        """The d with λ ∘ d = r (λ in the cone's interior)."""
        out = np.empty(self.size)
        np.divide(r[:self.nonneg], lam[:self.nonneg], out=out[:self.nonneg])
        for _, rows in self.groups:
            a, b = lam[rows], r[rows]
            a0, a1, b0, b1 = a[:, 0], a[:, 1:], b[:, 0], b[:, 1:]
            det = a0 * a0 - (a1 * a1).sum(1)
            d0 = (a0 * b0 - (a1 * b1).sum(1)) / det
            out[rows[:, 0]] = d0
            out[rows[:, 1:]] = (b1 - d0[:, None] * a1) / a0[:, None]
        return out

    def max_step(self, lam: Array, d: Array) -> float:
        """The largest α with λ + α d in the cone, for the NT point λ (inf where any α is).

        Each cone is mapped so that λ becomes e (a Lorentz boost for a
        second-order cone); there e + α d̂ stays in the cone while
        1 + α·λ_min(d̂) ≥ 0, which avoids the cancellation of the direct
        quadratic near the boundary.
        """
        worst = 0.0  # the most negative min-eigenvalue of the scaled direction
        if self.nonneg:
            worst = max(worst, -float((d[:self.nonneg] / lam[:self.nonneg]).min()))
        for _, rows in self.groups:
            a, b = lam[rows], d[rows]
            root = np.sqrt(a[:, 0] ** 2 - (a[:, 1:] ** 2).sum(1))
            L0, L1 = a[:, 0] / root, a[:, 1:] / root[:, None]
            b0, b1 = b[:, 0], b[:, 1:]
            l1b1 = (L1 * b1).sum(1)
            h0 = (L0 * b0 - l1b1) / root
            h1 = (-L1 * b0[:, None] + b1 + L1 * (l1b1 / (1 + L0))[:, None]) / root[:, None]
            worst = max(worst, float((np.linalg.norm(h1, axis=1) - h0).max()))
        return np.inf if worst <= 0 else 1.0 / worst

    def scaling(self, s: Array, z: Array) -> Scaling:
        """The NT scaling W at slacks ``s`` and multipliers ``z`` (both in the interior)."""
        w = np.sqrt(s[:self.nonneg] / z[:self.nonneg])
        lam = np.empty(self.size)
        lam[:self.nonneg] = np.sqrt(s[:self.nonneg] * z[:self.nonneg])
        socs = []
        for _, rows in self.groups:
            a, b = s[rows], z[rows]
            sjs = a[:, 0] ** 2 - (a[:, 1:] ** 2).sum(1)
            zjz = b[:, 0] ** 2 - (b[:, 1:] ** 2).sum(1)
            sbar = a / np.sqrt(sjs)[:, None]
            zbar = b / np.sqrt(zjz)[:, None]
            gamma = np.sqrt((1 + (sbar * zbar).sum(1)) / 2)
            wbar = sbar.copy()
            wbar[:, 0] += zbar[:, 0]
            wbar[:, 1:] -= zbar[:, 1:]
            wbar /= (2 * gamma)[:, None]
            v = wbar.copy()
            v[:, 0] += 1
            v /= np.sqrt(2 * (wbar[:, 0] + 1))[:, None]
            beta = (sjs / zjz) ** 0.25
            socs.append((rows, beta, v))
        scaling = Scaling(self, w, socs, lam)
        if socs:
            lam[self.nonneg:] = scaling.apply(z)[self.nonneg:]
        return scaling


@dataclass
class Scaling:
    """An NT scaling W (symmetric) and its scaling point λ = W z = W⁻¹ s.

    Attributes
    ----------
    cones : Cones
    w : ndarray
        The orthant's diagonal √(s/z).
    socs : list of (rows, beta, v)
        Per second-order cone group: row indices (count, size), β (count,) and v (count, size).
    lam : ndarray
        The scaling point λ.
    """

    cones: Cones
    w: Array
    socs: list[tuple[NDArray[np.intp], Array, Array]]
    lam: Array

    def apply(self, x: Array, inverse: bool = False) -> Array:
        """W x (or W⁻¹ x with ``inverse``)."""
        n = self.cones.nonneg
        out = np.empty_like(x)
        (np.divide if inverse else np.multiply)(x[:n], self.w, out=out[:n])
        for rows, beta, v in self.socs:
            xb = x[rows]
            if inverse:  # (2 J v vᵀ J − J) x / β
                jv = v.copy()
                jv[:, 1:] *= -1
                y = 2 * jv * (jv * xb).sum(1)[:, None]
                y[:, 0] -= xb[:, 0]
                y[:, 1:] += xb[:, 1:]
                out[rows] = y / beta[:, None]
            else:  # β (2 v vᵀ − J) x
                y = 2 * v * (v * xb).sum(1)[:, None]
                y[:, 0] -= xb[:, 0]
                y[:, 1:] += xb[:, 1:]
                out[rows] = y * beta[:, None]
        return out

    def apply_inverse(self, x: Array) -> Array:
        """W⁻¹ x."""
        return self.apply(x, inverse=True)

    def squared(self, x: Array) -> Array:
        """WᵀW x = W² x."""
        if not self.socs:  # the orthant alone: one pass
            return x * (self.w * self.w)
        return self.apply(self.apply(x))

    def soc_blocks(self) -> list[tuple[NDArray[np.intp], Array]]:
        """W² of each second-order cone as dense blocks: (rows (count, q), blocks (count, q, q))."""
        out = []
        for rows, beta, v in self.socs:
            q = rows.shape[1]
            jv = v.copy()
            jv[:, 1:] *= -1
            vv = (v * v).sum(1)
            # (2vvᵀ − J)² = I + 4 (vᵀv) v vᵀ − 2 (v (Jv)ᵀ + (Jv) vᵀ)
            block = (4 * vv[:, None, None] * v[:, :, None] * v[:, None, :]
                     - 2 * (v[:, :, None] * jv[:, None, :] + jv[:, :, None] * v[:, None, :]))
            block += np.eye(q)
            out.append((rows, block * (beta ** 2)[:, None, None]))
        return out

    def soc_low_rank(self) -> list[tuple[NDArray[np.intp], Array, Array, Array]]:
        """W² = β² (I + a aᵀ − c cᵀ) per second-order cone: (rows, β, a, c), a and c of (count, q).

        The rank-two part lies in span{v, Jv}; with V = [v, Jv] it is V M Vᵀ,
        M = [[4 vᵀv, −2], [−2, 0]], whose eigenvalues have opposite signs
        (det M = −4): a and c are V times its eigenvectors, scaled.
        """
        out = []
        for rows, beta, v in self.socs:
            jv = v.copy()
            jv[:, 1:] *= -1
            p = 4 * (v * v).sum(1)
            root = np.sqrt(p * p + 16)
            mu_plus, mu_minus = (p + root) / 2, (p - root) / 2  # M's eigenvalues
            a = _along(v, jv, p, mu_plus) * np.sqrt(mu_plus)[:, None]
            c = _along(v, jv, p, mu_minus) * np.sqrt(-mu_minus)[:, None]
            out.append((rows, beta, a, c))
        return out


def _along(v: Array, jv: Array, p: Array, mu: Array) -> Array:
    """V e for M's unit eigenvector e = (−2, μ − p)/‖·‖ of eigenvalue μ (`soc_low_rank`)."""
    e0, e1 = -2 * np.ones_like(mu), mu - p
    norm = np.hypot(e0, e1)
    out: Array = (e0 / norm)[:, None] * v + (e1 / norm)[:, None] * jv
    return out
