"""A smoke run of benchmarks/norm_in_constraints.py: the literal SVDD beside its shifted form."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from tests.benchmark_helpers import load_benchmark


@pytest.mark.slow
def test_quick_run_times_both_forms_and_compares_them(tmp_path: Path) -> None:
    bench = load_benchmark("norm_in_constraints")
    out = tmp_path / "out"
    assert bench.main(["--out", str(out), "--quick"]) == 0
    rows = list(csv.DictReader((out / "norm_in_constraints.csv").open()))
    shifted = [r for r in rows if r["core_shift"] == "True" and r["part"] == "per evaluation"]
    assert {(r["form"], r["kernel"]) for r in shifted} == {
        (form, kernel) for form in ("literal", "shifted") for kernel in ("rbf", "poly")}
    # with the core's change of variable both forms are solved by the structured backend,
    # and they are the same problem: W and ∇W agree to the solver's accuracy (tol 1e-8)
    assert all(r["backend"] == "structured" and not r.get("note") for r in shifted)
    paired = [r for r in rows if r["part"] == "side by side"]
    assert {r["kernel"] for r in paired} == {"rbf", "poly"}
    assert all(float(r["W_rel_diff_max"]) < 1e-7 and float(r["ratio_median"]) > 0 for r in paired)
    literal = [r for r in shifted if r["form"] == "literal"]
    assert all(float(r["W_rel_diff"]) < 1e-7 and float(r["grad_rel_diff"]) < 1e-5
               for r in literal)
    assert all(float(r["peak_mb"]) > 0 and float(r["eval_s"]) > 0 for r in shifted)
    assert {r["solver"] for r in rows if r.get("core_shift") == "False"} == {"structured",
                                                                         "clarabel"}
    text = (out / "norm_in_constraints.md").read_text()
    assert "## Side by side" in text and "## Per evaluation" in text and "## Provenance" in text
    assert not list(out.glob("*.tmp"))
