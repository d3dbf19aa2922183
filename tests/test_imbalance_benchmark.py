"""A smoke run of benchmarks/imbalance.py: generated data, and banana from a tiny data folder."""

from __future__ import annotations

import csv
import sys
from pathlib import Path

import pytest
from sklearn.datasets import make_moons

from tests.benchmark_helpers import load_benchmark, write_set


def test_the_four_models_are_fitted_side_by_side_and_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    X, y = make_moons(900, noise=0.2, random_state=0)
    write_set(tmp_path, "banana", X, 2 * y - 1, n_train=600, n_splits=1)
    bench = load_benchmark("imbalance")
    monkeypatch.setattr(sys, "argv", ["imbalance.py"])
    out = tmp_path / "out"
    assert bench.main(["--data-dir", str(tmp_path), "--out", str(out), "--seeds", "2",
                       "--n-majority", "400", "--n-expansion", "4"]) == 0
    rows = list(csv.DictReader((out / "imbalance.csv").open()))
    # 3 data sets × 2 seeds × (SparseSVC, SVC) × (none, balanced)
    assert len(rows) == 3 * 2 * 4
    assert {(r["model"], r["class_weight"]) for r in rows} == {
        ("SparseSVC", "none"), ("SparseSVC", "balanced"), ("SVC", "none"), ("SVC", "balanced")}
    assert {r["n_minority_train"] for r in rows} == {"2"}
    assert all(0.0 <= float(r["minority_recall"]) <= 1.0 for r in rows if r["status"] == "ok")
    text = (out / "imbalance.md").read_text()
    assert "| banana | SparseSVC | balanced | " in text and "imbalance.py" in text
    assert not list(out.glob("*.tmp"))


def test_without_a_data_folder_the_generated_sets_run_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bench = load_benchmark("imbalance")
    monkeypatch.setattr(sys, "argv", ["imbalance.py"])
    assert bench.main(["--out", str(tmp_path), "--seeds", "1", "--n-majority", "200",
                       "--n-expansion", "3"]) == 0
    rows = list(csv.DictReader((tmp_path / "imbalance.csv").open()))
    assert {r["dataset"] for r in rows} == {"classification", "moons"}


def test_too_few_majority_points_is_a_usage_error(tmp_path: Path) -> None:
    bench = load_benchmark("imbalance")
    with pytest.raises(SystemExit):
        bench.main(["--out", str(tmp_path), "--n-majority", "150"])
    assert not (tmp_path / "imbalance.csv").exists()
