"""A smoke run of benchmarks/scale.py, SLMC at scale beside its peers."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

from tests.benchmark_helpers import load_benchmark


@pytest.mark.slow
def test_quick_run_writes_every_part(tmp_path: Path) -> None:
    bench = load_benchmark("scale")
    out = tmp_path / "out"
    assert bench.main(["--out", str(out), "--quick", "--parts", "timing", "value",
                       "moons"]) == 0
    rows = list(csv.DictReader((out / "scale.csv").open()))
    timing = [r for r in rows if r["part"] == "timing"]
    # two sets × one size × (SLMC, Nystroem at M and 5 M), each measured
    assert len(timing) == 2 * 3 and all(r["error"] and not r.get("note") for r in timing)
    value = [r for r in rows if r["part"] == "value"]
    assert {(r["method"], r["M"]) for r in value} == {
        ("SLMC", "3"), ("SLMC k-means", "3"), ("random XVs", "3"), ("random XVs", "15"),
        ("Nystroem", "3"), ("Nystroem", "15"), ("SVGP", "3"), ("SLMC squared hinge", "3"),
        ("SLMC squared hinge k-means", "3"), ("SVC", "0")}
    # SLMC's problem on fixed XVs is the start of SLMC's own fit: it ran no iteration
    assert next(r["n_iter"] for r in value if r["method"] == "random XVs") == "0"
    assert next(r["note"] for r in rows if r["method"] == "SVGP") == "not run (no --gp-python)"
    # the full SVM once per set and N, beside SLMC and the peers, paired
    full = [r for r in value if r["method"] == "SVC"]
    assert len(full) == 2 and all(r["error"] and int(r["n_support"]) > 0 for r in full)
    text = (out / "scale.md").read_text()
    assert text.count("| — | SVC |") == 2
    assert text.count("With every training point a candidate SV (the full SVM): the full SVM "
                      ) == 2 and "SE from Nystroem 5 M" in text
    assert "## Fit time against N" in text and "Every fit succeeds: met." in text
    assert not list(out.glob("*.tmp"))


@pytest.mark.slow
def test_value_fits_runs_only_the_named_fits(tmp_path: Path) -> None:
    bench = load_benchmark("scale")
    out = tmp_path / "out"
    assert bench.main(["--out", str(out), "--quick", "--parts", "value", "--sets", "ringnorm",
                       "--value-fits", "SLMC squared hinge", "Nystroem"]) == 0
    rows = list(csv.DictReader((out / "scale.csv").open()))
    assert {(r["method"], r["M"]) for r in rows} == {
        ("SLMC squared hinge", "3"), ("Nystroem", "3"), ("Nystroem", "15")}
    # the table has the fits run, though SLMC's own is not among them
    assert "| 3 | SLMC squared hinge | 3 |" in (out / "scale.md").read_text()
    # every fit's misclassified test points, for the paired comparisons
    assert all((out / r["wrong"]).is_file() for r in rows)


def test_a9a_without_the_data_is_a_usage_error(tmp_path: Path) -> None:
    bench = load_benchmark("scale")
    with pytest.raises(SystemExit) as info:
        bench.main(["--out", str(tmp_path / "out"), "--data-dir", str(tmp_path)])
    assert info.value.code == 2 and not (tmp_path / "out").exists()


@pytest.mark.slow
def test_merge_joins_the_csvs_of_two_runs(tmp_path: Path) -> None:
    bench = load_benchmark("scale")
    for part in ("timing", "moons"):
        assert bench.main(["--out", str(tmp_path / part), "--quick", "--parts", part]) == 0
    out = tmp_path / "joined"
    assert bench.main(["--out", str(out), "--merge", str(tmp_path / "timing" / "scale.csv"),
                       str(tmp_path / "moons" / "scale.csv"), "--note", "two quick runs"]) == 0
    rows = list(csv.DictReader((out / "scale.csv").open()))
    assert {r["part"] for r in rows} == {"timing", "moons"} and len(rows) == 2 * 3 + 1
    text = (out / "scale.md").read_text()
    assert "## Fit time against N" in text and "Every fit succeeds: met." in text
    assert "joined from the CSVs of runs: two quick runs" in text.split("## Provenance")[1]
    # the merged page's figures are the runs' own (C and γ of each set among them)
    timing = (tmp_path / "timing" / "scale.md").read_text()
    assert timing.split("## Fit time against N")[1].split("## Provenance")[0] in text


@pytest.mark.slow
def test_merge_takes_the_named_parts_and_one_row_per_fit(tmp_path: Path) -> None:
    bench = load_benchmark("scale")
    assert bench.main(["--out", str(tmp_path / "a"), "--quick", "--parts", "timing",
                       "moons"]) == 0
    csv_a = str(tmp_path / "a" / "scale.csv")
    out = tmp_path / "joined"
    assert bench.main(["--out", str(out), "--merge", f"{csv_a}::moons"]) == 0
    assert {r["part"] for r in csv.DictReader((out / "scale.csv").open())} == {"moons"}
    # the same file twice: every fit once
    assert bench.main(["--out", str(out), "--merge", csv_a, csv_a]) == 0
    assert len(bench.read_csv(out / "scale.csv")) == len(bench.read_csv(Path(csv_a)))
    for bad in ([f"{csv_a}::timings"], [str(tmp_path / "none.csv")]):
        with pytest.raises(SystemExit) as info:
            bench.main(["--out", str(tmp_path / "bad"), "--merge", *bad])
        assert info.value.code == 2 and not (tmp_path / "bad").exists()


@pytest.mark.slow
def test_a_measured_fit_replaces_one_that_ran_over_the_timeout(tmp_path: Path) -> None:
    bench = load_benchmark("scale")
    assert bench.main(["--out", str(tmp_path / "a"), "--quick", "--parts", "timing",
                       "--sets", "checkerboard"]) == 0
    rows = bench.read_csv(tmp_path / "a" / "scale.csv")
    assert {r["set"] for r in rows} == {"checkerboard"}
    slmc = next(r for r in rows if r["method"] == "SLMC")
    over = {k: v for k, v in slmc.items() if k not in ("error", "seconds", "peak_mb")}
    (tmp_path / "b").mkdir()
    bench.save_csv(tmp_path / "b", [{**over, "note": "over 10 s"}])
    out = tmp_path / "joined"
    assert bench.main(["--out", str(out), "--merge", str(tmp_path / "b" / "scale.csv"),
                       str(tmp_path / "a" / "scale.csv")]) == 0
    joined = bench.read_csv(out / "scale.csv")
    assert len(joined) == len(rows)
    assert next(r for r in joined if r["method"] == "SLMC")["error"] == slmc["error"]


def test_a_met_target_within_the_test_sets_noise_says_so() -> None:
    bench = load_benchmark("scale")
    fit = {"error": 0.0009, "test_n": 100_000}
    near, far = {"error": 0.00092, "test_n": 100_000}, {"error": 0.02, "test_n": 100_000}
    assert bench._verdict(fit, [("far", far)]) == "met"
    assert bench._verdict(fit, [("near", near), ("far", far)]).startswith(
        "met, but within 2 SE of near:")
    assert bench._verdict(far, [("near", near)]) == "not met"


def test_fits_on_the_same_test_set_are_compared_paired(tmp_path: Path) -> None:
    """McNemar's z from the points only one fit gets wrong; the independent-binomial z where a
    fit's points are not recorded or its test set differs."""
    bench = load_benchmark("scale")
    rows = [bench.keep_wrong(tmp_path, {"set": "ringnorm", "N": 10, "method": name, "M": 3,
                                        "test_n": 1000, "seed": 0, "error": len(wrong) / 1000,
                                        "wrong": np.array(wrong, dtype=np.int32)})
            for name, wrong in (("a", range(0, 10)), ("b", range(5, 20)))]
    a, b = rows
    # a alone errs on 5 points, b alone on 10
    assert bench._z(a, b) == pytest.approx((5 - 10) / np.sqrt(15))
    independent = (0.010 - 0.015) / np.sqrt((0.01 * 0.99 + 0.015 * 0.985) / 1000)
    assert bench._z(a, {**b, "wrong": str(tmp_path / "none.npy")}) == pytest.approx(independent)
    assert bench._z(a, {**b, "seed": 1}) == pytest.approx(independent)


