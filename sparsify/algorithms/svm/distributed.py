"""The SVM formulation's exact W(Z) and ∇W(Z) with the training rows on a Dask cluster.

The same problem as `sparsify.svm_dual` (SLMC's inner linear SVM on the
whitened rows B = y∘(K_XZ T), free bias), evaluated as a map over row blocks that
stay on the workers that hold them. Each block keeps its rows, costs and dual
variables α between evaluations (the warm start); each evaluation:

1. sends Z and the whitening T (Nz × d, Nz × Nz) to every block, which computes its
   K_XZ and B and returns Bᵀα and yᵀα (Nz + 1 numbers);
2. on the first evaluation (and where a warm polish fails) runs rounds of
   CoCoA+ (Ma et al. 2015): every block takes dual coordinate
   steps on its rows from the global u = Σ Bᵀα and s = yᵀα with its quadratic
   scaled by the number of blocks (`sparsify.svm_dual.compiled.local_cd`), and
   returns its change of u and s; the driver adds them and steps the bias by the
   method of multipliers on yᵀα = 0, as `dual_cd` does on one machine, until the
   projected gradients span at most ``cd_eps`` on every block;
3. polishes on the driver with the active-set method of the fast path, from the
   coordinate descent's α or, after a step of Z, straight from the last α: the
   blocks send their free points and those within `BAND` of the margin (typically
   a few times Nz rows of Nz numbers) and the sums Σ C_i B_i, Σ C_i y_i of the
   points held at their upper bound; after the polish every block checks its held
   points' KKT conditions at the new (u, b) and sends the few that violate them,
   until none does (the same test as `SVMDualMarginal`, to ``tol``);
4. gets back from each block its part of W and of ∇W (Nz × d, Lemma 1 with
   ν = α∘y, in row blocks).

So per evaluation only Nz-sized and Nz × Nz-sized objects travel, plus the polish's
working rows; nothing N-sized leaves a worker. W and ∇W are those of the in-memory
fast path to its KKT tolerance (`tests/test_svm_distributed.py`).
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from sparsify.algorithms.svm.distributed_smoothed import smoothed_path
from sparsify.core.data_source import (
    BlockProblem,
    RowBlocks,
    RowTarget,
    check_worker_memory,
    draw_rows,
    payload_bytes,
)
from sparsify.core.errors import SolverError
from sparsify.core.kernel_blocks import (
    diagonal_scale,
    kernel_blocks,
    link_gradient_xz,
    triangular_whitening,
    whitened_rows,
)
from sparsify.core.marginal import Evaluation, Marginal, check_expansion_vectors
from sparsify.kernels import Kernel
from sparsify.svm_dual import local_cd, polish_affordable, warm_active_set

Array = NDArray[np.float64]

#: Points within this of the margin join the polish's working set with the free ones;
#: smaller than the in-memory path's band, since these rows travel to the driver.
BAND = 0.02
#: At most this many KKT violators per block join the polish each round.
JOIN = 256
#: The proximal weight of the bias steps, as `SVMDualMarginal` uses.
RHO = 1.0
#: An evaluation starts over at most this many times after losing blocks with their workers.
MAX_LOSSES = 3


class _BlockLost(Exception):
    """A block's worker left, or the block was recomputed, during an evaluation."""


@dataclass
class _Rows:
    """One row block on its worker: inputs, signed labels, costs and the dual α."""

    X: Array
    labels: NDArray[Any]
    y: Array
    C: Array
    alpha: Array = field(default_factory=lambda: np.zeros(0))
    K_xz: Array | None = None
    B: Array | None = None
    #: new each time Dask (re)computes the block: a block recomputed after its worker was
    #: lost starts again from α = 0, which the driver must know
    token: int = field(default_factory=lambda: secrets.randbits(62))
    #: the squared hinge's Newton method within one evaluation: margin slacks, the line
    #: search's direction δ, the marked violators (`distributed_squared_hinge`)
    slack: Array | None = None
    delta: Array | None = None
    on: NDArray[np.bool_] | None = None
    #: the smoothed hinge's pieces of the rows (`distributed_smoothed`)
    piece: NDArray[np.int8] | None = None


