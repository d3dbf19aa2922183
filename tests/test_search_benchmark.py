"""Smoke runs of benchmarks/fit_speed.py and benchmarks/search.py on tiny data folders."""

from __future__ import annotations

import csv
import sys
from pathlib import Path

import numpy as np
import pytest
from sklearn.datasets import make_classification, make_moons

from tests.benchmark_helpers import load_benchmark, write_plain_set, write_set

pytestmark = pytest.mark.slow


def test_search_shows_the_halving_rounds_where_the_search_halves(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import sparsify.model_selection as model_selection

    X, y = make_moons(150, noise=0.25, random_state=0)
    write_set(tmp_path, "moons", X, 2 * y - 1, n_train=90, n_splits=1)
    # halve these 60-point folds: "auto" from 1 point, two rounds of 15 and 60 points
    monkeypatch.setattr(model_selection, "PLATEAU_FROM", 1)
    monkeypatch.setattr(model_selection, "halving_rounds",
                        lambda n, n_train, factor, least: [(n, -(-n_train // factor)),
                                                           (-(-n // factor), n_train)])
    bench = load_benchmark("search")
    monkeypatch.setattr(sys, "argv", ["search.py"])
    out = tmp_path / "out"
    assert bench.main(["--data-dir", str(tmp_path), "--out", str(out), "--nz", "3",
                       "--largest", "4", "--peer-seeds", "1", "--splits", "1"]) == 0
    text = (out / "search.md").read_text()
    assert "Successive halving" in text
    assert "| moons | 1 | 25 × 15 → 7 × 60 |" in text
    rows = list(csv.DictReader((out / "search.csv").open()))
    ours = next(r for r in rows if r["method"] == "SparseSearchCV")
    assert ours["rounds"] == "25 × 15 → 7 × 60" and float(ours["no_halving_seconds"]) > 0


def test_search_compares_both_searches_and_draws_each_set(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    X, y = make_moons(150, noise=0.25, random_state=0)
    write_set(tmp_path, "moons", X, 2 * y - 1, n_train=90, n_splits=2)
    Xp, yp = make_classification(120, n_features=4, random_state=0)
    write_plain_set(tmp_path, "plain", Xp, 2 * yp - 1)
    write_plain_set(tmp_path, "three", Xp, np.arange(120) % 3)  # not two classes: left out
    bench = load_benchmark("search")
    monkeypatch.setattr(sys, "argv", ["search.py"])
    out = tmp_path / "out"
    assert bench.binary_sets(tmp_path) == ["moons", "plain"]
    assert bench.main(["--data-dir", str(tmp_path), "--out", str(out), "--nz", "4",
                       "--largest", "8", "--peer-seeds", "1", "--splits", "2"]) == 0
    rows = list(csv.DictReader((out / "search.csv").open()))
    both = [r for r in rows if r["part"] == "C x gamma"]
    assert len(both) == 2 * 2 * 2  # sets × splits × searches
    text = (out / "search.md").read_text()
    for name in ("moons", "plain"):
        assert (out / f"search_{name}.png").read_bytes()[:4] == b"\x89PNG"
        assert f"| {name} | 90 | 4 | 2 |" in text or f"| {name} | 80 | 4 | 2 |" in text
    assert "## The expansion path" in text and "| moons | 1–8 |" in text
    assert "Successive halving" not in text  # folds of under 5000 points: none
    assert not list(out.glob("*.tmp"))


def test_fit_speed_profiles_slmc_beside_its_peers(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    X, y = make_moons(600, noise=0.25, random_state=0)
    write_set(tmp_path, "a9a", X, 2 * y - 1, n_train=400, n_splits=1)
    bench = load_benchmark("fit_speed")
    monkeypatch.setattr(sys, "argv", ["fit_speed.py"])
    monkeypatch.setattr(bench, "in_fresh_process", bench.run)  # the smoke run stays in-process
    out = tmp_path / "out"
    assert bench.main(["--data-dir", str(tmp_path), "--out", str(out), "--parts", "a9a",
                       "profile", "--seeds", "2", "--before-seeds", "1"]) == 0
    rows = list(csv.DictReader((out / "fit_speed.csv").open()))
    methods = {r["method"] for r in rows}
    assert {"SLMC", "SLMC, n_iter_no_change=10", "Nystroem + LinearSVC",
            "RBFSampler + LinearSVC", "SVC"} <= methods
    text = (out / "fit_speed.md").read_text()
    assert "## a9a" in text and "## Where SLMC's time goes" in text and "## Targets" in text
    assert all(float(r["accuracy"]) > 0.7 for r in rows)


def test_declared_fit_compares_the_three_fits(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    bench = load_benchmark("declared_fit")
    monkeypatch.setattr(sys, "argv", ["declared_fit.py"])
    out = tmp_path / "out"
    assert bench.main(["--out", str(out), "--n", "4200", "--n-test", "500", "--nz", "5",
                       "--max-iter", "12", "--in-process"]) == 0
    rows = list(csv.DictReader((out / "declared_fit.csv").open()))
    assert [r["variant"] for r in rows] == list(bench.VARIANTS)
    iterations = {r["variant"]: int(r["iterations"]) for r in rows}
    assert iterations[bench.REFERENCE] == 12  # run to max_iter
    sampled = next(r for r in rows if r["variant"] == bench.SAMPLED)
    assert 1 <= int(sampled["sample_iterations"]) < iterations[bench.SAMPLED]
    assert all(float(r["test_rmse"]) < 1.0 for r in rows)
    assert "## Targets" in (out / "declared_fit.md").read_text()
    # an earlier run as the reference: its rows shown, the targets judged against its W
    before = tmp_path / "before.csv"
    before.write_text((out / "declared_fit.csv").read_text().replace(
        rows[-1]["W"], str(10 * float(rows[-1]["W"]))))
    assert bench.main(["--out", str(out), "--n", "4200", "--n-test", "500", "--nz", "5",
                       "--max-iter", "12", "--in-process", "--before", str(before)]) == 0
    text = (out / "declared_fit.md").read_text()
    assert f"| before: {bench.REFERENCE} |" in text and "200-iteration fit before" in text
    assert text.count("% above: met)") == len(bench.VARIANTS)  # a tenth of the W before: all met
    # the time to the reference's W: reached (W fell below ten times the final W before)
    rows = list(csv.DictReader((out / "declared_fit.csv").open()))
    assert all(1 <= int(r["target_iteration"]) <= int(r["iterations"]) and float(r["target_s"]) > 0
               for r in rows)
