"""Shared fixtures: the benchmark data directory beside the repository, if present."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def shared_data_dir() -> Path | None:
    """``$SPARSIFY_DATA_DIR`` or ``../shared/data`` beside the repository, if it exists."""
    env = os.environ.get("SPARSIFY_DATA_DIR")
    path = Path(env) if env else REPO.parent / "shared" / "data"
    return path if (path / "banana" / "banana.npz").is_file() else None


@pytest.fixture
def data_dir() -> Path:
    path = shared_data_dir()
    if path is None:
        pytest.skip("needs the benchmark data in ../shared/data (or $SPARSIFY_DATA_DIR)")
    return path
