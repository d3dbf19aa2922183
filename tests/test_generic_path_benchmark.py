"""A smoke run of benchmarks/generic_path.py, the generic path's memory and time at scale."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from tests.benchmark_helpers import load_benchmark


@pytest.mark.slow
def test_quick_run_writes_the_page_and_every_measurement(tmp_path: Path) -> None:
    bench = load_benchmark("generic_path")
    out = tmp_path / "out"
    assert bench.main(["--out", str(out), "--quick"]) == 0
    rows = list(csv.DictReader((out / "generic_path.csv").open()))
    scaling = [r for r in rows if r["part"] == "scaling"]
    # two formulations × one point × the conic path and the DPP reference, each measured
    assert {(r["formulation"], r["path"]) for r in scaling} == {
        ("svr", "conic"), ("svr", "dpp"), ("huber_svm", "conic"), ("huber_svm", "dpp")}
    assert all(not r.get("note") and float(r["eval_s"]) > 0 and float(r["peak_mb"]) > 0
               for r in scaling)
    assert {r["part"] for r in rows} == {"scaling", "fit", "fallback"}
    text = (out / "generic_path.md").read_text()
    assert "## One evaluation" in text and "## A declared ε-SVR fit" in text
    assert "## The SVM fast path's fallback" in text and "no result" not in text
    assert not list(out.glob("*.tmp"))
