"""Standard output of the commands: one JSON object, labels as plain values, a clean stdout.

With ``--json`` a command prints exactly one JSON object on stdout; whatever
the library prints while it works goes to stderr instead (`_stdout_to_stderr`).
"""

from __future__ import annotations

import contextlib
import json
import math
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
    """Keep stdout for the one JSON object: library progress output goes to stderr."""
    if not active:
        yield
        return
    with contextlib.redirect_stdout(sys.stderr):
        yield
