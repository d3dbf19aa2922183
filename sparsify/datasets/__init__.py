"""Data: the embedded Banana set, and readers of the file formats the command line takes.

The Banana set (split 1 of the IDA benchmark: 400 training and 4900 test
points, 2 features, labels -1/+1) ships inside the package, so the default job
needs no network and no data directory. The readers of ``.npz``, ``.csv`` and
LIBSVM files (`load_file`, `read_data_file`) live in `sparsify.datasets.readers`.
"""

from __future__ import annotations

import importlib
from importlib.resources import as_file, files
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from sparsify.datasets.readers import DataFile, load_file, read_data_file

__all__ = [
    "DataFile",
    "labeled_split",
    "load_banana",
    "load_file",
    "make_checkerboard",
    "make_g241c",
    "make_g241d",
    "make_ringnorm",
    "make_two_moons",
    "read_data_file",
    "ringnorm_bayes_error",
    "ringnorm_bayes_rule",
]

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


# Generators of the semi-supervised benchmarks ("Lp-norm constrained multiple kernel
# semi-supervised SVM") and classification benchmarks of any size (runs at scale): imported on
# first use, so reading a data file (the command line's predict) does not import scikit-learn.
_LAZY = {
    "labeled_split": "sparsify.datasets.semi_supervised",
    "make_g241c": "sparsify.datasets.semi_supervised",
    "make_g241d": "sparsify.datasets.semi_supervised",
    "make_two_moons": "sparsify.datasets.semi_supervised",
    "make_checkerboard": "sparsify.datasets.synthetic",
    "make_ringnorm": "sparsify.datasets.synthetic",
    "ringnorm_bayes_error": "sparsify.datasets.synthetic",
    "ringnorm_bayes_rule": "sparsify.datasets.synthetic",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


if TYPE_CHECKING:
    from sparsify.datasets.semi_supervised import (
        labeled_split,
        make_g241c,
        make_g241d,
        make_two_moons,
    )
    from sparsify.datasets.synthetic import (
        make_checkerboard,
        make_ringnorm,
        ringnorm_bayes_error,
        ringnorm_bayes_rule,
    )
