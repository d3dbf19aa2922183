"""The SVM formulation's W(Z) and ∇W(Z) over row blocks on a local Dask cluster.

The distributed evaluation must be the in-memory fast path's (`SVMDualMarginal`) to the
KKT tolerance both stop at, with the N-sized work done on the workers and only Nz-sized
objects and the polish's few rows coming back; a fit on dask collections must give the
in-memory model. The same for the squared hinge's finite Newton method
(`SquaredHingeMarginal`), exact on both sides.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import pytest

from sparsify import RBF, SparseSVC
from sparsify.core.kernel_blocks import diagonal_scale, triangular_whitening
from sparsify.core.optimize import minimize_marginal
from sparsify.datasets import make_checkerboard, make_ringnorm

distributed = pytest.importorskip("distributed", reason="needs dask[distributed]")
da = pytest.importorskip("dask.array", reason="needs dask[array]")

from sparsify.algorithms.svm.distributed import (  # noqa: E402
    DistributedSVMMarginal,
    initial_rows,
    make_blocks,
)
from sparsify.algorithms.svm.distributed_smoothed import smoothed_path  # noqa: E402
from sparsify.algorithms.svm.distributed_squared_hinge import (  # noqa: E402
    DistributedSquaredHingeMarginal,
)
from sparsify.algorithms.svm.formulation import SVM  # noqa: E402
from sparsify.algorithms.svm.squared_hinge import SquaredHingeMarginal  # noqa: E402
from sparsify.svm_dual import SVMDualMarginal  # noqa: E402
from sparsify.svm_dual.smoothed import WIDTHS, hinge_partition, smoothed_hinge_path  # noqa: E402

N, NZ, C, GAMMA = 3000, 8, 1.0, 1.0 / 20


@pytest.fixture(scope="module")
def ringnorm() -> tuple[np.ndarray, np.ndarray]:
    return make_ringnorm(N, random_state=0)


@pytest.fixture(scope="module")
def blocks(client: Any, ringnorm: tuple[np.ndarray, np.ndarray]) -> Any:
    X, y = ringnorm
    blocks = make_blocks(client, da.from_array(X, chunks=N // 4),
                         da.from_array(y, chunks=N // 4), 1, C)
    yield blocks
    client.cancel(blocks)


def _distributed(client: Any, blocks: Any, X: np.ndarray,
                 marginal: type[DistributedSVMMarginal] = DistributedSVMMarginal
                 ) -> DistributedSVMMarginal:
    kernel = RBF(GAMMA)
    return marginal(client, blocks, kernel, NZ, diagonal=diagonal_scale(kernel, X))


def _squared_hinge(X: np.ndarray, y: np.ndarray, nz: int = NZ) -> SquaredHingeMarginal:
    return SquaredHingeMarginal(C, X, y, RBF(GAMMA), nz, formulation=SVM(C, loss="squared_hinge"))


def test_evaluation_equals_the_in_memory_fast_path(client: Any, blocks: Any,
                                                   ringnorm: tuple[np.ndarray, np.ndarray]
                                                   ) -> None:
    X, y = ringnorm
    remote = _distributed(client, blocks, X)
    local = SVMDualMarginal(C, X, y, RBF(GAMMA), NZ, formulation=SVM(C))
    rng = np.random.default_rng(0)
    Z = X[rng.choice(N, NZ, replace=False)]
    with distributed.get_task_stream(client) as stream:
        for step in range(3):  # the second and third are warm-started from the first
            Zk = Z + 0.05 * step * rng.standard_normal(Z.shape)
            a, b = remote.evaluate(Zk), local.evaluate(Zk)
            # both polish to the same KKT tolerance (1e-9) on the same whitened rows
            assert a.value == pytest.approx(b.value, rel=1e-8)
            np.testing.assert_allclose(a.grad, b.grad, rtol=1e-6, atol=1e-8 * np.abs(b.grad).max())
            np.testing.assert_allclose(a.coef, b.coef, rtol=1e-6, atol=1e-8 * np.abs(b.coef).max())
            assert float(a.intercept) == pytest.approx(float(b.intercept), abs=1e-7)
            # Z, T, u and the polish's rows travel, never an N-vector
            assert remote.received_bytes < 8 * N and remote.sent_bytes < 8 * N
    workers = set(client.scheduler_info()["workers"])
    for name, calls in (("_prepare", 3), ("_settle_rows", 3), ("_round", 1)):
        ran = [t for t in stream.data if name in str(t["key"])]
        assert len(ran) >= calls * len(blocks), name
        assert {t["worker"] for t in ran} == workers, name


@pytest.mark.slow
def test_lbfgs_follows_the_in_memory_path(client: Any, blocks: Any,
                                          ringnorm: tuple[np.ndarray, np.ndarray]) -> None:
    X, y = ringnorm
    Z0 = initial_rows(client, blocks, NZ, None, seed=1)
    assert Z0.shape == (NZ, X.shape[1])
    assert all((X == z).all(axis=1).any() for z in Z0)  # rows of the training data
    remote = minimize_marginal(_distributed(client, blocks, X), Z0, max_iter=8)
    local = minimize_marginal(SVMDualMarginal(C, X, y, RBF(GAMMA), NZ, formulation=SVM(C)), Z0,
                              max_iter=8)
    assert remote.n_iter == local.n_iter
    assert remote.evaluation.value == pytest.approx(local.evaluation.value, rel=1e-7)
    np.testing.assert_allclose(remote.Z, local.Z, atol=1e-5)


@pytest.mark.slow
def test_the_smoothed_hinge_path_over_blocks_is_the_in_memory_one(
        client: Any, blocks: Any, ringnorm: tuple[np.ndarray, np.ndarray]) -> None:
    """Width by width, the Newton path over the blocks lands on F_δ's minimiser, the point
    the in-memory path yields (both exact: a partition's Newton point, or where the line
    search resolves no more decrease), and the blocks keep α = C ℓ′_δ(r) there."""
    X, y = ringnorm
    remote = _distributed(client, blocks, X)
    local = SVMDualMarginal(C, X, y, RBF(GAMMA), NZ, formulation=SVM(C))
    Z = X[np.random.default_rng(4).choice(N, NZ, replace=False)]
    _, _, T = local.blocks(Z)
    np.testing.assert_allclose(T, triangular_whitening(
        RBF(GAMMA)(Z, Z) + remote.jitter * np.eye(NZ)), rtol=1e-12)
    B = local.signed_rows(local.blocks(Z)[0], T)
    remote._prepare(Z, T)
    ours = list(smoothed_path(remote._map, NZ))
    theirs = list(smoothed_hinge_path(B, y.astype(float), np.full(N, C)))
    assert len(ours) == len(theirs) == len(WIDTHS)
    for (u, b, n_quadratic), (delta, u_ref, b_ref, r) in zip(ours, theirs, strict=True):
        # F_δ's Newton matrix has condition number about C/δ: its minimiser to that
        scale = 1e-10 * max(1.0, C / delta)
        np.testing.assert_allclose(u, u_ref, rtol=0, atol=scale * np.abs(u_ref).max())
        assert b == pytest.approx(b_ref, abs=scale * max(1.0, abs(b_ref)))
        assert n_quadratic == int(np.sum((r > 0) & (r < delta)))
    alpha = np.concatenate(remote._map(lambda rows: rows.alpha))
    np.testing.assert_allclose(alpha, hinge_partition(r, np.full(N, C), delta)[0], atol=1e-8)


@pytest.mark.slow
def test_at_a_large_c_the_smoothed_path_names_the_partition(client: Any) -> None:
    """Checkerboard at C = 10⁶: coordinate descent's rounds leave most rows free, so the
    smoothed hinge's path names the partition the polish settles from; the answer is the
    in-memory fast path's."""
    X, y = make_checkerboard(2000, random_state=0)
    big = make_blocks(client, da.from_array(X, chunks=500), da.from_array(y, chunks=500),
                      1, 1e6)
    kernel = RBF(0.375)
    remote = DistributedSVMMarginal(client, big, kernel, 8, diagonal=1.0)
    local = SVMDualMarginal(1e6, X, y, kernel, 8, formulation=SVM(1e6))
    Z = X[np.random.default_rng(0).choice(2000, 8, replace=False)]
    with distributed.get_task_stream(client) as stream:
        a, b = remote.evaluate(Z), local.evaluate(Z)
    assert remote.n_smoothed == 1
    # both polish to the KKT tolerance 1e-9 on rows with C = 10⁶: W to that times ΣC
    assert a.value == pytest.approx(b.value, rel=1e-8)
    np.testing.assert_allclose(a.grad, b.grad, rtol=1e-6, atol=1e-6 * np.abs(b.grad).max())
    ran = {t["key"].split("-")[0] for t in stream.data}
    assert {"_mark_pieces", "_piece_sums", "_slope_piece", "_keep_alpha"} <= ran
    client.cancel(big)


