"""Manifold (LapSVM-deformed) kernels and the kNN-graph Laplacian."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from sparsify import RBF, Linear, Polynomial
from sparsify.kernels import check_kernel_vjp
from sparsify.kernels.manifold import ManifoldKernel, knn_graph, knn_laplacian


@pytest.fixture(scope="module")
def points() -> np.ndarray:
    return np.random.default_rng(0).normal(size=(40, 3))


def test_knn_graph_is_symmetric_with_gaussian_weights(points) -> None:  # type: ignore[no-untyped-def]
    W = knn_graph(points, n_neighbors=4, gamma=0.7).toarray()
    np.testing.assert_allclose(W, W.T)
    assert np.all(np.diag(W) == 0)
    d2 = ((points[:, None] - points[None]) ** 2).sum(-1)
    nz = W > 0
    np.testing.assert_allclose(W[nz], np.exp(-0.7 * d2[nz]))
    # every point keeps its 4 nearest neighbours; symmetrising may add edges, never drop them
    order = np.argsort(d2, axis=1)[:, 1:5]
    assert all(nz[i, order[i]].all() for i in range(len(points)))
    assert (nz.sum(1) >= 4).all() and nz.sum() < 2 * 4 * len(points) + 1


def test_laplacian_rows_sum_to_zero_and_it_is_psd(points) -> None:  # type: ignore[no-untyped-def]
    L = knn_laplacian(points, n_neighbors=5)
    np.testing.assert_allclose(L.sum(1), 0.0, atol=1e-12)
    assert np.linalg.eigvalsh(L).min() > -1e-10
    Ln = knn_laplacian(points, n_neighbors=5, normalized=True)
    np.testing.assert_allclose(np.diag(Ln), 1.0)
    lam = np.linalg.eigvalsh(Ln)
    assert lam.min() > -1e-10 and lam.max() < 2 + 1e-10


def test_bad_graph_options_are_clear_errors(points) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError, match="n_neighbors must be between 1"):
        knn_graph(points, n_neighbors=40)
    with pytest.raises(ValueError, match="laplacian_power must be an integer"):
        ManifoldKernel(RBF(1.0), points, laplacian_power=0)
    with pytest.raises(ValueError, match="gamma_ratio must be >= 0"):
        ManifoldKernel(RBF(1.0), points, gamma_ratio=-1.0)
    with pytest.raises(ValueError, match="needs a sparsify Kernel"):
        ManifoldKernel("rbf", points)  # type: ignore[arg-type]


@pytest.mark.parametrize("power", [1, 2])
def test_kernel_matches_the_closed_form(points, power: int) -> None:  # type: ignore[no-untyped-def]
    base = RBF(0.4)
    k = ManifoldKernel(base, points, n_neighbors=5, gamma_ratio=3.0, laplacian_power=power)
    M = 3.0 * np.linalg.matrix_power(knn_laplacian(points, 5, gamma=0.4), power)
    K = base(points, points)
    # on the graph points the deformed Gram matrix is K (I + M K)⁻¹
    np.testing.assert_allclose(k(points, points), K @ np.linalg.inv(np.eye(40) + M @ K),
                               atol=1e-10)
    # anywhere: k(x, z) − k_xᵀ (I + M K)⁻¹ M k_z
    rng = np.random.default_rng(1)
    A, B = rng.normal(size=(5, 3)), rng.normal(size=(4, 3))
    expected = base(A, B) - base(A, points) @ np.linalg.solve(np.eye(40) + M @ K,
                                                               M @ base(points, B))
    np.testing.assert_allclose(k(A, B), expected, atol=1e-10)
    np.testing.assert_allclose(k.diag(A), np.diag(k(A, A)), atol=1e-12)
    np.testing.assert_allclose(k.diag(points), np.diag(k(points, points)), atol=1e-12)


def test_kernel_is_symmetric_psd_and_zero_ratio_is_the_base(points) -> None:  # type: ignore[no-untyped-def]
    k = ManifoldKernel(RBF(0.4), points, gamma_ratio=50.0)
    rng = np.random.default_rng(2)
    A = np.vstack([points, rng.normal(size=(15, 3))])
    K = k(A, A)
    np.testing.assert_allclose(K, K.T, atol=1e-10)
    assert np.linalg.eigvalsh(K).min() > -1e-8
    plain = ManifoldKernel(RBF(0.4), points, gamma_ratio=0.0)
    np.testing.assert_allclose(plain(A, A), RBF(0.4)(A, A), atol=1e-14)


def test_deformed_kernel_follows_the_clusters_of_the_graph() -> None:
    # two separate clusters: a strong graph norm makes the functions of the deformed RKHS
    # nearly constant on each cluster, so the kernel's correlations approach 1 inside a
    # cluster, far above the base kernel's, and stay near 0 across clusters
    rng = np.random.default_rng(3)
    X = np.vstack([rng.normal(0.0, 0.3, size=(30, 2)), rng.normal(3.0, 0.3, size=(30, 2))])

    def correlation(K: np.ndarray) -> np.ndarray:
        d = np.sqrt(np.diag(K))
        return K / np.outer(d, d)

    deformed = correlation(ManifoldKernel(RBF(1.0), X, n_neighbors=5, gamma_ratio=100.0)(X, X))
    base = correlation(RBF(1.0)(X, X))
    for block in (slice(0, 30), slice(30, 60)):
        assert deformed[block, block].mean() > 0.98
        assert deformed[block, block].mean() > base[block, block].mean() + 0.2
    assert np.abs(deformed[:30, 30:]).max() < 1e-2


@pytest.mark.parametrize("base", [RBF(0.5), Polynomial(0.3, 2, 1.0), Linear()])
@pytest.mark.parametrize("power", [1, 2])
def test_vector_jacobian_products_match_finite_differences(points, base, power: int) -> None:  # type: ignore[no-untyped-def]
    k = ManifoldKernel(base, points, n_neighbors=4, gamma_ratio=5.0, laplacian_power=power,
                       graph_gamma=0.5)
    rng = np.random.default_rng(4)
    Z = rng.normal(size=(4, 3))
    # eps = 1e-4: the deformation cancels large terms, so smaller steps hit round-off
    assert check_kernel_vjp(k, points, Z, eps=1e-4) < 1e-6  # X = the graph points
    assert check_kernel_vjp(k, rng.normal(size=(7, 3)), Z, eps=1e-4) < 1e-6  # new points


def test_unbound_kernel_says_how_to_bind_it(points) -> None:  # type: ignore[no-untyped-def]
    k = ManifoldKernel(RBF(1.0), n_neighbors=3)
    with pytest.raises(ValueError, match=r"no graph yet.*bind"):
        k(points, points)
    bound = k.bind(points)
    assert bound.X_graph.shape == (40, 3) and bound.n_neighbors == 3
    assert k.X_graph is None  # bind returns a copy
    assert "X_graph=None" in repr(k) and "<40 points>" in repr(bound)


def test_pickles_and_rebinds_hyperparameters(points) -> None:  # type: ignore[no-untyped-def]
    k = ManifoldKernel(RBF(0.5), points, gamma_ratio=2.0)
    again = pickle.loads(pickle.dumps(k))
    Z = points[:3] + 0.1
    np.testing.assert_allclose(again(points, Z), k(points, Z))
    wider = k.with_params(gamma=0.1)
    assert isinstance(wider, ManifoldKernel) and wider.base == RBF(0.1)
    assert not np.allclose(wider(points, Z), k(points, Z))


def test_cached_columns_follow_the_xvs_in_place_changes_included(points) -> None:  # type: ignore[no-untyped-def]
    k = ManifoldKernel(RBF(0.5), points, gamma_ratio=4.0)
    fresh = ManifoldKernel(RBF(0.5), points, gamma_ratio=4.0)
    Z = points[:4] + 0.1
    first = k(points, Z)
    Z += 0.3  # in place: the kernel must not reuse the columns of the old Z
    np.testing.assert_allclose(k(points, Z), fresh(points, Z.copy()), atol=1e-12)
    assert not np.allclose(k(points, Z), first)
    G = np.random.default_rng(5).normal(size=(4, 4))
    np.testing.assert_allclose(k.vjp_zz(Z, G), fresh.vjp_z(Z, Z.copy(), G + G.T), atol=1e-10)
    assert "_cache" not in pickle.loads(pickle.dumps(k)).__dict__  # not saved with a model
