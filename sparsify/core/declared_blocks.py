"""A declared formulation over row blocks on a Dask cluster: one problem, many workers.

The declaration is compiled once on the driver (it needs y and the sizes, not
X: ``out.X`` is None here) and its KKT structure found there; the problem is
then split by the row blocks of X (`sparsify.core.structured.parts.split`) and
each part goes, once per problem, to an actor on the worker that holds its
block (`BlockActor`). Per evaluation the driver sends Z and the whitening T;
each block computes its kernel rows and Φ_j = K_{X_j Z} T where its rows are,
and the structured interior point runs on the driver over the parts
(`sparsify.core.structured.parts.Parts`): per iteration each block
receives and returns O(Nz²) numbers. ∇W is Lemma 1 summed over the blocks
(each its K_XZ term from its own ν_j) plus the K_ZZ term on the driver.

The driver holds the compiled problem (a few hundred bytes per point: y, the
formulation's conic data and the partition); the blocks hold everything of
size N·Nz. A formulation whose problem does not split by row blocks (a graph
over all points, a second-order cone over many points) is refused with the
reason, as is one the structured backend does not take (exponential cones).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import cvxpy as cp
import numpy as np
from numpy.typing import NDArray

from sparsify.core.backends.structured import StructuredBackend, structure_bytes
from sparsify.core.conic import compile_linked, unpack
from sparsify.core.data_source import (
    BlockProblem,
    RowBlocks,
    RowTarget,
    check_worker_memory,
    draw_rows,
    payload_bytes,
)
from sparsify.core.declared import declare, formulation_label, n_outputs, solution_variables
from sparsify.core.errors import SolverError
from sparsify.core.formulation import Formulation
from sparsify.core.kernel_blocks import diagonal_scale, link_gradient_xz, whitening
from sparsify.core.marginal import Evaluation, Marginal, check_expansion_vectors
from sparsify.core.memory import check_memory
from sparsify.core.structured.ipm import IPMSettings, interior_point
from sparsify.core.structured.kkt import SCHUR_EXTRA_LIMIT, StructureError
from sparsify.core.structured.parts import BlockPart, Parts, SubProblem, crossing, split
from sparsify.kernels import Kernel

__all__ = ["BlockActor", "DeclaredBlocks", "DeclaredBlocksMarginal", "on_actors"]

Array = NDArray[np.float64]

#: An evaluation starts over at most this many times after losing blocks with their workers.
MAX_LOSSES = 3


class _BlockLost(Exception):
    """A call to the blocks failed (a worker left, or a part failed); the method's name."""


#: Bytes per point and output the driver needs to compile the declaration and find its
#: partition: cvxpy's compilation peaks at 1-2.2 KB per point for the ε-SVR and the
#: Huber SVM (docs/results/declared_dask.md)
DRIVER_BYTES_PER_POINT = 3000


def on_actors(actors: list[Any], method: str, *args: Any,
              alive: Callable[[], bool] | None = None, poll: float = 2.0) -> list[Any]:
    """``method(*args)`` on every actor at once; their results in order.

    A call to an actor whose worker left may wait without end: every ``poll``
    seconds of waiting, ``alive()`` says whether every actor's worker is still
    there, and a RuntimeError is raised where one is not.
    """
    futures = [getattr(actor, method)(*args) for actor in actors]
    results = []
    for future in futures:
        while True:
            try:
                results.append(future.result(timeout=None if alive is None else poll))
                break
            except TimeoutError:
                if alive is not None and not alive():
                    raise RuntimeError(f"a row block's worker left during {method}") from None
    return results