# -- the tasks that run on the workers (module level, so Dask can ship them) -------------

#: The token a block answers with when it has not been through this evaluation's `_prepare`.
UNPREPARED = -1


def _on_block(fn: Any, rows: _Rows, *args: Any) -> tuple[int, Any]:
    """``fn(rows, *args)`` and the block's token, so the driver sees a recomputed block.

    A block without its B (recomputed by Dask, or another copy of it than the one
    `_prepare` ran on, which a busy scheduler may hand out) answers `UNPREPARED`,
    which never matches a token: the driver starts the evaluation over.
    """
    if fn is not _prepare and rows.B is None:
        return UNPREPARED, None
    return rows.token, fn(rows, *args)


def _make_rows(X: Any, labels: Any, positive: Any, C: float, weights: dict[Any, float],
               row_weight: Any = None) -> _Rows:
    """A block's rows for one binary problem: y = +1 for ``positive``, costs
    C·weight[label]·row_weight."""
    X = np.ascontiguousarray(X, dtype=float)
    labels = np.asarray(labels)
    y = np.where(labels == positive, 1.0, -1.0)
    costs = C * np.array([weights.get(label, 1.0) for label in labels.tolist()], dtype=float)
    if row_weight is not None:
        costs *= np.asarray(row_weight, dtype=float)
    return _Rows(X, labels, y, costs, np.zeros(len(y)))


def _prepare(rows: _Rows, Z: Array, T: Array, kernel: Kernel) -> tuple[Array, float]:
    """The block's K_XZ and B = y∘(K_XZ T); its Bᵀα and yᵀα at its current α."""
    rows.K_xz = rows.B = None  # the last Z's: freed first, so a block holds two N × Nz arrays
    rows.K_xz = kernel_blocks(kernel, rows.X, Z)[0]
    rows.B = whitened_rows(rows.K_xz, T, np.empty_like(rows.K_xz), scale=rows.y)
    return rows.B.T @ rows.alpha, float(rows.y @ rows.alpha)


def _round(rows: _Rows, u: Array, s: float, b: float, sigma: float, eps: float,
           epochs: int, seed: int) -> tuple[Array, float, float, float]:
    """One CoCoA+ round: (change of u, change of s, max and min projected gradient at the start)."""
    assert rows.B is not None
    G = rows.B @ u + rows.y * (b + RHO * s) - 1.0
    at_zero, at_upper = rows.alpha <= 0.0, rows.alpha >= rows.C
    PG = np.where(at_zero, np.minimum(G, 0.0), np.where(at_upper, np.maximum(G, 0.0), G))
    local = np.array(u, dtype=float)
    _, s_local, _ = local_cd(rows.B, rows.y, rows.C, rows.alpha, local, s, b, RHO, sigma, eps,
                             epochs, seed)
    return ((local - u) / sigma, (s_local - s) / sigma,
            float(PG.max(initial=0.0)), float(PG.min(initial=0.0)))


def _pack(rows: _Rows, index: NDArray[np.intp]) -> tuple[Any, ...]:
    upper = rows.alpha >= rows.C
    free = (rows.alpha > 0.0) & ~upper
    assert rows.B is not None
    return (index, rows.B[index], rows.y[index], rows.C[index], rows.alpha[index],
            upper[index], free[index])


def _working(rows: _Rows, u: Array, b: float, band: float) -> tuple[Any, ...]:
    """The polish's rows of this block and the sums over the points it holds at C."""
    assert rows.B is not None
    slack = rows.B @ u + rows.y * b - 1.0
    upper = rows.alpha >= rows.C
    free = (rows.alpha > 0.0) & ~upper
    # a row of cost 0 (left out of this problem) has the box [0, 0]: never in the working set
    work = free | ((np.abs(slack) <= band) & (rows.C > 0))
    held = upper & ~work
    return (*_pack(rows, np.flatnonzero(work)), rows.C[held] @ rows.B[held],
            float(rows.C[held] @ rows.y[held]))


