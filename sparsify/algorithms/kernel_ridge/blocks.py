"""Kernel ridge regression's closed-form W(Z) and ∇W(Z) over row blocks on a Dask cluster.

The closed form (`sparsify.algorithms.kernel_ridge.closed_form`) needs the rows only
through sums: with the whitened features F = K_XZ T of each block, the driver adds
the blocks' Σ F, Σ y, FᵀF and Fᵀy, centres them (F_cᵀF_c = FᵀF − N F̄F̄ᵀ), and solves
the Nz × Nz system for γ; a second pass gives each block's residuals r, its part of
W (‖r‖²) and of ∇W (Lemma 1 with ν = 2r). Per evaluation Z and T go out and
Nz × Nz-sized sums come back; nothing N-sized leaves a worker.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.linalg
from numpy.typing import NDArray

from sparsify.core.data_source import (
    BlockProblem,
    RowBlocks,
    RowTarget,
    check_worker_memory,
    draw_rows,
)
from sparsify.core.kernel_blocks import diagonal_scale, link_gradient_xz, whitening
from sparsify.core.marginal import Evaluation, Marginal, check_expansion_vectors
from sparsify.kernels import Kernel

__all__ = ["RidgeBlocks", "RowBlockRidgeMarginal"]

Array = NDArray[np.float64]


@dataclass
class _Rows:
    """One row block on its worker: inputs, targets, and the last evaluation's K_XZ and F."""

    X: Array
    y: Array
    K_xz: Array | None = None
    F: Array | None = None


def _make_rows(X: Any, y: Any) -> _Rows:
    return _Rows(np.ascontiguousarray(X, dtype=float), np.asarray(y, dtype=float).ravel())


def _sums(rows: _Rows, Z: Array, T: Array, kernel: Kernel) -> tuple[Any, ...]:
    """The block's K_XZ and F = K_XZ T (kept), and Σ F, Σ y, FᵀF, Fᵀy, its row count."""
    rows.K_xz = kernel(rows.X, Z)
    rows.F = rows.K_xz @ T
    return rows.F.sum(axis=0), float(rows.y.sum()), rows.F.T @ rows.F, rows.F.T @ rows.y, \
        len(rows.y)


def _settle(rows: _Rows, Z: Array, gamma: Array, beta: Array, F_mean: Array, y_mean: float,
            kernel: Kernel, grad: bool) -> tuple[float, Array | None]:
    """The block's ‖r‖² and its part of ∇W (the K_XZ term of Lemma 1, ν = 2r)."""
    assert rows.F is not None and rows.K_xz is not None
    r = rows.y - y_mean - (rows.F - F_mean) @ gamma
    if not grad:
        return float(r @ r), None
    return float(r @ r), link_gradient_xz(kernel, rows.X, Z, rows.K_xz, 2.0 * r, beta)


def _diagonal_sum(rows: _Rows, kernel: Kernel) -> float:
    return diagonal_scale(kernel, rows.X) * len(rows.y)


def _sample(rows: _Rows, n: int, seed: int) -> tuple[Array, int]:
    pick = np.random.default_rng(seed).choice(len(rows.y), min(n, len(rows.y)), replace=False)
    return rows.X[np.sort(pick)], len(rows.y)


