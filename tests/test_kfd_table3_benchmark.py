"""A smoke run of benchmarks/kfd_table3.py on a tiny folder in the ../shared/data format."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest
from sklearn.datasets import make_moons

from tests.benchmark_helpers import load_benchmark, write_plain_set, write_set


@pytest.fixture
def data(tmp_path: Path) -> Path:
    """A binary set under a name no list knows, a three-class set and a set without splits."""
    X, y = make_moons(90, noise=0.25, random_state=0)
    write_set(tmp_path / "data", "newname", X, 2 * y - 1, n_train=60, n_splits=3)
    write_set(tmp_path / "data", "three", X, np.arange(90) % 3, n_train=60, n_splits=1)
    write_plain_set(tmp_path / "data", "flat", X, 2 * y - 1)
    return tmp_path / "data"


def test_a_new_set_runs_with_given_parameters(data: Path, tmp_path: Path) -> None:
    bench = load_benchmark("kfd_table3")
    out = tmp_path / "out"
    notes = tmp_path / "notes.md"
    notes.write_text("# Notes\n\nWhat they show.\n\n## A finding\n\nIt holds.\n")
    assert bench.main(["--data-dir", str(data), "--out", str(out), "--datasets", "newname",
                       "--splits", "2", "--params", "newname=1.5:0.25", "--folds", "3",
                       "--max-iter", "10", "--notes", str(notes)]) == 0
    rows = list(csv.DictReader((out / "kfd.csv").open()))
    assert [r["split"] for r in rows] == ["1", "2"]
    assert {(r["C"], r["gamma"], r["params_source"]) for r in rows} == {("1.5", "0.25", "given")}
    assert all(0 <= float(r["skfd_error"]) <= 100 and int(r["skfd_nz"]) >= 1 for r in rows)
    text = (out / "kfd.md").read_text()
    # (C, γ) as given, marked so, and no paper columns for a set the paper does not have
    assert "| newname | 1.5 | 0.25 | given |" in text
    assert text.splitlines()[next(i for i, line in enumerate(text.splitlines())
                                  if line.startswith("| newname"))].endswith(
        "| – | – | – | – | – |")
    assert "--params newname=1.5:0.25" in text  # the command is quoted
    # the notes' sections before the provenance, without the notes page's own title
    assert text.index("## Per split") < text.index("## A finding") < text.index("## Provenance")
    assert "# Notes" not in text and "What they show." not in text
    assert not list(out.glob(".*.tmp"))


@pytest.mark.parametrize("argv, message", [
    (["--datasets", "titanic"], "has no titanic/titanic.npz; the data sets there are: flat, "
                                "newname, three"),
    (["--datasets", "three"], "three.npz has 3 classes; this script needs two"),
    (["--datasets", "flat"], "flat.npz has no train_idx/test_idx"),
    (["--datasets", "newname", "--params", "banana=1:1"], "--params names banana, not among "
                                                          "--datasets (newname)"),
    (["--datasets", "newname", "--params", "newname=0:1"], "C and gamma must be positive"),
    (["--datasets", "newname", "--ratio", "0"], "--ratio (Nz / NSV) must be in (0, 1]"),
])
def test_bad_arguments_are_usage_errors(data: Path, tmp_path: Path, capsys, argv: list[str],
                                        message: str) -> None:
    bench = load_benchmark("kfd_table3")
    with pytest.raises(SystemExit) as info:
        bench.main(["--data-dir", str(data), "--out", str(tmp_path / "out"), *argv])
    assert info.value.code == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