def _violators(rows: _Rows, u: Array, b: float, tol: float, limit: int,
               work: NDArray[np.intp], settled: NDArray[np.intp], settled_alpha: Array
               ) -> tuple[Any, ...]:
    """Take the driver's settled α; the ``limit`` held points that violate KKT most at (u, b)."""
    assert rows.B is not None
    rows.alpha[settled] = settled_alpha
    slack = rows.B @ u + rows.y * b - 1.0
    upper = rows.alpha >= rows.C
    violation = np.where(upper, slack, -slack)
    violation[work] = 0.0
    violation[rows.C <= 0] = 0.0  # the box [0, 0] holds whatever the slack
    index = np.flatnonzero(violation > tol)
    if len(index) > limit:
        index = np.sort(index[np.argpartition(-violation[index], limit - 1)[:limit]])
    return _pack(rows, index)


def _settle_rows(rows: _Rows, u: Array, b: float, Z: Array, beta: Array, kernel: Kernel,
                 index: NDArray[np.intp], alpha: Array) -> tuple[float, Array]:
    """Set the polished α; this block's part of W (its hinge losses) and of ∇W."""
    assert rows.B is not None and rows.K_xz is not None
    rows.alpha[index] = alpha
    loss = float(rows.C @ np.maximum(0.0, 1.0 - rows.B @ u - rows.y * b))
    return loss, link_gradient_xz(kernel, rows.X, Z, rows.K_xz, rows.alpha * rows.y, beta)


def _free_rows(rows: _Rows) -> int:
    """The block's rows with 0 < α < C."""
    return int(np.sum((rows.alpha > 0.0) & (rows.alpha < rows.C)))


def _sample(rows: _Rows, label: Any, n: int, seed: int) -> tuple[Array, int]:
    """Up to ``n`` random rows of the block (of class ``label``, None for any) and their count;
    rows of cost 0 (left out of the problem) are not drawn."""
    index = np.flatnonzero(rows.C > 0 if label is None else (rows.labels == label) & (rows.C > 0))
    pick = np.random.default_rng(seed).choice(len(index), min(n, len(index)), replace=False)
    return rows.X[index[np.sort(pick)]], len(index)


def _shape(rows: _Rows) -> tuple[int, int]:
    return rows.X.shape  # type: ignore[return-value]


def _diagonal_sum(rows: _Rows, kernel: Kernel) -> float:
    """Σ k(x, x) over the block: the jitter's scale is their mean over every point."""
    return diagonal_scale(kernel, rows.X) * len(rows.y)


# -- the driver ---------------------------------------------------------------------------

