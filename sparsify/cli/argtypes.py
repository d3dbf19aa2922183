"""Argument types of the ``sparsify`` parser: the values its options accept.

Each type turns the text of one option into its value or raises
`argparse.ArgumentTypeError` with the message the parser shows after
``sparsify: error: argument --NAME:``.
"""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Callable
from typing import Any

# What the options take as numbers: ASCII digits, a sign, a point, an exponent (Python's int()
# and float() also take "1_000" and other scripts' digits, which nobody types on purpose); the
# rule of a CSV cell (sparsify.datasets.readers), kept here so that parsing needs no numpy.
_INT = re.compile(r"[+-]?[0-9]+")
_FLOAT = re.compile(r"[+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:e[+-]?[0-9]+)?|inf|infinity|nan)",
                    re.IGNORECASE)


def _to_int(text: str) -> int:
    if not _INT.fullmatch(text.strip()):
        raise ValueError(text)
    return int(text)


def _to_float(text: str) -> float:
    if not _FLOAT.fullmatch(text.strip()):
        raise ValueError(text)
    return float(text)


def _int_at_least(low: int) -> Callable[[str], int]:
    """An argparse type: an integer >= ``low``."""

    def parse(text: str) -> int:
        try:
            value = _to_int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be an integer >= {low}; got {text!r}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be an integer >= {low}; got {value}")
        return value

    return parse


_positive_int = _int_at_least(1)
_nonneg_int = _int_at_least(0)


def _float(text: str) -> float:
    try:
        value = _to_float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number; got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number; got {text!r}")
    return value


def _positive_float(text: str) -> float:
    value = _float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be > 0; got {value:g}")
    return value


def _ratio(text: str) -> float:
    value = _float(text)
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"must be in (0, 1]; got {value:g}")
    return value


def _gamma(text: str) -> float | str:
    if text in ("scale", "auto"):
        return text
    try:
        return _positive_float(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(
            f"must be 'scale', 'auto' or a number > 0; got {text!r}"
        ) from None


#: Words a --param value may be besides numbers: booleans and None, in any case.
_WORDS: dict[str, Any] = {"true": True, "false": False, "none": None, "null": None}


def _param(text: str) -> tuple[str, Any]:
    """``NAME=VALUE`` with VALUE an int, a float, true/false, none, or else text.

    Examples
    --------
    >>> _param("probability=True"), _param("nu=0.1"), _param("class_weight=balanced")
    (('probability', True), ('nu', 0.1), ('class_weight', 'balanced'))
    """
    name, sep, value = text.partition("=")
    if not sep or not name.strip():
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE; got {text!r}")
    key = name.strip().replace("-", "_")
    for convert in (_to_int, _to_float):
        try:
            return key, convert(value)
        except ValueError:
            pass
    if value.strip().lower() in _WORDS:
        return key, _WORDS[value.strip().lower()]
    return key, value


def _label(text: str) -> int | float | str:
    """A class label given on the command line: an int, a float, or else the text itself.

    Examples
    --------
    >>> _label("1"), _label("-1.5"), _label("normal")
    (1, -1.5, 'normal')
    """
    for convert in (_to_int, _to_float):
        try:
            return convert(text)
        except ValueError:
            pass
    return text


def _list(item: Callable[[str], Any]) -> Callable[[str], list[Any]]:
    """An argparse type: comma-separated values, each of type ``item`` (a search grid)."""

    def parse(text: str) -> list[Any]:
        parts = [part.strip() for part in text.split(",")]
        if not all(parts):
            raise argparse.ArgumentTypeError(f"expected values separated by commas; got {text!r}")
        return [item(part) for part in parts]

    return parse


def _param_values(text: str) -> tuple[str, list[Any]]:
    """NAME=V1,V2,...: a parameter's values in a search grid, each as `_param` reads one."""
    name, sep, values = text.partition("=")
    if not sep or not name.strip() or not all(v.strip() for v in values.split(",")):
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE[,VALUE...]; got {text!r}")
    return name.strip().replace("-", "_"), [_param(f"{name}={v.strip()}")[1]
                                            for v in values.split(",")]
