"""Tests of the ``sparsify`` command line (in-process through ``main``, plus one subprocess)."""

from __future__ import annotations

import contextlib
import io
import json
import pickle
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

import sparsify
from sparsify import SolverError, SparseSVC
from sparsify.cli import build_parser, main
from sparsify.cli.files import _write_atomically
from sparsify.core.gradcheck import check_gradient
from sparsify.datasets import load_banana
from sparsify.io import load_model
from sparsify.io.model_file import FORMAT_VERSION

FAST = ["--n-expansion", "5", "--max-iter", "15"]
FIT_KEYS = {"test_error", "train_error", "n_expansion", "fit_seconds", "full_svm_n_support",
            "full_svm_test_error"}


def _blobs(n_per_class: int = 20, n_features: int = 2, n_classes: int = 2,
           seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Well separated Gaussian blobs, labels 0..n_classes-1."""
    rng = np.random.default_rng(seed)
    centres = 4.0 * np.eye(max(n_classes, n_features))[:n_classes, :n_features]
    X = np.vstack([c + 0.5 * rng.normal(size=(n_per_class, n_features)) for c in centres])
    y = np.repeat(np.arange(n_classes), n_per_class)
    return X, y


def _write_csv(path: Path, X: np.ndarray, y: np.ndarray | None, header: bool = True) -> Path:
    data = X if y is None else np.column_stack([X, y])
    names = [f"x{j}" for j in range(X.shape[1])] + ([] if y is None else ["label"])
    np.savetxt(path, data, delimiter=",", header=",".join(names) if header else "",
               comments="")
    return path


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def _files(directory: Path) -> set[str]:
    return {p.name for p in directory.iterdir()}


@pytest.fixture(scope="module")
def banana_model(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """One fast fit on the default data, saved: (model path, JSON report)."""
    path = tmp_path_factory.mktemp("model") / "banana.model"
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["fit", *FAST, "--json", "--out", str(path)])
    assert code == 0
    return path, json.loads(out.getvalue())


@pytest.fixture(scope="module")
def banana_test_csv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    _, _, X_test, y_test = load_banana()
    return _write_csv(tmp_path_factory.mktemp("data") / "banana_test.csv", X_test, y_test)


# --------------------------------------------------------------------------- fit


def test_fit_json_on_default_data(banana_model: tuple[Path, dict[str, Any]]) -> None:
    _, r = banana_model
    assert FIT_KEYS <= r.keys()
    assert r["n_expansion"] == 5
    assert r["n_train"] == 400 and r["n_test"] == 4900 and r["n_features"] == 2
    for key in ("test_error", "train_error", "full_svm_test_error"):
        assert 0.0 <= r[key] <= 1.0
    # Five XVs on Banana are far better than chance but not better than the full SVM by much.
    assert r["test_error"] < 0.3
    assert r["full_svm_test_error"] < 0.2
    assert r["full_svm_n_support"] > r["n_expansion"]
    assert r["fit_seconds"] > 0
    X, _, _, _ = load_banana()
    assert r["gamma"] == pytest.approx(1.0 / (2 * X.var()))  # "scale", resolved
    assert r["formulation"] == "svm" and r["C"] == 1.0 and r["n_iter"] == [15]


def test_fit_human_report(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "fit", "--n-expansion", "3", "--max-iter", "2")
    assert code == 0
    assert "Nz = 3 expansion vectors" in out
    assert "test error" in out and "train error" in out and "NSV =" in out


def test_fit_report_names_a_loss_other_than_the_hinge(capsys: pytest.CaptureFixture[str]
                                                      ) -> None:
    code, out, _ = _run(capsys, "fit", "--n-expansion", "3", "--max-iter", "2",
                        "--param", "loss=squared_hinge")
    assert code == 0
    assert ", C=1, loss=squared_hinge" in out.splitlines()[1]  # the estimator line
    assert "full SVM (hinge loss): NSV =" in out
    code, out, _ = _run(capsys, "fit", "--n-expansion", "3", "--max-iter", "2", "--json",
                        "--param", "loss=squared_hinge")
    r = json.loads(out)
    assert r["loss"] == "squared_hinge" and r["full_machine"] == "SVM (hinge loss)"
    code, out, _ = _run(capsys, "fit", "--n-expansion", "3", "--max-iter", "2", "--json")
    assert "loss" not in json.loads(out)


def test_fit_json_verbose_keeps_stdout_clean(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(capsys, "fit", "--n-expansion", "3", "--max-iter", "2", "--json", "-v")
    assert code == 0
    json.loads(out)  # exactly one JSON object: progress lines did not leak into stdout
    assert "[sparsify] 2 iterations, W = " in err and "iter    1/2" not in err  # a problem
    code, out, err = _run(capsys, "fit", "--n-expansion", "3", "--max-iter", "2", "--json", "-vv")
    assert code == 0
    json.loads(out)
    assert "[sparsify] iter    1/2" in err  # -vv: a line an iteration too


def test_fit_passes_parameters_to_the_estimator(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    X, y = _blobs(15, seed=3)
    path = _write_csv(tmp_path / "train.csv", X, y)
    model = tmp_path / "m.pkl"
    code, out, _ = _run(capsys, "fit", "--data", path, "--n-expansion", "2", "--max-iter", "4",
                        "--C", "3.5", "--gamma", "0.7", "--init", "kmeans", "--solver", "ecos",
                        "--seed", "4", "--json", "--out", model)
    assert code == 0
    r = json.loads(out)
    assert r["gamma"] == 0.7 and r["C"] == 3.5 and r["solver"] == "ecos"
    assert r["test_error"] is None and r["full_svm_test_error"] is None
    params = load_model(model).estimator_params_
    assert (params["C"], params["gamma"], params["init"], params["solver"],
            params["random_state"], params["max_iter"], params["n_expansion"]) == \
        (3.5, 0.7, "kmeans", "ecos", 4, 4, 2)


def test_fit_expansion_ratio(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "fit", "--expansion-ratio", "0.02", "--max-iter", "2", "--json")
    assert code == 0
    r = json.loads(out)
    # Nz is the ratio of the full SVM's NSV (both on the same kernel and C).
    assert r["n_expansion"] == max(1, round(0.02 * r["full_svm_n_support"]))


def test_fit_csv_with_labels_and_multiclass(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    X, y = _blobs(15, n_classes=3, seed=1)
    path = _write_csv(tmp_path / "three.csv", X, y)
    code, out, _ = _run(capsys, "fit", "--data", path, "--n-expansion", "2", "--max-iter", "5",
                        "--json")
    assert code == 0
    r = json.loads(out)
    assert r["n_train"] == 45 and r["classes"] == [0, 1, 2]
    assert r["n_expansion"] == 6  # 2 XVs for each one-vs-rest problem
    assert r["train_error"] < 0.1


def test_fit_libsvm_with_test_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from sklearn.datasets import dump_svmlight_file

    X, y = _blobs(20, n_features=3, seed=2)
    y = 2 * y - 1
    rng = np.random.default_rng(0)
    idx = rng.permutation(len(X))
    # LIBSVM omits zeros: with the last feature all zero the test file reads as 2 columns.
    X[idx[30:], 2] = 0.0
    dump_svmlight_file(X[idx[:30]], y[idx[:30]], str(tmp_path / "train.libsvm"), zero_based=False)
    dump_svmlight_file(X[idx[30:]], y[idx[30:]], str(tmp_path / "test.txt"), zero_based=False)
    code, out, _ = _run(capsys, "fit", "--data", tmp_path / "train.libsvm", "--test",
                        tmp_path / "test.txt", "--n-expansion", "3", "--max-iter", "5", "--json")
    assert code == 0
    r = json.loads(out)
    assert (r["n_train"], r["n_test"], r["n_features"]) == (30, 10, 3)
    assert r["test_error"] <= 0.2 and r["full_svm_test_error"] <= 0.2


def test_fit_npz_split(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    X, y = _blobs(10, seed=5)
    order = np.random.default_rng(1).permutation(20)
    np.savez(tmp_path / "bench.npz", X=X, y=y, train_idx=np.vstack([order[:14], order[6:]]),
             test_idx=np.vstack([order[14:], order[:6]]))
    code, out, _ = _run(capsys, "fit", "--data", tmp_path / "bench.npz", "--split", "2",
                        "--n-expansion", "2", "--max-iter", "3", "--json", "--out",
                        tmp_path / "m.pkl")
    assert code == 0
    r = json.loads(out)
    assert (r["n_train"], r["n_test"]) == (14, 6) and "split 2" in r["data"]
    # predict takes the held-out part of the same split
    code, out, _ = _run(capsys, "predict", "--model", tmp_path / "m.pkl", "--data",
                        tmp_path / "bench.npz", "--split", "2", "--json")
    assert code == 0
    p = json.loads(out)
    assert p["n_samples"] == 6 and p["error"] == r["test_error"]


def test_fit_plot_writes_png(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("matplotlib")
    png = tmp_path / "boundary.png"
    code, out, _ = _run(capsys, "fit", "--n-expansion", "3", "--max-iter", "3", "--plot", png)
    assert code == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert f"plot saved to {png}" in out
    assert _files(tmp_path) == {"boundary.png"}  # no temporary left behind


# --------------------------------------------------------------------------- predict


def test_predict_roundtrip(banana_model: tuple[Path, dict[str, Any]], banana_test_csv: Path,
                           tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model, report = banana_model
    code, out, _ = _run(capsys, "predict", "--model", model, "--data", banana_test_csv,
                        "--json")
    assert code == 0
    r = json.loads(out)
    _, _, X_test, _ = load_banana()
    # The loaded model scores exactly as the fitted one did in `fit`...
    assert r["n_samples"] == 4900 and r["error"] == report["test_error"]
    # ...and a fresh estimator with the same settings predicts identically.
    direct = SparseSVC(n_expansion=5, max_iter=15, random_state=0).fit(*load_banana()[:2])
    assert r["predictions"] == direct.predict(X_test).tolist()

    csv_out = tmp_path / "pred.csv"
    code, out, _ = _run(capsys, "predict", "--model", model, "--data", banana_test_csv,
                        "--out", csv_out)
    assert code == 0 and "written to" in out
    lines = csv_out.read_text().splitlines()
    assert lines[0] == "prediction"
    assert [int(v) for v in lines[1:]] == r["predictions"]


def test_predict_plain_output_and_unlabelled_csv(banana_model: tuple[Path, dict[str, Any]],
                                                 tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    model, _ = banana_model
    _, _, X_test, _ = load_banana()
    path = _write_csv(tmp_path / "features.csv", X_test[:7], None)
    code, out, err = _run(capsys, "predict", "--model", model, "--data", path)
    assert code == 0
    expected = load_model(model).predict(X_test[:7])
    assert out.split() == [str(v) for v in expected]  # one per line, nothing else on stdout
    assert "7 predictions" in err and "error" not in err  # no labels, so no error

    code, out, _ = _run(capsys, "predict", "--model", model, "--data", path, "--json")
    assert code == 0 and json.loads(out)["error"] is None


# --------------------------------------------------------------------------- gradient, plugins


def test_check_gradient_json(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "check-gradient", "--formulation", "svm", "--kernel", "rbf",
                        "--json")
    assert code == 0
    r = json.loads(out)
    assert r["rel_error"] <= 1e-6 + r["fd_error"] and r["passed"] is True
    assert r["formulation"] == "svm" and r["kernel"] == "rbf"


def test_check_gradient_threshold_sets_exit_code(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "check-gradient", "--formulation", "svm", "--threshold",
                        "1e-300")
    assert code == 1 and "FAILED" in out


def test_check_gradient_on_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    X, y, _, _ = load_banana()
    # Labels 0/1 in the file; the command maps them to the -1/+1 the SVM formulation takes.
    path = _write_csv(tmp_path / "d.csv", X[:60], (y[:60] == 1).astype(int))
    code, out, _ = _run(capsys, "check-gradient", "--formulation", "svm", "--data", path,
                        "--n-expansion", "3", "--json")
    assert code == 0
    r = json.loads(out)
    assert r["passed"] and r["n_expansion"] == 3 and r["n_features"] == 2
    direct = check_gradient("svm", "rbf", X=X[:60], y=y[:60], n_expansion=3)
    assert r["value"] == pytest.approx(direct.value, rel=1e-9)  # same W: labels were mapped


def test_plugins_json(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "plugins", "--json")
    assert code == 0
    r = json.loads(out)
    found = {(kind, e["name"]): e for kind in ("formulations", "kernels", "solvers")
             for e in r[kind]}
    for kind, name in [("formulations", "svm"), ("kernels", "rbf"), ("kernels", "poly"),
                       ("kernels", "linear"), ("solvers", "clarabel"), ("solvers", "ecos"),
                       ("solvers", "osqp")]:
        assert found[(kind, name)]["distribution"] == "sparsify"
        assert found[(kind, name)]["plugin"]
    assert found[("formulations", "svm")]["estimator"] == "SparseSVC"


def test_every_option_is_documented(capsys: pytest.CaptureFixture[str]) -> None:
    parser = build_parser()
    subparsers = next(a for a in parser._actions if hasattr(a, "choices") and a.choices)
    assert set(subparsers.choices) == {"fit", "search", "predict", "export", "check-gradient",
                                       "plugins"}
    for name, sub in subparsers.choices.items():
        code, out, _ = _run(capsys, name, "--help")
        assert code == 0
        for action in sub._actions:
            for option in action.option_strings:
                assert option in out, (name, option)
            assert action.help, (name, action.dest)
    code, out, _ = _run(capsys, "--help")
    assert code == 0 and all(n in out for n in subparsers.choices)


# --------------------------------------------------------------------------- errors


_ANNOUNCEMENT = f"sparsify {sparsify.__version__}: fitting "


def _assert_clean_failure(code: int, out: str, err: str, *needles: str) -> None:
    assert code == 2
    # nothing on stdout but, for fit, its first line (printed before the heavy imports)
    assert out == "" or (out.count("\n") == 1 and out.startswith(_ANNOUNCEMENT)), out
    lines = err.strip().splitlines()
    assert lines[-1].startswith("sparsify: error: ")
    assert "Traceback" not in err
    for needle in needles:
        assert needle in lines[-1], (needle, lines[-1])


@pytest.fixture
def csv_case(tmp_path: Path) -> Any:
    def make(X: np.ndarray, y: np.ndarray, name: str = "data.csv") -> Path:
        return _write_csv(tmp_path / name, X, y)
    return make


@pytest.mark.parametrize(
    ("case", "extra", "needles"),
    [
        ("missing", [], ["No data file", "missing.csv"]),
        ("nan", [], ["data.csv, line 5, column 2: missing value 'nan'", "NaN"]),
        ("inf", [], ["data.csv, line 2, column 1: 'inf' is not a finite number"]),
        ("nan_label", [], ["data.csv, line 7, column 3: missing value 'nan'"]),
        ("one_class", [], ["only one class"]),
        ("too_many_xvs", ["--n-expansion", "50"], ["50", "40 distinct training points"]),
        ("zero_xvs", ["--n-expansion", "0"], ["--n-expansion", ">= 1"]),
        ("both_sizes", ["--n-expansion", "3", "--expansion-ratio", "0.5"], ["not allowed"]),
        ("kernel", ["--kernel", "rbf+nope"], ["Unknown kernel 'nope'", "rbf"]),
        ("formulation", ["--formulation", "nope"], ["Unknown formulation 'nope'", "svm"]),
        ("solver", ["--solver", "nope"], ["Unknown solver 'nope'", "clarabel"]),
        ("plot_3d", [], ["--plot needs data with 2 features", "3"]),
        ("gamma", ["--gamma", "big"], ["--gamma", "'scale', 'auto'"]),
        ("bad_csv", [], ["data.csv, line 2, column 2: could not convert 'oops'"]),
    ],
)
def test_fit_bad_input_fails_cleanly(case: str, extra: list[str], needles: list[str],
                                     tmp_path: Path, csv_case: Any,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    X, y = _blobs(20, seed=0)
    if case == "missing":
        data = tmp_path / "missing.csv"
    elif case == "nan":
        X[3, 1] = np.nan
    elif case == "inf":
        X[0, 0] = np.inf
    elif case == "nan_label":
        y = y.astype(float)
        y[5] = np.nan
    elif case == "one_class":
        y[:] = 1
    elif case == "plot_3d":
        X = np.column_stack([X, X[:, 0]])
    if case == "bad_csv":
        data = tmp_path / "data.csv"
        data.write_text("1.0,2.0,1\n3.0,oops,0\n")
    elif case != "missing":
        data = csv_case(X, y)
    before = _files(tmp_path)
    code, out, err = _run(capsys, "fit", "--data", data, "--max-iter", "2",
                          "--out", tmp_path / "model.pkl", "--plot", tmp_path / "plot.png",
                          *extra)
    _assert_clean_failure(code, out, err, *needles)
    assert _files(tmp_path) == before  # neither --out nor --plot, nor a temporary


def test_fit_failure_after_checks_writes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    def broken_fit(self: SparseSVC, X: Any, y: Any) -> SparseSVC:
        raise SolverError("The clarabel solver did not solve the 'svm' problem.")

    monkeypatch.setattr(SparseSVC, "fit", broken_fit)
    code, out, err = _run(capsys, "fit", "--n-expansion", "3", "--out", tmp_path / "m.pkl")
    _assert_clean_failure(code, out, err, "did not solve")
    assert _files(tmp_path) == set()


def test_fit_output_directory_missing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(capsys, "fit", *FAST, "--out", tmp_path / "no" / "m.pkl")
    _assert_clean_failure(code, out, err, "does not exist")


def test_atomic_write_leaves_nothing_on_failure(tmp_path: Path) -> None:
    first = tmp_path / "first.bin"
    # The message names the target, not the temporary, and says nothing was written.
    with pytest.raises(ValueError, match=r"Could not write .*second\.bin: No such file or "
                                         r"directory; nothing was written"):
        _write_atomically([(first, b"abc"), (tmp_path / "missing" / "second.bin", b"def")])
    assert _files(tmp_path) == set()
    _write_atomically([(first, b"abc")])
    assert first.read_bytes() == b"abc" and _files(tmp_path) == {"first.bin"}


def test_predict_feature_mismatch(banana_model: tuple[Path, dict[str, Any]], tmp_path: Path,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    model, _ = banana_model
    X, y = _blobs(5, n_features=4)
    data = _write_csv(tmp_path / "four.csv", X, y)
    code, out, err = _run(capsys, "predict", "--model", model, "--data", data, "--out",
                          tmp_path / "pred.csv")
    # Neither 2 (features only) nor 3 (features and label) columns: both counts named.
    _assert_clean_failure(code, out, err, "four.csv has 5 columns", "the model has 2 features")
    assert _files(tmp_path) == {"four.csv"}
    code, out, err = _run(capsys, "predict", "--model", model, "--data", data, "--labels")
    _assert_clean_failure(code, out, err, "four.csv has 4 features", "trained on 2")


def test_predict_nan_and_missing_files(banana_model: tuple[Path, dict[str, Any]],
                                       tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model, _ = banana_model
    X, y = _blobs(5)
    X[2, 0] = np.nan
    data = _write_csv(tmp_path / "nan.csv", X, y)
    _assert_clean_failure(*_run(capsys, "predict", "--model", model, "--data", data), "NaN")
    _assert_clean_failure(*_run(capsys, "predict", "--model", tmp_path / "none.pkl", "--data",
                                data), "No model file")
    _assert_clean_failure(*_run(capsys, "predict", "--model", model, "--data",
                                tmp_path / "none.csv"), "No data file")


def test_predict_refuses_a_newer_model_format(banana_model: tuple[Path, dict[str, Any]],
                                             banana_test_csv: Path, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    from tests.test_model_file import _forge, _members

    members = _members(banana_model[0].read_bytes())
    header = json.loads(members["header.json"])
    newer = tmp_path / "newer.model"
    version = FORMAT_VERSION + 1
    newer.write_bytes(_forge(members, header={**header, "format_version": version}))
    code, out, err = _run(capsys, "predict", "--model", newer, "--data", banana_test_csv,
                          "--out", tmp_path / "p.csv")
    _assert_clean_failure(code, out, err, f"model format version {version}", "Upgrade sparsify")
    assert not (tmp_path / "p.csv").exists()


def test_predict_refuses_non_model_files(banana_test_csv: Path, tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    other = tmp_path / "other.pkl"
    other.write_bytes(pickle.dumps({"estimator": None}))
    _assert_clean_failure(*_run(capsys, "predict", "--model", other, "--data", banana_test_csv),
                          "it is a pickle", "never unpickles")
    garbage = tmp_path / "garbage.model"
    garbage.write_bytes(b"definitely not a model")
    _assert_clean_failure(*_run(capsys, "predict", "--model", garbage, "--data",
                                banana_test_csv), "not a zip archive, not a sparsify model file")


def test_predict_never_runs_the_code_of_a_pickled_model(banana_test_csv: Path, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]
                                                        ) -> None:
    # the reported attack: a pickle whose __reduce__ runs a command, given as --model
    from tests.test_model_file import _Marker

    marker = tmp_path / "code-ran"
    evil = tmp_path / "evil.pkl"
    evil.write_bytes(pickle.dumps({"format": "sparsify-model", "estimator": _Marker(marker)}))
    _assert_clean_failure(*_run(capsys, "predict", "--model", evil, "--data", banana_test_csv),
                          "evil.pkl", "never unpickles")
    assert not marker.exists()


def test_fit_refuses_to_save_what_a_model_file_cannot_hold(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # before the fit: the full model file would otherwise be lost after minutes of work
    model = tmp_path / "m.model"
    _assert_clean_failure(*_run(capsys, "fit", *FAST, "--kernel", "rbf+nope", "--out", model),
                          "Unknown kernel")
    assert not model.exists()


def test_check_gradient_bad_names(capsys: pytest.CaptureFixture[str]) -> None:
    _assert_clean_failure(*_run(capsys, "check-gradient", "--formulation", "nope"),
                          "Unknown formulation 'nope'")
    _assert_clean_failure(*_run(capsys, "check-gradient", "--formulation", "svm", "--kernel",
                                "nope"), "Unknown kernel 'nope'")
    _assert_clean_failure(*_run(capsys, "check-gradient", "--formulation", "svm", "--solver",
                                "nope"), "Unknown solver 'nope'")


# --------------------------------------------------------------------------- entry point


@pytest.mark.slow
def test_console_script_runs(tmp_path: Path) -> None:
    script = Path(sys.executable).with_name("sparsify")
    command = [str(script)] if script.exists() else (
        [found] if (found := shutil.which("sparsify")) else [sys.executable, "-m", "sparsify"])
    ok = subprocess.run([*command, "plugins", "--json"], capture_output=True, text=True,
                        timeout=120, check=False)
    assert ok.returncode == 0, ok.stderr
    assert "svm" in {e["name"] for e in json.loads(ok.stdout)["formulations"]}
    bad = subprocess.run([*command, "fit", "--data", str(tmp_path / "nope.csv")],
                         capture_output=True, text=True, timeout=120, check=False)
    assert bad.returncode == 2
    assert bad.stderr.strip().startswith("sparsify: error: No data file")
    assert "Traceback" not in bad.stderr
    announced = f"{_ANNOUNCEMENT}svm with kernel rbf on {tmp_path / 'nope.csv'}"
    assert bad.stdout.splitlines() == [announced]


def test_param_passes_estimator_parameters(capsys) -> None:
    code = main(["fit", "--n-expansion", "3", "--max-iter", "2", "--json", "--n-init", "2",
                 "--param", "solver_tol=1e-7", "--param", "probability=true"])
    assert code == 0
    assert main(["fit", "--param", "nu=0.1"]) == 2
    assert "has no parameter 'nu'" in capsys.readouterr().err


def test_fit_outlier_detector_compares_with_oneclass_svm(capsys, tmp_path) -> None:
    code = main(["fit", "--formulation", "oneclass", "--param", "nu=0.1", "--expansion-ratio",
                 "0.3", "--max-iter", "30", "--json"])
    assert code == 0
    r = json.loads(capsys.readouterr().out)
    assert r["full_machine"] == "OneClassSVM" and r["inlier_label"] == 1
    assert r["n_train"] == int((load_banana()[1] == 1).sum())
    assert r["n_expansion"] == round(0.3 * r["full_svm_n_support"])
    assert 0.5 < r["test_auc"] <= 1 and abs(r["test_auc"] - r["full_test_auc"]) < 0.1
    plot = tmp_path / "p.png"
    assert main(["fit", "--formulation", "oneclass", "--plot", str(plot)]) == 2
    assert "draws classifiers and regressors, not outlier detectors" in \
        capsys.readouterr().err and not plot.exists()
    assert main(["fit", "--formulation", "oneclass", "--inlier-label", "7"]) == 2
    assert "No training row has the inlier label 7" in capsys.readouterr().err


def test_formulation_selects_its_estimator_variant(capsys, tmp_path) -> None:
    for name, method in [("kfd", "convex"), ("skfd", "rayleigh")]:
        model = tmp_path / f"{name}.pkl"
        assert main(["fit", "--formulation", name, "--param", "mu=0.01", "--n-expansion", "4",
                     "--max-iter", "5", "--json", "--out", str(model)]) == 0
        assert json.loads(capsys.readouterr().out)["estimator"] == "SparseKFD"
        assert load_model(model).estimator_params_["method"] == method
    assert main(["fit", "--formulation", "klr", "--param", "lam=0.01", "--n-expansion", "4",
                 "--max-iter", "5", "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["estimator"] == "SparseKernelLogisticRegression" and r["n_expansion"] == 4


# --------------------------------------------------------------------------- regressors

RIDGE = ["--formulation", "kernel_ridge", "--n-expansion", "6", "--gamma", "0.5", "--param",
         "alpha=0.1", "--seed", "0"]


def _sine_files(directory: Path, n_features: int = 1) -> tuple[Path, Path, np.ndarray,
                                                                np.ndarray]:
    """Training and test CSVs of a smooth function with noise: (train, test, X_test, y_test)."""
    rng = np.random.default_rng(n_features)
    X = rng.uniform(-3, 3, size=(120, n_features))
    y = np.sin(X[:, 0]) * (1.0 if n_features == 1 else np.cos(X[:, 1:]).sum(1)) \
        + 0.05 * rng.normal(size=120)
    train = _write_csv(directory / "train.csv", X[:80], y[:80])
    test = _write_csv(directory / "test.csv", X[80:], y[80:])
    return train, test, X[80:], y[80:]


# the model records the training CSV's column names; X is given here as a bare array
@pytest.mark.filterwarnings("ignore:X does not have valid feature names:UserWarning")
def test_a_regressor_fitted_with_out_predicts_real_values_with_rmse(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    train, test, X_test, y_test = _sine_files(tmp_path)
    model = tmp_path / "sine.model"
    code, out, _ = _run(capsys, "fit", *RIDGE, "--data", train, "--test", test, "--out", model,
                        "--json")
    assert code == 0
    fitted = json.loads(out)
    assert fitted["model"] == str(model) and fitted["test_error"] is None
    assert fitted["test_r2"] > 0.9, fitted
    machine = load_model(model)
    assert machine.decision_rule_ == "identity" and not hasattr(machine, "classes_")
    assert machine.estimator_class_ == "SparseKernelRidge"
    assert machine.formulation_ == "kernel_ridge" and machine.estimator_params_["alpha"] == 0.1
    assert machine.metadata["test_error"] is None and machine.metadata["classes"] == []
    assert {k: machine.metadata[k] for k in ("test_rmse", "test_mae", "test_r2")} == \
        {k: fitted[k] for k in ("test_rmse", "test_mae", "test_r2")}
    expected = machine.predict(X_test)

    # --json: the real predictions in full, RMSE, MAE and R² instead of an error rate
    code, out, _ = _run(capsys, "predict", "--model", model, "--data", test, "--json")
    assert code == 0
    r = json.loads(out)
    assert r["predictions"] == expected.tolist() and r["error"] is None and r["labelled"]
    residual = y_test - expected
    assert r["rmse"] == pytest.approx(np.sqrt(np.mean(residual**2)), rel=1e-12)
    assert r["mae"] == pytest.approx(np.mean(np.abs(residual)), rel=1e-12)
    assert r["r2"] == pytest.approx(1 - residual @ residual / np.sum((y_test - y_test.mean())**2),
                                    rel=1e-12)
    assert (r["rmse"], r["mae"], r["r2"]) == pytest.approx(
        (fitted["test_rmse"], fitted["test_mae"], fitted["test_r2"]), rel=1e-12)

    # plain: one real value per line on stdout, the report on stderr
    code, out, err = _run(capsys, "predict", "--model", model, "--data", test)
    assert code == 0
    assert [float(v) for v in out.split()] == expected.tolist()
    assert f"40 predictions, RMSE {r['rmse']:.4g}, MAE {r['mae']:.4g}, R² {r['r2']:.4f}" in err
    assert "error" not in err

    # --out: a CSV of the values; unlabelled data: predictions, no metrics
    csv_out = tmp_path / "pred.csv"
    assert _run(capsys, "predict", "--model", model, "--data", test, "--out", csv_out)[0] == 0
    lines = csv_out.read_text().splitlines()
    assert lines[0] == "prediction" and [float(v) for v in lines[1:]] == expected.tolist()
    features = _write_csv(tmp_path / "features.csv", X_test, None)
    code, out, err = _run(capsys, "predict", "--model", model, "--data", features, "--json")
    r = json.loads(out)
    assert code == 0 and not r["labelled"] and r["predictions"] == expected.tolist()
    assert (r["rmse"], r["mae"], r["r2"], r["error"]) == (None, None, None, None)

    # the human report of fit says where the model went
    code, out, _ = _run(capsys, "fit", *RIDGE, "--data", train, "--test", test, "--out", model)
    assert code == 0 and "test:      RMSE" in out and f"model saved to {model}" in out


def test_predict_with_a_regressor_needs_numeric_targets(tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    train, _, X_test, _ = _sine_files(tmp_path)
    model = tmp_path / "sine.model"
    assert _run(capsys, "fit", *RIDGE, "--data", train, "--out", model)[0] == 0
    words = np.where(np.arange(len(X_test)) % 2 == 0, "low", "high")
    text = "x0,label\n" + "".join(f"{float(x)!r},{w}\n"
                                   for x, w in zip(X_test[:, 0], words, strict=True))
    (tmp_path / "words.csv").write_text(text)
    _assert_clean_failure(*_run(capsys, "predict", "--model", model, "--data",
                                tmp_path / "words.csv"),
                          "is a regressor: the targets of", "must be numbers")


# the model records the training CSV's column names; X is given here as a bare array
@pytest.mark.filterwarnings("ignore:X does not have valid feature names:UserWarning")
def test_a_declared_regressor_is_saved_and_predicted_from_the_command_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A formulation with task "regressor" and no estimator class: the generic estimator."""
    import sparsify
    from sparsify.plugins.registry import get_registry
    from tests.test_model_file import DeclaredRidge

    if DeclaredRidge.name not in get_registry().names("formulation"):
        plugin = SimpleNamespace(register_formulations=sparsify.hookimpl(
            lambda register: register(DeclaredRidge)))
        sparsify.register_plugin(plugin, "test_cli_declared_ridge")
    train, test, X_test, _ = _sine_files(tmp_path)
    model = tmp_path / "declared.model"
    code, out, _ = _run(capsys, "fit", "--formulation", DeclaredRidge.name, "--data", train,
                        "--test", test, "--n-expansion", "4", "--gamma", "0.5", "--param",
                        "alpha=0.1", "--max-iter", "5", "--out", model, "--json")
    assert code == 0
    fitted = json.loads(out)
    machine = load_model(model)
    assert machine.decision_rule_ == "identity" and machine.formulation_ == DeclaredRidge.name
    assert machine.estimator_class_ == fitted["estimator"]
    code, out, _ = _run(capsys, "predict", "--model", model, "--data", test, "--json")
    r = json.loads(out)
    assert code == 0 and r["predictions"] == machine.predict(X_test).tolist()
    assert r["rmse"] == pytest.approx(fitted["test_rmse"], rel=1e-12)


@pytest.mark.parametrize("n_features", [1, 2])
def test_fit_plot_draws_a_regressor(n_features: int, tmp_path: Path,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("matplotlib")
    train, test, _, _ = _sine_files(tmp_path, n_features)
    png = tmp_path / "regression.png"
    code, out, _ = _run(capsys, "fit", *RIDGE, "--data", train, "--test", test, "--plot", png)
    assert code == 0 and f"plot saved to {png}" in out
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert _files(tmp_path) == {"train.csv", "test.csv", "regression.png"}  # no temporary


def test_the_regression_plot_shows_the_curve_the_points_and_the_xvs() -> None:
    """What the 1-D and 2-D figures hold: checked on the figure objects, not on pixels."""
    pytest.importorskip("matplotlib")
    import matplotlib.pyplot as plt

    from sparsify import SparseKernelRidge
    from sparsify.cli.plotting import plot_regression

    rng = np.random.default_rng(0)
    X = rng.uniform(-3, 3, size=(60, 1))
    y = np.sin(X[:, 0])
    reg = SparseKernelRidge(5, alpha=0.1, gamma=0.5, random_state=0).fit(X, y)
    fig = plot_regression(reg, X, y, resolution=50, title="sine")
    try:
        ax = fig.axes[0]
        (curve,) = ax.get_lines()
        x, f = curve.get_data()
        assert len(x) == 50 and np.allclose(f, reg.predict(np.asarray(x)[:, None]))
        points, xvs = (c.get_offsets() for c in ax.collections)
        assert np.allclose(points, np.column_stack([X[:, 0], y]))
        Z = reg.expansion_vectors_
        assert np.allclose(xvs, np.column_stack([Z[:, 0], reg.predict(Z)]))  # on the curve
        assert ax.get_title() == "sine"
    finally:
        plt.close(fig)

    X2 = rng.uniform(-2, 2, size=(60, 2))
    y2 = X2[:, 0] * X2[:, 1]
    reg2 = SparseKernelRidge(6, alpha=0.1, gamma=0.5, random_state=0).fit(X2, y2)
    fig = plot_regression(reg2, X2, y2, resolution=30)
    try:
        ax = fig.axes[0]
        assert len(fig.axes) == 2  # the contour's colour bar
        offsets = [c.get_offsets() for c in ax.collections if len(c.get_offsets())]
        assert any(o.shape == X2.shape and np.allclose(o, X2) for o in offsets)
        assert any(np.allclose(o, reg2.expansion_vectors_) for o in offsets
                   if o.shape == reg2.expansion_vectors_.shape)
    finally:
        plt.close(fig)
    with pytest.raises(ValueError, match="needs data with 1 or 2 features; got 3"):
        plot_regression(reg2, np.zeros((4, 3)), np.zeros(4))


def test_fit_plot_refuses_a_regressor_on_3_features_before_the_fit(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    from sparsify import SparseKernelRidge

    def refuse(self: Any, X: Any, y: Any = None) -> Any:
        raise AssertionError("fit ran although the command should have stopped before it")

    monkeypatch.setattr(SparseKernelRidge, "fit", refuse)
    train, _, _, _ = _sine_files(tmp_path, 3)
    before = _files(tmp_path)
    _assert_clean_failure(*_run(capsys, "fit", *RIDGE, "--data", train, "--out",
                                tmp_path / "m.model", "--plot", tmp_path / "p.png"),
                          "--plot draws a regressor on data with 1 or 2 features",
                          "train.csv has 3")
    assert _files(tmp_path) == before


def test_the_svr_formulation_fits_a_sparse_svr_from_the_command_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    train, test, *_ = _sine_files(tmp_path)
    model = tmp_path / "svr.model"
    code, out, _ = _run(capsys, "fit", "--formulation", "svr", "--n-expansion", "6", "--gamma",
                        "0.5", "--C", "10", "--param", "epsilon=0.05", "--seed", "0",
                        "--data", train, "--test", test, "--out", model, "--json")
    assert code == 0
    assert json.loads(out)["test_r2"] > 0.9
    machine = load_model(model)
    assert machine.estimator_class_ == "SparseSVR" and machine.formulation_ == "svr"
    assert machine.estimator_params_["epsilon"] == 0.05 and machine.decision_rule_ == "identity"
