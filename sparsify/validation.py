"""Input checks the core and the kernels share: rows in memory, Dask collections refused.

A module of its own, outside `sparsify.core`, so that the kernels' feature maps
(`sparsify.kernels.taylor`) validate their input as the estimators do without
importing the core.
"""

from __future__ import annotations

from typing import Any

__all__ = ["ON_BLOCKS", "is_dask_collection", "validate_rows"]

#: What fits Dask collections over their row blocks (docs/scale-out.md), for the refusals.
ON_BLOCKS = ("SparseSVC, SparseKernelRidge, and the classifiers and regressors of declared "
             "formulations")


def is_dask_collection(data: Any) -> bool:
    """Whether ``data`` is a dask collection (array, DataFrame, Series), without importing dask.

    Examples
    --------
    >>> import numpy as np
    >>> is_dask_collection(np.ones(3))
    False
    """
    return type(data).__module__.split(".")[0] in ("dask", "dask_expr")


def validate_rows(estimator: Any, X: Any, y: Any = "no_validation", **kwargs: Any) -> Any:
    """scikit-learn's ``validate_data`` for a fit on rows in memory; Dask collections refused.

    Every in-memory fit takes its rows through here: numpy would gather a Dask
    collection whole into this process (``np.asarray`` computes it) without a word,
    where the estimator's documentation says it is refused. The estimators that fit
    row blocks test for Dask collections before they get here.

    Examples
    --------
    >>> from sklearn.base import BaseEstimator
    >>> validate_rows(BaseEstimator(), [[1.0], [2.0]]).shape
    (2, 1)
    """
    from sklearn.utils.validation import validate_data

    dask_inputs = [name for name, value in (("X", X), ("y", y)) if is_dask_collection(value)]
    if dask_inputs and kwargs.get("reset", True):
        raise ValueError(
            f"{type(estimator).__name__}.fit does not take dask collections (got "
            f"{' and '.join(dask_inputs)}): it fits rows in this process's memory, and "
            "gathering them there is yours to decide (X.compute(), after checking they fit). "
            f"Over row blocks on a cluster fit {ON_BLOCKS} (docs/scale-out.md).")
    return validate_data(estimator, X, y, **kwargs)