class BlockActor:
    """A row block on its worker (a Dask actor): its rows, its part of the problem, its Φ_j.

    Parameters
    ----------
    X : ndarray of shape (n, d)
        The block's rows.
    labels : ndarray of shape (n,) or None
        Their labels, for drawing initial rows evenly from the classes.
    sub : SubProblem
        The block's part of the problem.
    kernel : Kernel
    """

    def __init__(self, X: Any, labels: Any, sub: SubProblem, kernel: Kernel) -> None:
        self.X = np.ascontiguousarray(X, dtype=np.float64)
        self.labels = None if labels is None else np.asarray(labels)
        self.part = BlockPart(sub)
        self.kernel, self.K = kernel, sub.layout.K

    def call(self, method: str, *args: Any) -> Any:
        """``BlockPart.method(*args)`` on the block's part."""
        return getattr(self.part, method)(*args)

    def prepare(self, Z: Array, T: Array) -> None:
        """The block's K_XZ and Φ_j = K_XZ T for this evaluation."""
        self.K_xz = self.kernel(self.X, Z)
        self.part.set_phi(self.K_xz @ T)

    def _nu(self) -> Array:
        nu: Array = self.part.p.nu.reshape(self.K, -1).T  # (n, K)
        return nu

    def link_terms(self, u: Array) -> Array:
        """(Φ_j u_k)ᵀ ν_k for each output k, the block's share of c_k's numerator."""
        assert self.part.Phi is not None
        terms: Array = ((self.part.Phi @ u) * self._nu()).sum(0)
        return terms

    def gradient(self, Z: Array, B: Array) -> Array:
        """The block's K_XZ term of Lemma 1: ∂W/∂K_XZ = −ν βᵀ through the kernel."""
        return link_gradient_xz(self.kernel, self.X, Z, self.K_xz, self._nu(), B)

    def diagonal_sum(self) -> float:
        """Σ k(x, x) over the block: the jitter is relative to their mean."""
        return diagonal_scale(self.kernel, self.X) * len(self.X)

    def sample(self, label: Any, n: int, seed: int) -> tuple[Array, int]:
        """Up to ``n`` random rows (of class ``label``; None: any) and how many there are."""
        index = (np.arange(len(self.X)) if label is None or self.labels is None
                 else np.flatnonzero(self.labels == label))
        pick = np.random.default_rng(seed).choice(len(index), min(n, len(index)), replace=False)
        return self.X[index[np.sort(pick)]], len(index)


