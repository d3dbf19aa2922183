"""What labels a classifier takes: one type for all of them, and several samples per class.

Checked before any work, by every classifier's fit (in memory and over row
blocks) and by the command line, so that a column of identifiers or of mixed
types read as labels is refused with what to change instead of running for
hours, exhausting memory, or failing inside numpy.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from sparsify.core.memory import check_memory

__all__ = ["MANY_CLASSES", "MIN_SAMPLES_PER_CLASS", "check_class_count", "check_label_types"]

#: A classifier with more classes than this needs `MIN_SAMPLES_PER_CLASS` samples per class on
#: average: many classes of one or two samples are real targets or identifiers, not labels.
MANY_CLASSES = 20
MIN_SAMPLES_PER_CLASS = 3


def check_class_count(owner: str, n_classes: int, n_samples: int) -> None:
    """Refuse labels that cannot be classes: many classes of very few samples each.

    One-vs-rest fits a problem per class (and every multi-class fit holds about
    n_classes × n_samples numbers), so 2000 "classes" in 4000 rows, a column of
    real values or identifiers read as labels, would run for hours or exhaust
    memory. Refused before any work when there are more than `MANY_CLASSES`
    classes with fewer than `MIN_SAMPLES_PER_CLASS` samples each on average,
    or when the n_classes × n_samples numbers would not fit in memory.

    Examples
    --------
    >>> check_class_count("SparseSVC", 3, 10)
    >>> check_class_count("SparseSVC", 2000, 4000)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: SparseSVC got 2000 classes in 4000 samples (2 per class on average): ...
    """
    if n_classes > MANY_CLASSES and n_samples < MIN_SAMPLES_PER_CLASS * n_classes:
        raise ValueError(
            f"{owner} got {n_classes} classes in {n_samples} samples "
            f"({n_samples / n_classes:.2g} per class on average): a classifier needs several "
            "samples of each class, each class being a problem (one-vs-rest) or an output of "
            "its own. If y holds real values or identifiers rather than class labels, fit a "
            "regressor (SparseKernelRidge, SparseSVR) or choose the label column again; "
            "otherwise merge rare classes.")
    check_memory(8 * n_classes * n_samples,
                 f"{owner} with {n_classes} classes of {n_samples} samples (a target per class "
                 "and sample)", "Merge rare classes, or fit on a subsample.")


def check_label_types(labels: NDArray[Any], owner: str) -> None:
    """Refuse labels of mixed kinds (numbers and strings, or None among them), naming them.

    numpy cannot sort such labels (it would say "'<' not supported"), and 1 and
    "1" would be two classes.

    Examples
    --------
    >>> check_label_types(np.array(["a", "b"], dtype=object), "SparseSVC")
    >>> check_label_types(np.array([1, "a", None], dtype=object), "SparseSVC")
    Traceback (most recent call last):
    ...
    ValueError: SparseSVC got labels of mixed types in y (None, int, str): give every label the same type, all strings (y.astype(str)) or all numbers; a missing label (None, NaN) is not a class: remove those samples.
    """  # noqa: E501
    if labels.dtype != object:
        return
    kinds = {"None" if v is None else type(v).__name__ if isinstance(v, (str, bytes))
             else "int" if isinstance(v, (bool, int, np.integer))
             else "float" if isinstance(v, (float, np.floating)) else type(v).__name__
             for v in labels.tolist()}
    if len(kinds) > 1 and not kinds <= {"int", "float"}:
        raise ValueError(
            f"{owner} got labels of mixed types in y ({', '.join(sorted(kinds, key=str))}): give "
            "every label the same type, all strings (y.astype(str)) or all numbers; a missing "
            "label (None, NaN) is not a class: remove those samples.")