class DistributedSVMMarginal(Marginal):
    """W(Z) and ∇W(Z) of the SVM formulation over row blocks held by Dask workers.

    Parameters
    ----------
    client : distributed.Client
        The cluster's client.
    blocks : list of distributed.Future
        One future per row block, each a block of this problem (`make_blocks`);
        every task of a block runs on the worker that holds it.
    kernel : Kernel
        Kernel with vector-Jacobian products.
    n_expansion : int
        Number of XVs Nz.
    tol : float, default=1e-9
        KKT tolerance of the polish, as `SVMDualMarginal`'s.
    jitter : float, default=1e-10
        Added to K_ZZ's diagonal relative to ``diagonal``, as on one machine.
    diagonal : float, default=1.0
        The mean kernel diagonal over the training points (`diagonal_scale`).

    Attributes
    ----------
    sent_bytes, received_bytes : int
        Payload bytes sent to and gathered from the blocks by the last
        evaluation (arrays and numbers; Dask's own messages not counted).
    n_rounds, n_polish_rows : int
        CoCoA+ rounds and rows polished on the driver in the last evaluation.
    n_smoothed : int
        Evaluations whose partition the smoothed hinge's Newton path named
        (`distributed_smoothed`), where coordinate descent's left the polish too
        many free rows.

    Examples
    --------
    >>> import numpy as np, dask.array as da
    >>> from distributed import Client, LocalCluster
    >>> from sparsify import RBF
    >>> cluster = LocalCluster(n_workers=1, processes=False, dashboard_address=":0")
    >>> client = Client(cluster)
    >>> X = np.array([[0.0, 0.0], [0.2, 0.1], [1.0, 1.0], [0.9, 1.2]])
    >>> labels = np.array([-1, -1, 1, 1])
    >>> blocks = make_blocks(client, da.from_array(X, chunks=2),
    ...                      da.from_array(labels, chunks=2), 1, 10.0)
    >>> ev = DistributedSVMMarginal(client, blocks, RBF(1.0), 2).evaluate(X[[0, 2]])
    >>> np.sign(RBF(1.0)(X, X[[0, 2]]) @ ev.coef + ev.intercept).astype(int).tolist()
    [-1, -1, 1, 1]
    >>> client.close(); cluster.close()
    """

    formulation_name, title, method = "svm", "SVM", "svm-dask"
    #: numbers per row an evaluation holds beside K_XZ and B: α, costs, labels and signs,
    #: the smoothed path's residuals, direction and pieces (`distributed_smoothed`), and its
    #: line search's temporaries (about three rows' worth)
    scratch_per_row = 10

    def __init__(self, client: Any, blocks: list[Any], kernel: Kernel, n_expansion: int,
                 tol: float = 1e-9, jitter: float = 1e-10, diagonal: float = 1.0) -> None:
        self.client, self.blocks, self.kernel = client, list(blocks), kernel
        self.n_expansion, self.tol = int(n_expansion), float(tol)
        self.jitter = jitter * max(diagonal, 1e-300)
        who = client.who_has(self.blocks)
        self._where = [list(who[block.key])[:1] or None for block in self.blocks]
        shapes = client.gather([client.submit(_shape, block, pure=False)
                                for block in self.blocks])
        self.n_features = int(shapes[0][1])
        self.n_rows = sum(int(n) for n, _ in shapes)
        self._check_memory(shapes)
        # coordinate descent only names the partition; the polish makes it exact. Long local
        # passes leave the polish few rows to join, and each round costs a trip to every
        # block (docs/theory.md, "Figures behind the code's choices")
        self.cd_eps, self.local_epochs, self.max_rounds = 1e-3, 100, 10
        self.max_polish_rounds = 200
        self._b, self._warm = 0.0, False
        self._tokens: list[int] = []
        self.poll_seconds = 2.0  # how often a waiting evaluation checks its blocks' workers
        self.sent_bytes = self.received_bytes = 0
        self.n_rounds = self.n_polish_rows = self.n_smoothed = 0

    def _check_memory(self, shapes: list[tuple[int, int]]) -> None:
        """Refuse, before any kernel block, where a worker's blocks would exceed its memory limit.

        An evaluation holds each block's K_XZ and B (n × Nz each) beside its rows.
        """
        check_worker_memory(
            self.client, [(where[0] if where else None,
                           8 * n * (2 * self.n_expansion + d + self.scratch_per_row))
                          for where, (n, d) in zip(self._where, shapes, strict=True)],
            f"The distributed {self.title} solver's blocks on worker {{worker}} "
            f"(Nz={self.n_expansion})")

    def _map(self, fn: Any, *args: Any, per_block: list[tuple[Any, ...]] | None = None
             ) -> list[Any]:
        """``fn(block, *args, *per_block[k])`` on each block's own worker; the results.

        Raises `_BlockLost` where a block's worker left the cluster (its tasks are
        pinned to it and would wait forever) or where a block was recomputed since
        this evaluation's `_prepare` (its α is back at zero).
        """
        from distributed import wait

        # keys named after fn, so the dashboard's task stream says what ran where
        futures = [self.client.submit(_on_block, fn, block,
                                      *args, *(per_block[k] if per_block else ()),
                                      key=f"{fn.__name__}-{secrets.token_hex(8)}",
                                      workers=where, allow_other_workers=False)
                   for k, (block, where) in enumerate(zip(self.blocks, self._where,
                                                          strict=True))]
        while True:
            try:
                wait(futures, timeout=self.poll_seconds)
                break
            except TimeoutError:
                if self._relocate():
                    self.client.cancel(futures)
                    raise _BlockLost from None
        results = self.client.gather(futures)
        tokens = [token for token, _ in results]
        if fn is _prepare:
            self._tokens = tokens
        elif tokens != self._tokens:
            raise _BlockLost
        results = [result for _, result in results]
        self.sent_bytes += len(self.blocks) * payload_bytes(args) + payload_bytes(per_block or ())
        self.received_bytes += payload_bytes(results)
        return results

    def _relocate(self) -> bool:
        """Whether a block left the worker its tasks are pinned to; if so, find it again.

        A block whose worker was lost is recomputed by Dask from its inputs (an
        unpinned task asks for it), on any worker.
        """
        who = self.client.who_has(self.blocks)
        moved = [k for k, block in enumerate(self.blocks)
                 if not self._where[k] or self._where[k][0] not in who.get(block.key, ())]
        if not moved:
            return False
        self.client.gather([self.client.submit(_shape, self.blocks[k], pure=False)
                            for k in moved])
        who = self.client.who_has(self.blocks)
        self._where = [list(who[block.key])[:1] or None for block in self.blocks]
        return True

    def evaluate(self, Z: Array, grad: bool = True) -> Evaluation:
        Z = check_expansion_vectors(Z, self.n_expansion, self.n_features, "svm")
        for _ in range(MAX_LOSSES):
            try:
                return self._evaluate(Z, grad)
            except _BlockLost:
                # a block is back at α = 0: the next try starts cold
                self._warm = False
        raise SolverError(
            f"The distributed {self.title} solver lost row blocks {MAX_LOSSES} times in one "
            "evaluation (workers left the cluster; formulation 'svm'). Check the workers' logs "
            "(memory limits, preemption) and fit again.")

    def _evaluate(self, Z: Array, grad: bool) -> Evaluation:
        self.sent_bytes = self.received_bytes = 0
        K_zz = self.kernel(Z, Z)
        T = triangular_whitening(K_zz + self.jitter * np.eye(len(Z)))
        u, b, settle, per_block = self._solve(Z, T)
        beta = T @ u
        parts = self._map(settle, u, b, Z, beta, self.kernel, per_block=per_block)
        value = 0.5 * float(u @ u) + sum(part[0] for part in parts)
        if not grad:
            return Evaluation(value, None, beta, b, self.method)
        gradient = self.kernel.vjp_zz(Z, 0.5 * np.outer(beta, beta), K_zz)
        gradient += np.sum([part[1] for part in parts], axis=0)
        return Evaluation(value, gradient, beta, b, self.method)

    def _solve(self, Z: Array, T: Array) -> tuple[Array, float, Any, list[tuple[Any, ...]] | None]:
        """Every block's kernel rows and the inner problem's (u, b); the task that settles
        each block's α and returns its parts of W and ∇W, with its per-block arguments."""
        u, s = self._prepare(Z, T)
        self.n_rounds, solved = 0, None
        if self._warm:
            # after a step of Z the last α's partition is nearly right: polish from it
            try:
                solved = self._polish(u, self._b)
            except SolverError:  # the blocks may hold part of its α: start over from them
                u, s = self._prepare(Z, T)
        if solved is None:
            u, b = self._coordinate_descent(u, s, self._b)
            free = sum(self._map(_free_rows))
            if polish_affordable(free, self.n_expansion, self.n_rows):
                try:
                    solved = self._polish(u, b)
                except SolverError:
                    pass
        if solved is None:
            solved = self._smoothed()
        alpha_parts, u, b = solved
        self._warm, self._b = True, b
        return u, b, _settle_rows, alpha_parts

    def _smoothed(self) -> tuple[list[tuple[Any, ...]], Array, float]:
        """The polish from the partition of the smoothed hinge's Newton path, width by width
        (`distributed_smoothed.smoothed_path`), where the quadratic rows are few enough."""
        for u, b, n_quadratic in smoothed_path(self._map, self.n_expansion):
            if polish_affordable(n_quadratic, self.n_expansion, self.n_rows):
                try:
                    solved = self._polish(u, b)
                except SolverError:
                    continue  # the next width's partition is closer to the hinge's
                self.n_smoothed += 1
                return solved
        raise SolverError(
            "The distributed SVM solver's polish did not settle from coordinate descent's "
            "partition nor from the smoothed hinge's (formulation 'svm'). Fit on the data in "
            "memory (numpy arrays), whose solver has an interior-point fallback, or loosen "
            "solver_tol.")

    def _prepare(self, Z: Array, T: Array) -> tuple[Array, float]:
        """Every block's K_XZ and B; u = Σ Bᵀα and s = Σ yᵀα at the blocks' current α."""
        sums = self._map(_prepare, Z, T, self.kernel)
        return np.sum([part[0] for part in sums], axis=0), float(sum(part[1] for part in sums))

    def _coordinate_descent(self, u: Array, s: float, b: float) -> tuple[Array, float]:
        sigma = float(len(self.blocks))
        for round_ in range(self.max_rounds):
            self.n_rounds = round_ + 1
            parts = self._map(_round, u, s, b, sigma, self.cd_eps, self.local_epochs, round_)
            span = max(p[2] for p in parts) - min(p[3] for p in parts)
            u = u + np.sum([p[0] for p in parts], axis=0)
            s += sum(p[1] for p in parts)
            # the bias steps every round (the method of multipliers with inexact inner
            # solves): waiting for each bias's subproblem to converge costs hundreds of rounds
            step = RHO * s
            b += step
            if span <= self.cd_eps and abs(step) <= self.cd_eps:
                break
        return u, b

    def _polish(self, u: Array, b: float) -> tuple[list[tuple[Any, ...]], Array, float]:
        """The exact KKT point from the coordinate descent's partition; α per block.

        The driver solves on the working rows with every other point held at
        its bound (their sums v0, cy0); rows that settle away from the margin go
        back to their blocks as held points, and each block sends its `JOIN`
        worst KKT violators, until none is left.
        """
        parts = self._map(_working, u, b, BAND)
        work = [list(p[:7]) for p in parts]
        v0 = np.sum([p[7] for p in parts], axis=0)
        cy0 = float(sum(p[8] for p in parts))
        eye, joined = np.eye(self.n_expansion), 0
        self.n_polish_rows = sum(len(w[0]) for w in work)
        for _ in range(self.max_polish_rounds):
            B, y, C, alpha, upper, free = (np.concatenate([w[j] for w in work])
                                           for j in range(1, 7))
            # each move is O(rows · Nz); a coarse partition may need a move per row
            solved = warm_active_set(B, y, eye, eye, eye, C, alpha, upper, free, self.tol,
                                      10 * self.n_expansion + 100 + 4 * len(y), (v0, cy0))
            if solved is None:
                raise SolverError(
                    f"The distributed SVM solver's polish did not settle on {len(y)} working "
                    "rows (formulation 'svm'). Fit on the data in memory (numpy arrays), whose "
                    "solver has an interior-point fallback, or loosen solver_tol.")
            alpha, u, b, upper, free = solved
            # rows settled away from the margin go back to their blocks, held at their bound
            keep = free | (np.abs(B @ u + y * b - 1.0) <= BAND)
            settled, start = [], 0
            for w in work:
                n = len(w[0])
                part = slice(start, start + n)
                w[4], w[5], w[6] = alpha[part], upper[part], free[part]
                out = ~keep[part]
                at_c = out & w[5]
                v0 = v0 + w[3][at_c] @ w[1][at_c]
                cy0 += float(w[3][at_c] @ w[2][at_c])
                settled.append((w[0][out], w[4][out]))
                for j in range(7):
                    w[j] = w[j][~out]
                start += n
            missed = self._map(_violators, u, b, self.tol, JOIN,
                               per_block=[(w[0], *done) for w, done in zip(work, settled,
                                                                           strict=True)])
            joined = sum(len(m[0]) for m in missed)
            if not joined:
                return [(w[0], w[4]) for w in work], u, b
            self.n_polish_rows += joined
            for w, m in zip(work, missed, strict=True):
                # a violator was held at its bound: it leaves the held sums, joins the rows
                at_c = m[5]
                v0 = v0 - m[3][at_c] @ m[1][at_c]
                cy0 -= float(m[3][at_c] @ m[2][at_c])
                for j in range(7):
                    w[j] = np.concatenate([w[j], m[j]])
        raise SolverError(
            f"The distributed SVM solver's polish did not settle in "
            f"{self.max_polish_rounds} rounds (formulation 'svm'). Fit on the data in "
            "memory, or loosen solver_tol.")


