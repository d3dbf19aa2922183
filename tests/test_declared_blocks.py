"""One declared problem split by row blocks: the parts' interior point is the whole one's.

`sparsify.core.structured.parts` splits a point-separable problem into parts whose
Schur complements, residuals and costs add up to the whole problem's; the parts'
interior point is the whole one's loop (`ipm.interior_point`) on `Parts`: the same
steps as on the whole problem, with the sums in another order. So W agrees to far
better than the gap it stops at (1e-11 relative here) and ν to far better than the
1e-6 of its scale the backend's gradients promise; the tests ask for those. Over a
Dask cluster (`sparsify.core.declared_blocks`) the same holds for W(Z), ∇W(Z), β and
b against the in-memory generic path, and each iteration moves O(Nz²) numbers per
block, whatever the block's rows.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import cvxpy as cp
import numpy as np
import pytest

from sparsify import (
    RBF,
    ConicMarginal,
    Declaration,
    Formulation,
    Polynomial,
    SparseKernelClassifier,
    SparseKernelRegressor,
)
from sparsify.core.backends import StructuredBackend
from sparsify.core.kernel_blocks import whitening
from sparsify.core.structured.ipm import IPMSettings, interior_point, solve
from sparsify.core.structured.kkt import StructureError
from sparsify.core.structured.parts import LocalParts, Parts, crossing, split

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
from declared_formulations import (
    CrammerSinger,
    EpsilonSVR,
    HuberSVM,
    KernelRidgeRegression,
    LapRLS,
    NuSVM,
    QuantileRegression,
)

SETTINGS = IPMSettings(tol_gap_abs=1e-11, tol_gap_rel=1e-11, tol_feas=1e-10)


def _data(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    labels = np.where(X[:, 0] + 0.3 * rng.normal(size=n) > 0, 1, -1)
    return X, labels, np.sin(X[:, 0]) + 0.1 * rng.normal(size=n)


FORMULATIONS = [
    (HuberSVM(C=10.0), "labels"),          # a second-order cone per point, the intercept
    (EpsilonSVR(C=10.0), "targets"),       # three orthant rows per point
    (NuSVM(), "labels"),                   # a margin ρ and a dense row over every point
    (QuantileRegression(), "targets"),
    (KernelRidgeRegression(lam=0.1), "targets"),  # no cone: one Newton step
]


def _linked(formulation: Any, X: np.ndarray, y: np.ndarray, Nz: int) -> tuple[Any, ...]:
    """The compiled problem, its structure and Φ at some XVs, as the structured backend has them."""
    marginal = ConicMarginal(formulation, X, y, RBF(0.5), Nz, solver="structured")
    compiled = marginal._compile(marginal.backends[0].layout)
    marginal._ready(marginal.backends[0])
    problem = compiled.problem
    Z = X[:Nz] + 0.01
    K_zz = RBF(0.5)(Z, Z) + marginal.jitter * np.eye(Nz)
    Phi = RBF(0.5)(X, Z) @ whitening(K_zz)
    return problem, problem.cache["structured"]["structure"], Phi


@pytest.mark.parametrize("formulation, kind", FORMULATIONS,
                         ids=[type(f).__name__ for f, _ in FORMULATIONS])
def test_the_parts_solve_the_whole_problem(formulation: Any, kind: str) -> None:
    X, labels, targets = _data(500)
    y = labels if kind == "labels" else targets
    problem, st, Phi = _linked(formulation, X, y, 8)
    whole = solve(st, problem.own.c, problem.own.b, Phi, SETTINGS)
    x = whole.point.x
    W = 0.5 * x @ (st.P @ x) + problem.own.c @ x
    bounds = [0, 120, 121, 390, 500]  # uneven, one of a single point
    master, subs = split(problem.own, problem.layout, st, bounds)
    parts = LocalParts(subs)
    for part, sub in zip(parts.parts, subs, strict=True):
        part.set_phi(Phi[slice(*sub.points)])
    system = Parts(master, parts)
    result = interior_point(system, SETTINGS)
    assert result.status == whole.status == "optimal"
    assert abs(result.objective - W) <= 1e-11 * max(1.0, abs(W))
    nu = np.concatenate([part.p.nu for part in parts.parts])
    assert np.abs(nu - whole.point.nu).max() <= 1e-6 * max(1.0, np.abs(nu).max())
    v = system.schur_values()
    assert np.allclose(v[:len(master.columns)], x[master.columns], rtol=1e-6, atol=1e-8)


def test_the_parts_end_at_the_best_iterate_as_the_whole_problem_does(monkeypatch) -> None:
    """Where the iterations stop at an iterate worse than an earlier one, both systems go
    back to the best (here, by a measure of distance that only grows, the first)."""
    from sparsify.core.structured import ipm

    X, _, targets = _data(200)
    problem, st, Phi = _linked(EpsilonSVR(C=10.0), X, targets, 6)
    master, subs = split(problem.own, problem.layout, st, [0, 90, 200])
    parts = LocalParts(subs)
    for part, sub in zip(parts.parts, subs, strict=True):
        part.set_phi(Phi[slice(*sub.points)])
    settings = IPMSettings(max_iter=4)
    measured = []

    def growing(measures: tuple[float, ...]) -> float:
        measured.append(measures)
        return float(len(measured))

    monkeypatch.setattr(ipm, "_worst", growing)
    whole = solve(st, problem.own.c, problem.own.b, Phi, settings)
    first = measured[0]
    measured.clear()
    split_run = interior_point(Parts(master, parts), settings)
    assert whole.status == split_run.status == "max_iter"
    assert whole.gap == first[1] and split_run.gap == pytest.approx(first[1], rel=1e-9)
    x = whole.point.x  # the point returned is the first iterate, whose cost was measured
    assert 0.5 * x @ (st.P @ x) + problem.own.c @ x == pytest.approx(whole.objective, rel=1e-12)
    assert abs(split_run.objective - whole.objective) <= 1e-9 * max(1.0, abs(whole.objective))
    nu = np.concatenate([part.p.nu for part in parts.parts])
    np.testing.assert_allclose(nu, whole.point.nu, rtol=1e-9, atol=1e-12)


def test_an_intercept_below_the_density_threshold_is_taken_out_of_the_blocks() -> None:
    """At 24 points b meets too few to count as dense, so the whole problem's partition
    has one block holding b and every point; `crossing` names it, and the split works."""
    X, _, targets = _data(24)
    problem, st, Phi = _linked(KernelRidgeRegression(lam=0.1), X, targets, 4)
    bounds = [0, 8, 16, 24]
    with pytest.raises(StructureError):
        split(problem.own, problem.layout, st, bounds)
    dense = crossing(problem.own, problem.layout, bounds)
    assert len(dense) == 1  # b
    st = StructuredBackend("structured").structure(problem, dense=dense)
    master, subs = split(problem.own, problem.layout, st, bounds)
    parts = LocalParts(subs)
    for part, sub in zip(parts.parts, subs, strict=True):
        part.set_phi(Phi[slice(*sub.points)])
    W_parts = interior_point(Parts(master, parts), SETTINGS).objective
    x = solve(st, problem.own.c, problem.own.b, Phi, SETTINGS).point.x
    W = 0.5 * x @ (st.P @ x) + problem.own.c @ x
    assert abs(W_parts - W) <= 1e-11 * max(1.0, abs(W))


def test_a_graph_over_all_points_does_not_split() -> None:
    X, labels, _ = _data(300)
    y = labels.astype(float)
    y[::3] = np.nan  # unlabelled points
    problem, st, _ = _linked(LapRLS(), X, y, 6)
    with pytest.raises(StructureError, match="couple points of different row blocks"):
        split(problem.own, problem.layout, st, [0, 150, 300])
    split(problem.own, problem.layout, st, [0, 300])  # one block holds the whole graph


# -- over a Dask cluster -------------------------------------------------------------------

distributed = pytest.importorskip("distributed", reason="needs dask[distributed]")
da = pytest.importorskip("dask.array", reason="needs dask[array]")


def _blocks(client: Any, formulation: Any, X: np.ndarray, y: np.ndarray, positive: Any,
            rows: int, Nz: int, kernel: Any = None) -> Any:
    from sparsify.core.data_source import RowBlocks, RowTarget
    from sparsify.core.declared_blocks import DeclaredBlocks

    source = RowBlocks(da.from_array(X, chunks=(rows, X.shape[1])),
                       da.from_array(y, chunks=rows), "test")
    return DeclaredBlocks(formulation, source, RowTarget(positive),
                          RBF(0.5) if kernel is None else kernel, Nz, 1e-9)


ON_BLOCKS = [*FORMULATIONS[:3], (CrammerSinger(C=1.0), "codes")]  # K = 3 outputs


@pytest.mark.parametrize("formulation, kind", ON_BLOCKS,
                         ids=[type(f).__name__ for f, _ in ON_BLOCKS])
def test_over_row_blocks_w_and_its_gradient_are_the_in_memory_ones(
        client: Any, formulation: Any, kind: str) -> None:
    X, labels, targets = _data(1200, seed=1)
    Nz = 10
    Z = X[:Nz] + 0.01
    codes = np.digitize(targets, [-0.5, 0.5])  # three classes
    y, positive = {"labels": (labels, 1), "targets": (targets, None),
                   "codes": (codes, None)}[kind]
    local = ConicMarginal(formulation, X, y, RBF(0.5), Nz, solver="structured").evaluate(Z)
    sizes = {}
    for rows in (300, 600):
        blocks = _blocks(client, formulation, X, y, positive, rows, Nz)
        marginal = blocks.marginal()
        remote = marginal.evaluate(Z)
        n_blocks = len(blocks.actors)
        blocks.close()
        # both stop at a gap of 1e-11 of W (tol 1e-9, aimed at tol/100)
        assert remote.value == pytest.approx(local.value, rel=1e-9)
        assert np.abs(remote.grad - local.grad).max() <= 1e-6 * np.abs(local.grad).max()
        assert np.allclose(remote.coef, local.coef, rtol=1e-6, atol=1e-8)
        assert remote.intercept == pytest.approx(local.intercept, rel=1e-6, abs=1e-8)
        sizes[rows] = (marginal.sent_bytes + marginal.received_bytes) / n_blocks \
            / marginal.iterations
    # per iteration a block's traffic is its share of the (Nz + a few)² Schur complement and
    # a few vectors of that size: the same for 300 rows as for 600, and far below 300 numbers
    n_schur = Nz * remote.coef.reshape(Nz, -1).shape[1] + 3
    assert sizes[300] == pytest.approx(sizes[600], rel=0.05)
    assert sizes[600] <= 8 * 12 * (n_schur * n_schur + 10 * n_schur)


class DiagonalHuber(Formulation):
    """A Huber regression whose points weigh 1 / (1 + k(x_i, x_i)), keeping 2b by name."""

    name = "blocks_diagonal_huber"

    def __init__(self, per_point: bool = False) -> None:
        self.per_point = per_point

    def declare(self, out):
        b, slack = cp.Variable(), cp.Variable(out.n_samples)
        scale = 1.0 / (1.0 + out.kernel_diagonal)
        loss = cp.sum(cp.multiply(scale, cp.huber(slack, 0.5)))
        kept = {"slack": slack} if self.per_point else {"twice_b": 2 * b}
        return Declaration(cp.Minimize(0.5 * out.norm_w2 + 10 * loss),
                           [slack == out.y - out.f - b], b, variables=kept)


def test_named_variables_and_the_kernel_diagonal_over_row_blocks_are_the_in_memory_ones(
        client: Any) -> None:
    X, _, targets = _data(600, seed=3)
    kernel, Nz = Polynomial(gamma=0.5, degree=2, coef0=1.0), 6
    Z = X[:Nz] + 0.01
    local = ConicMarginal(DiagonalHuber(), X, targets, kernel, Nz,
                          solver="structured").evaluate(Z)
    blocks = _blocks(client, DiagonalHuber(), X, targets, None, 200, Nz, kernel)
    try:
        remote = blocks.marginal().evaluate(Z)
    finally:
        blocks.close()
    assert remote.value == pytest.approx(local.value, rel=1e-9)
    assert remote.variables["twice_b"] == pytest.approx(local.variables["twice_b"], rel=1e-6,
                                                        abs=1e-8)
    assert remote.variables["twice_b"] == pytest.approx(2 * remote.intercept, rel=1e-12)
    with pytest.raises(ValueError, match="variable 'slack' depends on per-point variables"):
        _blocks(client, DiagonalHuber(per_point=True), X, targets, None, 200, Nz, kernel)


class HuberClassifier(SparseKernelClassifier):
    formulation_class = HuberSVM


class QuantileRegressor(SparseKernelRegressor):
    formulation_class = QuantileRegression


@pytest.mark.parametrize("estimator, kind", [
    (HuberClassifier(C=10.0, gamma=2.0, max_iter=8), "labels"),
    (QuantileRegressor(gamma=2.0, max_iter=8), "targets"),
], ids=["classifier", "regressor"])
def test_a_declared_estimator_fits_dask_arrays_as_numpy_arrays(
        client: Any, estimator: Any, kind: str) -> None:
    """A ratio n_expansion draws the initial XVs from the rows collected once, as in memory;
    both fits then follow the same W(Z) (equal to 1e-9) to the same model."""
    X, labels, targets = _data(600, seed=2)
    y = labels if kind == "labels" else targets
    local = estimator.set_params(n_expansion=0.05, random_state=0).fit(X, y)
    expected = local.predict(X)
    remote = estimator.fit(da.from_array(X, chunks=(200, 2)), da.from_array(y, chunks=200))
    assert np.array_equal(remote.expansion_vectors_.shape, local.expansion_vectors_.shape)
    got = remote.predict(X)
    if kind == "labels":
        assert (got == expected).mean() >= 0.99
    else:
        assert np.abs(got - expected).max() <= 1e-4 * max(1.0, np.abs(expected).max())


def test_a_formulation_that_does_not_split_is_refused_with_the_reason(client: Any) -> None:
    from sparsify.algorithms.klr.formulation import KLR

    X, labels, _ = _data(200)
    with pytest.raises(ValueError, match="over row blocks needs the structured interior "
                                         "point, which cannot take it"):
        _blocks(client, KLR(), X, labels, 1, 100, 4)
    from sparsify.core.data_source import RowBlocks, RowTarget
    from sparsify.core.declared_blocks import DeclaredBlocks

    source = RowBlocks(da.from_array(X, chunks=(100, 2)), da.from_array(labels, chunks=100),
                       "test")
    with pytest.raises(ValueError, match="takes no class or row weights"):
        DeclaredBlocks(HuberSVM(), source, RowTarget(1, {1: 2.0}), RBF(0.5), 4, 1e-9)
    bad = X.copy()
    bad[3, 1] = np.nan
    with pytest.raises(ValueError, match=r"X passed to test\.fit contains NaN or infinity"):
        RowBlocks(da.from_array(bad, chunks=(100, 2)), da.from_array(labels, chunks=100), "test")
    targets = np.sin(X[:, 0])
    targets[7] = np.inf
    source = RowBlocks(da.from_array(X, chunks=(100, 2)), da.from_array(targets, chunks=100),
                       "test")
    with pytest.raises(ValueError, match="needs finite targets: y contains NaN or infinity"):
        DeclaredBlocks(EpsilonSVR(), source, RowTarget(None), RBF(0.5), 4, 1e-9)


def test_a_lost_worker_costs_a_restart_not_the_answer(client: Any) -> None:
    """Closing a worker between evaluations: its blocks' actors are made again on the worker
    left (rows computed again, parts sent again) and the evaluation gives the in-memory W."""
    import logging

    X, labels, _ = _data(800, seed=3)
    Nz = 6
    Z = X[:Nz] + 0.01
    local = ConicMarginal(HuberSVM(C=10.0), X, labels, RBF(0.5), Nz, solver="structured")
    # a cluster of its own (a worker of it is closed), its client the current one meanwhile
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=":0", silence_logs=logging.ERROR) as cluster, \
            distributed.Client(cluster, set_as_default=False) as own, own.as_current():
        blocks = _blocks(own, HuberSVM(C=10.0), X, labels, 1, 200, Nz)
        remote = blocks.marginal()
        assert remote.evaluate(Z).value == pytest.approx(local.evaluate(Z).value, rel=1e-9)
        worker = next(iter(cluster.workers.values()))
        own.sync(worker.close)
        a, b = remote.evaluate(Z + 0.01), local.evaluate(Z + 0.01)
        assert a.value == pytest.approx(b.value, rel=1e-9)
        assert np.abs(a.grad - b.grad).max() <= 1e-6 * np.abs(b.grad).max()
        left = set(own.scheduler_info()["workers"])
        assert all(set(own.who_has([f])[f.key]) <= left for f in blocks._futures)
        blocks.close()


def test_blocks_a_worker_cannot_hold_are_refused_before_they_are_made(client: Any) -> None:
    from dataclasses import replace

    from sparsify.core.errors import MemoryEstimateError

    limits = {w: info["memory_limit"] for w, info in client.scheduler_info()["workers"].items()}
    if not all(limits.values()):
        pytest.skip("the test cluster's workers have no memory limit")
    X, labels, _ = _data(200)
    blocks = _blocks(client, HuberSVM(), X, labels, 1, 100, 4)
    worker = next(iter(limits))
    # a part whose blocks' entries (5 copies at 8 bytes) alone exceed the worker's limit
    huge = replace(blocks._subs[0], block_entries=max(limits.values()) // 8)
    with pytest.raises(MemoryEstimateError, match="row blocks on worker"):
        blocks._check_workers([huge], [[worker]])
    blocks._check_workers(blocks._subs, [[worker]] * len(blocks._subs))  # the real ones fit
    blocks.close()
