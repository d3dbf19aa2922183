"""The benchmarks of issue 43: benchmarks/first_hour.py and benchmarks/kmra_defaults.py.

Their tables are built from the rows a run records; a tiny KMRA run (slow: the literal
loop takes seconds even on Statlog heart) writes its page.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from tests.benchmark_helpers import load_benchmark
from tests.conftest import shared_data_dir


def test_first_hour_tables_state_each_ratio_against_one_thread() -> None:
    bench = load_benchmark("first_hour")
    settings = list(bench._settings(2))
    rows = [{"part": "blas", "job": "Banana fit (sparsify fit)", "setting": s, "wall": w,
             "fit_seconds": f, "repeat": 0}
            for s, f, w in zip(settings, (0.2, 0.1, 2.0), (3.0, 2.9, 5.0), strict=True)]
    rows += [{"part": "startup", "load": "idle", "job": "sparsify --version", "wall": 0.05},
             {"part": "startup", "load": "idle", "job": "sparsify predict, 50 rows",
              "wall": 0.3},
             {"part": "imports", "load": "idle", "job": "sparsify predict, 50 rows",
              "heavy_imports": "none"},
             {"part": "suite", "job": "python -m pytest -n auto (the README's command)",
              "wall": 240.0,
              "load_before": "0.10", "load_after": "2.00", "summary": "3100 passed"}]
    args = argparse.Namespace(repeats=3, command="python benchmarks/first_hour.py")
    text = bench.report(rows, args, 2, "0.1 / 0.1 / 0.1", 60.0)
    assert "| Banana fit (sparsify fit) | sized by sparsify (default) | 0.200 | 3.00 | 2.00 |" \
        in text
    assert f"| Banana fit (sparsify fit) | {settings[2]} | 2.000 | 5.00 | 20.00 |" in text
    assert "| `sparsify predict, 50 rows` | idle | 0.30 | 0.30 | none |" in text
    assert "| 240 (4.0 min) | 0.10 | 2.00 | 3100 passed |" in text
    with pytest.raises(SystemExit):
        bench.parse_args(["--repeats", "0"])


@pytest.mark.slow
def test_kmra_defaults_runs_both_settings_side_by_side(tmp_path: Path) -> None:
    bench = load_benchmark("kmra_defaults")
    data = shared_data_dir()
    if data is None or not (data / "heart" / "heart.npz").is_file():
        pytest.skip("needs ../shared/data/heart (CI has it)")
    assert bench.main(["--data-dir", str(data), "--out", str(tmp_path), "--datasets", "heart",
                       "--partitions", "1"]) == 0
    text = (tmp_path / "kmra_defaults.md").read_text()
    assert text.count("| Statlog heart | 180 |") == 2 and "| Statlog heart | 1 |" in text
    rows = (tmp_path / "kmra_defaults.csv").read_text().splitlines()
    assert len(rows) == 3 and rows[0].startswith("dataset,partition,setting")
