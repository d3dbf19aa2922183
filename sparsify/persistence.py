"""Which pickled estimators this version of sparsify loads: the version rule.

One rule serves pickled estimators (``pickle``, ``joblib.dump``, the command
line's model files): a model is read only by the **same major.minor** version
of sparsify that saved it. Patch releases (0.1.0 → 0.1.3) keep the fitted
attributes and their meaning, so their models load; any other version (newer
or older) may have renamed or re-defined a fitted attribute, so its models are
refused with `IncompatibleVersionError` and must be refitted. A pickle
that records no version (written before the version was recorded) is refused
too.

Examples
--------
>>> from sparsify.persistence import is_compatible
>>> is_compatible("0.1.0", "0.1.7"), is_compatible("0.2.0", "0.1.7"), is_compatible(None, "0.1.0")
(True, False, False)
"""

from __future__ import annotations

from typing import Any

import sparsify

__all__ = [
    "VERSION_KEY",
    "IncompatibleVersionError",
    "VersionedPickleMixin",
    "check_version",
    "current_version",
    "is_compatible",
    "major_minor",
]

#: Key of the sparsify version in a pickled estimator's state.
VERSION_KEY = "_sparsify_version"


class IncompatibleVersionError(ValueError):
    """A saved model comes from a sparsify version with another major.minor (or none recorded)."""


def current_version() -> str:
    """The running sparsify's version (``sparsify.__version__``)."""
    return str(sparsify.__version__)


def major_minor(version: str) -> tuple[str, ...]:
    """The (major, minor) part of a version string, which decides compatibility.

    Examples
    --------
    >>> major_minor("0.1.0"), major_minor("1.2.3.dev4")
    (('0', '1'), ('1', '2'))
    """
    return tuple(str(version).split(".")[:2])


def is_compatible(saved: str | None, current: str | None = None) -> bool:
    """Whether a model saved by sparsify ``saved`` loads in ``current`` (default: this one).

    Parameters
    ----------
    saved : str or None
        The version recorded in the saved model; None if it records none.
    current : str, optional
        The loading version; defaults to `current_version`.

    Returns
    -------
    bool
        True when both have the same major.minor.
    """
    if saved is None:
        return False
    return major_minor(saved) == major_minor(current or current_version())


def check_version(saved: str | None, what: str) -> None:
    """Refuse a model saved by an incompatible sparsify version, saying what to do.

    Parameters
    ----------
    saved : str or None
        The version recorded in the saved model; None if it records none.
    what : str
        What is being loaded, for the message (e.g. ``"SparseSVC"``).

    Raises
    ------
    IncompatibleVersionError
        If ``saved`` has another major.minor than this sparsify, or is None.

    Examples
    --------
    >>> check_version(current_version(), "SparseSVC")  # the same version loads
    >>> check_version("0.0.1", "SparseSVC")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    sparsify.persistence.IncompatibleVersionError: This SparseSVC was saved by ...
    """
    current = current_version()
    if is_compatible(saved, current):
        return
    origin = "a sparsify version that records none" if saved is None else f"sparsify {saved}"
    raise IncompatibleVersionError(
        f"This {what} was saved by {origin} and this is sparsify {current}; models load only in "
        f"the same major.minor version ({'.'.join(major_minor(current))}.x). Refit it with "
        f"sparsify {current}, or load it with the version that saved it."
    )


class VersionedPickleMixin:
    """Pickling that records the sparsify version and refuses an incompatible one.

    ``__getstate__`` adds `VERSION_KEY` to the state; ``__setstate__``
    removes it and raises `IncompatibleVersionError` unless it has this
    sparsify's major.minor (see `check_version`). Place it before
    `sklearn.base.BaseEstimator` in the bases; it cooperates with
    scikit-learn's own version warning.

    Examples
    --------
    >>> import pickle
    >>> from sparsify import SparseSVC
    >>> clf = pickle.loads(pickle.dumps(SparseSVC(n_expansion=3)))
    >>> clf.n_expansion, "_sparsify_version" in vars(clf)
    (3, False)
    """

    def __getstate__(self) -> dict[str, Any]:
        state: Any
        try:
            state = super().__getstate__()
        except AttributeError:  # Python < 3.11 without BaseEstimator after this mixin
            state = None
        if state is None:
            state = self.__dict__
        # a new dict: on Python >= 3.11 the parent may hand back the live __dict__
        return {**state, VERSION_KEY: current_version()}

    def __setstate__(self, state: dict[str, Any]) -> None:
        state = dict(state)
        check_version(state.pop(VERSION_KEY, None), type(self).__name__)
        try:
            super().__setstate__(state)  # type: ignore[misc]
        except AttributeError:
            self.__dict__.update(state)
