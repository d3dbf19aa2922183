"""The generators of the large benchmarks: ringnorm and the checkerboard."""

from __future__ import annotations

import numpy as np
import pytest

from sparsify.datasets import (
    make_checkerboard,
    make_ringnorm,
    ringnorm_bayes_error,
    ringnorm_bayes_rule,
)


def test_ringnorm_has_breimans_classes() -> None:
    X, y = make_ringnorm(200_000, random_state=1)
    assert X.shape == (200_000, 20) and X.dtype == np.float64 and y.dtype == np.int64
    assert abs(np.mean(y == 1) - 0.5) < 0.01
    inner, outer = X[y == 1], X[y == -1]
    np.testing.assert_allclose(inner.mean(0), 2 / np.sqrt(20), atol=0.01)
    np.testing.assert_allclose(outer.mean(0), 0.0, atol=0.02)
    np.testing.assert_allclose(inner.var(0), 1.0, atol=0.02)
    np.testing.assert_allclose(outer.var(0), 4.0, atol=0.08)


def test_ringnorms_bayes_error_is_breimans_1_3_percent() -> None:
    # Breiman (1996) reports the Bayes error as about 1.3 %
    assert 0.012 < ringnorm_bayes_error(400_000, random_state=3) < 0.015


def test_ringnorms_bayes_rule_is_the_larger_likelihood() -> None:
    from scipy.stats import multivariate_normal

    X, _ = make_ringnorm(2000, random_state=4)
    outer = multivariate_normal(np.zeros(20), 4.0 * np.eye(20)).logpdf(X)
    inner = multivariate_normal(np.full(20, 2 / np.sqrt(20)), np.eye(20)).logpdf(X)
    assert np.array_equal(ringnorm_bayes_rule(X), np.where(outer > inner, -1, 1))
    with pytest.raises(ValueError, match=r"X must have shape \(n_samples, 20\), ringnorm's; got "
                                         r"shape \(3, 2\)"):
        ringnorm_bayes_rule(np.zeros((3, 2)))


def test_checkerboard_labels_are_the_parity_of_the_square() -> None:
    X, y = make_checkerboard(10_000, random_state=0)
    assert X.shape == (10_000, 2) and X.min() >= 0 and X.max() < 4
    assert np.array_equal(y == 1, np.floor(X).sum(1) % 2 == 0)
    _, noisy = make_checkerboard(10_000, noise=0.1, random_state=0)
    assert 0.09 < np.mean(noisy != y) < 0.11  # the same points, a tenth of the labels flipped


def test_generators_are_deterministic_and_validate() -> None:
    for make in (make_ringnorm, make_checkerboard):
        a, b = make(500, random_state=7), make(500, random_state=7)
        assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])
    with pytest.raises(ValueError, match=r"The 'n_samples' parameter of make_ringnorm must be "
                                         r"an int >= 2\. Got 1\.5 instead\."):
        make_ringnorm(1.5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"'noise' parameter of make_checkerboard must be a "
                                         r"float in the range \[0\.0, 0\.5\)\. Got 0\.5"):
        make_checkerboard(10, noise=0.5)
    with pytest.raises(ValueError, match="'n_squares' parameter"):
        make_checkerboard(10, n_squares=1)
