"""benchmarks/fit_snapshot.py's comparison: exact, and it names every array that differs."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tests.benchmark_helpers import load_benchmark


def test_compare_names_what_differs_and_passes_equal_snapshots(tmp_path: Path, capsys) -> None:
    bench = load_benchmark("fit_snapshot")
    base = {"svc/coef_": np.array([1.0, np.nan]), "svc/predict": np.array([1, -1])}
    np.savez(tmp_path / "a.npz", **base)
    np.savez(tmp_path / "b.npz", **base)
    assert bench.main(["--compare", str(tmp_path / "a.npz"), str(tmp_path / "b.npz")]) == 0
    assert "2 arrays compared, 0 differ" in capsys.readouterr().out
    # one ulp in one entry, a changed dtype, and an array only one side has
    np.savez(tmp_path / "c.npz", **{"svc/coef_": np.array([np.nextafter(1.0, 2.0), np.nan]),
                                    "svc/predict": np.array([1.0, -1.0]),
                                    "svc/intercept_": np.array(0.0)})
    assert bench.main(["--compare", str(tmp_path / "a.npz"), str(tmp_path / "c.npz")]) == 1
    out = capsys.readouterr().out
    assert "2 arrays compared, 3 differ or missing" in out
    assert all(k in out for k in ("svc/coef_", "svc/predict", "svc/intercept_"))
