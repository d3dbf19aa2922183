"""A smoke run of benchmarks/gradient_accuracy.py, the table behind the gradient accuracies."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from tests.benchmark_helpers import load_benchmark


@pytest.mark.slow
def test_the_table_lists_every_check_and_states_the_answering_solver(tmp_path: Path) -> None:
    bench = load_benchmark("gradient_accuracy")
    out = tmp_path / "out"
    assert bench.main(["--out", str(out), "--formulations", "svm", "klr", "--solvers", "auto",
                       "osqp", "--seeds", "1"]) == 0
    rows = list(csv.DictReader((out / "gradient_accuracy.csv").open()))
    assert len(rows) == 2 * 2 * 4  # formulations × solvers × kernels
    ok = [r for r in rows if r["status"] == "ok"]
    assert {r["backend"] for r in ok} == {"svm-dual", "newton", "osqp"}
    assert all(float(r["rel_error"]) <= 1e-6 for r in ok)
    refused = [r for r in rows if r["status"] != "ok"]
    assert {(r["formulation"], r["solver"]) for r in refused} == {("klr", "osqp")}
    text = (out / "gradient_accuracy.md").read_text()
    assert "| svm | auto (svm-dual) | 4 |" in text and "quadratic programs only" in text
    assert not list(out.glob("*.tmp"))


def test_an_unknown_formulation_is_a_usage_error(tmp_path: Path) -> None:
    bench = load_benchmark("gradient_accuracy")
    with pytest.raises(SystemExit) as info:
        bench.main(["--out", str(tmp_path), "--formulations", "nope"])
    assert info.value.code == 2 and not list(tmp_path.iterdir())


@pytest.mark.slow
def test_declared_formulations_join_the_table(tmp_path: Path, monkeypatch) -> None:
    from sparsify.plugins.registry import get_registry

    registry = get_registry()  # the benchmark registers the module: undone after the test
    monkeypatch.setattr(registry, "entries",
                        {kind: dict(entries) for kind, entries in registry.entries.items()})
    bench = load_benchmark("gradient_accuracy")
    out = tmp_path / "out"
    declared = Path(__file__).resolve().parents[1] / "examples" / "declared_formulations.py"
    assert bench.main(["--out", str(out), "--declared", str(declared), "--formulations", "eps_svr",
                       "mpm", "--solvers", "auto", "osqp", "--seeds", "1"]) == 0
    rows = list(csv.DictReader((out / "gradient_accuracy.csv").open()))
    refused = {(r["formulation"], r["solver"]): r["status"] for r in rows if r["status"] != "ok"}
    assert all("polishing failed" in s for (f, _), s in refused.items() if f == "eps_svr")
    assert all("quadratic programs only" in s for (f, _), s in refused.items() if f == "mpm")
    assert {("eps_svr", "auto"), ("mpm", "auto")} <= {(r["formulation"], r["solver"])
                                                  for r in rows if r["status"] == "ok"}
    assert "| stated accuracy | met |" in (out / "gradient_accuracy.md").read_text()
    registry.manager.unregister(name="declared_formulations")  # pluggy's side of the registry
