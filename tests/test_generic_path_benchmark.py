"""A smoke run of benchmarks/generic_path.py, the generic path beside Clarabel and the built-ins."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from tests.benchmark_helpers import load_benchmark


@pytest.mark.slow
def test_quick_run_writes_the_page_and_every_measurement(tmp_path: Path) -> None:
    bench = load_benchmark("generic_path")
    out = tmp_path / "out"
    assert bench.main(["--out", str(out), "--quick", "--parts", "evaluation", "handwritten",
                       "cliff", "warm"]) == 0
    rows = list(csv.DictReader((out / "generic_path.csv").open()))
    evals = [r for r in rows if r["part"] == "evaluation"]
    # five formulations × the structured backend and Clarabel, each measured and compared
    assert {(r["formulation"], r["backend"]) for r in evals} == {
        (name, backend) for name in bench.FIVE for backend in ("structured", "clarabel")}
    assert all(not r.get("note") and float(r["eval_s"]) > 0 and float(r["peak_mb"]) > 0
               for r in evals)
    assert all(float(r["dW"]) < 1e-6 for r in evals if r["backend"] == "structured")
    hand = [r for r in rows if r["part"] == "handwritten"]
    assert {r["formulation"] for r in hand} == {"svr", "kridge"}
    # the same problem solved two ways: the same W
    assert all(abs(float(r["declared_W"]) - float(r["builtin_W"]))
               <= 1e-6 * max(1.0, abs(float(r["builtin_W"]))) for r in hand)
    assert {r["part"] for r in rows} == {"evaluation", "handwritten", "cliff", "warm"}
    text = (out / "generic_path.md").read_text()
    assert "## Verdicts" in text and "## Declared against hand-written" in text
    assert "## No cliff" in text and "## Warm start" in text
    assert not list(out.glob("*.tmp"))
