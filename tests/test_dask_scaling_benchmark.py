"""A smoke run of benchmarks/dask_scaling.py, one problem across a Dask cluster and in memory."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from tests.benchmark_helpers import load_benchmark

pytest.importorskip("distributed", reason="needs dask[distributed]")


@pytest.mark.parametrize("loss", ["hinge", "squared_hinge"])
@pytest.mark.slow
def test_quick_run_writes_the_page_and_both_paths(tmp_path: Path, loss: str) -> None:
    bench = load_benchmark("dask_scaling")
    out = tmp_path / "out"
    assert bench.main(["--out", str(out), "--quick", "--loss", loss]) == 0
    rows = {r["path"]: r for r in csv.DictReader((out / "dask_scaling.csv").open())}
    assert set(rows) == {"in memory", "Dask, 2 workers"}
    local, remote = rows["in memory"], rows["Dask, 2 workers"]
    # the same problem from the same XVs: the same W after the same iterations
    assert float(remote["W"]) == pytest.approx(float(local["W"]), rel=1e-6)
    assert remote["n_iter"] == local["n_iter"]
    assert 0 < float(remote["sent_bytes"]) < 8 * 2000  # less than one N-vector
    text = (out / "dask_scaling.md").read_text()
    assert "| Dask, 2 workers |" in text and "KB sent" in text
    assert ("Newton iterations" in text) == (loss == "squared_hinge")
    assert not list(out.glob("*.tmp"))