class DeclaredBlocks(BlockProblem):
    """A declared formulation's problem over the row blocks of a `RowBlocks` source.

    Parameters
    ----------
    formulation : Formulation
    source : RowBlocks
    target : RowTarget
        The problem's targets: ±1 for ``positive`` (a classifier's), else y itself.
    kernel : Kernel
    n_expansion : int
    tol : float
        Solver accuracy, as ``solver_tol``.

    Raises
    ------
    ValueError
        Where the problem does not split by row blocks, the structured backend
        cannot take it, or it has per-row weights; each with the reason.
    MemoryEstimateError
        Where the driver or a worker would not hold its share.
    """

    def __init__(self, formulation: Formulation, source: RowBlocks, target: RowTarget,
                 kernel: Kernel, n_expansion: int, tol: float) -> None:
        self.name = formulation.name or type(formulation).__name__
        self.client, self.kernel, self.tol = source.client, kernel, tol
        self.n_expansion, self.n_features = int(n_expansion), source.n_features
        what = f"The {self.name!r} formulation over row blocks"
        if target.row_weight is not None or target.label_weights:
            raise ValueError(f"{what} takes no class or row weights; fit without "
                             "class_weight, or on numpy arrays.")
        N = source.n_samples
        labels = source.labels() if source.y is not None else None
        y = (None if labels is None else labels.astype(float) if target.positive is None
             else np.where(labels == target.positive, 1.0, -1.0))
        if y is not None and not np.isfinite(y[~np.isnan(y)] if formulation.unlabelled
                                             else y).all():
            raise ValueError(f"{what} needs finite targets: y contains "
                             f"{'infinity' if formulation.unlabelled else 'NaN or infinity'}; "
                             "remove or impute those values.")
        check_memory(DRIVER_BYTES_PER_POINT * N * n_outputs(formulation, y) + 2**20,
                     f"{what}, compiled on the driver (N={N}),",
                     "Use a driver with more memory, or a subsample of the rows.")
        #: the labels of y, for initial rows drawn evenly from them
        self.classes = [None] if labels is None else list(np.unique(labels))
        diagonal = source.X.map_blocks(kernel.diag, drop_axis=1, dtype=float)
        self.declaration, f, u, K = declare(formulation, y, N, self.n_expansion,
                                            diagonal=lambda: np.asarray(diagonal.compute()))
        self.problem = cp.Problem(self.declaration.objective,
                                  list(self.declaration.constraints))
        self.backend = StructuredBackend("structured")
        compiled = compile_linked(self.problem, f, u, N, self.n_expansion, K,
                                  self.backend.layout, formulation_label(formulation))
        chunks = [int(c) for c in source.X.chunks[0]]
        bounds = np.concatenate([[0], np.cumsum(chunks)])
        structure: Any = compiled
        if not isinstance(compiled, str):
            # the variables that meet points of two row blocks (b) go to the Schur
            # complement; the partition only: the parts plan their own factorisations
            dense = crossing(compiled.problem.own, compiled.problem.layout, bounds)
            structure = (f"{len(dense)} of its variables couple points of different row "
                         "blocks, so it does not split by row blocks"
                         if len(dense) > SCHUR_EXTRA_LIMIT else
                         self.backend.structure(compiled.problem, plan=False, dense=dense))
        if isinstance(structure, str):
            raise ValueError(f"{what} needs the structured interior point, which cannot take "
                             f"it: {structure}. Fit on numpy arrays.")
        assert not isinstance(compiled, str)
        self.compiled = compiled
        linked = compiled.problem
        try:
            self.master, subs = split(linked.own, linked.layout, structure, bounds)
        except StructureError as error:
            raise ValueError(f"{what}: {error}. Fit on numpy arrays.") from None
        self.K, self.N = K, N
        self._intercept_columns()
        # what makes a block's actor again where its worker leaves: its rows' tasks and part
        self._subs = subs
        self._X_tasks = list(source.X.to_delayed().ravel())
        self._y_tasks = (list(source.y.to_delayed().ravel()) if source.y is not None
                         else [None] * len(chunks))
        self._futures: list[Any] = [None] * len(chunks)
        self.actors: list[Any] = [None] * len(chunks)
        self._start_actors(list(range(len(chunks))))
        diagonal = sum(on_actors(self.actors, "diagonal_sum")) / N
        self.jitter = 1e-10 * max(diagonal, 1e-300)  # as in memory (`DeclaredMarginal`)

    def _start_actors(self, which: list[int]) -> None:
        """Make the actors of blocks ``which`` on the workers that compute their rows."""
        from distributed import wait

        X_parts = self.client.compute([self._X_tasks[j] for j in which])
        y_parts = [None if self._y_tasks[j] is None else self.client.compute(self._y_tasks[j])
                   for j in which]
        wait(X_parts)
        who = self.client.who_has(X_parts)
        where = [list(who[part.key])[:1] or None for part in X_parts]
        self._check_workers([self._subs[j] for j in which], where)
        # each part goes straight to its block's worker (not through the task graph)
        parts = [self.client.scatter(self._subs[j], workers=w, hash=False)
                 for j, w in zip(which, where, strict=True)]
        for j, x, lab, sub, w in zip(which, X_parts, y_parts, parts, where, strict=True):
            # an actor lives while its future does; its inputs are released once it holds
            # them (cancelling them would end it too)
            self._futures[j] = self.client.submit(BlockActor, x, lab, sub, self.kernel,
                                                  actor=True, workers=w,
                                                  allow_other_workers=w is None)
        for j in which:
            self.actors[j] = self._futures[j].result()

    def _lost(self) -> list[int]:
        """The blocks whose actor's worker has left the cluster."""
        alive = set(self.client.scheduler_info().get("workers", {}))
        who = self.client.who_has(self._futures)
        return [j for j, future in enumerate(self._futures)
                if not set(who.get(future.key, ())) & alive]

    def alive(self) -> bool:
        """Whether every block's worker is still in the cluster."""
        return not self._lost()

    def recover(self) -> bool:
        """Make again, on the workers left, the blocks whose worker left; whether any had.

        A block's actor holds its part of the problem and its rows; its rows are
        computed again from their tasks, its part sent again from the driver. An
        evaluation then starts over (each starts from the data, so nothing else is lost).
        """
        lost = self._lost()
        if lost:
            self.client.cancel([self._futures[j] for j in lost])
            self._start_actors(lost)
        return bool(lost)

    def _intercept_columns(self) -> None:
        """Refuse an intercept or named variables (`Declaration.variables`) over per-point
        variables: the driver holds only the Schur unknowns."""
        kept = [("intercept", self.declaration.intercept),
                *((f"variable {name!r}", value)
                  for name, value in self.declaration.variables.items())]
        for what, expression in kept:
            if not isinstance(expression, cp.Expression):
                continue
            cols = np.concatenate([self.compiled.offsets[v.id] + np.arange(v.size)
                                   for v in expression.variables()] or [np.zeros(0, np.intp)])
            if not np.isin(cols, self.master.columns).all():
                raise ValueError(f"The {self.name!r} formulation's {what} depends on per-point "
                                 "variables, which stay on the workers over row blocks; fit "
                                 "on numpy arrays.")

    def intercept(self, v: Array, value: float) -> tuple[float | Array, dict[str, Any]]:
        """The declared intercept and named variables at the Schur unknowns ``v`` (u and the
        dense variables)."""
        intercept = self.declaration.intercept
        if isinstance(intercept, cp.Expression) or self.declaration.variables:
            x = np.zeros(self.compiled.n_own)
            cols = self.master.columns
            keep = cols < len(x)
            x[cols[keep]] = v[:len(cols)][keep]
            unpack(self.problem, self.compiled, x, value)
        b = np.asarray(intercept.value if isinstance(intercept, cp.Expression) else intercept,
                       dtype=float)
        return float(b) if b.ndim == 0 else b, solution_variables(self.declaration)

    def _check_workers(self, subs: list[SubProblem], where: list[list[str] | None]) -> None:
        """Refuse where a worker's blocks would exceed its memory limit.

        A block holds its rows, K_XZ and Φ_j (n × Nz·K each) and what its part's
        structured solve needs (`structure_bytes`, the structured backend's estimate).
        """
        Nz, K = self.n_expansion, self.K

        def need(sub: SubProblem) -> int:
            n = sub.points[1] - sub.points[0]
            nnz = sub.A.nnz + sub.P.nnz + len(sub.c) + len(sub.b)
            return 8 * n * (self.n_features + 2 * Nz * K) + structure_bytes(
                sub.block_entries, nnz, n, Nz, K)

        check_worker_memory(self.client, [(w[0] if w else None, need(sub))
                                          for sub, w in zip(subs, where, strict=True)],
                            f"The {self.name!r} formulation's row blocks on worker {{worker}} "
                            f"(Nz={Nz})")

    def marginal(self) -> DeclaredBlocksMarginal:
        return DeclaredBlocksMarginal(self)

    def initial_rows(self, n: int, balanced: bool, seed: int) -> Array:
        """``n`` rows drawn uniformly from the blocks (evenly over the labels of y with
        ``balanced``); only the drawn rows travel."""
        def sample(group: Any, count: int, seeds: NDArray[np.int64]) -> list[tuple[Array, int]]:
            return [f.result() for f in [actor.sample(group, count, int(s))
                                         for actor, s in zip(self.actors, seeds, strict=True)]]

        return draw_rows(sample, len(self.actors), n, self.classes if balanced else [None],
                         seed)

    def close(self) -> None:
        self.actors = []
        self.client.cancel(self._futures)


