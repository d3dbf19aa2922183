"""A model file's contents, read and checked, and its predictions with numpy alone.

`ModelContents` is what `sparsify.io.model_file` reads from a file before
anything else is made of it: the header's fields and the arrays. It predicts
by itself (decision values ``K(X, Z) @ β.T + b`` in row blocks, then the file's
decision rule), with the same operations as the fitted estimator, so the
command line's ``sparsify predict`` needs neither scikit-learn nor cvxpy;
`sparsify.io.machine.SavedKernelMachine` is the scikit-learn estimator made
from it. Decision values that are not finite (a file whose numbers overflow:
a polynomial degree of 1e308, coefficients near the largest float) are refused,
never turned into a class.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from sparsify.io.kernel_spec import feature_width, kernel_features

__all__ = ["ModelContents", "NonFiniteDecisionError", "check_finite_decision"]

Array = NDArray[np.float64]

#: Rows of X per block of kernel values: about 4 million values at a time.
BLOCK_VALUES = 2**22

#: How many XVs a loaded model is evaluated at, to refuse one whose numbers overflow.
PROBE_ROWS = 256


class NonFiniteDecisionError(ValueError):
    """A model's decision values are NaN or infinite: its numbers overflow."""


def check_finite_decision(values: Array, source: str, where: str) -> None:
    """Raise `NonFiniteDecisionError` unless every decision value is finite.

    Examples
    --------
    >>> check_finite_decision(np.array([1.0, 2.0]), "m.spm", "the data")
    >>> check_finite_decision(np.array([1.0, np.inf]), "m.spm", "the data")
    Traceback (most recent call last):
    ...
    sparsify.io.contents.NonFiniteDecisionError: The model 'm.spm' gives a decision value of inf ...
    """
    finite = np.isfinite(values)
    if finite.all():
        return
    row = int(np.flatnonzero(~finite.reshape(len(values), -1).all(axis=1))[0])
    value = np.asarray(values).reshape(len(values), -1)[row]
    bad = value[~np.isfinite(value)][0]
    raise NonFiniteDecisionError(
        f"The model {source!r} gives a decision value of {bad} for row {row} of {where}: its "
        "kernel parameters or coefficients overflow in float64, so it cannot predict. Refit "
        "and save the model again (standardise the features, or lower gamma or degree), or "
        "use a model file written by sparsify.")


@dataclass(frozen=True)
class ModelContents:
    """The checked contents of a model file (see docs/model-format.md).

    Attributes
    ----------
    source : str
        The file (or other source) it was read from, named in errors.
    header : dict
        header.json, checked field by field.
    expansion_vectors : ndarray of shape (Nz, n_features)
    expansion_coef : ndarray of shape (n_outputs, Nz)
    intercept : ndarray of shape (n_outputs,)
    kernel_arrays : dict of str to ndarray
        The arrays the kernel description names.
    other_arrays : dict of str to ndarray
        The probability method's arrays (``prob_a``, ``prob_b``).
    classes : ndarray or None
        The class labels, of their saved dtype; None for regressors and outlier detectors.
    """

    source: str
    header: dict[str, Any]
    expansion_vectors: Array
    expansion_coef: Array
    intercept: Array
    kernel_arrays: dict[str, Array]
    other_arrays: dict[str, Array]
    classes: NDArray[Any] | None

    @property
    def n_features_in(self) -> int:
        return int(self.header["n_features_in"])

    @property
    def feature_names_in(self) -> list[str] | None:
        names = self.header["feature_names_in"]
        return None if names is None else list(names)

    @property
    def decision_rule(self) -> str:
        return str(self.header["decision_rule"])

    @property
    def is_regressor(self) -> bool:
        return self.decision_rule == "identity"

    @property
    def is_outlier_detector(self) -> bool:
        return self.decision_rule == "outlier_sign"

    @property
    def formulation(self) -> str | None:
        return self.header["formulation"]  # type: ignore[no-any-return]

    @property
    def sparsify_version(self) -> str:
        return str(self.header["sparsify_version"])

    @property
    def metadata(self) -> dict[str, Any]:
        return self.header["metadata"]  # type: ignore[no-any-return]

    def block_rows(self) -> int:
        """Rows per block: about `BLOCK_VALUES` kernel values (a graph's count too)."""
        width = feature_width(self.header["kernel"], self.kernel_arrays,
                              len(self.expansion_vectors))
        return max(1, BLOCK_VALUES // max(1, width))

    def kernel_block(self, X: Array) -> Array:
        """K(X, Z) of the file's kernel for a block of rows."""
        return kernel_features(self.header["kernel"], self.kernel_arrays, X,
                               self.expansion_vectors)

    def decision_function(self, X: ArrayLike, where: str = "the data") -> Array:
        """Decision values K(X, Z) β.T + b, one column per output (raveled for one).

        Raises `NonFiniteDecisionError` when one is NaN or infinite; ``where``
        names X in that message.
        """
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2 or X.shape[1] != self.n_features_in:
            raise ValueError(f"X has shape {X.shape}; the model {self.source!r} takes "
                             f"(n_samples, {self.n_features_in}).")
        out = np.empty((len(X), len(self.intercept)))
        step = self.block_rows()
        with np.errstate(over="ignore", invalid="ignore"):  # overflow is refused below
            for start in range(0, len(X), step):
                rows = slice(start, start + step)
                out[rows] = self.kernel_block(X[rows]) @ self.expansion_coef.T
            out += self.intercept
        check_finite_decision(out, self.source, where)
        return out.ravel() if out.shape[1] == 1 else out

    def predict(self, X: ArrayLike) -> NDArray[Any]:
        """Predictions by the file's decision rule: labels, ±1 (outliers) or real values."""
        return self.decide(self.decision_function(X))

    def decide(self, scores: Array) -> NDArray[Any]:
        """Decision values to predictions, by the file's rule."""
        rule = self.decision_rule
        if rule == "identity":
            return scores
        if rule == "outlier_sign":
            return np.where(scores >= 0, 1, -1)
        assert self.classes is not None  # a classifier's rule has classes
        if rule == "binary_sign":
            return self.classes[(scores > 0).astype(int)]  # type: ignore[no-any-return]
        return self.classes[scores.argmax(1)]  # type: ignore[no-any-return]

    def check_finite(self) -> None:
        """Refuse a model whose decision values at its own XVs (some) are not finite."""
        probe = self.expansion_vectors[:PROBE_ROWS]
        if len(probe):
            self.decision_function(probe, where="its own expansion vectors")