@pytest.mark.slow
def test_squared_hinge_evaluation_equals_the_in_memory_newton_method(
        client: Any, blocks: Any, ringnorm: tuple[np.ndarray, np.ndarray]) -> None:
    X, y = ringnorm
    remote = _distributed(client, blocks, X, DistributedSquaredHingeMarginal)
    local = _squared_hinge(X, y)
    rng = np.random.default_rng(3)
    Z = X[rng.choice(N, NZ, replace=False)]
    with distributed.get_task_stream(client) as stream:
        for step in range(3):  # the second and third start from the last violators
            Zk = Z + 0.05 * step * rng.standard_normal(Z.shape)
            a, b = remote.evaluate(Zk), local.evaluate(Zk)
            # both the exact minimiser (the Newton point of its own violators) on the same
            # whitened rows: they differ by the order of the sums only
            assert a.value == pytest.approx(b.value, rel=1e-10)
            np.testing.assert_allclose(a.grad, b.grad, rtol=1e-8, atol=1e-10 * np.abs(b.grad).max())
            np.testing.assert_allclose(a.coef, b.coef, rtol=1e-8, atol=1e-10 * np.abs(b.coef).max())
            assert float(a.intercept) == pytest.approx(float(b.intercept), abs=1e-9)
            assert a.solver == "svm-l2-dask" and remote.n_line_steps >= 1
            # per block: Z, T, u, d; the (Nz + 1)² sums per Newton iteration, four numbers per
            # line-search step, the part of ∇W (Nz × d): nothing N-sized
            per_block = ((remote.n_newton + 1) * (NZ + 2) ** 2 + 4 * remote.n_line_steps
                         + NZ * (X.shape[1] + 1) + 16)
            assert remote.received_bytes <= 8 * len(blocks) * per_block
            assert remote.sent_bytes <= 8 * len(blocks) * (per_block + NZ * NZ)
    workers = set(client.scheduler_info()["workers"])
    for name in ("_prepare", "_newton_sums", "_slope_piece", "_settle"):
        ran = [t for t in stream.data if f"{name}-" in str(t["key"])]
        assert len(ran) >= 3 * len(blocks), name
        assert {t["worker"] for t in ran} == workers, name


