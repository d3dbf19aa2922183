"""Doctests that need an optional extra are skipped, with the reason, where it is not installed.

The ONNX export's examples (`sparsify/onnx/convert.py`) run onnx, skl2onnx and onnxruntime,
which the test extra installs (``pip install -e ".[test]"``); without them the rest of the
suite still runs.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

_ONNX_MODULE = Path(__file__).resolve().parent / "sparsify" / "onnx" / "convert.py"


def _installed(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ImportError:
        return False


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    missing = [name for name in ("onnx", "skl2onnx", "onnxruntime") if not _installed(name)]
    if not missing:
        return
    skip = pytest.mark.skip(reason=f"needs {', '.join(missing)} (pip install -e '.[test]')")
    for item in items:
        if Path(item.path) == _ONNX_MODULE:  # its doctests
            item.add_marker(skip)