def make_blocks(client: Any, X: Any, labels: Any, positive: Any, C: float,
                weights: dict[Any, float] | None = None, row_weight: Any = None) -> list[Any]:
    """One future per row block of the dask arrays ``X`` and ``labels``, on the workers.

    The blocks are built where Dask computes the chunks; nothing N-sized goes
    through the driver. ``positive`` is the label of class +1, the others are −1;
    ``weights`` maps a label to the factor of its points' cost C, ``row_weight``
    (a dask array, or None) gives each row a factor of its own.

    Examples
    --------
    See `DistributedSVMMarginal`.
    """
    from dask import delayed

    X = X.rechunk({1: -1})
    labels = labels.rechunk((X.chunks[0],))
    factors = ([None] * len(X.chunks[0]) if row_weight is None
               else row_weight.rechunk((X.chunks[0],)).to_delayed().ravel())
    tasks = [delayed(_make_rows)(x, lab, positive, C, dict(weights or {}), w)
             for x, lab, w in zip(X.to_delayed().ravel(), labels.to_delayed().ravel(), factors,
                                  strict=True)]
    blocks = client.compute(tasks)
    client.wait_for_workers(1)
    from distributed import wait

    wait(blocks)
    return list(blocks)


def initial_rows(client: Any, blocks: list[Any], n_expansion: int, classes: list[Any] | None,
                 seed: int) -> Array:
    """Nz initial XVs drawn from the blocks' rows: at random, or evenly over ``classes``
    (`sparsify.core.data_source.draw_rows`; ``classes=None`` draws from every row)."""

    def sample(group: Any, n: int, seeds: NDArray[np.int64]) -> list[tuple[Array, int]]:
        parts: list[tuple[Array, int]] = client.gather(
            [client.submit(_sample, block, group, n, int(seeds[k]), pure=False)
             for k, block in enumerate(blocks)])
        return parts

    return draw_rows(sample, len(blocks), n_expansion,
                     [None] if classes is None else list(classes), seed)