@pytest.mark.slow
def test_squared_hinge_lbfgs_follows_the_in_memory_path(
        client: Any, blocks: Any, ringnorm: tuple[np.ndarray, np.ndarray]) -> None:
    X, y = ringnorm
    Z0 = initial_rows(client, blocks, NZ, None, seed=2)
    remote = minimize_marginal(_distributed(client, blocks, X, DistributedSquaredHingeMarginal),
                               Z0, max_iter=8)
    local = minimize_marginal(_squared_hinge(X, y), Z0, max_iter=8)
    assert remote.n_iter == local.n_iter
    assert remote.evaluation.value == pytest.approx(local.evaluation.value, rel=1e-9)
    np.testing.assert_allclose(remote.Z, local.Z, atol=1e-7)


def test_balanced_initial_rows_deal_the_classes(client: Any, blocks: Any,
                                                ringnorm: tuple[np.ndarray, np.ndarray]) -> None:
    X, y = ringnorm
    Z0 = initial_rows(client, blocks, 5, [-1, 1], seed=0)
    labels = [int(y[(X == z).all(axis=1)][0]) for z in Z0]
    assert sorted(labels) == [-1, -1, -1, 1, 1]
    with pytest.raises(ValueError, match="n_expansion=5000 asks for 2500 XVs from class -1"):
        initial_rows(client, blocks, 5000, [-1, 1], seed=0)