class DeclaredBlocksMarginal(Marginal):
    """W(Z) and ∇W(Z) of a declared formulation over row blocks (`DeclaredBlocks`).

    Attributes
    ----------
    sent_bytes, received_bytes : int
        Payload bytes sent to and returned by the blocks in the last evaluation
        (arrays and numbers; Dask's own messages not counted).
    iterations : int
        Interior-point iterations of the last evaluation.
    last_solve_seconds : float
        Time in the interior point (its calls to the blocks included).
    """

    def __init__(self, blocks: DeclaredBlocks) -> None:
        self.blocks = blocks
        self.formulation_name = blocks.name
        self.n_expansion = blocks.n_expansion
        self.sent_bytes = self.received_bytes = self.iterations = 0
        self.last_solve_seconds = 0.0
        self.poll_seconds = 2.0  # how often a waiting call checks its blocks' workers

    def _call(self, method: str, *args: Any) -> list[Any]:
        """``BlockPart.method(*args)`` on every block's part, in parallel."""
        return self._call_actors("call", method, *args)

    def _call_actors(self, method: str, *args: Any) -> list[Any]:
        """``BlockActor.method(*args)`` on every block, in parallel.

        Raises `_BlockLost` where a block fails (its worker left, or its part failed:
        `evaluate` tells the two apart).
        """
        try:
            results = on_actors(self.blocks.actors, method, *args, alive=self.blocks.alive,
                                poll=self.poll_seconds)
        except Exception as error:
            raise _BlockLost(method) from error
        self.sent_bytes += len(results) * payload_bytes(args)
        self.received_bytes += payload_bytes(results)
        return results

    def evaluate(self, Z: Array, grad: bool = True) -> Evaluation:
        """W(Z) and ∇W(Z); started over where blocks were lost with their workers (at most
        `MAX_LOSSES` times)."""
        for _ in range(MAX_LOSSES):
            try:
                return self._evaluate(Z, grad)
            except _BlockLost as lost:
                cause = lost.__cause__
                if not self.blocks.recover():  # no worker left: the part itself failed
                    raise SolverError(
                        f"The structured interior point over row blocks failed in {lost} "
                        f"(formulation {self.formulation_name!r}): {type(cause).__name__}: "
                        f"{cause}. Fit on numpy arrays to let the general conic solvers "
                        "try.") from cause
        raise SolverError(
            f"The structured interior point over row blocks lost row blocks {MAX_LOSSES} "
            f"times in one evaluation (workers left the cluster; formulation "
            f"{self.formulation_name!r}). Check the workers' logs (memory limits, "
            "preemption) and fit again.")

    def _evaluate(self, Z: Array, grad: bool) -> Evaluation:
        blocks = self.blocks
        Z = check_expansion_vectors(Z, self.n_expansion, blocks.n_features,
                                    self.formulation_name)
        self.sent_bytes = self.received_bytes = 0
        kernel, K, Nz = blocks.kernel, blocks.K, self.n_expansion
        K_zz = kernel(Z, Z)
        T = whitening(K_zz + blocks.jitter * np.eye(len(Z)))
        self._call_actors("prepare", Z, T)
        start = time.perf_counter()
        statuses = []
        for attempt in blocks.backend.attempts(blocks.tol):
            options = {k: v for k, v in attempt.options.items() if k != "warm_start"}
            result = interior_point(Parts(blocks.master, self._call), IPMSettings(**options))
            status = blocks.backend.status(result)
            statuses.append(f"{attempt.label}: {status}")
            accuracy = (attempt.accuracy if status == cp.OPTIMAL
                        else attempt.inaccurate if status == cp.OPTIMAL_INACCURATE else None)
            if accuracy is not None:
                break
        else:
            raise SolverError(
                f"The structured interior point over row blocks did not solve the "
                f"{self.formulation_name!r} formulation (N={blocks.N}, Nz={Nz}): "
                f"{'; '.join(statuses)}. Loosen solver_tol, or fit on numpy arrays to let "
                "the general conic solvers try.")
        self.last_solve_seconds = time.perf_counter() - start
        self.iterations = result.iterations
        value = result.objective + blocks.master.offset
        v = np.concatenate([result.point.x, result.point.y])  # the Schur unknowns
        u = v[:Nz * K].reshape((Nz, K), order="F")
        uu = (u * u).sum(0)
        terms = np.sum(self._call_actors("link_terms", u), axis=0)
        c = np.where(uu > 0, terms / (2 * np.where(uu > 0, uu, 1.0)), 0.0)
        B = T @ u
        beta = B.ravel() if K == 1 else B
        intercept, variables = blocks.intercept(v, value)
        accuracy *= max(1.0, abs(value))
        kept: dict[str, Any] = {"variables": variables,
                                "diagonal_coef": blocks.declaration.diagonal_coef}
        if not grad:
            return Evaluation(value, None, beta, intercept, "structured, row blocks", accuracy,
                              **kept)
        gradient = kernel.vjp_zz(Z, (B * c) @ B.T, K_zz)
        gradient += np.sum(self._call_actors("gradient", Z, B), axis=0)
        return Evaluation(value, gradient, beta, intercept, "structured, row blocks", accuracy,
                          **kept)