class SVMBlocks(BlockProblem):
    """One binary problem of the SVM over the row blocks of a `RowBlocks` source.

    The blocks (`make_blocks`) are built once and shared by the problem's
    starts; each start's marginal is a ``marginal_class``
    (`DistributedSVMMarginal` or its squared-hinge subclass) over them.
    """

    def __init__(self, source: RowBlocks, target: RowTarget, C: float,
                 marginal_class: type[DistributedSVMMarginal], kernel: Kernel,
                 n_expansion: int, tol: float) -> None:
        self.source, self.client, self.kernel = source, source.client, kernel
        self.n_expansion, self.tol, self.marginal_class = n_expansion, tol, marginal_class
        self.blocks = make_blocks(self.client, source.X, source.y, target.positive, C,
                                  target.label_weights, target.row_weight)
        self.diagonal = sum(self.client.gather(
            [self.client.submit(_diagonal_sum, b, kernel) for b in self.blocks])
        ) / source.n_samples

    def marginal(self) -> DistributedSVMMarginal:
        return self.marginal_class(self.client, self.blocks, self.kernel, self.n_expansion,
                                   self.tol, diagonal=self.diagonal)

    def initial_rows(self, n: int, balanced: bool, seed: int) -> Array:
        # balanced over the labels of y: one-vs-rest's rest is dealt evenly over its classes
        return initial_rows(self.client, self.blocks, n,
                            list(self.source.classes()[0]) if balanced else None, seed)

    def close(self) -> None:
        self.client.cancel(self.blocks)
