"""benchmarks/harness.py: what every benchmark script shares (pages, files, timing, data)."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

from tests.benchmark_helpers import load_benchmark, write_set


def _raise(message: str) -> dict[str, float]:
    raise ValueError(message)


def test_a_page_opens_with_what_it_shows_and_ends_with_its_provenance() -> None:
    harness = load_benchmark("harness")
    page = harness.result_page("T", "What it shows.", "python benchmarks/x.py --quick",
                               ["Data: 40 points.", "", "## Results", "",
                                *harness.table("a", "b"), harness.row(1, harness.fmt(0.5))],
                               ["Machine: here."])
    parts = page.split("\n\n")
    assert parts[:3] == ["# T", "What it shows.", "```\npython benchmarks/x.py --quick\n```"]
    assert "| a | b |\n|---|---|\n| 1 | 0.5 |" in page
    # the set-up written before the first table moves below the provenance
    assert page.index("## Provenance") < page.index("Machine: here.") < page.index("Data: 40")


def test_results_are_written_whole_with_the_named_columns_first(tmp_path: Path) -> None:
    harness = load_benchmark("harness")
    rows = [{"z": 1, "part": "a", "b": 2.0}, {"part": "b", "extra": "x"}]
    harness.write_results(tmp_path / "out", "page", "# page\n", rows, ("part",))
    with (tmp_path / "out" / "page.csv").open() as fh:
        table = list(csv.reader(fh))
    assert table[0] == ["part", "b", "extra", "z"]
    assert table[2] == ["b", "", "x", ""]
    assert (tmp_path / "out" / "page.md").read_text() == "# page\n"
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["page.csv", "page.md"]
    # a write that fails leaves the earlier file as it was
    with pytest.raises(ValueError):
        harness.write_csv(tmp_path / "out" / "page.csv", [{"a": 1}], ["b"])
    assert (tmp_path / "out" / "page.csv").read_text().startswith("part,b,extra,z")
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["page.csv", "page.md"]


def test_a_measurement_in_a_fresh_process_reports_a_failure_as_its_note() -> None:
    harness = load_benchmark("harness")
    assert harness.fresh_row(60, _raise, "no data") == {"note": "ValueError: no data"}
    assert harness.in_fresh_process(60, divmod, 7, 2) == (3, 1)


def test_a_data_set_loads_with_its_splits_and_a_missing_one_is_a_usage_error(
        tmp_path: Path) -> None:
    harness = load_benchmark("harness")
    X, y = np.arange(20.0).reshape(10, 2), np.repeat([-1, 1], 5)
    write_set(tmp_path, "toy", X, y, n_train=6, n_splits=2)
    data = harness.load_set(tmp_path, "toy")
    X_train, y_train, X_test, _ = harness.split(data, 1)
    assert X_train.shape == (6, 2) and X_test.shape == (4, 2)
    np.testing.assert_array_equal(X_train, X[data["train_idx"][1]])
    np.testing.assert_array_equal(y_train, y[data["train_idx"][1]])
    parser = harness.benchmark_parser("A benchmark.")
    with pytest.raises(SystemExit):
        harness.check_datasets(parser, tmp_path, ["toy", "other"])


def test_numbers_and_commands_read_as_on_the_pages() -> None:
    harness = load_benchmark("harness")
    assert harness.pm([0.1, 0.3], scale=100) == "20.0 ± 10.0"
    assert harness.mean_std([1.0, 3.0], ddof=1) == (2.0, pytest.approx(2 ** 0.5))
    assert harness.mean_std([5.0], ddof=1) == (5.0, 0.0)
    assert harness.fmt(float("nan")) == "—" and harness.fmt(1234.5678) == "1.23e+03"
    assert harness.command("/x/benchmarks/a.py", ["--note", "two words"]) == \
        "python benchmarks/a.py --note 'two words'"
    assert harness.by_set([{"dataset": "b"}, {"dataset": "a"}], ["a", "c", "b"]) == [
        ("a", [{"dataset": "a"}]), ("b", [{"dataset": "b"}])]
    np.testing.assert_allclose(harness.log_grid(-1, 1, 0.5), 10.0 ** np.arange(-1, 1.25, 0.5))
