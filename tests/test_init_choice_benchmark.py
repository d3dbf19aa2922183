"""A smoke run of benchmarks/init_choice.py on a tiny data folder in the ../shared/data format."""

from __future__ import annotations

import csv
import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest
from sklearn.datasets import make_moons

REPO = Path(__file__).resolve().parents[1]


def test_both_starts_are_fitted_side_by_side_and_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    X, y = make_moons(90, noise=0.2, random_state=0)
    rng = np.random.default_rng(0)
    perms = [rng.permutation(90) for _ in range(3)]
    (tmp_path / "banana").mkdir()
    np.savez(tmp_path / "banana" / "banana.npz", X=X, y=2 * y - 1,
             train_idx=np.array([p[:60] for p in perms]),
             test_idx=np.array([p[60:] for p in perms]))
    monkeypatch.syspath_prepend(str(REPO / "benchmarks"))  # it imports performance.py
    spec = importlib.util.spec_from_file_location("bench_init_choice",
                                                  REPO / "benchmarks" / "init_choice.py")
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    monkeypatch.setattr(sys, "argv", ["init_choice.py"])
    out = tmp_path / "out"
    assert bench.main(["--data-dir", str(tmp_path), "--out", str(out), "--datasets", "banana",
                       "--splits", "2", "--seeds", "2", "--banana-seeds", "1"]) == 0
    rows = list(csv.DictReader((out / "init_choice.csv").open()))
    # ida: 2 splits × 2 seeds, banana-cv: 3 splits × 1 seed; each with both starts
    assert len(rows) == 2 * (2 * 2 + 3 * 1)
    assert {r["init"] for r in rows} == {"balanced", "random"}
    text = (out / "init_choice.md").read_text()
    assert "| ida | banana | 1–2 | 2 |" in text and "| banana-cv | banana | 3 | 1 |" in text
    assert not list(out.glob("*.tmp"))
