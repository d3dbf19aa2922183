"""The approximate Gaussian kernel of seed 001: kernel, feature map, and their agreement."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.utils.estimator_checks import parametrize_with_checks

from sparsify import RBF, SparseSVC
from sparsify.gradcheck import check_gradient
from sparsify.kernels import check_kernel_vjp, make_kernel
from sparsify.taylor import TaylorGaussianFeatures, TaylorRBF

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
    assert check_gradient("svm", TaylorRBF(0.5), C=1.0).rel_error < 1e-6
    X = rng.normal(size=(80, 2))
    y = np.where(X[:, 0] ** 2 + X[:, 1] ** 2 < 1.2, 1, -1)
    clf = SparseSVC(n_expansion=4, kernel=TaylorRBF(1.0), C=10.0, random_state=0).fit(X, y)
    assert clf.score(X, y) > 0.9
