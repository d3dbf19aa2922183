"""The squared-hinge SVM's exact W(Z) and ∇W(Z) with the training rows on a Dask cluster.

The finite Newton method of `sparsify.algorithms.svm.squared_hinge` (Keerthi and
DeCoste's L2-SVM-MFN) on the row blocks of `sparsify.algorithms.svm.distributed`, which
stay on their workers with their whitened rows B = y∘(K_XZ T). With P_i = [B_i, y_i] and
x = (u, b), F(x) = ½‖u‖² + Σ_i C_i max(0, 1 − P_i x)²; each evaluation:

1. sends Z and T to every block, which computes its K_XZ and B (as for the hinge loss);
2. Newton iterations, each one map for the set A of margin violators and one for
   the (Nz + 1)-sized system on it: every block marks its points with 1 − P_i x > 0
   (from the last evaluation's violators at the first iteration: the warm start) and
   returns Σ_A C_i P_iᵀ P_i and Σ_A C_i P_i; the driver solves for the Newton point;
3. the exact line search towards it, F being piecewise quadratic along the direction
   d: each block keeps δ_i = P_i d and its slacks, and for a step t returns the sums
   Σ C_i δ_i slack_i and Σ C_i δ_i² over its points still violating at t, with its
   breakpoints nearest to t. The driver takes the root of F's derivative on that piece
   (a safeguarded Newton step on the piecewise linear derivative, bisection where it
   leaves the bracket) until the root lies on the piece it was computed from: exact;
4. stops, as on one machine, when the set A at the new point is the one its Newton
   point was computed from; each block then keeps α = 2 C slack⁺ (its warm start)
   and sends its part of W and of ∇W (Lemma 1 with ν = α∘y).

Per evaluation only Nz-, (Nz + 1)²- and Nz × d-sized objects travel, and a few numbers
per line-search step; nothing N-sized leaves a worker.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.linalg
from numpy.typing import NDArray

from sparsify.algorithms.svm.block_line_search import line_search_over_blocks
from sparsify.algorithms.svm.distributed import DistributedSVMMarginal, _Rows
from sparsify.algorithms.svm.squared_hinge import BLOCK, MAX_NEWTON
from sparsify.core.errors import SolverError
from sparsify.core.kernel_blocks import link_gradient_xz

__all__ = ["DistributedSquaredHingeMarginal"]

Array = NDArray[np.float64]

# -- the tasks that run on the workers ---------------------------------------------------

def _mark_violators(rows: _Rows, u: Array | None, b: float) -> tuple[bool, int, int]:
    """Mark the points violating their margin at (u, b) (at None: those with α > 0, the
    last evaluation's); whether the marks changed, and the marked points of each class."""
    assert rows.B is not None
    if u is None:
        on = rows.alpha > 0.0
    else:
        rows.slack = 1.0 - rows.B @ u - rows.y * b
        on = rows.slack > 0.0
    changed = rows.on is None or not np.array_equal(on, rows.on)
    rows.on = on
    return changed, int(np.sum(rows.y[on] > 0)), int(np.sum(rows.y[on] < 0))


def _mark_every_point(rows: _Rows) -> None:
    rows.on = np.ones(len(rows.y), dtype=bool)


def _newton_sums(rows: _Rows) -> tuple[Array, Array]:
    """Σ_A C_i P_iᵀ P_i and Σ_A C_i P_i over the block's marked points, P_i = [B_i, y_i]."""
    assert rows.B is not None and rows.on is not None
    n = rows.B.shape[1] + 1
    H, r = np.zeros((n, n)), np.zeros(n)
    marked = np.flatnonzero(rows.on)
    for start in range(0, len(marked), BLOCK):
        part = marked[start:start + BLOCK]
        P = np.hstack([rows.B[part], rows.y[part, None]])
        Pc = P * rows.C[part, None]
        H += P.T @ Pc
        r += Pc.sum(axis=0)
    return H, r


def _slope_piece(rows: _Rows, t: float) -> tuple[float, float, float, float]:
    """At step t: Σ C δ slack and Σ C δ² over the points violating there, and the block's
    breakpoints nearest to t on either side (−inf, inf where none)."""
    slack, delta, C = rows.slack, rows.delta, rows.C
    assert slack is not None and delta is not None
    on = slack - t * delta > 0.0
    with np.errstate(divide="ignore", invalid="ignore"):
        t_break = np.where(delta != 0.0, slack / delta, np.nan)
    below, above = t_break[t_break <= t], t_break[t_break > t]
    return (float(C[on] @ (delta[on] * slack[on])), float(C[on] @ delta[on] ** 2),
            float(below.max(initial=-np.inf)), float(above.min(initial=np.inf)))


def _settle(rows: _Rows, u: Array, b: float, Z: Array, beta: Array, kernel: Any
            ) -> tuple[float, Array]:
    """Keep α = 2 C slack⁺ (the next evaluation's start); this block's part of W and ∇W."""
    assert rows.B is not None and rows.K_xz is not None
    slack = np.maximum(0.0, 1.0 - rows.B @ u - rows.y * b)
    rows.alpha = 2.0 * rows.C * slack
    rows.slack = rows.delta = rows.on = None  # N-sized scratch: not kept between evaluations
    grad = link_gradient_xz(kernel, rows.X, Z, rows.K_xz, rows.alpha * rows.y, beta)
    return float(rows.C @ slack**2), grad


# -- the driver ---------------------------------------------------------------------------

class DistributedSquaredHingeMarginal(DistributedSVMMarginal):
    """W(Z) and ∇W(Z) of the squared-hinge SVM over row blocks held by Dask workers.

    The parameters, blocks, memory check and recovery from lost workers are
    `DistributedSVMMarginal`'s; the inner solve is the finite Newton method of
    `sparsify.algorithms.svm.squared_hinge.SquaredHingeMarginal`, exact as that one.

    Attributes
    ----------
    sent_bytes, received_bytes : int
        Payload bytes sent to and gathered from the blocks by the last evaluation.
    n_newton, n_line_steps : int
        Newton iterations and line-search steps of the last evaluation.

    Examples
    --------
    >>> import numpy as np, dask.array as da
    >>> from distributed import Client, LocalCluster
    >>> from sparsify import RBF
    >>> from sparsify.algorithms.svm.distributed import make_blocks
    >>> cluster = LocalCluster(n_workers=1, processes=False, dashboard_address=":0")
    >>> client = Client(cluster)
    >>> X = np.array([[0.0, 0.0], [0.2, 0.1], [1.0, 1.0], [0.9, 1.2]])
    >>> labels = np.array([-1, -1, 1, 1])
    >>> blocks = make_blocks(client, da.from_array(X, chunks=2),
    ...                      da.from_array(labels, chunks=2), 1, 10.0)
    >>> remote = DistributedSquaredHingeMarginal(client, blocks, RBF(1.0), 2)
    >>> ev = remote.evaluate(X[[0, 2]])
    >>> np.sign(RBF(1.0)(X, X[[0, 2]]) @ ev.coef + ev.intercept).astype(int).tolist()
    [-1, -1, 1, 1]
    >>> client.close(); cluster.close()
    """

    formulation_name, title, method = "svm", "squared-hinge SVM", "svm-l2-dask"
    #: the Newton method's slacks, directions and marks beside K_XZ and B, per row
    scratch_per_row = 9

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.n_newton = self.n_line_steps = 0

    def _solve(self, Z: Array, T: Array) -> tuple[Array, float, Any, None]:
        """Every block's kernel rows, then the Newton method from the last evaluation's
        violators (a block recomputed after a lost worker starts from none)."""
        self._prepare(Z, T)
        x = self._newton()
        return x[:-1], float(x[-1]), _settle, None

    def _newton_point(self) -> Array:
        """The minimiser x of ½‖u‖² + Σ_A C_i (1 − P_i x)² over the blocks' marked points."""
        parts = self._map(_newton_sums)
        H = 2.0 * np.sum([p[0] for p in parts], axis=0)
        rhs = 2.0 * np.sum([p[1] for p in parts], axis=0)
        H[:-1, :-1] += np.eye(self.n_expansion)
        try:
            return np.asarray(scipy.linalg.cho_solve(scipy.linalg.cho_factor(H), rhs))
        except np.linalg.LinAlgError as error:  # positive definite unless round-off broke it
            raise SolverError(
                "The distributed squared-hinge SVM solver's Newton system is numerically "
                "singular (formulation 'svm'). Fit on the data in memory (numpy arrays), whose "
                "solver falls back to a conic one, or standardise the features.") from error

    def _newton(self) -> Array:
        """x = (u, b) minimising F exactly, from the last evaluation's violators."""
        marks = self._map(_mark_violators, None, 0.0)
        if not (sum(m[1] for m in marks) and sum(m[2] for m in marks)):
            self._map(_mark_every_point)  # a start needs both classes: from every point
        x = self._newton_point()
        self.n_newton = self.n_line_steps = 0
        for _ in range(MAX_NEWTON):
            self.n_newton += 1
            marks = self._map(_mark_violators, x[:-1], float(x[-1]))
            if not any(m[0] for m in marks):
                return x  # the Newton point of its own set: exact
            if not any(m[1] + m[2] for m in marks):
                new = np.append(np.zeros(self.n_expansion), x[-1])  # F = ½‖u‖² here
            else:
                new = self._newton_point()
            d = new - x
            t = self._line_search(float(x[:-1] @ d[:-1]), float(d[:-1] @ d[:-1]), d)
            x = new if t >= 1.0 else x + t * d
        raise SolverError(
            f"The distributed squared-hinge SVM solver's Newton method did not settle in "
            f"{MAX_NEWTON} iterations (formulation 'svm'). Fit on the data in memory (numpy "
            "arrays), whose solver falls back to a conic one.")

    def _line_search(self, a: float, c: float, d: Array) -> float:
        """The exact minimiser t ≥ 0 of F along d (F' = a + c t − 2 Σ C δ (slack − t δ)⁺)."""
        t, steps = line_search_over_blocks(self._map, _slope_piece, (), a, c, d, 2.0, np.inf,
                                           "squared-hinge SVM")
        self.n_line_steps += steps
        return t
