"""The approximate Gaussian kernel (Liu, Jiang & Liao): kernel, feature map, agreement."""

from __future__ import annotations

import itertools
from math import factorial, prod

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.utils.estimator_checks import parametrize_with_checks

from sparsify import RBF, SparseSVC
from sparsify.core.gradcheck import check_gradient
from sparsify.kernels import check_kernel_vjp, make_kernel
from sparsify.kernels.taylor import TaylorGaussianFeatures, TaylorRBF

rng = np.random.default_rng(3)
A = rng.normal(size=(8, 4)) * 0.5
B = rng.normal(size=(5, 4)) * 0.5


@parametrize_with_checks([TaylorGaussianFeatures(gamma=0.3)])
def test_scikit_learn_conformance(estimator, check) -> None:
    check(estimator)


@pytest.mark.parametrize("order", [0, 1, 2, 3])
def test_features_reproduce_the_kernel_exactly(order: int) -> None:
    phi = TaylorGaussianFeatures(gamma=0.7, order=order).fit(A)
    np.testing.assert_allclose(phi.transform(A) @ phi.transform(B).T,
                               TaylorRBF(0.7, order)(A, B), rtol=1e-12, atol=1e-14)
    n = A.shape[1]
    assert phi.n_output_features_ == len(phi.scale_) == int(
        np.prod(range(n + 1, n + order + 1)) / np.prod(range(1, order + 1)))  # C(n + m, m)


def test_kernel_tends_to_the_gaussian_as_the_order_grows() -> None:
    errors = [np.abs(TaylorRBF(0.7, m)(A, B) - RBF(0.7)(A, B)).max() for m in (1, 2, 4, 8, 12)]
    assert all(later < earlier for earlier, later in itertools.pairwise(errors))
    assert errors[-1] < 1e-5


def test_sparse_input_stays_sparse_and_agrees_with_dense() -> None:
    X = sp.random(30, 12, density=0.2, format="csr", random_state=0)
    phi = TaylorGaussianFeatures(gamma=0.5).fit(X)
    out = phi.transform(X)
    assert sp.issparse(out) and out.nnz < 0.3 * np.prod(out.shape)
    np.testing.assert_allclose(out.toarray(), phi.transform(X.toarray()), atol=1e-14)


def test_kernel_vjp_psd_and_direct_method() -> None:
    kernel = TaylorRBF(0.6, order=3)
    assert check_kernel_vjp(kernel, A, B) < 1e-6
    assert np.linalg.eigvalsh(kernel(A, A)).min() > -1e-12
    assert make_kernel("taylor_rbf", gamma=0.6) == TaylorRBF(0.6, order=2)
    assert check_gradient("svm", TaylorRBF(0.5), C=1.0).passed(1e-6)
    X = rng.normal(size=(80, 2))
    y = np.where(X[:, 0] ** 2 + X[:, 1] ** 2 < 1.2, 1, -1)
    clf = SparseSVC(n_expansion=4, kernel=TaylorRBF(1.0), C=10.0, random_state=0).fit(X, y)
    assert clf.score(X, y) > 0.9


def test_scales_match_the_closed_form_of_eq_7() -> None:
    """scale_ = √((2γ)^k / Π_j α_j!) against exact integer factorials (order 3 has α_j = 3)."""
    gamma = 0.35
    phi = TaylorGaussianFeatures(gamma=gamma, order=3).fit(A)
    expected = [np.sqrt((2 * gamma) ** int(sum(row)) / prod(factorial(int(a)) for a in row))
                for row in phi.powers_]
    np.testing.assert_allclose(phi.scale_, expected, rtol=1e-13)


@pytest.mark.parametrize("order", [0, 1, 2, 3])
@pytest.mark.parametrize("sparse", [False, True])
def test_transform_leaves_its_input_alone(order: int, sparse: bool) -> None:
    """The scaling is done in place on the fresh monomials, never on X."""
    X = sp.random(10, 6, density=0.4, format="csr", random_state=1)
    X = X if sparse else X.toarray()
    before = X.copy()
    TaylorGaussianFeatures(gamma=0.4, order=order).fit(X).transform(X)
    np.testing.assert_array_equal(X.toarray() if sparse else X,
                                  before.toarray() if sparse else before)


def test_binary_sparse_rows_give_the_expected_sparsity() -> None:
    """a9a-like rows with s ones map to 1 + s + s(s+1)/2 non-zeros out of C(d + 2, 2) (§3.3)."""
    d, s = 40, 6
    rng_ = np.random.default_rng(0)
    cols = np.concatenate([rng_.choice(d, s, replace=False) for _ in range(25)])
    X = sp.csr_matrix((np.ones(25 * s), cols, np.arange(0, 25 * s + 1, s)), shape=(25, d))
    out = TaylorGaussianFeatures(gamma=0.1).fit(X).transform(X)
    assert sp.issparse(out) and out.format == "csr" and out.dtype == np.float64
    assert out.shape == (25, (d + 1) * (d + 2) // 2)
    np.testing.assert_array_equal(np.diff(out.indptr), 1 + s + s * (s + 1) // 2)
    # Every row has ‖x‖² = s, so each row's squared norm is K_2(x, x) = e^{−2γs} S_2(2γs).
    t = 2 * 0.1 * s
    np.testing.assert_allclose(np.asarray(out.multiply(out).sum(1)).ravel(),
                               np.exp(-t) * (1 + t + t * t / 2), rtol=1e-12)


def test_non_canonical_csr_input_gives_the_dense_result() -> None:
    """Unsorted indices and duplicate entries (scikit-learn's expansion assumes neither)."""
    dense = np.array([[2.0, 0.0, 1.5, -1.0], [0.0, 0.5, 0.0, 3.0]])
    # Row 0 stored as columns 2, 0, 3 (unsorted); row 1 stores 3.0 as 1.0 + 2.0 (duplicates).
    X = sp.csr_matrix((np.array([1.5, 2.0, -1.0, 1.0, 0.5, 2.0]), np.array([2, 0, 3, 3, 1, 3]),
                       np.array([0, 3, 6])), shape=(2, 4))
    assert not X.has_canonical_format
    indices = X.indices.copy()
    phi = TaylorGaussianFeatures(gamma=0.3, order=3).fit(dense)
    np.testing.assert_allclose(phi.transform(X).toarray(), phi.transform(dense), atol=1e-15)
    np.testing.assert_array_equal(X.indices, indices)  # the caller's matrix is not reordered