class RowBlockRidgeMarginal(Marginal):
    """Kernel ridge's W(Z) and ∇W(Z) over row blocks (`RidgeBlocks`), in closed form.

    The same W as `sparsify.algorithms.kernel_ridge.closed_form.RidgeMarginal` on
    the rows in memory, to rounding (the centred sums are formed from uncentred ones).
    """

    formulation_name = "kernel_ridge"

    def __init__(self, client: Any, blocks: list[Any], alpha: float, kernel: Kernel,
                 n_expansion: int, n_features: int, jitter: float) -> None:
        self.client, self.blocks, self.alpha, self.kernel = client, blocks, float(alpha), kernel
        self.n_expansion, self.n_features, self.jitter = n_expansion, n_features, jitter

    def _map(self, fn: Any, *args: Any) -> list[Any]:
        return self.client.gather([self.client.submit(fn, block, *args, pure=False)
                                   for block in self.blocks])

    def evaluate(self, Z: Array, grad: bool = True) -> Evaluation:
        Z = check_expansion_vectors(Z, self.n_expansion, self.n_features, self.formulation_name)
        K_zz = self.kernel(Z, Z)
        T = whitening(K_zz + self.jitter * np.eye(len(Z)))
        parts = self._map(_sums, Z, T, self.kernel)
        n = sum(p[4] for p in parts)
        F_mean = np.sum([p[0] for p in parts], axis=0) / n
        y_mean = sum(p[1] for p in parts) / n
        gram = np.sum([p[2] for p in parts], axis=0) - n * np.outer(F_mean, F_mean)
        Fty = np.sum([p[3] for p in parts], axis=0) - n * F_mean * y_mean
        gram[np.diag_indices_from(gram)] += self.alpha
        gamma = scipy.linalg.cho_solve(scipy.linalg.cho_factor(gram), Fty)
        beta = T @ gamma
        intercept = float(y_mean - F_mean @ gamma)
        settled = self._map(_settle, Z, gamma, beta, F_mean, y_mean, self.kernel, grad)
        value = float(sum(s[0] for s in settled) + self.alpha * gamma @ gamma)
        gradient = None
        if grad:
            gradient = self.kernel.vjp_zz(Z, self.alpha * np.outer(beta, beta), K_zz)
            gradient += np.sum([s[1] for s in settled], axis=0)
        return Evaluation(value, gradient, beta, intercept, "closed form, row blocks")


class RidgeBlocks(BlockProblem):
    """Kernel ridge regression's problem over the row blocks of a `RowBlocks` source."""

    def __init__(self, source: RowBlocks, target: RowTarget, alpha: float, kernel: Kernel,
                 n_expansion: int) -> None:
        from dask import delayed
        from distributed import wait

        if target.row_weight is not None or target.label_weights:
            raise ValueError("Kernel ridge over row blocks takes no row weights.")
        self.client, self.alpha, self.kernel = source.client, alpha, kernel
        self.n_expansion, self.n_features = n_expansion, source.n_features
        self.blocks = self.client.compute(
            [delayed(_make_rows)(x, y) for x, y in zip(source.X.to_delayed().ravel(),
                                                       source.y.to_delayed().ravel(),
                                                       strict=True)])
        wait(self.blocks)
        self._check_memory(source)
        diagonal = sum(self.client.gather([self.client.submit(_diagonal_sum, b, kernel)
                                           for b in self.blocks])) / source.n_samples
        # the same relative jitter as in memory, so both solve the same problem
        self.jitter = 1e-10 * max(diagonal, 1e-300)

    def _check_memory(self, source: RowBlocks) -> None:
        """Refuse, before any kernel block, where a worker's blocks would exceed its memory
        limit: each block holds its K_XZ and F (n × Nz each) beside its rows."""
        who = self.client.who_has(self.blocks)
        check_worker_memory(
            self.client, [(address, 8 * int(n) * (2 * self.n_expansion + self.n_features + 2))
                          for block, n in zip(self.blocks, source.X.chunks[0], strict=True)
                          for address in list(who.get(block.key, ()))[:1]],
            f"Kernel ridge's blocks on worker {{worker}} (Nz={self.n_expansion})")

    def marginal(self) -> RowBlockRidgeMarginal:
        return RowBlockRidgeMarginal(self.client, self.blocks, self.alpha, self.kernel,
                                     self.n_expansion, self.n_features, self.jitter)

    def initial_rows(self, n: int, balanced: bool, seed: int) -> Array:
        """Uniform over the rows: each block sends up to ``n`` random rows and its count, and
        the driver draws from them, each weighted by its block's count over the rows sent."""
        def sample(_: Any, count: int, seeds: NDArray[np.int64]) -> list[tuple[Array, int]]:
            parts: list[tuple[Array, int]] = self.client.gather(
                [self.client.submit(_sample, b, count, int(seeds[k]), pure=False)
                 for k, b in enumerate(self.blocks)])
            return parts

        return draw_rows(sample, len(self.blocks), n, [None], seed)

    def close(self) -> None:
        self.client.cancel(self.blocks)
