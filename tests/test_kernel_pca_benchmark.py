"""A smoke run of benchmarks/kernel_pca.py on tiny sets in the ../shared/data format."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

from tests.benchmark_helpers import load_benchmark, write_plain_set, write_set


@pytest.fixture
def data(tmp_path: Path) -> Path:
    """A set with splits under a new name, and a regression set without splits."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(70, 5)) * np.array([2.0, 1.0, 0.5, 0.3, 0.1])
    write_set(tmp_path / "data", "digits_like", X, np.arange(70) % 3, n_train=50, n_splits=2)
    write_plain_set(tmp_path / "data", "regress", X[:40], X[:40, 0])
    return tmp_path / "data"


def read(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as fh:
        return list(csv.DictReader(fh))


@pytest.mark.slow
def test_a_tiny_run_writes_the_page_and_the_table(data: Path, tmp_path: Path) -> None:
    bench = load_benchmark("kernel_pca")
    out = tmp_path / "out"
    assert bench.main(["--data-dir", str(data), "--out", str(out), "--dataset", "digits_like",
                       "--nz", "4", "6", "--k", "2", "--max-iter", "5"]) == 0
    rows = read(out / "kernel_pca.csv")
    assert [(r["method"], r["M"]) for r in rows] == [
        ("SparseKernelPCA", "4"), ("SparseKernelPCA, initial XVs", "4"), ("Nystroem + PCA", "4"),
        ("SparseKernelPCA", "6"), ("SparseKernelPCA, initial XVs", "6"), ("Nystroem + PCA", "6"),
        ("KernelPCA (full)", "50")]
    assert all(r["test_error"] and not r["note"] for r in rows), rows
    full = rows[-1]
    for r in rows:
        assert 0 < float(r["test_error"]) < 1  # RBF: ‖φ(x) − Pφ(x)‖² ≤ ‖φ(x)‖² = 1
        # the full kernel PCA captures the most training variance any k directions can
        assert float(r["train_captured"]) <= float(full["train_captured"]) + 1e-9
        assert float(r["seconds"]) >= 0 and r["peak_mb"]
    moved, fixed = rows[0], rows[1]
    assert float(moved["train_captured"]) >= float(fixed["train_captured"])
    text = (out / "kernel_pca.md").read_text()
    assert "--dataset digits_like --nz 4 6 --k 2 --max-iter 5" in text
    assert "## Reconstruction error on the test points" in text and "Machine: " in text
    assert "50 training and 20 test points, 5 features, from its first predefined split" in text
    assert not list(out.glob("*.tmp"))


@pytest.mark.slow
def test_a_set_without_splits_and_a_subsampled_full_kernel_pca(data: Path,
                                                                 tmp_path: Path) -> None:
    bench = load_benchmark("kernel_pca")
    out = tmp_path / "out"
    assert bench.main(["--data-dir", str(data), "--out", str(out), "--dataset", "regress",
                       "--nz", "3", "--k", "2", "--max-iter", "3", "--full-max", "20",
                       "--name", "trial"]) == 0
    rows = read(out / "trial.csv")
    assert rows[-1]["method"] == "KernelPCA (full)" and rows[-1]["n_fit"] == "20"
    assert all(r["test_error"] for r in rows)
    text = (out / "trial.md").read_text()
    assert "a random 3:1 split (seed 0; the set has no predefined splits)" in text
    assert "a random subsample of 20 of the 30 training points (above --full-max 20)" in text


@pytest.mark.parametrize("argv, message", [
    (["--dataset", "usps"], "has no usps/usps.npz; the data sets there are: digits_like, "
                            "regress"),
    (["--dataset", "regress", "--k", "5", "--nz", "3"], "--k must be between 1 and the "
                                                        "smallest --nz (3)"),
    (["--dataset", "regress", "--gamma", "wide"], "--gamma must be 'scale' or a number > 0"),
])
def test_bad_arguments_are_usage_errors(data: Path, tmp_path: Path, capsys, argv: list[str],
                                        message: str) -> None:
    bench = load_benchmark("kernel_pca")
    with pytest.raises(SystemExit) as info:
        bench.main(["--data-dir", str(data), "--out", str(tmp_path / "out"), *argv])
    assert info.value.code == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
