"""Standard output of the commands: one JSON object, labels as plain values, a clean stdout.

With ``--json`` a command prints exactly one JSON object on stdout; whatever
the library prints while it works goes to stderr instead (`_stdout_to_stderr`).
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import math
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np


def _label(value: Any) -> Any:
    """A label as a plain JSON value: integral floats become ints (CSV labels are floats)."""
    value = value.item() if isinstance(value, np.generic) else value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


# A spreadsheet runs a cell that starts with one of these as a formula (OWASP's CSV injection).
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _csv_column(title: str | None, values: list[Any], guard: bool = True) -> str:
    """One column of values as CSV (RFC 4180: the csv module's quoting), a title line first.

    With ``guard``, a text value that a spreadsheet would run as a formula
    (``=cmd()``, ``@SUM(...)``) is written with a leading ``'``, as OWASP
    advises; numbers are written as they are.

    Examples
    --------
    >>> print(_csv_column("prediction", [1, "a,b", "=2+3", -1.5]), end="")
    prediction
    1
    "a,b"
    '=2+3
    -1.5
    """
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    if title is not None:
        writer.writerow([title])
    for value in values:
        if guard and isinstance(value, str) and value.startswith(_FORMULA_START):
            value = "'" + value
        writer.writerow([value])
    return buffer.getvalue()


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return [_jsonable(v) for v in value.tolist()]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None  # JSON has no NaN or inf
    if isinstance(value, Path):
        return str(value)
    return value


def _print_json(obj: dict[str, Any]) -> None:
    print(json.dumps(_jsonable(obj), indent=2, allow_nan=False))


@contextlib.contextmanager
def _stdout_to_stderr(active: bool) -> Iterator[None]:
    """Keep stdout for the one JSON object: library output goes to stderr, Python's and what
    compiled solvers print themselves (file descriptor 1 points at stderr meanwhile)."""
    if not active:
        yield
        return
    saved = None
    with contextlib.suppress(OSError, ValueError, AttributeError, io.UnsupportedOperation):
        sys.stdout.flush()
        saved = os.dup(1)
        os.dup2(sys.stderr.fileno(), 1)
    try:
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        if saved is not None:
            _flush_c_stdio()  # what a solver printed is still in C's buffer: to stderr with it
            os.dup2(saved, 1)
            os.close(saved)


def _flush_c_stdio() -> None:
    with contextlib.suppress(OSError, AttributeError, TypeError):
        import ctypes

        ctypes.CDLL(None).fflush(None)
