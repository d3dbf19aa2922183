"""``sparsify search``: the grid from the options, the report, --json, --out, --plot."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from sparsify.cli import main
from sparsify.datasets import load_banana
from sparsify.io import load_model


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_search_reports_the_path_and_saves_the_chosen_model(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    model, plot = tmp_path / "chosen.model", tmp_path / "path.png"
    code, out, err = _run(capsys, "search", "--n-expansion", "2,4,8", "--C", "1,10",
                          "--gamma", "1", "--out", model, "--plot", plot, "--json")
    assert code == 0, err
    r = json.loads(out)
    assert r["grid"] == {"n_expansion": [2, 4, 8], "C": [1.0, 10.0], "gamma": [1.0]}
    assert r["n_settings"] == 6 and r["n_folds"] == 3 and r["n_fits"] == 18
    assert r["n_warm"] == 15  # one cold start per fold
    assert [row["n_expansion"] for row in r["path"]] == [2, 4, 8]
    chosen = r["chosen"]["n_expansion"]
    best = min(r["path"], key=lambda row: row["cv_error"])
    within = [row["n_expansion"] for row in r["path"]
              if row["cv_error"] <= best["cv_error"] + best["cv_error_se"] + 1e-12]
    assert chosen == min(within)
    assert 0 <= r["test_error"] < 0.5 and r["full_svm"]["n_support"] > 0
    # the saved model is the refitted choice: its test error is the report's
    _, _, X_test, y_test = load_banana()
    clf = load_model(model)
    assert len(clf.expansion_vectors_) == chosen
    assert np.mean(clf.predict(X_test) != y_test) == pytest.approx(r["test_error"])
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_text_report_marks_the_choice(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "search", "--expansion-path", "4", "--C", "10", "--gamma", "1")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith("sparsify ") and "searching svm" in lines[0]
    assert sum("<- chosen" in line for line in lines) == 1
    assert any(line.startswith("full SVM:") for line in lines)


def test_a_regressor_is_searched_by_one_minus_r2(capsys: pytest.CaptureFixture[str],
                                                 tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    x = rng.uniform(-3, 3, 150)
    data = tmp_path / "sine.csv"
    np.savetxt(data, np.column_stack([x, np.sin(x) + 0.1 * rng.normal(size=150)]), delimiter=",")
    code, out, err = _run(capsys, "search", "--formulation", "kernel_ridge", "--data", data,
                          "--n-expansion", "2,6", "--param", "alpha=0.01,0.1", "--json")
    assert code == 0, err
    r = json.loads(out)
    assert r["error"] == "1 - R²" and r["full_svm"] is None
    assert r["grid"]["alpha"] == [0.01, 0.1] and "C" not in r["grid"]
    assert r["path"][-1]["cv_error"] < 0.1


@pytest.mark.parametrize("argv, message", [
    (["--C", "1,-2"], "must be > 0"),
    (["--n-expansion", "2,,4"], "separated by commas"),
    (["--param", "nope=1,2"], "has no parameter 'nope'"),
    (["--param", "C=1,2"], "repeats an option"),
    (["--cv", "1"], "integer >= 2"),
])
def test_bad_options_are_one_clear_line(capsys: pytest.CaptureFixture[str], argv: list[str],
                                        message: str) -> None:
    code, _, err = _run(capsys, "search", "--n-expansion", "2", *argv)
    assert code == 2
    assert message in err and err.count("\n") == 1
