"""Data: the embedded Banana set and readers for the file formats the command line takes.

The Banana set (split 1 of the IDA benchmark: 400 training and 4900 test
points, 2 features, labels -1/+1) ships inside the package, so the default job
needs no network and no data directory.
"""

from __future__ import annotations

import zipfile
from importlib.resources import as_file, files
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

__all__ = ["load_banana", "load_file"]

Array = NDArray[np.float64]


def load_banana() -> tuple[Array, NDArray[np.int64], Array, NDArray[np.int64]]:
    """Return ``(X_train, y_train, X_test, y_test)`` of Banana, split 1.

    Examples
    --------
    >>> X, y, X_test, y_test = load_banana()
    >>> X.shape, X_test.shape, sorted(set(y.tolist()))
    ((400, 2), (4900, 2), [-1, 1])
    """
    with as_file(files(__name__) / "banana.npz") as path, np.load(path) as z:
        return (z["X_train"].astype(float), z["y_train"].astype(np.int64),
                z["X_test"].astype(float), z["y_test"].astype(np.int64))


def load_file(
    path: str | Path, split: int = 1
) -> tuple[Array, NDArray[np.int64] | NDArray[np.float64], Array | None, NDArray | None]:
    """Read a data file: ``(X_train, y_train, X_test, y_test)``; the test part may be None.

    Parameters
    ----------
    path : str or Path
        ``.npz`` in the benchmark format (``X``, ``y`` and optional
        ``train_idx``/``test_idx`` of shape (n_splits, n)), ``.csv`` (numeric,
        label in the last column, an optional header line), or LIBSVM text
        (any other suffix, e.g. ``.libsvm``, ``.txt``, ``.svm``).
    split : int, default=1
        Which split of an ``.npz`` with splits, counted from 1.

    Examples
    --------
    >>> import numpy as np, tempfile, os
    >>> d = tempfile.mkdtemp(); p = os.path.join(d, "toy.csv")
    >>> np.savetxt(p, [[0.0, 1.0, -1], [1.0, 0.0, 1]], delimiter=",")
    >>> X, y, Xt, yt = load_file(p)
    >>> X.shape, y.tolist(), Xt is None
    ((2, 2), [-1.0, 1.0], True)
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"No data file at {str(path)!r}; check the path.")
    suffix = path.suffix.lower()
    if suffix == ".npz":
        # numpy calls a non-zip file "pickled data", which misleads.
        if not zipfile.is_zipfile(path):
            raise ValueError(f"{path} is not a valid .npz file (not a zip archive).")
        with np.load(path, allow_pickle=False) as z:
            if "X" not in z or "y" not in z:
                raise ValueError(f"{path} lacks the arrays 'X' and 'y' of the benchmark format.")
            X, y = z["X"].astype(float), z["y"]
            if "train_idx" not in z:
                return X, y, None, None
            n_splits = z["train_idx"].shape[0]
            if not 1 <= split <= n_splits:
                raise ValueError(f"split must be between 1 and {n_splits} for {path.name}; "
                                 f"got {split}.")
            tr, te = z["train_idx"][split - 1], z["test_idx"][split - 1]
            return X[tr], y[tr], X[te], y[te]
    if suffix == ".csv":
        with path.open() as fh:
            first = fh.readline()
        skip = 0 if _is_numeric_row(first) else 1
        data = np.loadtxt(path, delimiter=",", skiprows=skip, ndmin=2)
        if data.shape[1] < 2:
            raise ValueError(f"{path} needs at least one feature column and a label column.")
        return data[:, :-1], data[:, -1], None, None
    from sklearn.datasets import load_svmlight_file

    try:
        X_sparse, y = load_svmlight_file(str(path))
    except ValueError as exc:
        raise ValueError(
            f"Could not read {path} as LIBSVM text ({exc}); use .npz, .csv or LIBSVM format."
        ) from exc
    return np.asarray(X_sparse.todense()), y, None, None


def _is_numeric_row(line: str) -> bool:
    try:
        [float(v) for v in line.strip().split(",")]
    except ValueError:
        return False
    return True


# Generators of the semi-supervised benchmarks (seed 003).
from sparsify.datasets.semi_supervised import (  # noqa: E402
    labeled_split,
    make_g241c,
    make_g241d,
    make_two_moons,
)

__all__ += ["labeled_split", "make_g241c", "make_g241d", "make_two_moons"]