@pytest.mark.slow
def test_fit_on_dask_collections_matches_the_in_memory_fit(client: Any) -> None:
    dd = pytest.importorskip("dask.dataframe", reason="needs dask[dataframe]")
    pd = pytest.importorskip("pandas")
    from sklearn.datasets import make_blobs
    from sklearn.svm import SVC

    X, y = make_blobs(1200, centers=3, cluster_std=1.0, random_state=2)
    X, X_test, y, y_test = X[:600], X[600:], y[:600], y[600:]
    params = dict(n_expansion=4, C=1.0, gamma=0.5, random_state=0, max_iter=15)
    local = SparseSVC(**params).fit(X, y)
    frame = dd.from_pandas(pd.DataFrame(X, columns=["a", "b"]), npartitions=3)
    labels = dd.from_pandas(pd.Series(y), npartitions=3)
    with distributed.get_task_stream(client) as stream:
        remote = SparseSVC(**params).fit(frame, labels)
    assert any("_prepare" in str(t["key"]) for t in stream.data)
    np.testing.assert_array_equal(remote.classes_, local.classes_)
    assert remote.expansion_vectors_.shape == (12, 2)
    assert remote.expansion_coef_.shape == (3, 12)
    assert remote.n_iter_.shape == (3,)
    # the same problems from other initial rows: models as good as the full SVC's
    full = SVC(C=1.0, gamma=0.5).fit(X, y).score(X_test, y_test)
    assert remote.score(X_test, y_test) >= full - 0.02
    assert local.score(X_test, y_test) >= full - 0.02


@pytest.mark.slow
def test_a_squared_hinge_fit_on_dask_arrays_runs_its_newton_method_on_the_workers(
        client: Any) -> None:
    X, y = make_ringnorm(1600, random_state=4)
    X, X_test, y, y_test = X[:800], X[800:], y[:800], y[800:]
    params = dict(n_expansion=6, C=1.0, gamma=GAMMA, loss="squared_hinge", random_state=0,
                  max_iter=15)
    local = SparseSVC(**params).fit(X, y)
    with distributed.get_task_stream(client) as stream:
        remote = SparseSVC(**params).fit(da.from_array(X, chunks=200), da.from_array(y, chunks=200))
    assert any("_newton_sums" in str(t["key"]) for t in stream.data)
    assert remote.expansion_vectors_.shape == (6, X.shape[1])
    # the same problem from other initial rows: as good a model (ringnorm's Bayes error 1.3 %)
    assert remote.score(X_test, y_test) >= local.score(X_test, y_test) - 0.02


@pytest.mark.parametrize("params, fit_kw, match", [
    ({"solver": "ecos"}, {}, r"solver='ecos' \(the generic cvxpy path needs the rows in memory"),
    ({"init": "kmeans"}, {}, r"init='kmeans' \(k-means needs every row in one place"),
    ({}, {"sample_weight": np.ones(40)}, "sample_weight"),
    ({"class_weight": {1: 0.0}}, {}, "class 1 has none"),
    ({"class_weight": {-1: 0.0}, "loss": "squared_hinge"}, {}, "class -1 has none"),
])
def test_refuses_what_the_distributed_path_lacks(client: Any, params: dict[str, Any],
                                                 fit_kw: dict[str, Any], match: str) -> None:
    """What a fit over row blocks still refuses, each with its reason; a ratio n_expansion,
    probabilities, class weights and n_init fit (tests/test_dask_driver.py)."""
    X, y = make_ringnorm(40, random_state=0)
    with pytest.raises(ValueError, match=match):
        SparseSVC(**{"n_expansion": 4, **params}).fit(da.from_array(X, chunks=20),
                                                      da.from_array(y, chunks=20), **fit_kw)


def test_refuses_mixed_collections(client: Any) -> None:
    X, y = make_ringnorm(40, random_state=0)
    with pytest.raises(TypeError, match="y must be a dask array, DataFrame or Series"):
        SparseSVC(n_expansion=4).fit(da.from_array(X, chunks=20), y)


