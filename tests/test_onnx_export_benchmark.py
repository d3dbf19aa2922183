"""A smoke run of benchmarks/onnx_export.py on a tiny USPS-like set in the ../shared/data format."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

from tests.benchmark_helpers import load_benchmark, write_set

pytest.importorskip("skl2onnx", reason="needs skl2onnx (pip install -e '.[test]')")
pytest.importorskip("onnxruntime", reason="needs onnxruntime (pip install -e '.[test]')")


@pytest.fixture
def data(tmp_path: Path) -> Path:
    """Three classes of 16 'pixels' in [0, 1], stored as usps/usps.npz with one split."""
    rng = np.random.default_rng(0)
    y = np.arange(240) % 3
    centres = rng.uniform(0, 1, size=(3, 16))
    X = np.clip(centres[y] + 0.15 * rng.normal(size=(240, 16)), 0, 1)
    write_set(tmp_path / "data", "usps", X, y, n_train=160, n_splits=1)
    return tmp_path / "data"


def test_quick_run_writes_the_page_and_every_measurement(data: Path, tmp_path: Path) -> None:
    bench = load_benchmark("onnx_export")
    out = tmp_path / "out"
    assert bench.main(["--data-dir", str(data), "--out", str(out), "--quick"]) == 0
    rows = list(csv.DictReader((out / "onnx.csv").open()))
    assert [r["method"] for r in rows] == [
        "SparseSVC.predict", "sparsify.to_onnx graph (float64)",
        "sparsify.to_onnx graph (float32)", "SVC.predict (full SVM)",
        "skl2onnx graph of the full SVC"]
    for r in rows:
        assert float(r["per_second"]) > 0 and float(r["row_ms"]) > 0
        assert 0 <= float(r["test_error"]) < 0.5 and int(r["model_bytes"]) > 0
    ours, f64, f32 = rows[:3]
    # float64: sparsify's labels and decision values to round-off; float32: to its own
    assert f64["labels_differing"] == "0" and float(f64["decision_error"]) < 1e-12
    assert 0 < float(f32["decision_error"]) < 1e-4
    assert f64["kernel_evaluations"] == ours["kernel_evaluations"]
    assert int(rows[3]["kernel_evaluations"]) > int(ours["kernel_evaluations"])
    text = (out / "onnx.md").read_text()
    assert text.startswith("# ONNX export: prediction speed on USPS\n\nA `SparseSVC` fitted on ")
    assert f"python benchmarks/onnx_export.py --data-dir {data} --out {out} --quick" in text
    headings = ("```\npython benchmarks/onnx_export.py", "## Predictions on the test set",
                "## Findings", "## Provenance")
    assert all(h in text for h in headings)
    assert sorted(headings, key=text.index) == list(headings)  # the order of a result page
    assert "160 training and 80 test points" in text and "load average" in text
    assert not list(out.glob("*.tmp"))


def test_a_folder_without_usps_is_a_usage_error(tmp_path: Path, capsys) -> None:
    bench = load_benchmark("onnx_export")
    (tmp_path / "empty").mkdir()
    with pytest.raises(SystemExit) as info:
        bench.main(["--data-dir", str(tmp_path / "empty"), "--out", str(tmp_path / "out")])
    assert info.value.code == 2
    assert "has no usps/usps.npz" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
