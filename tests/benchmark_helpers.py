"""Helpers of the benchmark smoke tests: import a script of benchmarks/, write tiny data sets."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import numpy as np

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def load_benchmark(name: str) -> ModuleType:
    """``benchmarks/<name>.py``, imported from its file (benchmarks/ is not a package).

    The folder is on ``sys.path`` while the script runs its imports, so it can import
    its neighbours (``from performance import ...``) as it does when run directly.
    """
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up by name
    sys.path.insert(0, str(BENCHMARKS))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(BENCHMARKS))
    return module


def write_set(folder: Path, name: str, X: np.ndarray, y: np.ndarray, n_train: int,
              n_splits: int, seed: int = 0) -> None:
    """Save ``X, y`` with ``n_splits`` random train/test splits in the shared npz format."""
    rng = np.random.default_rng(seed)
    perms = [rng.permutation(len(X)) for _ in range(n_splits)]
    (folder / name).mkdir(parents=True)
    np.savez_compressed(folder / name / f"{name}.npz", X=X, y=y,
                        train_idx=np.array([p[:n_train] for p in perms]),
                        test_idx=np.array([p[n_train:] for p in perms]))


def write_plain_set(folder: Path, name: str, X: np.ndarray, y: np.ndarray) -> None:
    """Save ``X, y`` without train/test splits (as flare_solar or the UCI sets are stored)."""
    (folder / name).mkdir(parents=True)
    np.savez_compressed(folder / name / f"{name}.npz", X=X, y=y)
