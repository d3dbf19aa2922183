"""A smoke run of benchmarks/kfd_sensitivity.py on a tiny folder in the ../shared/data format."""

from __future__ import annotations

import csv
import sys
from pathlib import Path
from types import ModuleType

import pytest
from sklearn.datasets import make_moons

from tests.benchmark_helpers import load_benchmark, write_set


def _bench(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.setattr(sys, "argv", ["kfd_sensitivity.py"])  # the report quotes its command
    return load_benchmark("kfd_sensitivity")


def test_every_setting_and_step_c_is_reported(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    X, y = make_moons(200, noise=0.3, random_state=0)
    write_set(tmp_path, "breast_cancer", X, 2 * y - 1, n_train=150, n_splits=3)
    bench = _bench(monkeypatch)
    out = tmp_path / "out"
    assert bench.main(["--data-dir", str(tmp_path), "--out", str(out), "--splits", "2",
                       "--seeds", "2", "--mus", "0.1", "1", "--step-Cs", "1",
                       "--inits", "kmeans", "random", "--max-iter", "20"]) == 0
    rows = list(csv.DictReader((out / "kfd_sensitivity.csv").open()))
    # 2 splits × 2 starts × 2 μ × 2 seeds, each with step C = 1 and the SVM's own C
    assert len(rows) == 2 * 2 * 2 * 2 * 2
    assert {r["step_C"] for r in rows} == {"1.0", "15.19"}
    assert sum(r["paper_C"] == "True" for r in rows) == len(rows) // 2
    text = (out / "kfd_sensitivity.md").read_text()
    assert "| random | 0.1 |" in text and "| kmeans | 1 |" in text and "C = 15.19* |" in text
    assert "Lowest cell:" in text
    assert not list(out.glob("*.tmp"))


def test_a_non_positive_mu_is_a_usage_error(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    bench = _bench(monkeypatch)
    with pytest.raises(SystemExit) as exc:
        bench.main(["--data-dir", str(tmp_path), "--mus", "0", "1"])
    assert exc.value.code == 2
    assert not (tmp_path / "kfd_sensitivity.csv").exists()
