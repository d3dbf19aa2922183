"""A smoke run of benchmarks/svr_speed.py on a tiny folder in the ../shared/data format."""

from __future__ import annotations

import csv
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.benchmark_helpers import load_benchmark, write_set


@pytest.mark.slow
def test_the_fits_are_reported_and_compared_with_an_earlier_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "argv", ["svr_speed.py"])  # the report quotes its command
    bench = load_benchmark("svr_speed")
    rng = np.random.default_rng(0)
    X = rng.uniform(size=(80, 3))
    write_set(tmp_path, "friedman", X, np.sin(3 * X[:, 0]) + X[:, 1] + 0.1 * rng.normal(size=80),
              n_train=60, n_splits=1, seed=0)
    common = ["--data-dir", str(tmp_path), "--nz", "4", "--max-iter", "3", "--repeats", "1"]
    assert bench.main([*common, "--out", str(tmp_path / "a")]) == 0
    with open(tmp_path / "a" / "svr_speed.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert [r["method"] for r in rows] == ["SparseSVR", "Nystroem + Ridge"]
    assert float(rows[0]["C"]) == 1.0 and float(rows[0]["gamma"]) == pytest.approx(1 / 3)
    # the same fit again, against the first run: W the same to the last bit
    assert bench.main([*common, "--out", str(tmp_path / "b"),
                       "--before", str(tmp_path / "a" / "svr_speed.csv")]) == 0
    page = (tmp_path / "b" / "svr_speed.md").read_text()
    assert "## Against the earlier commit" in page
    assert page.split("## Against the earlier commit")[1].count("| yes |") == 1
