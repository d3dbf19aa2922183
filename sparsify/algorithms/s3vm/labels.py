"""Labels of the semi-supervised SVM: reading ``y``, the temporary labels and their switching.

`split_labels` reads a ``y`` whose unlabeled points carry a marker value (-1
by default, as `sklearn.semi_supervised` does; NaN or a string work too) into
a labeled mask and ±1 labels. The unlabeled points then get temporary labels:
first by ranking a supervised SVM's decision values (`ranked_labels`, the
Lp-MKL-S3VM paper's Algorithm 2, steps 1-4), then improved by `switch_labels`
(eq. 20), which keeps the balance constraint. `warn_if_one_sided` reports a
decision function that put every unlabeled point on one side.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from sklearn.utils.multiclass import check_classification_targets, type_of_target
from sklearn.utils.validation import _assert_all_finite, check_consistent_length, column_or_1d

__all__ = ["SWITCH_GAIN", "ranked_labels", "split_labels", "switch_labels",
           "warn_if_one_sided"]

Array = NDArray[np.float64]

#: Smallest loss decrease (unweighted) for which a pair of labels is switched;
#: above the solvers' accuracy, so that switching cannot cycle on round-off.
SWITCH_GAIN = 1e-6


def _hinge(t: Array) -> Array:
    return np.maximum(0.0, 1.0 - t)


def switch_labels(y: Array, outputs: Array, candidates: NDArray[np.intp]) -> int:
    """Switch pairs of temporary labels where that lowers the loss (Lp-MKL-S3VM paper, eq. 20).

    At fixed outputs g, switching a positive i and a negative j among the
    ``candidates`` (the unlabeled points) changes the loss by
    ``[V(−g_i) + V(g_j)] − [V(g_i) + V(−g_j)]`` (V the hinge loss, the exact
    rule of eq. 20; for points inside the margin it is S3VMlight's
    ξ_i + ξ_j > 2). Disjoint pairs change the loss independently, so every
    pair with a decrease is switched at once: the positives and the negatives
    are sorted by their own gain and paired in that order while the pair's
    gain is positive. The number of positives is unchanged (the balance
    constraint holds), and the objective at fixed (w, b) falls strictly.

    Parameters
    ----------
    y : ndarray of shape (N,)
        Labels in {-1, +1}; modified in place.
    outputs : ndarray of shape (N,)
        Decision values g = f + b.
    candidates : ndarray of int
        Indices whose labels may be switched.

    Returns
    -------
    int
        Number of pairs switched.

    Examples
    --------
    >>> y = np.array([1.0, 1.0, -1.0, -1.0])
    >>> switch_labels(y, np.array([-0.8, 2.0, 0.5, -3.0]), np.arange(4))
    1
    >>> y
    array([-1.,  1.,  1., -1.])
    """
    t = y[candidates] * outputs[candidates]
    gain = _hinge(t) - _hinge(-t)  # loss decrease if this point's label flips
    pos, neg = candidates[y[candidates] > 0], candidates[y[candidates] < 0]
    g_pos, g_neg = gain[y[candidates] > 0], gain[y[candidates] < 0]
    op, on = np.argsort(-g_pos, kind="stable"), np.argsort(-g_neg, kind="stable")
    n = min(len(op), len(on))
    pair_gain = g_pos[op[:n]] + g_neg[on[:n]]
    k = int(np.count_nonzero(pair_gain > SWITCH_GAIN))  # non-increasing: a prefix
    y[pos[op[:k]]] = -1.0
    y[neg[on[:k]]] = 1.0
    return k


def ranked_labels(scores: Array, n_positive: int) -> Array:
    """Temporary labels by rank: +1 for the ``n_positive`` highest scores, -1 for the rest.

    Ties keep their order (a stable sort), so the labels are reproducible.

    Examples
    --------
    >>> ranked_labels(np.array([0.3, -1.0, 2.0, 0.3]), 2)
    array([ 1., -1.,  1., -1.])
    """
    labels = np.full(len(scores), -1.0)
    labels[np.argsort(-scores, kind="stable")[:n_positive]] = 1.0
    return labels


def split_labels(
    X: Array, y: ArrayLike, marker: Any, name: str = "SemiSupervisedSVC"
) -> tuple[NDArray[np.bool_], Array, NDArray[Any]]:
    """The labeled points of ``y``, their labels in {-1, +1} and the two classes.

    Parameters
    ----------
    X : ndarray of shape (N, d)
        The training inputs (only their number is checked against ``y``).
    y : array-like of shape (N,)
        Class labels of any type, with ``marker`` for the unlabeled points.
    marker : scalar
        The value that marks an unlabeled point; NaN matches NaN in a float or
        object ``y``.
    name : str, default="SemiSupervisedSVC"
        The estimator named in the errors.

    Returns
    -------
    labeled : ndarray of bool, shape (N,)
    y_labeled : ndarray of shape (n_labeled,)
        +1 for the second class, -1 for the first.
    classes : ndarray of shape (2,)
        The sorted class labels, the marker excluded.

    Examples
    --------
    >>> y = np.array(["a", "?", "b", "?"], dtype=object)
    >>> labeled, y_lab, classes = split_labels(np.zeros((4, 1)), y, "?")
    >>> labeled.tolist(), y_lab.tolist(), classes.tolist()
    ([True, False, True, False], [-1.0, 1.0], ['a', 'b'])
    """
    y_arr: NDArray[Any] = column_or_1d(y, warn=True)
    check_consistent_length(X, y_arr)
    marker_is_nan = isinstance(marker, float | np.floating) and np.isnan(marker)
    if marker_is_nan:
        if y_arr.dtype.kind == "f":
            unl = np.isnan(y_arr)
        elif y_arr.dtype.kind == "O":
            unl = np.array([isinstance(v, float | np.floating) and np.isnan(v) for v in y_arr],
                           dtype=bool)
        else:
            unl = np.zeros(len(y_arr), dtype=bool)
    elif y_arr.dtype.kind in "OUS" or isinstance(marker, str):
        unl = np.array([type(v) is type(marker) and v == marker for v in y_arr.tolist()],
                       dtype=bool) if y_arr.dtype.kind != "O" else np.array(
            [v == marker for v in y_arr], dtype=bool)
    else:
        unl = np.asarray(y_arr == marker, dtype=bool).reshape(len(y_arr))
    labeled = ~unl
    y_lab = y_arr[labeled]
    if not labeled.any():
        raise ValueError(f"All {len(y_arr)} points are unlabeled (y == {marker!r} everywhere); "
                         "label at least one point of each class.")
    if y_lab.dtype.kind in "fc":
        _assert_all_finite(y_lab, input_name="y")
    check_classification_targets(y_lab)
    classes = np.unique(y_lab)
    if len(classes) > 2:
        raise ValueError(
            "Only binary classification is supported. The type of the target is "
            f"{type_of_target(y_lab, input_name='y')}; train one model per class "
            "(one-vs-rest) for more classes."
        )
    if len(classes) < 2:
        only = classes[0]
        if unl.any() and not marker_is_nan and marker == -1 and only == 1:
            raise ValueError(
                "y holds only the values -1 and 1, and unlabeled=-1 reads every -1 as "
                "unlabeled, which leaves 1 class. If -1 and +1 are the classes, mark the "
                "unlabeled points with another value, e.g. unlabeled=0 or NaN in a float "
                "y (unlabeled=np.nan)."
            )
        raise ValueError(
            f"{name} needs labeled points of 2 classes; got 1 class "
            f"({only!r}) among the {int(labeled.sum())} labeled points. Label at least one "
            "point of the other class."
        )
    return labeled, np.where(y_lab == classes[1], 1.0, -1.0), classes


def warn_if_one_sided(outputs: Array, labels: Array, balance: float) -> None:
    """Warn when f puts every unlabeled point on one side though the labels are mixed.

    ``outputs`` and ``labels`` are the decision values and the final
    temporary labels of the unlabeled points; ``balance`` is r. Called from
    the estimator's ``fit``, so the warning points at the caller of ``fit``.
    """
    if not len(outputs) or len(np.unique(labels)) < 2:
        return
    side = outputs > 0
    if side.all() or not side.any():
        disagree = float(np.mean(side != (labels > 0)))
        warnings.warn(
            f"The decision function puts all {len(outputs)} unlabeled points on the "
            f"{'positive' if side.all() else 'negative'} side, while the balance r = "
            f"{balance:.3g} makes transduction_ mixed: predict and transduction_ "
            f"disagree on {disagree:.1%} of them. The kernel is probably too stiff (a "
            "manifold gamma_ratio too large) or C too small.",
            UserWarning,
            stacklevel=3,
        )
