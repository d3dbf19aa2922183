"""A smoke run of benchmarks/kernel_precision.py: float32 kernel blocks in the SVM fast path."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

from sparsify.svm_dual import marginal as fast
from tests.benchmark_helpers import load_benchmark


def test_quick_run_measures_both_single_precision_variants(tmp_path: Path) -> None:
    bench = load_benchmark("kernel_precision")
    out = tmp_path / "out"
    assert bench.main(["--out", str(out), "--sets", "checkerboard", "--n", "300",
                       "--nz", "8", "--fit-iter", "2"]) == 0
    rows = list(csv.DictReader((out / "kernel_precision.csv").open()))
    assert len(rows) == 2 * 3  # (initial, fitted XVs) × (reference noise, two variants)
    for row in rows:
        error = float(row["W_error"])
        if row["variant"].startswith("float64"):
            assert error < 1e-9  # the same XVs solved to tol 1e-9 from another start
        else:  # rounding to single precision moves W, by far less than the solution
            assert 0 < error < 1e-2
    text = (out / "kernel_precision.md").read_text()
    assert "## Time of one K_XZ" in text
    tables, provenance = text.split("## Provenance")
    # the timing row ends with the peak memory in MB (≥ 0: what the data took is left out)
    assert float(tables.rstrip().splitlines()[-1].split("|")[-2]) >= 0
    assert "Machine: " in provenance and "Machine: " not in tables


def test_a_file_set_without_the_data_folder_is_a_usage_error() -> None:
    bench = load_benchmark("kernel_precision")
    with pytest.raises(SystemExit) as info:
        bench.main(["--sets", "banana"])
    assert info.value.code == 2


def test_a_variant_the_fast_path_cannot_solve_is_recorded_not_handed_on(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bench = load_benchmark("kernel_precision")
    solve = fast.SVMDualMarginal.solve

    def stalls_in_single_precision(self, B):  # as an interior point that makes no progress
        if isinstance(self.kernel, bench.SinglePrecision) and self.kernel.every_block:
            raise fast.Stalled
        return solve(self, B)

    monkeypatch.setattr(fast.SVMDualMarginal, "solve", stalls_in_single_precision)
    out = tmp_path / "out"
    assert bench.main(["--out", str(out), "--sets", "checkerboard", "--n", "300",
                       "--nz", "8", "--fit-iter", "2"]) == 0
    rows = list(csv.DictReader((out / "kernel_precision.csv").open()))
    broke = [r for r in rows if r["variant"] == "every block in float32"]
    assert len(broke) == 2 and all(float(r["W_error"]) == np.inf for r in broke)
    assert all(np.isfinite(float(r["W_error"])) for r in rows if r not in broke)
    text = (out / "kernel_precision.md").read_text()
    assert "| broke down | broke down |" in text and "(broke down at 2)" in text
