"""The fit driver over Dask row blocks: every option of the in-memory fit, the same model.

With a ratio ``n_expansion`` the rows come to the driver once (the full SVM needs
them), and the initial XVs are drawn from them as in memory; every evaluation of
W(Z) is then a map over the blocks, equal to the in-memory one to the solvers' KKT
tolerance, so the two fits agree to far better than the 1e-5 asked here.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from sparsify import SparseKernelRidge, SparseSVC
from sparsify.datasets import make_ringnorm

distributed = pytest.importorskip("distributed", reason="needs dask[distributed]")
da = pytest.importorskip("dask.array", reason="needs dask[array]")

N = 3000


@pytest.mark.slow
def test_svc_with_every_option_on_dask_arrays_is_the_in_memory_fit(client: Any) -> None:
    X, y = make_ringnorm(N, random_state=0)
    y = np.where(y > 0, "pos", "neg")
    y[: N // 3] = "neg"  # an uneven split, for class_weight="balanced" to matter
    X_test, _ = make_ringnorm(500, random_state=1)
    seen: list[int] = []
    params = dict(n_expansion=0.01, C=1.0, gamma=0.05, class_weight="balanced", n_init=2,
                  probability=True, max_iter=10, random_state=0)
    local = SparseSVC(**params).fit(X, y)
    remote = SparseSVC(**params, callback=lambda info: seen.append(info.iteration)).fit(
        da.from_array(X, chunks=N // 4), da.from_array(y, chunks=N // 4))
    assert seen  # the callback ran on the driver
    np.testing.assert_array_equal(remote.n_expansion_, local.n_expansion_)
    np.testing.assert_array_equal(remote.full_n_support_, local.full_n_support_)
    np.testing.assert_allclose(remote.class_weight_, local.class_weight_)
    decision = np.abs(remote.decision_function(X_test) - local.decision_function(X_test)).max()
    proba = np.abs(remote.predict_proba(X_test) - local.predict_proba(X_test)).max()
    print(f"max |Δ decision| {decision:.2e}, max |Δ proba| {proba:.2e}")
    assert decision < 1e-5
    assert proba < 1e-5


@pytest.mark.slow
def test_kernel_ridge_on_dask_arrays_is_the_in_memory_fit(client: Any) -> None:
    rng = np.random.default_rng(0)
    X = rng.uniform(-3, 3, size=(N, 2))
    y = np.sin(X[:, 0]) * np.cos(X[:, 1]) + 0.1 * rng.normal(size=N)
    params = dict(n_expansion=0.004, alpha=0.1, gamma=0.5, n_init=2, max_iter=15,
                  random_state=0)
    local = SparseKernelRidge(**params).fit(X, y)
    with distributed.get_task_stream(client) as stream:
        remote = SparseKernelRidge(**params).fit(da.from_array(X, chunks=N // 4),
                                                 da.from_array(y, chunks=N // 4))
    assert any("_sums" in str(t["key"]) for t in stream.data)
    assert remote.n_expansion_.tolist() == local.n_expansion_.tolist() == [12]
    X_test = rng.uniform(-3, 3, size=(500, 2))
    diff = np.abs(remote.predict(X_test) - local.predict(X_test)).max()
    print(f"max |Δ prediction| {diff:.2e}")
    assert diff < 1e-5


def test_kernel_ridge_with_an_integer_n_expansion_fits_over_the_blocks(client: Any) -> None:
    rng = np.random.default_rng(1)
    X = rng.uniform(-3, 3, size=(400, 1))
    y = np.sin(X[:, 0]) + 0.05 * rng.normal(size=400)
    reg = SparseKernelRidge(n_expansion=6, alpha=0.01, gamma=0.5, max_iter=20,
                            random_state=0).fit(da.from_array(X, chunks=100),
                                                da.from_array(y, chunks=100))
    assert reg.expansion_vectors_.shape == (6, 1)
    assert reg.score(X, y) > 0.95


def test_built_in_estimators_fit_with_no_entry_points_visible(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Built-in estimators name their formulation class: no installed metadata needed."""
    import sparsify.plugins.registry as registry
    from sparsify import SparseKernelLogisticRegression

    monkeypatch.setattr(registry, "entry_points", lambda group: [])
    registry.get_registry.cache_clear()
    try:
        assert registry.get_registry().names("formulation") == []
        X, y = make_ringnorm(120, random_state=0)
        assert SparseSVC(n_expansion=4, max_iter=3, random_state=0).fit(X, y).score(X, y) > 0.6
        SparseKernelLogisticRegression(n_expansion=4, max_iter=3, random_state=0).fit(X, y)
        SparseKernelRidge(n_expansion=4, max_iter=3, random_state=0).fit(X, y.astype(float))
    finally:
        monkeypatch.undo()
        registry.get_registry.cache_clear()


def test_kernel_ridge_over_blocks_refuses_what_a_worker_cannot_hold(client: Any) -> None:
    from sparsify.core.errors import MemoryEstimateError

    X = np.random.default_rng(0).normal(size=(400, 2))
    limits = {w: info["memory_limit"] for w, info in client.scheduler_info()["workers"].items()}
    if not all(limits.values()):
        pytest.skip("the test cluster's workers have no memory limit")
    nz = 1 + max(limits.values()) // (8 * 200 * 2)  # K_XZ and F of 200 rows beyond any limit
    with pytest.raises(MemoryEstimateError, match="Kernel ridge's blocks on worker"):
        SparseKernelRidge(n_expansion=int(nz), max_iter=1).fit(
            da.from_array(X, chunks=200), da.from_array(X[:, 0], chunks=200))
