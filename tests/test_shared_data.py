"""Runs on the benchmark data beside the repository (skipped without ../shared/data)."""

from __future__ import annotations

import numpy as np
import pytest

from sparsify import SparseSVC
from sparsify.datasets import load_banana, load_file


def test_embedded_banana_is_split_1_of_the_benchmark(data_dir) -> None:
    X, y, X_test, y_test = load_file(data_dir / "banana" / "banana.npz", split=1)
    emb = load_banana()
    np.testing.assert_array_equal(X, emb[0])
    np.testing.assert_array_equal(y, emb[1])
    np.testing.assert_array_equal(X_test, emb[2])
    np.testing.assert_array_equal(y_test, emb[3])
    with pytest.raises(ValueError, match="split must be between 1 and 10"):
        load_file(data_dir / "banana" / "banana.npz", split=11)


@pytest.mark.slow
def test_slmc_on_another_banana_split_is_close_to_the_full_svm(data_dir) -> None:
    from sklearn.svm import SVC

    X, y, X_test, y_test = load_file(data_dir / "banana" / "banana.npz", split=2)
    clf = SparseSVC(n_expansion=0.1, C=100.0, gamma=1.0, random_state=0).fit(X, y)
    full = SVC(C=100.0, gamma=1.0).fit(X, y)
    assert clf.n_expansion_[0] <= 0.1 * full.n_support_.sum() + 0.5
    assert 1 - clf.score(X_test, y_test) < (1 - full.score(X_test, y_test)) + 0.015