@contextmanager
def _in_process_cluster(X: np.ndarray, y: np.ndarray, chunk: int,
                        marginal: type[DistributedSVMMarginal] = DistributedSVMMarginal
                        ) -> Iterator[tuple[Any, Any, Any, Any]]:
    """X, y in row blocks of ``chunk`` on two in-process workers: the cluster, its client,
    the blocks and their ``marginal`` (Nz = 6)."""
    import logging

    kernel = RBF(GAMMA)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=":0", silence_logs=logging.ERROR) as cluster, \
            distributed.Client(cluster) as client:
        blocks = make_blocks(client, da.from_array(X, chunks=chunk),
                             da.from_array(y, chunks=chunk), 1, C)
        yield cluster, client, blocks, marginal(client, blocks, kernel, 6,
                                                diagonal=diagonal_scale(kernel, X))


@pytest.mark.parametrize("loss", ["hinge", "squared_hinge"])
def test_a_lost_worker_costs_a_restart_not_the_answer(loss: str) -> None:
    """Closing a worker mid-fit: its blocks are recomputed elsewhere from their inputs (α back at
    zero), the evaluation starts over on them and still gives the in-memory answer."""
    X, y = make_ringnorm(2000, random_state=0)
    hinge = loss == "hinge"
    with _in_process_cluster(X, y, 500, DistributedSVMMarginal if hinge
                             else DistributedSquaredHingeMarginal) as (cluster, client, _, remote):
        remote.poll_seconds = 0.2
        local = (SVMDualMarginal(C, X, y, RBF(GAMMA), 6, formulation=SVM(C)) if hinge
                 else _squared_hinge(X, y, 6))
        Z = X[:6]
        assert remote.evaluate(Z).value == pytest.approx(local.evaluate(Z).value, rel=1e-8)
        worker = next(iter(cluster.workers.values()))
        client.sync(worker.close)
        a, b = remote.evaluate(Z + 0.01), local.evaluate(Z + 0.01)
        assert a.value == pytest.approx(b.value, rel=1e-8)
        np.testing.assert_allclose(a.grad, b.grad, rtol=1e-6, atol=1e-8 * np.abs(b.grad).max())
        if hinge:
            assert remote.n_rounds > 0  # started over with coordinate descent
        assert {where[0] for where in remote._where} == set(client.scheduler_info()["workers"])


def test_a_block_without_its_b_mid_evaluation_costs_a_restart_not_an_error() -> None:
    """A task met its block without B (an AssertionError in `_round`, once, in a run of the
    suite in 14 processes on 16 cores): the block answers UNPREPARED and the evaluation
    starts over, with the in-memory answer."""
    X, y = make_ringnorm(1000, random_state=0)
    with _in_process_cluster(X, y, 250) as (cluster, _, blocks, remote):
        first_round = remote._coordinate_descent
        dropped = []

        def drop_b_once(*args: Any) -> Any:
            if not dropped:
                for worker in cluster.workers.values():
                    rows = worker.data.get(blocks[0].key)
                    if rows is not None:
                        rows.B = None
                        dropped.append(worker.address)
            return first_round(*args)

        remote._coordinate_descent = drop_b_once
        Z = X[:6]
        value = remote.evaluate(Z).value
        assert dropped  # the block lost its B between _prepare and the first round
        local = SVMDualMarginal(C, X, y, RBF(GAMMA), 6, formulation=SVM(C))
        assert value == pytest.approx(local.evaluate(Z).value, rel=1e-8)


def test_an_estimator_whose_formulation_has_no_distributed_solver_refuses(client: Any) -> None:
    from sparsify.algorithms.klr.formulation import KLR

    class OtherSVC(SparseSVC):
        formulation_class = KLR

        def _formulation_params(self, weights: Any = None) -> dict[str, Any]:
            return {}

    X, y = make_ringnorm(40, random_state=0)
    with pytest.raises(ValueError, match="The 'klr' formulation over row blocks needs the "
                                         "structured interior point, which cannot take it"):
        OtherSVC(n_expansion=4).fit(da.from_array(X, chunks=20), da.from_array(y, chunks=20))
