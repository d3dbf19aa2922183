"""Kernels: values against scikit-learn, vector-Jacobian products against finite differences."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics.pairwise import linear_kernel, polynomial_kernel, rbf_kernel

from sparsify.core import kernel_blocks
from sparsify.kernels import (
    RBF,
    Kernel,
    Linear,
    Polynomial,
    SumKernel,
    check_kernel_vjp,
    make_kernel,
)
from sparsify.plugins.registry import get_registry

rng = np.random.default_rng(1)
A = rng.normal(size=(7, 3))
B = rng.normal(size=(5, 3))

KERNELS = [
    RBF(0.7),
    Polynomial(0.4, 3, 1.0),
    Polynomial(1.0, 2, 0.0),
    Linear(),
    SumKernel((RBF(0.3), Linear()), (2.0, 0.5)),
]


def test_values_match_scikit_learn() -> None:
    np.testing.assert_allclose(RBF(0.7)(A, B), rbf_kernel(A, B, gamma=0.7), rtol=1e-12)
    np.testing.assert_allclose(
        Polynomial(0.4, 3, 1.0)(A, B), polynomial_kernel(A, B, degree=3, gamma=0.4, coef0=1.0)
    )
    np.testing.assert_allclose(Linear()(A, B), linear_kernel(A, B))
    np.testing.assert_allclose(
        SumKernel((RBF(0.3), Linear()), (2.0, 0.5))(A, B),
        2.0 * rbf_kernel(A, B, gamma=0.3) + 0.5 * linear_kernel(A, B),
    )


@pytest.mark.parametrize("kernel", KERNELS, ids=repr)
def test_integer_and_float32_inputs(kernel: Kernel) -> None:
    # the squared distances are formed in place: integer inputs still give float values,
    # and float32 ones stay float32
    ints = np.array([[1, 2], [0, -1], [3, 0]])
    np.testing.assert_allclose(kernel(ints, ints[:2]), kernel(ints * 1.0, ints[:2] * 1.0),
                               rtol=1e-12)
    single = A.astype(np.float32)
    assert kernel(single, single[:2]).dtype == np.float32


@pytest.mark.parametrize("kernel", KERNELS, ids=repr)
def test_vjp_against_finite_differences(kernel: Kernel) -> None:
    assert check_kernel_vjp(kernel, A, B) < 1e-6


@pytest.mark.parametrize("kernel", KERNELS, ids=repr)
def test_diag_matches_gram(kernel: Kernel) -> None:
    np.testing.assert_allclose(kernel.diag(A), np.diag(kernel(A, A)), rtol=1e-12)


@pytest.mark.parametrize("name", get_registry().names("kernel"))
def test_every_registered_kernel_is_psd(name: str) -> None:
    kernel = make_kernel(name, gamma=0.5, degree=2, coef0=1.0)
    K = kernel(A, A)
    np.testing.assert_allclose(K, K.T, atol=1e-12)
    lam = np.linalg.eigvalsh(K)
    assert lam.min() > -1e-10 * max(1.0, lam.max())


def test_vjp_never_builds_n_by_nz_by_d_tensors() -> None:
    # Large N·Nz·d: a broadcasted (N, Nz, d) tensor would need ~5 GB here.
    X = np.ones((20000, 100))
    Z = np.zeros((300, 100))
    G = np.ones((20000, 300))
    assert RBF(1e-3).vjp_z(X, Z, G).shape == (300, 100)


@pytest.mark.parametrize("kernel", KERNELS, ids=repr)
@pytest.mark.parametrize("share", [0.03, 0.5, 0.95])
def test_link_gradient_sums_the_rows_of_nonzero_multipliers(
        kernel: Kernel, share: float, monkeypatch: pytest.MonkeyPatch) -> None:
    # Against the K_XZ term in one product over every row: the rows of ν = 0 that the sum
    # skips (below ACTIVE_SHARE) add nothing, over several row blocks and two outputs.
    monkeypatch.setattr(kernel_blocks, "BLOCK_ROWS", 16)
    X, Z = rng.normal(size=(300, 3)), rng.normal(size=(4, 3))
    nu = rng.normal(size=(300, 2))
    nu[rng.permutation(300)[:round((1 - share) * 300)]] = 0.0  # the share of rows kept
    beta = rng.normal(size=(4, 2))
    K_xz = kernel(X, Z)
    expected = kernel.vjp_z(X, Z, -nu @ beta.T, K_xz)
    got = kernel_blocks.link_gradient_xz(kernel, X, Z, K_xz, nu, beta)
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12 * np.abs(expected).max())


def test_make_kernel_sum_and_errors() -> None:
    k = make_kernel("rbf+linear", gamma=2.0)
    assert isinstance(k, SumKernel) and k.kernels == (RBF(2.0), Linear())
    assert make_kernel("rbf", A, gamma="scale") == RBF(1.0 / (3 * A.var()))
    assert make_kernel("rbf", A, gamma="auto") == RBF(1.0 / 3)
    with pytest.raises(ValueError, match=r"Unknown kernel 'nope'.*\['linear', 'poly', 'rbf'"):
        make_kernel("nope")
    with pytest.raises(ValueError, match="needs the training inputs"):
        make_kernel("rbf", None, gamma="scale")
    with pytest.raises(ValueError, match="one weight per kernel"):
        SumKernel((RBF(),), (1.0, 2.0))


def test_kernels_compose_with_plus() -> None:
    k = RBF(1.0) + Linear() + Polynomial()
    assert isinstance(k, SumKernel) and len(k.kernels) == 3
