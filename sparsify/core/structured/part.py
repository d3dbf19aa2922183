"""A part of a linked problem: its iterate and the interior point's vector work on it.

The interior point (`sparsify.core.structured.ipm.interior_point`) holds numbers only;
every vector lives in a `Part`, which does the work on it: the residuals, the
right-hand sides of the KKT solves (reduced to the Schur unknowns by
`sparsify.core.structured.kkt.KKTFactor.reduce`), each solution recovered from the
Schur unknowns (`KKTFactor.expand`), the search directions' step bounds and the
moves. A whole problem in memory is one part that owns its Schur unknowns and
factors their Schur complement itself (`Part` with ``decompose``): it is the
interior point's `KKTSystem` as it stands. A problem split by row blocks
(`sparsify.core.structured.parts`) has one part per row block, whose Schur
unknowns' rows hold *shares* of sums (``shared``), and a global part that adds
those shares to its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import scipy.linalg
from numpy.typing import NDArray

from sparsify.core.structured.cones import Scaling
from sparsify.core.structured.kkt import PhiMap

__all__ = ["Iterate", "Measured", "Part"]

Array = NDArray[np.float64]
Rhs = tuple[Array, Array, Array]


@dataclass
class Iterate:
    """A primal-dual point: x, the link's dual ν, the own rows' duals y and the cone slacks s."""

    x: Array
    nu: Array
    y: Array
    s: Array


class Measured(NamedTuple):
    """What the stopping rule needs of an iterate (`Part.measure`).

    Sums over parts: the costs and sᵀz; maxima: the residuals' and the iterate's
    norms. ``shares`` are a shared part's residual entries on the Schur unknowns'
    rows, for the part that owns them to add (None where the part owns them).
    """

    pcost: float
    dcost: float
    dual_residual: float
    primal_residual: float
    norm_x: float
    norm_s: float
    norm_y: float
    sz: float
    shares: Array | None = None


class Part:
    """One part of a linked problem (module docstring): its data, iterate and solves.

    Parameters
    ----------
    st : KKTStructure
        The part's structure (or one with its attributes, as the global part of a
        split problem: P, A, AT, F, U, glob, schur_rows, zero, cones, layout and
        ``factor``).
    c, b : ndarray
        The part's objective's linear term and its rows' right-hand side.
    shared : bool, default=False
        Whether its Schur unknowns' rows hold shares of sums that another part
        owns (a row block's part): its residuals, right-hand sides and norms then
        leave those rows out, and its copies of the Schur unknowns are set from
        the owner's at each `measure`.
    decompose : bool, default=False
        Factor its own Schur complement (a whole problem), for `schur_solve`.

    Examples
    --------
    A whole problem is one part; `sparsify.core.structured.ipm.solve` runs the
    interior point on it (its example).
    """

    p: Iterate  # the current iterate
    best: Iterate  # the best one so far (`keep`)
    W: Scaling | None  # the NT scaling at the iterate
    kkt: Any  # the KKT factorisation (`KKTFactor`) at the iterate
    _residual: Rhs  # the iterate's residuals (x, link, rows)
    _full_rhs: Rhs  # a solve's right-hand side, _rhs as reduced (a shared part's own rows)
    _rhs: Rhs
    _sol: Rhs  # its solution (x, ν, y), the best one and the residual of the current one
    _best_sol: Rhs
    _res: Rhs
    _wq: Array  # W q of the direction's complementarity (`direction_rhs`)
    _scaled: tuple[Array, Array]  # the predictor's W⁻¹Δs and WΔz
    _direction: tuple[Array, Array, Array, Array]  # the step's (Δx, Δν, Δy, Δs)

    def __init__(self, st: Any, c: Array, b: Array, shared: bool = False,
                 decompose: bool = False) -> None:
        self.st, self.c, self.b = st, c, b
        self.shared, self.decompose = shared, decompose
        self.cones, self.zero = st.cones, st.zero
        self.G = np.concatenate([st.U, st.glob])  # the Schur unknowns among the columns
        self.R0 = st.schur_rows
        if shared:  # the rows a shared part's norms take: its own
            self.x_own = np.ones(st.n, bool)
            self.x_own[self.G] = False
            self.row_own = np.ones(st.m, bool)
            self.row_own[self.R0] = False
        self.norm_b = _norm_inf(b)
        self.norm_c = _norm_inf(c)
        self.Phi: Array | None = None
        self.W = None

    def set_phi(self, Phi: Array) -> None:
        """Use the part's whitened rows Φ (its points' rows of K_XZ T) from now on."""
        self.Phi = Phi
        self.phi = PhiMap(Phi, self.st.layout.K)

    def describe(self) -> tuple[float, float, int]:
        """The largest |b| and |c| of the part's data and its cones' degree."""
        return self.norm_b, self.norm_c, self.cones.degree

    # -- the KKT solves -----------------------------------------------------------------------

    def factor(self, scaled: bool) -> Array:
        """Factor the KKT matrix at the NT scaling of the iterate (``scaled``) or at W = I
        (the start); its Schur complement (a shared part's share of it)."""
        if scaled:
            self.W = self.cones.scaling(self.p.s, self.p.y[self.zero:])
        assert self.Phi is not None, "set_phi first"
        self.kkt = self.st.factor(self.Phi, self.W if scaled else None,
                                  decompose=self.decompose)
        S: Array = self.kkt.S
        return S

    def schur_solve(self, rhs: Array) -> Array:
        """The Schur unknowns from their right-hand side (a part that decomposes)."""
        xs: Array = scipy.linalg.lu_solve(self.kkt.lu[:2], rhs, check_finite=False)
        return xs

    def start_rhs(self) -> tuple[Array, float]:
        """The starting point's right-hand side (−c, 0, b), reduced (`_reduce`)."""
        self._full_rhs = (-self.c, np.zeros(len(self.st.F)), self.b.copy())
        return self._reduce(self._full_rhs)

    def direction_rhs(self, sigma_mu: float | None) -> tuple[Array, float]:
        """A search direction's right-hand side at the iterate's residuals, reduced.

        With λ ∘ (WΔz + W⁻¹Δs) = λ ∘ q: the predictor's q = −λ (``sigma_mu`` None), the
        corrector's λ ∘ q = −λ ∘ λ + σμ e − (W⁻¹Δs_a) ∘ (WΔz_a), with the predictor's
        direction. On the cone rows the KKT system has −W², and Δs = W q − W² Δz
        (`bounds`).
        """
        W, cones = self.W, self.cones
        assert W is not None
        lam = W.lam
        if sigma_mu is None:
            q = -lam
        else:
            ds_t, dz_t = self._scaled
            q = cones.jordan_divide(lam, -cones.jordan(lam, lam) + sigma_mu * cones.identity()
                                    - cones.jordan(ds_t, dz_t))
        r_x, r_link, r_rows = self._residual
        self._wq = W.apply(q)
        rows = -r_rows
        rows[self.zero:] -= self._wq
        self._full_rhs = (-r_x, -r_link, rows)
        return self._reduce(self._full_rhs)

    def _reduce(self, rhs: Rhs) -> tuple[Array, float]:
        """The Schur complement's right-hand side for ``rhs`` (a shared part's share: its
        Schur unknowns' rows left to the owner) and the size of ``rhs``."""
        if self.shared:
            r_x, r_link, r_rows = (np.array(r) for r in rhs)
            r_x[self.G] = 0.0
            r_rows[self.R0] = 0.0
            rhs = (r_x, r_link, r_rows)
        self._rhs = rhs
        return self.kkt.reduce(*rhs), self._size(rhs)

    def expand(self, xs: Array, residual: bool = False, add: bool = False,
               extra: Array | None = None) -> tuple[float, Array | None] | None:
        """The solution from the Schur unknowns ``xs`` of the last reduced right-hand side
        (added to the current one with ``add``: a refinement's correction).

        With ``residual``: the size of the solution's residual against the
        unregularised matrix, and a shared part's share of its product on the Schur
        unknowns' rows (the owner subtracts the shares, ``extra``).
        """
        sol = self.kkt.expand(xs, self._rhs[0], self._rhs[1])
        if add:
            sol = (self._sol[0] + sol[0], self._sol[1] + sol[1], self._sol[2] + sol[2])
        self._sol = sol
        if not residual:
            return None
        mv = self.kkt.matvec(*sol)
        shares = self._schur(mv[0], mv[2]) if self.shared else None
        res: Rhs = tuple(np.subtract(r, m, out=m)
                         for r, m in zip(self._full_rhs, mv, strict=True))
        if extra is not None:
            self._add_schur(res[0], res[2], -extra)
        self._res = res
        return self._size(res), shares

    def correct(self, keep: bool) -> Array:
        """Keep the current solution as the best so far (``keep``); the reduced right-hand
        side of its residual, for a refinement's correction."""
        if keep:
            self._best_sol = self._sol
        return self._reduce(self._res)[0]

    def settle(self, keep: bool) -> None:
        """End a refined solve at the current solution (``keep``) or at the best one."""
        if not keep:
            self._sol = self._best_sol

    def bounds(self) -> tuple[float, float]:
        """The direction just solved: Δs = W q − W² Δz; its largest step inside the cones
        and Δsᵀ Δz."""
        W, cones = self.W, self.cones
        assert W is not None
        dy = self._sol[2]
        ds = self._wq - W.squared(dy[self.zero:])
        ds_t, dz_t = W.apply_inverse(ds), W.apply(dy[self.zero:])
        self._scaled = (ds_t, dz_t)
        self._direction = (*self._sol, ds)
        return min(cones.max_step(W.lam, ds_t), cones.max_step(W.lam, dz_t)), \
            float(ds @ dy[self.zero:])

    # -- the iterate ----------------------------------------------------------------------------

    def shifts(self) -> tuple[float, float, float]:
        """The starting point's slacks s = −z from the start's solve: the smallest
        eigenvalues of s and z and their largest entry, for the shift into the cones."""
        z = self._sol[2][self.zero:]
        return (self.cones.min_eigenvalue(-z), self.cones.min_eigenvalue(z), _norm_inf(z))

    def begin(self, shift_s: float | None, shift_z: float | None,
              warm: Iterate | None = None) -> None:
        """The starting point: the start's solve with s = −z, each shifted by (1 + shift) e
        where a shift is given; with ``warm``, blended with it (`blend`)."""
        x, nu, y = self._sol
        z = y[self.zero:].copy()
        s = -z
        e = self.cones.identity()
        for v, shift in ((s, shift_s), (z, shift_z)):
            if shift is not None:
                v += (1 + shift) * e
        y[self.zero:] = z
        self.p = Iterate(x, nu, y, s)
        if warm is not None:
            self.p = blend(warm, self.p)

    def measure(self, v: Array | None = None, extra: Array | None = None) -> Measured:
        """The iterate's residuals (kept for the next directions), costs and norms.

        ``v``: the Schur unknowns' values, for a shared part's copies of them;
        ``extra``: the shared parts' residual shares, which the owner adds.
        """
        p, st, phi = self.p, self.st, self.phi
        if v is not None:
            p.x[self.G] = v[:len(self.G)]
            p.y[self.R0] = v[len(self.G):]
        r_x = st.P @ p.x
        xPx = float(p.x @ r_x)
        r_x += self.c  # in place: at 10⁶ points every fresh vector costs its page faults
        r_x += st.AT @ p.y
        r_x[st.F] += p.nu
        r_x[st.U] -= phi.T(p.nu)
        r_link = p.x[st.F] - phi(p.x[st.U])
        r_rows = st.A @ p.x
        r_rows -= self.b
        r_rows[self.zero:] += p.s
        if extra is not None:
            self._add_schur(r_x, r_rows, extra)
        self._residual = (r_x, r_link, r_rows)
        shares = self._schur(r_x, r_rows) if self.shared else None
        if self.shared:
            dres, pres = (_norm_inf(r_x[self.x_own]),
                          max(_norm_inf(r_link), _norm_inf(r_rows[self.row_own])))
        else:
            dres, pres = _norm_inf(r_x), max(_norm_inf(r_link), _norm_inf(r_rows))
        return Measured(0.5 * xPx + float(self.c @ p.x), -0.5 * xPx - float(self.b @ p.y),
                        dres, pres, _norm_inf(p.x), _norm_inf(p.s),
                        max(_norm_inf(p.y), _norm_inf(p.nu)),
                        float(p.s @ p.y[self.zero:]), shares)

    def keep(self) -> None:
        """Keep the iterate as the best so far."""
        self.best = self.p

    def move(self, step: float) -> None:
        """Step ``step`` along the direction last bounded (`bounds`)."""
        p = self.p
        for d, v in zip(self._direction, (p.x, p.nu, p.y, p.s), strict=True):  # d ← v + step·d
            d *= step
            d += v
        self.p = Iterate(*self._direction)

    def finish(self, restore: bool) -> Iterate:
        """The iterate the interior point ends at: the best one kept (``restore``) or the
        current one."""
        if restore:
            self.restore()
        return self.p

    def restore(self) -> None:
        """Go back to the best iterate kept."""
        self.p = self.best

    # -- the Schur unknowns' rows ---------------------------------------------------------------

    def schur_values(self) -> Array:
        """The Schur unknowns' values at the iterate (u, the dense variables, the dense rows'
        duals), in the Schur complement's order."""
        return self._schur(self.p.x, self.p.y)

    def _schur(self, vx: Array, vrows: Array) -> Array:
        """The Schur unknowns' entries of a vector (its x part, its rows part)."""
        return np.concatenate([vx[self.G], vrows[self.R0]])

    def _add_schur(self, vx: Array, vrows: Array, values: Array) -> None:
        vx[self.G] += values[:len(self.G)]
        vrows[self.R0] += values[len(self.G):]

    def _size(self, rhs: Rhs) -> float:
        """The largest entry of a right-hand side (x, link, rows): a shared part's own rows."""
        if self.shared:
            return max(_norm_inf(rhs[0][self.x_own]), _norm_inf(rhs[1]),
                       _norm_inf(rhs[2][self.row_own]))
        return max(_norm_inf(r) for r in rhs)


def blend(previous: Iterate, cold: Iterate, weight: float = 0.1) -> Iterate:
    """A warm start: the previous solution moved a tenth of the way to the cold start.

    The previous solution alone sits on the cone's boundary, where the iterations
    crawl (more of them than from the cold start); the blend keeps it centred and
    saves a few iterations over the cold start along L-BFGS-sized moves of the XVs
    (docs/theory.md has the counts). Both s and z of the cold start are strictly
    inside the cone, so the blend is.
    """
    return Iterate(*((1 - weight) * a + weight * b for a, b in zip(
        (previous.x, previous.nu, previous.y, previous.s),
        (cold.x, cold.nu, cold.y, cold.s), strict=True)))


def _norm_inf(v: Array) -> float:
    """max |v_i| (0 for an empty v), without |v|'s temporary."""
    return max(float(v.max(initial=0.0)), -float(v.min(initial=0.0)))