@pytest.mark.slow
def test_the_value_part_measures_ringnorm_against_its_bayes_rule(tmp_path: Path) -> None:
    bench = load_benchmark("scale")
    out = tmp_path / "out"
    assert bench.main(["--out", str(out), "--quick", "--parts", "value", "--sets", "ringnorm",
                       "--value-fits", "SLMC", "Nystroem"]) == 0
    text = (out / "scale.md").read_text()
    assert "The Bayes rule errs on" in text and "SE from the best possible" in text


def test_the_page_names_each_rows_c_gamma_and_how_they_were_chosen() -> None:
    bench = load_benchmark("scale")
    wide = "3-fold CV of the full SVC on 3000 points over a wide grid"
    rows = [{"part": "timing", "set": "ringnorm", "N": n, "C": 1.0, "gamma": 0.058}
            for n in (10_000, 100_000)]
    rows += [{"part": "value", "set": "ringnorm", "N": 100_000, "C": 0.1, "gamma": 0.0194,
              "cv": wide}, {"part": "a9a", "set": "a9a", "N": 32561, "C": 8.0, "gamma": 1 / 32}]
    lines = bench._params_lines(rows)
    # rows without "cv" came from the earlier grid, whose edges the page names
    assert lines == [f"- ringnorm: C = 1, γ = 0.058 ({bench.EARLIER_CV}), for the timing at "
                     "N = 10000, 100000.",
                     f"- ringnorm: C = 0.1, γ = 0.0194 ({wide}), for the value at N = 100000."]


def test_choose_params_names_a_choice_on_the_grids_edge(monkeypatch) -> None:
    bench = load_benchmark("scale")

    class Search:  # GridSearchCV's answer: the largest C, an interior γ
        def __init__(self, estimator, grid, cv):
            self.best_params_ = {"C": grid["C"][-1], "gamma": grid["gamma"][2]}

        def fit(self, X, y):
            return self

    monkeypatch.setattr(bench, "GridSearchCV", Search)
    C, _, how = bench.choose_params("checkerboard", 0, 300)
    assert C == bench.CV_CS[-1] and how.endswith("; C on the grid's upper edge")
    assert "γ on" not in how
    # a widened grid (--cv-cs), given in any order, is searched sorted: its largest C is the edge
    C, _, how = bench.choose_params("checkerboard", 0, 300, [1e6, 1e3, 1e5])
    assert C == 1e6 and "C ∈ {1000, 100000, 1e+06}" in how
    assert how.endswith("; C on the grid's upper edge")
