"""A smoke run of benchmarks/scale.py, SLMC at scale beside its peers."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from tests.benchmark_helpers import load_benchmark


def test_quick_run_writes_every_part(tmp_path: Path) -> None:
    bench = load_benchmark("scale")
    out = tmp_path / "out"
    assert bench.main(["--out", str(out), "--quick", "--parts", "timing", "value",
                       "moons"]) == 0
    rows = list(csv.DictReader((out / "scale.csv").open()))
    timing = [r for r in rows if r["part"] == "timing"]
    # two sets × one size × (SLMC, Nystroem at M and 5 M), each measured
    assert len(timing) == 2 * 3 and all(r["error"] and not r.get("note") for r in timing)
    assert {r["method"] for r in rows if r["part"] == "value"} == {"SLMC", "Nystroem", "SVGP"}
    assert next(r["note"] for r in rows if r["method"] == "SVGP") == "not run (no --gp-python)"
    text = (out / "scale.md").read_text()
    assert "## Fit time against N" in text and "Every fit succeeds: met." in text
    assert not list(out.glob("*.tmp"))


def test_a9a_without_the_data_is_a_usage_error(tmp_path: Path) -> None:
    bench = load_benchmark("scale")
    with pytest.raises(SystemExit) as info:
        bench.main(["--out", str(tmp_path / "out"), "--data-dir", str(tmp_path)])
    assert info.value.code == 2 and not (tmp_path / "out").exists()


def test_merge_joins_the_csvs_of_two_runs(tmp_path: Path) -> None:
    bench = load_benchmark("scale")
    for part in ("timing", "moons"):
        assert bench.main(["--out", str(tmp_path / part), "--quick", "--parts", part]) == 0
    out = tmp_path / "joined"
    assert bench.main(["--out", str(out), "--merge", str(tmp_path / "timing" / "scale.csv"),
                       str(tmp_path / "moons" / "scale.csv"), "--note", "two quick runs"]) == 0
    rows = list(csv.DictReader((out / "scale.csv").open()))
    assert {r["part"] for r in rows} == {"timing", "moons"} and len(rows) == 2 * 3 + 1
    text = (out / "scale.md").read_text()
    assert "## Fit time against N" in text and "Every fit succeeds: met." in text
    assert "joined from the CSVs of runs: two quick runs" in text
    # the merged page's figures are the runs' own (C and γ of each set among them)
    timing = (tmp_path / "timing" / "scale.md").read_text()
    assert timing.split("## Fit time against N")[1] in text
