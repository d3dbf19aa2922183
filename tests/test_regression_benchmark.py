"""A smoke run of benchmarks/regression.py on a tiny folder in the ../shared/data format."""

from __future__ import annotations

import csv
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from tests.benchmark_helpers import load_benchmark, write_set


def _bench(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.setattr(sys, "argv", ["regression.py"])  # the report quotes its command
    return load_benchmark("regression")


def _friedman(folder: Path, name: str, n: int = 120, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(n, 5))
    y = (10 * np.sin(np.pi * X[:, 0] * X[:, 1]) + 20 * (X[:, 2] - 0.5) ** 2 + 10 * X[:, 3]
         + 0.5 * rng.normal(size=n))
    write_set(folder, name, X, y, n_train=90, n_splits=3, seed=seed)


@pytest.mark.slow
def test_every_regression_set_is_run_and_reported(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    _friedman(tmp_path, "friedman_a")
    _friedman(tmp_path, "friedman_b", seed=1)
    write_set(tmp_path, "labels", np.zeros((20, 2)), np.tile([-1, 1], 10), n_train=15,
              n_splits=1)  # a classification set: not picked up by default
    bench = _bench(monkeypatch)
    assert bench.regression_sets(tmp_path) == ["friedman_a", "friedman_b"]
    out = tmp_path / "out"
    assert bench.main(["--data-dir", str(tmp_path), "--out", str(out), "--splits", "2",
                       "--split-limit", "friedman_b=1", "--sizes", "5", "--large-sizes", "8",
                       "--large-sets", "friedman_a", "--max-iter", "10", "--cv-max", "60"]) == 0
    rows = list(csv.DictReader((out / "regression.csv").open()))
    methods = {(r["set"], r["method"], r["M"]) for r in rows}
    assert ("friedman_a", "SparseKernelRidge", "8") in methods  # the large size there only
    assert ("friedman_b", "SparseKernelRidge", "8") not in methods
    assert {r["split"] for r in rows if r["set"] == "friedman_b"} == {"1"}
    assert {"KernelRidge (full)", "SVR (full)", "Nystroem + Ridge"} <= {r["method"] for r in rows}
    # the RMSE is on y's own scale (y spans about 0 to 30): a fit, not standardised units
    ridge = [float(r["rmse"]) for r in rows if r["method"] == "KernelRidge (full)"]
    assert 0.3 < min(ridge) and max(ridge) < 5
    text = (out / "regression.md").read_text()
    assert "## friedman_a" in text and "| SparseKernelRidge | 5 | 2 |" in text
    assert "| SparseSVR | 5 |" in text and "| friedman_b | 5 |" in text.split("## SparseSVR")[1]
    targets = text.split("## Targets")[1].split("## Provenance")[0]
    assert "RMSE ≤ Nystroem + Ridge" in targets and "SGPR" not in targets
    assert text.index("```") < text.index("## friedman_a") < text.index("## Provenance")
    assert not list(out.glob("*.tmp"))
    # a page from the CSVs of several runs
    merged = tmp_path / "merged"
    assert bench.main(["--data-dir", str(tmp_path), "--out", str(merged), "--merge",
                       str(out / "regression.csv"), "--note", "Two runs."]) == 0
    page = (merged / "regression.md").read_text()
    assert "Two runs." in page.split("## Provenance")[1]
    assert page.split("## Targets")[1].split("## Provenance")[0] == targets
    # a later split alone, to be merged with the first run's
    later = tmp_path / "later"
    assert bench.main(["--data-dir", str(tmp_path), "--out", str(later), "--sets", "friedman_b",
                       "--splits", "2", "--first-split", "2", "--sizes", "5", "--large-sizes",
                       "--max-iter", "5", "--cv-max", "60"]) == 0
    assert {r["split"] for r in csv.DictReader((later / "regression.csv").open())} == {"2"}
    # one method taken from one run and the rest from another; a row in both is refused
    joined = tmp_path / "joined"
    assert bench.main(["--data-dir", str(tmp_path), "--out", str(joined), "--merge",
                       f"{out / 'regression.csv'}::SparseSVR,SVR (full)",
                       f"{later / 'regression.csv'}::SparseKernelRidge"]) == 0
    taken = list(csv.DictReader((joined / "regression.csv").open()))
    assert {(r["method"], r["split"]) for r in taken if r["set"] == "friedman_b"} == {
        ("SVR (full)", "1"), ("SparseSVR", "1"), ("SparseKernelRidge", "2")}
    # SparseSVR's peers are averaged over its own splits: no SparseKernelRidge on split 1
    svr_row = next(line for line in (joined / "regression.md").read_text().splitlines()
                   if line.startswith("| friedman_b | 5 |"))
    assert svr_row.startswith("| friedman_b | 5 | 1 |") and svr_row.endswith("| – |")
    with pytest.raises(SystemExit, match="comes from more than one CSV"):
        bench.main(["--data-dir", str(tmp_path), "--out", str(tmp_path / "twice"), "--merge",
                    str(out / "regression.csv"), str(out / "regression.csv")])


def test_a_set_without_real_targets_is_a_usage_error(tmp_path: Path, monkeypatch,
                                                     capsys) -> None:
    write_set(tmp_path, "labels", np.zeros((20, 2)), np.tile([-1, 1], 10), n_train=15,
              n_splits=1)
    with pytest.raises(SystemExit):
        _bench(monkeypatch).main(["--data-dir", str(tmp_path), "--sets", "labels"])
    assert "is not a regression set with splits" in capsys.readouterr().err
