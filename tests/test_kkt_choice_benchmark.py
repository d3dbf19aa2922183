"""A smoke run of benchmarks/kkt_choice.py: the structured KKT solve beside QDLDL and CHOLMOD."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from tests.benchmark_helpers import load_benchmark


def test_quick_run_compares_every_method_on_one_system(tmp_path: Path) -> None:
    pytest.importorskip("cvxopt", reason="the benchmark's peers come with the test extra")
    bench = load_benchmark("kkt_choice")
    out = tmp_path / "out"
    assert bench.main(["--out", str(out), "--quick"]) == 0
    rows = list(csv.DictReader((out / "kkt_choice.csv").open()))
    factor = [r for r in rows if r.get("factor_s")]
    assert {r["method"] for r in factor} == {"structured", "qdldl", "cholmod"}
    # every method solves the same system; the structured one without static regularisation,
    # so its residual is rounding only (κ·ε with κ ≲ 1e7 for these interior-point systems),
    # below the regularised factorisations' ≈ δ = 1e-7-sized error
    assert all(float(r["residual"]) < 1e-6 for r in factor)
    assert all(float(r["residual"]) < 1e-8 for r in factor if r["method"] == "structured")
    ipms = [r for r in rows if r.get("iterations")]
    assert {r["method"] for r in ipms} == {"structured ipm", "cvxopt coneqp"}
    for name in ("svr", "huber_svm"):
        W = [float(r["W"]) for r in ipms if r["formulation"] == name]
        assert max(W) - min(W) <= 1e-6 * max(1.0, abs(W[0]))
    assert "## The whole interior point" in (out / "kkt_choice.md").read_text()
