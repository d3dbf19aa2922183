"""A smoke run of benchmarks/init_choice.py on a tiny data folder in the ../shared/data format."""

from __future__ import annotations

import csv
import sys
from pathlib import Path

import pytest
from sklearn.datasets import make_moons

from tests.benchmark_helpers import load_benchmark, write_set


def test_both_starts_are_fitted_side_by_side_and_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    X, y = make_moons(90, noise=0.2, random_state=0)
    write_set(tmp_path, "banana", X, 2 * y - 1, n_train=60, n_splits=3)
    bench = load_benchmark("init_choice")
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
