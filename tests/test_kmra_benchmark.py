"""A smoke run of benchmarks/kmra.py on a tiny folder in the ../shared/data format."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest
from sklearn.datasets import make_classification

from tests.benchmark_helpers import load_benchmark, write_plain_set, write_set


@pytest.fixture
def data(tmp_path: Path) -> Path:
    """Noisy binary data under a new name (with splits, which KMRA's protocol ignores), a
    set without splits, a three-class set and a regression set."""
    X, y = make_classification(90, n_features=5, n_informative=3, flip_y=0.1, random_state=0)
    write_set(tmp_path / "data", "newname", X, 2 * y - 1, n_train=60, n_splits=2)
    write_plain_set(tmp_path / "data", "flat", X, 2 * y - 1)
    write_plain_set(tmp_path / "data", "three", X, np.arange(90) % 3)
    write_plain_set(tmp_path / "data", "regress", X, X[:, 0])
    return tmp_path / "data"


def read(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as fh:
        return list(csv.DictReader(fh))


@pytest.mark.slow
def test_a_new_set_runs_with_given_parameters_and_the_auto_delta(data: Path,
                                                                 tmp_path: Path) -> None:
    bench = load_benchmark("kmra")
    out = tmp_path / "out"
    assert bench.main(["--data-dir", str(data), "--out", str(out), "--datasets", "newname",
                       "flat", "--partitions", "2", "--params", "newname=1.5:0.25",
                       "--margins", "0.01", "0.05", "--n-delete", "0.1"]) == 0
    rows = read(out / "kmra.csv")
    assert [(r["dataset"], r["partition"]) for r in rows] == [
        ("newname", "0"), ("newname", "1"), ("flat", "0"), ("flat", "1")]
    new = [r for r in rows if r["dataset"] == "newname"]
    # the given (C, γ) are used for newname, flat's come from the 10-fold CV
    assert {(r["svm_C"], r["svm_gamma"], r["svm_params"]) for r in new} == {
        ("1.5", "0.25", "given")}
    assert {r["svm_params"] for r in rows if r["dataset"] == "flat"} == {"CV"}
    # δ = "auto": two points below each partition's full-dictionary training accuracy
    for r in rows:
        assert r["delta_rule"] == "auto"
        assert float(r["delta"]) == pytest.approx(float(r["kmra_start_train_accuracy"]) - 0.02)
        assert float(r["kmra_final_train_accuracy"]) >= float(r["delta"])
    margins = read(out / "kmra_margins.csv")
    # two margins and the former default per partition (no seed δ for these names)
    assert [m["rule"] for m in margins[:3]] == [
        "auto, margin 0.01", "auto, margin 0.05", "fixed 0.9 (former default)"]
    assert len(margins) == 3 * len(rows)
    text = (out / "kmra.md").read_text()
    assert "--params newname=1.5:0.25" in text and "newname C = 1.5, γ = 0.25" in text
    assert "| newname | 2 | 60 | KMRA final |" in text
    assert "| 1.5 | 0.25 | given |" in text and "| CV |" in text
    assert "## δ rules on the same paths" in text
    for name in ("newname", "flat"):
        assert (out / f"kmra_{name}.png").stat().st_size > 0
    assert not list(out.glob("*.tmp"))
    # written through temporary files, yet with the permissions of any new file (not 0600)
    (out / "probe").touch()
    mode = (out / "probe").stat().st_mode & 0o777
    for name in ("kmra.md", "kmra.csv", "kmra_margins.csv", "kmra_newname.png"):
        assert (out / name).stat().st_mode & 0o777 == mode, name


@pytest.mark.parametrize("argv, message", [
    (["--datasets", "titanic"], "has no titanic/titanic.npz; the data sets there are: flat, "
                                "newname, regress, three"),
    (["--datasets", "three"], "three.npz has 3 classes; this script needs two"),
    (["--datasets", "regress"], "regress.npz holds float64 targets (a regression set)"),
    (["--datasets", "newname", "--delta", "seed"], "--delta seed: the seed gives no δ for "
                                                   "newname"),
    (["--datasets", "newname", "--delta", "1.5"], "a training accuracy δ must be in [0, 1]"),
    (["--datasets", "newname", "--delta", "high"], "expected auto, seed or a number"),
    (["--datasets", "newname", "--params", "flat=1:1"], "--params names flat, not among "
                                                        "--datasets (newname)"),
    (["--datasets", "newname", "--n-delete", "2.5"], "--n-delete must be a whole count"),
])
def test_bad_arguments_are_usage_errors(data: Path, tmp_path: Path, capsys, argv: list[str],
                                        message: str) -> None:
    bench = load_benchmark("kmra")
    with pytest.raises(SystemExit) as info:
        bench.main(["--data-dir", str(data), "--out", str(tmp_path / "out"), *argv])
    assert info.value.code == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_a_set_too_large_for_kmra_is_refused_before_fitting(data: Path, tmp_path: Path,
                                                            capsys, monkeypatch) -> None:
    bench = load_benchmark("kmra")
    monkeypatch.setattr("sparsify.baselines.kmra.MAX_FIT_BYTES", 10_000)
    with pytest.raises(SystemExit):
        bench.main(["--data-dir", str(data), "--out", str(tmp_path / "out"),
                    "--datasets", "newname"])
    assert "newname (90 rows): KernelMatchingReduction would need about" in \
        capsys.readouterr().err
