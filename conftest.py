"""Doctests that need an optional extra are skipped, with the reason, where it cannot be imported.

The ONNX export's examples (`sparsify/onnx/convert.py`) run onnx, skl2onnx and onnxruntime,
and the distributed SVM's (`sparsify/algorithms/svm/distributed*.py`) start a Dask cluster;
the test extra installs both (``pip install -e ".[test]"``). Without them, or with one that
fails to import (distributed without tornado, say), the rest of the suite still runs, as the
test files that need them skip through `pytest.importorskip`.
"""

from __future__ import annotations

import importlib
from functools import cache
from pathlib import Path

import pytest

_PACKAGE = Path(__file__).resolve().parent / "sparsify"
_EXTRAS = {
    _PACKAGE / "onnx" / "convert.py": ("onnx", "skl2onnx", "onnxruntime"),
    _PACKAGE / "algorithms" / "svm" / "distributed.py": ("dask.array", "distributed"),
    _PACKAGE / "algorithms" / "svm" / "distributed_squared_hinge.py": ("dask.array",
                                                                        "distributed"),
}


@cache
def _importable(name: str) -> bool:
    # an import, not find_spec: an installed package whose own dependency is missing fails here
    try:
        importlib.import_module(name)
    except ImportError:
        return False
    return True


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        needs = _EXTRAS.get(Path(item.path))
        missing = [name for name in needs or () if not _importable(name)]
        if missing:  # its doctests
            item.add_marker(pytest.mark.skip(
                reason=f"needs {', '.join(missing)} (pip install -e '.[test]')"))
