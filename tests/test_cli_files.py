"""The command line and its files: outputs never overwrite inputs, rows are never lost or
misread, faults are one-line errors (never a traceback), and the start is light.

Companion of tests/test_cli.py (same helpers); each reported problem has a test here.
"""

from __future__ import annotations

import contextlib
import errno
import importlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

import sparsify
from sparsify import SparseSVC
from sparsify.cli import main
from sparsify.cli.progress import _ProgressBar
from sparsify.datasets import load_file, read_data_file
from sparsify.io import load_model
from tests.test_cli import _assert_clean_failure, _blobs, _files, _run, _write_csv

QUICK = ["--n-expansion", "2", "--max-iter", "3"]


@pytest.fixture
def no_fit(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make any fit an error: the checks under test must come before the work."""
    def refuse(self: Any, X: Any, y: Any = None) -> Any:
        raise AssertionError("fit ran although the command should have stopped before it")

    monkeypatch.setattr(SparseSVC, "fit", refuse)


@pytest.fixture(scope="module")
def blob_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small SparseSVC fitted on 2-D blobs with labels 0/1, saved."""
    d = tmp_path_factory.mktemp("blob_model")
    X, y = _blobs(20, seed=7)
    data = _write_csv(d / "train.csv", X, y)
    model = d / "blobs.model"
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["fit", "--data", str(data), *QUICK, "--out", str(model)]) == 0
    return model


# --------------------------------------------------------------------------- 1. outputs vs inputs


def _alias(kind: str, target: Path, tmp_path: Path) -> Path:
    """Another name for ``target``: the same path, ./name, a hard link or a symlink."""
    if kind == "same":
        return target
    if kind == "dot":
        return Path(os.path.relpath(target.parent, Path.cwd())) / "." / target.name
    alias = tmp_path / f"{kind}-{target.name}"
    if kind == "hardlink":
        os.link(target, alias)
    else:
        alias.symlink_to(target)
    return alias


@pytest.mark.parametrize("kind", ["same", "dot", "hardlink", "symlink"])
@pytest.mark.parametrize("option", ["--out", "--plot"])
def test_fit_refuses_an_output_that_is_the_training_data(kind: str, option: str, tmp_path: Path,
                                                        no_fit: None,
                                                        capsys: pytest.CaptureFixture) -> None:
    X, y = _blobs(20)
    data = _write_csv(tmp_path / "same.csv", X, y)
    before = data.read_bytes()
    out = _alias(kind, data, tmp_path)
    code, stdout, err = _run(capsys, "fit", "--data", data, option, out)
    _assert_clean_failure(code, stdout, err, f"{option} ", "is the same file as --data",
                          "would destroy the input")
    assert data.read_bytes() == before


def test_fit_refuses_an_output_that_is_the_test_data(tmp_path: Path, no_fit: None,
                                                    capsys: pytest.CaptureFixture) -> None:
    X, y = _blobs(20)
    train, test = _write_csv(tmp_path / "a.csv", X, y), _write_csv(tmp_path / "b.csv", X, y)
    _assert_clean_failure(*_run(capsys, "fit", "--data", train, "--test", test, "--out", test),
                          "is the same file as --test")


@pytest.mark.parametrize("kind", ["same", "dot", "hardlink", "symlink"])
@pytest.mark.parametrize("victim", ["--model", "--data"])
def test_predict_refuses_an_output_that_is_an_input(kind: str, victim: str, blob_model: Path,
                                                   tmp_path: Path,
                                                   capsys: pytest.CaptureFixture) -> None:
    X, _ = _blobs(5)
    data = _write_csv(tmp_path / "x.csv", X, None)
    model = tmp_path / "m.model"
    model.write_bytes(blob_model.read_bytes())
    target = model if victim == "--model" else data
    before = target.read_bytes()
    out = _alias(kind, target, tmp_path)
    _assert_clean_failure(*_run(capsys, "predict", "--model", model, "--data", data, "--out", out),
                          f"is the same file as {victim}")
    assert target.read_bytes() == before


def test_two_outputs_naming_one_file_are_refused(tmp_path: Path, no_fit: None,
                                                 capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "m.png"
    out.write_bytes(b"old")
    os.link(out, tmp_path / "other.png")
    for plot in (out, tmp_path / "." / "m.png", tmp_path / "other.png"):
        _assert_clean_failure(*_run(capsys, "fit", "--out", out, "--plot", plot),
                              "name the same file", "give two names")
    assert out.read_bytes() == b"old"


def test_unwritable_directory_is_refused_before_the_fit(tmp_path: Path, no_fit: None,
                                                        capsys: pytest.CaptureFixture) -> None:
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        if os.access(locked, os.W_OK):  # root ignores permissions
            pytest.skip("running as a user whom permissions do not stop (root); the message "
                        "is tested with a patched os.access below")
        _assert_clean_failure(*_run(capsys, "fit", "--out", locked / "m.model"),
                              f"Cannot write --out {locked / 'm.model'}", "is not writable")
    finally:
        locked.chmod(0o700)
    assert _files(locked) == set()


def test_unwritable_directory_message(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                      no_fit: None, capsys: pytest.CaptureFixture) -> None:
    real_access = os.access
    locked = tmp_path / "locked"
    locked.mkdir()

    def access(path: Any, mode: int, *args: Any, **kwargs: Any) -> bool:
        if Path(path) == locked and mode & os.W_OK:
            return False
        return real_access(path, mode, *args, **kwargs)

    monkeypatch.setattr(os, "access", access)
    _assert_clean_failure(*_run(capsys, "fit", "--plot", locked / "p.png"),
                          f"Cannot write --plot {locked / 'p.png'}: the directory {locked} is "
                          "not writable")
    # The parent is a file, not a directory.
    afile = tmp_path / "afile"
    afile.write_text("x")
    _assert_clean_failure(*_run(capsys, "fit", "--out", afile / "m.model"),
                          f"{afile} is not a directory")


def test_a_failed_write_is_one_line_naming_the_file(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture) -> None:
    def disk_full(fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", disk_full)
    out = tmp_path / "m.model"
    code, stdout, err = _run(capsys, "fit", *QUICK, "--out", out)
    _assert_clean_failure(code, stdout, err, f"Could not write {out}: No space left on device",
                          "nothing was written")
    assert ".tmp" not in err  # the target is named, not the temporary
    assert _files(tmp_path) == set()


def test_an_unreadable_input_is_one_line_naming_the_file(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture) -> None:
    X, y = _blobs(10)
    data = _write_csv(tmp_path / "secret.csv", X, y)

    real_open = Path.open

    def denied(self: Path, *args: Any, **kwargs: Any) -> Any:
        if self == data:
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(self))
        return real_open(self, *args, **kwargs)

    monkeypatch.setattr(Path, "open", denied)
    _assert_clean_failure(*_run(capsys, "fit", "--data", data),
                          f"{data}: Permission denied")


# --------------------------------------------------------------------------- 2. rows: CSV header


def _csv(tmp_path: Path, text: str, name: str = "d.csv") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


ROWS = "1.0,2.0,0\n2.0,1.0,1\n0.5,0.5,0\n"


@pytest.mark.parametrize(
    ("first", "header", "n_rows", "note"),
    [
        ("x0,x1,label\n", True, 3, "line 1 is a header (detected: 'x0' is not a number)"),
        ("x0,,label\n", True, 3, "line 1 is a header (detected: 'x0'"),  # text wins over ''
        ('"a","b","y"\n', True, 3, "line 1 is a header (detected: 'a'"),
        ("# x0,x1,label\n", False, 3, "1 comment line(s) starting with '#' skipped"),
        ("", False, 3, "no header (detected: line 1 is all numbers)"),
        ("3.0,4.0,1\n", False, 4, "no header (detected: line 1 is all numbers)"),
    ],
)
def test_csv_header_detection(first: str, header: bool, n_rows: int, note: str,
                              tmp_path: Path) -> None:
    data = read_data_file(_csv(tmp_path, first + ROWS))
    assert data.header is header and len(data.X) == n_rows
    assert any(n.startswith(note) for n in data.notes), data.notes
    assert data.X[-1].tolist() == [0.5, 0.5] and data.y[-1] == 0


@pytest.mark.parametrize(
    ("first", "needle"),
    [
        ("1.0,,1\n", "line 1 has no column names but an empty or missing value '' in column 2"),
        ("NA,2.0,1\n", "missing value 'NA' in column 1"),
        ("nan,?,1\n", "missing value 'nan' in column 1"),
        ("1,2,3\n", "line 1 reads 1,2,3, like column numbers"),
        ("0,1,2\n", "line 1 reads 0,1,2, like column numbers"),
        ("1.5,2.5,label\n", "text ('label') only in the label column"),
    ],
)
def test_ambiguous_first_line_asks_for_header_or_no_header(first: str, needle: str,
                                                          tmp_path: Path) -> None:
    path = _csv(tmp_path, first + ROWS)
    with pytest.raises(ValueError, match="pass --header if it is a header, --no-header if it "
                                         "is data") as info:
        load_file(path)
    assert needle in str(info.value) and str(path) in str(info.value)


def test_header_options_settle_the_ambiguous_cases(tmp_path: Path) -> None:
    numeric = _csv(tmp_path, "1,2,3\n" + ROWS)
    X, y, _, _ = load_file(numeric, header=True)
    assert len(X) == 3 and y.tolist() == [0, 1, 0]  # the numeric header is not a data row
    X, y, _, _ = load_file(numeric, header=False)
    assert len(X) == 4 and X[0].tolist() == [1, 2] and y[0] == 3
    # --no-header on a line with a missing value: the missing value is the error.
    with pytest.raises(ValueError, match=r"d2\.csv, line 1, column 2: missing value ''"):
        load_file(_csv(tmp_path, "1.0,,1\n" + ROWS, "d2.csv"), header=False)
    # --no-header on a text line: that line is data, and cannot be converted.
    with pytest.raises(ValueError, match=r"d3\.csv, line 1, column 1: could not convert 'x0'"):
        load_file(_csv(tmp_path, "x0,x1,y\n" + ROWS, "d3.csv"), header=False)
    # --header takes the first line even when it starts with '#' (numpy.savetxt's header).
    assert len(load_file(_csv(tmp_path, "# x0,x1,y\n" + ROWS, "d4.csv"), header=True)[0]) == 3


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("x,y,l\n1,2,0\n3,,1\n", "line 3, column 2: missing value ''"),
        ("x,y,l\n1,2,0\n3,NA,1\n", "line 3, column 2: missing value 'NA'"),
        ("x,y,l\n1,2,0\n\n3,4,N/A\n", "line 4, column 3: missing value 'N/A'"),  # blank line 3
        ("x,y,l\n1,2,0\n3,4\n", "line 3: 2 cells where line 2 has 3"),
        ("x,y,l\n", "has no data rows after its header (line 1); give a file with rows"),
        ("", "is empty"),
        ("x,y\n1,2\n", None),  # one feature column: fine
        ("1\n2\n", "needs at least one feature column and the label column"),
    ],
)
def test_missing_values_and_bad_rows_name_file_line_and_column(text: str, needle: str | None,
                                                              tmp_path: Path) -> None:
    path = _csv(tmp_path, text)
    if needle is None:
        assert load_file(path)[0].shape == (1, 1)
        return
    with pytest.raises(ValueError) as info:
        load_file(path)
    assert needle in str(info.value) and str(path) in str(info.value)


def test_text_labels_and_byte_order_mark(tmp_path: Path) -> None:
    path = tmp_path / "bom.csv"
    path.write_bytes("\ufeffwidth,kind\n1.5,cat\n2.5,dog\n".encode())
    data = read_data_file(path)
    assert data.header and data.X.ravel().tolist() == [1.5, 2.5]
    assert data.y.tolist() == ["cat", "dog"]
    latin = tmp_path / "latin.csv"
    latin.write_bytes(b"caf\xe9,1\n")
    with pytest.raises(ValueError, match=r"latin\.csv is not UTF-8 text"):
        load_file(latin)


def test_fit_counts_every_row_and_states_the_header(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture) -> None:
    # The reported case: 41 rows whose first has an empty cell were fitted as 40.
    X, y = _blobs(20)
    X = np.vstack([X, [[0.1, 0.2]]])
    y = np.append(y, 1)
    lines = [f"{a},{b},{c}" for (a, b), c in zip(X, y, strict=True)]
    path = _csv(tmp_path, "\n".join(["0.3,,1", *lines[1:]]) + "\n")
    _assert_clean_failure(*_run(capsys, "fit", "--data", path, *QUICK), "line 1",
                          "pass --header if it is a header, --no-header if it is data")
    _assert_clean_failure(*_run(capsys, "fit", "--data", path, "--no-header", *QUICK),
                          "line 1, column 2: missing value ''")
    path.write_text("\n".join(lines) + "\n")
    code, out, _ = _run(capsys, "fit", "--data", path, *QUICK, "--json")
    r = json.loads(out)
    assert code == 0 and r["n_train"] == 41 and r["csv_header"] is False
    assert r["reading"][str(path)][0] == "no header (detected: line 1 is all numbers)"
    code, out, _ = _run(capsys, "fit", "--data", path, *QUICK)
    assert f"read:      {path}: no header (detected: line 1 is all numbers)" in out


# --------------------------------------------------------------------------- 2. rows: LIBSVM


def _libsvm(path: Path, rows: list[str]) -> Path:
    path.write_text("\n".join(rows) + "\n")
    return path


def test_libsvm_indexing_is_decided_once_for_the_whole_file(tmp_path: Path) -> None:
    # Index 0 on one row only: every row is zero-based, not just that one.
    some = _libsvm(tmp_path / "some.libsvm", ["1 1:0.5 2:1", "-1 0:2 1:0.25", "1 2:3"])
    data = read_data_file(some)
    assert data.zero_based is True and data.uses_index_zero is True
    assert data.X.tolist() == [[0, 0.5, 1], [2, 0.25, 0], [0, 0, 3]]
    assert data.notes[0] == "LIBSVM indices: zero-based (detected: some row uses index 0)"
    none = _libsvm(tmp_path / "none.txt", ["1 1:0.5 2:1", "-1 1:0.25"])
    data = read_data_file(none)
    assert data.zero_based is False and data.X.tolist() == [[0.5, 1], [0.25, 0]]
    assert data.notes[0] == "LIBSVM indices: one-based (detected: no row uses index 0)"
    # Given: the option wins; one-based with an index 0 is an error naming the row.
    assert load_file(none, zero_based=True)[0].tolist() == [[0, 0.5, 1], [0, 0.25, 0]]
    with pytest.raises(ValueError, match=r"some\.libsvm uses feature index 0 \(data row 2\), "
                                         "which one-based indices do not have; pass "
                                         "--zero-based"):
        load_file(some, zero_based=False)
    # A model's feature count pads the zero columns LIBSVM leaves out.
    assert load_file(none, n_features=4)[0].shape == (2, 4)


def test_fit_decides_libsvm_indexing_over_data_and_test(tmp_path: Path,
                                                        capsys: pytest.CaptureFixture) -> None:
    X, y = _blobs(15, n_features=3, seed=4)
    y = 2 * y - 1
    X[:, 2] = 0.0
    X[20:, 0] = 0.0  # the test rows never name index 0 (zero features are left out)

    def rows(idx: range) -> list[str]:
        return [f"{y[i]} " + " ".join(f"{j}:{X[i, j]:.6f}" for j in range(3) if X[i, j] != 0)
                for i in idx]

    train = _libsvm(tmp_path / "train.libsvm", rows(range(20)))
    test = _libsvm(tmp_path / "test.libsvm", rows(range(20, 30)))
    assert read_data_file(test).zero_based is False  # alone it would read one-based
    code, out, _ = _run(capsys, "fit", "--data", train, "--test", test, *QUICK, "--json")
    r = json.loads(out)
    assert code == 0 and r["libsvm_indexing"] == "zero-based" and r["n_features"] == 2
    for path in (train, test):
        assert r["reading"][str(path)][0] == ("LIBSVM indices: zero-based (detected over --data "
                                              f"and --test: {train} uses index 0)")
    # The test rows are read into the right columns: the same error as a direct fit.
    direct = SparseSVC(n_expansion=2, max_iter=3, random_state=0).fit(X[:20, :2], y[:20])
    assert r["test_error"] == pytest.approx(float(np.mean(direct.predict(X[20:, :2]) != y[20:])))
    code, out, _ = _run(capsys, "fit", "--data", train, "--test", test, *QUICK)
    assert f"read:      {test}: LIBSVM indices: zero-based (detected over" in out
    # check-gradient states its reading too: a file of both classes without index 0.
    X[:, 0] = 0.0
    both = _libsvm(tmp_path / "both.libsvm", rows(range(0, 30, 3)))
    code, out, _ = _run(capsys, "check-gradient", "--formulation", "svm", "--data", both,
                        "--n-expansion", "2", "--json")
    r = json.loads(out)
    assert code == 0 and r["n_features"] == 1  # alone, it reads one-based: column 2 only
    assert r["reading"][0] == "LIBSVM indices: one-based (detected: no row uses index 0)"
    code, out, _ = _run(capsys, "check-gradient", "--formulation", "svm", "--data", both,
                        "--n-expansion", "2", "--zero-based")
    assert code == 0 and "d = 2" in out
    assert f"read {both}: LIBSVM indices: zero-based (given)" in out


# --------------------------------------------------------------------------- 2. predict's labels


# the model records the training CSV's column names; X is given here as a bare array
@pytest.mark.filterwarnings("ignore:X does not have valid feature names:UserWarning")
def test_predict_decides_labelled_or_not_and_says_so(blob_model: Path, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture) -> None:
    X, y = _blobs(6, seed=9)
    labelled = _write_csv(tmp_path / "labelled.csv", X, y)
    unlabelled = _write_csv(tmp_path / "features.csv", X, None)
    expected = load_model(blob_model).predict(X)

    code, out, _ = _run(capsys, "predict", "--model", blob_model, "--data", labelled, "--json")
    r = json.loads(out)
    assert code == 0 and r["labelled"] is True and r["n_samples"] == 12
    assert r["predictions"] == expected.tolist()
    assert r["error"] == pytest.approx(float(np.mean(expected != y)))
    assert "labels: the last column (detected: 3 columns = the model's 2 features + 1)" in \
        r["reading"]

    code, out, err = _run(capsys, "predict", "--model", blob_model, "--data", unlabelled)
    assert code == 0 and out.split() == [str(int(v)) for v in expected]  # CSV labels are floats
    assert "labels: none (detected: 2 columns = the model's 2 features)" in err
    assert "error" not in err

    # The label is never used as a feature without saying so: --no-labels on a labelled
    # file is a feature-count error, --labels on features only likewise.
    _assert_clean_failure(*_run(capsys, "predict", "--model", blob_model, "--data", labelled,
                                "--no-labels"), "labelled.csv has 3 features",
                          "trained on 2", "labels: none, every column is a feature")
    _assert_clean_failure(*_run(capsys, "predict", "--model", blob_model, "--data", unlabelled,
                                "--labels"), "features.csv has 1 features", "trained on 2")
    # --no-labels on an .npz drops its labels: no error rate.
    np.savez(tmp_path / "d.npz", X=X, y=y)
    code, out, _ = _run(capsys, "predict", "--model", blob_model, "--data", tmp_path / "d.npz",
                        "--no-labels", "--json")
    assert code == 0 and json.loads(out)["error"] is None


def test_load_file_labels_by_feature_count(tmp_path: Path) -> None:
    path = _csv(tmp_path, "1,2,0\n3,4,1\n")
    X, y, _, _ = load_file(path, labels=None, n_features=2)
    assert X.shape == (2, 2) and y.tolist() == [0, 1]
    X, y, _, _ = load_file(path, labels=None, n_features=3)
    assert X.shape == (2, 3) and y is None
    with pytest.raises(ValueError, match=r"has 3 columns but the model has 5 features: give a "
                                         r"file with 5 columns \(features only\) or 6"):
        load_file(path, labels=None, n_features=5)
    with pytest.raises(ValueError, match="pass n_features"):
        load_file(path, labels=None)


# --------------------------------------------------------------------------- 3. one-class predict


# the model records the training CSV's column names; X is given here as a bare array
@pytest.mark.filterwarnings("ignore:X does not have valid feature names:UserWarning")
def test_predict_with_a_one_class_model(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    X, y = _blobs(15, seed=2)
    data = _write_csv(tmp_path / "d.csv", X, y)
    model = tmp_path / "oc.model"
    assert _run(capsys, "fit", "--formulation", "oneclass", "--data", data, "--inlier-label",
                "0", "--param", "nu=0.2", *QUICK, "--out", model)[0] == 0
    est = load_model(model)
    pred = est.predict(X)
    truth = np.where(y == 0, 1, -1)
    code, out, _ = _run(capsys, "predict", "--model", model, "--data", data, "--json")
    r = json.loads(out)
    assert code == 0 and r["inlier_label"] == 0
    assert (r["n_inliers"], r["n_outliers"]) == (int(np.sum(pred == 1)), int(np.sum(pred == -1)))
    assert r["error"] == pytest.approx(float(np.mean(pred != truth)))
    code, _, err = _run(capsys, "predict", "--model", model, "--data", data)
    assert code == 0 and f"inliers (+1), {int(np.sum(pred == -1))} outliers (-1), error" in err

    # A model file that does not say which label was the inlier class: counts, no error.
    from tests.test_model_file import _forge, _members

    members = _members(model.read_bytes())
    header = json.loads(members["header.json"])
    del header["metadata"]["inlier_label"]
    old = tmp_path / "old.model"
    old.write_bytes(_forge(members, header=header))
    code, out, err = _run(capsys, "predict", "--model", old, "--data", data, "--out",
                          tmp_path / "p.csv")
    assert code == 0 and "Traceback" not in err
    assert "no error rate: the model file does not say which label was the inlier class" in out
    assert (tmp_path / "p.csv").read_text().split()[1:] == [str(v) for v in pred]


# --------------------------------------------------------------------------- 3. .npz splits


def _npz(path: Path, **arrays: Any) -> Path:
    X, y = _blobs(5)
    np.savez(path, **{"X": X, "y": y, **arrays})
    return path


@pytest.mark.parametrize(
    ("arrays", "split", "needle"),
    [
        ({"train_idx": np.array([[0.0, 1, 2]]), "test_idx": np.array([[3, 4]])}, 1,
         "train_idx in {path} has dtype float64; split indices must be integers"),
        ({"train_idx": np.array([[0, 1, 10]]), "test_idx": np.array([[3, 4]])}, 1,
         "train_idx of split 1 in {path} holds row 10, outside 0..9"),
        ({"train_idx": np.array([[0, 1, -1]]), "test_idx": np.array([[3, 4]])}, 1,
         "holds row -1, outside 0..9"),
        ({"train_idx": np.array([[0, 1], [0, 1]]), "test_idx": np.array([[3, 4], [1, 5]])}, 2,
         "Split 2 in {path} has 1 rows in both train_idx and test_idx (e.g. row 1)"),
        ({"train_idx": np.array([[0, 1]])}, 1, "{path} has train_idx but no test_idx"),
        ({"train_idx": np.array([[0, 1], [2, 3]]), "test_idx": np.array([[4, 5]])}, 1,
         "2 rows of train_idx but 1 of test_idx"),
        ({"train_idx": np.array([[0, 1]]), "test_idx": np.array([[4, 5]])}, 3,
         "split must be between 1 and 1"),
        ({"X": np.zeros(10)}, 1, "X in {path} must be a numeric array of shape"),
        ({"y": np.zeros(4)}, 1, "y in {path} must have shape (10,)"),
        ({"X": np.array([[object()]] * 10)}, 1, "holds an object array"),
    ],
)
def test_bad_npz_splits_are_errors_naming_file_and_split(arrays: dict[str, Any], split: int,
                                                         needle: str, tmp_path: Path,
                                                         no_fit: None,
                                                         capsys: pytest.CaptureFixture) -> None:
    path = tmp_path / "bench.npz"
    X, y = _blobs(5)
    if "X" in arrays and arrays["X"].dtype == object:
        np.savez(path, **{"y": y, **arrays})  # savez pickles the object array
    else:
        np.savez(path, **{"X": X, "y": y, **arrays})
    needle = needle.format(path=path)
    with pytest.raises(ValueError) as info:
        load_file(path, split=split)
    assert needle in str(info.value)
    _assert_clean_failure(*_run(capsys, "fit", "--data", path, "--split", str(split)), needle)


def test_good_npz_split_still_reads(tmp_path: Path) -> None:
    path = _npz(tmp_path / "ok.npz", train_idx=np.array([0, 2, 4], dtype=np.uint8),
                test_idx=np.array([1, 3]))  # one split as 1-D arrays, unsigned indices
    X, y, X_test, y_test = load_file(path)
    full_X, full_y = _blobs(5)
    assert X.tolist() == full_X[[0, 2, 4]].tolist() and X_test.tolist() == full_X[[1, 3]].tolist()
    assert y.tolist() == full_y[[0, 2, 4]].tolist() and y_test.tolist() == full_y[[1, 3]].tolist()


# --------------------------------------------------------------------------- 3. broken pipe


def test_closed_stdout_ends_quietly(blob_model: Path, tmp_path: Path) -> None:
    X, _ = _blobs(200)
    data = _write_csv(tmp_path / "many.csv", X, None)
    for argv in (["predict", "--model", str(blob_model), "--data", str(data)],
                 ["plugins"]):
        # The reader is gone before sparsify writes (it needs a second to start): the
        # first write meets a closed pipe, as in `sparsify predict ... | head -0`.
        proc = subprocess.Popen([sys.executable, "-m", "sparsify", *argv], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)
        assert proc.stdout is not None
        proc.stdout.close()
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 141, err.decode()
        assert b"Traceback" not in err and b"BrokenPipe" not in err
        assert b"Exception ignored" not in err


# --------------------------------------------------------------------------- 4. a light start


HEAVY = ("cvxpy", "numba", "matplotlib", "sklearn", "tqdm")


def _imported(code: str) -> set[str]:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=120).stdout
    return {name.split(".")[0] for name in json.loads(out.splitlines()[-1])}


def test_import_sparsify_imports_nothing_heavy() -> None:
    loaded = _imported("import json, sys, sparsify; print(json.dumps(sorted(sys.modules)))")
    assert not loaded & set(HEAVY), sorted(loaded & set(HEAVY))


@pytest.mark.parametrize("option", ["--version", "--help"])
def test_version_and_help_import_nothing_heavy(option: str) -> None:
    # -X importtime lists every module the interpreter imports, on stderr.
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "sparsify", option],
                          capture_output=True, text=True, check=False, timeout=120)
    assert proc.returncode == 0, proc.stderr
    modules = {line.split("|")[-1].strip().split(".")[0]
               for line in proc.stderr.splitlines() if line.startswith("import time:")}
    assert "sparsify" in modules and "argparse" in modules  # the listing works
    assert not modules & set(HEAVY), sorted(modules & set(HEAVY))
    if option == "--version":
        assert proc.stdout.strip() == f"sparsify {sparsify.__version__}"


def test_lazy_public_names() -> None:
    from sparsify.core.errors import SolverError

    assert set(sparsify.__all__) <= set(dir(sparsify))
    for name in sparsify.__all__:
        assert getattr(sparsify, name) is not None, name
    assert sparsify.SolverError is SolverError
    assert importlib.import_module("sparsify.core.solvers").SolverError is SolverError
    assert issubclass(SolverError, RuntimeError)
    with pytest.raises(AttributeError, match="has no attribute 'nope'"):
        sparsify.nope  # noqa: B018


# --------------------------------------------------------------------------- 5. progress


class _Bar:
    """What _ProgressBar uses of tqdm."""

    def __init__(self, total: int) -> None:
        self.total, self.n, self.postfix = total, 0, ""

    def update(self, k: int) -> None:
        self.n += k

    def set_postfix_str(self, text: str, refresh: bool = True) -> None:
        self.postfix = text


def _info(iteration: int, **extra: Any) -> Any:
    return SimpleNamespace(iteration=iteration, value=1.5, grad_norm=0.1, Z=None, seconds=0.0,
                           **extra)


def test_progress_bar_jumps_to_the_end_of_a_problem_that_stops_early() -> None:
    bar = _Bar(total=3 * 10)
    progress = _ProgressBar(bar, max_iter=10)
    seen = []
    for problem in ([1, 2, 3], list(range(1, 11)), [1]):  # stops at 3, runs out, stops at 1
        for it in problem:
            assert progress(_info(it)) is None  # never asks the fit to stop
            seen.append(bar.n)
    assert seen == [1, 2, 3, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21]
    progress.finish()
    assert bar.n == bar.total == 30
    assert bar.postfix == "W = 1.5"


def test_progress_bar_follows_a_problem_field_and_grows_when_needed() -> None:
    bar = _Bar(total=10)  # counted one problem; the estimator solves two
    progress = _ProgressBar(bar, max_iter=10)
    progress(_info(1, problem="a"))
    progress(_info(2, problem="a"))
    progress(_info(3, problem="b"))  # a new problem, even though the count went on
    assert bar.n == 13 and bar.total == 13 and bar.postfix.startswith("problem b, ")
    progress.finish()
    assert bar.n == bar.total


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_fit_shows_a_progress_bar_on_a_terminal_only(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture) -> None:
    monkeypatch.delenv("TQDM_DISABLE", raising=False)
    X, y = _blobs(10, n_classes=3, seed=1)
    data = _write_csv(tmp_path / "three.csv", X, y)
    model = tmp_path / "m.model"
    argv = ["fit", "--data", str(data), "--n-expansion", "2", "--max-iter", "4"]
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    assert main([*argv, "--out", str(model)]) == 0
    out = capsys.readouterr().out
    bar = terminal.getvalue()
    assert "0/12 [" in bar and "iter" in bar  # 3 one-vs-rest problems × 4 iterations
    assert "\r" not in out and "Nz = 6" in out  # stdout holds the report only
    assert load_model(model).estimator_params_["callback"] is None  # the bar is not saved

    for extra in (["--json"], ["-v"]):
        terminal = _Terminal()
        monkeypatch.setattr(sys, "stderr", terminal)
        assert main([*argv, *extra]) == 0
        out = capsys.readouterr().out
        assert "iter/s" not in terminal.getvalue() and "|" not in terminal.getvalue()
        if extra == ["-v"]:
            assert "[sparsify] class 0.0 vs rest: 4 iterations" in out  # -v: a line a problem

    monkeypatch.setattr(sys, "stderr", io.StringIO())  # not a terminal
    assert main(argv) == 0
    assert sys.stderr.getvalue() == ""


# --------------------------------------------------------------------------- 7. issue 43


@pytest.mark.parametrize("kind", ["fifo", "device", "read_only", "directory"])
@pytest.mark.parametrize("command", ["fit", "predict"])
def test_out_refuses_a_target_that_is_not_a_writable_regular_file(
        kind: str, command: str, blob_model: Path, tmp_path: Path, no_fit: None,
        capsys: pytest.CaptureFixture) -> None:
    """A rename over a FIFO, a device node or a read-only file would replace it."""
    import stat

    target = tmp_path / "target"
    if kind == "fifo":
        os.mkfifo(target)
    elif kind == "device":
        if os.geteuid() != 0:
            pytest.skip("making a device node needs root")
        os.mknod(target, stat.S_IFCHR | 0o600, os.makedev(1, 3))  # /dev/null's numbers
    elif kind == "read_only":
        target.write_text("keep me")
        target.chmod(0o444)
    else:
        target.mkdir()
    before = os.lstat(target)
    X, y = _blobs(5)
    data = _write_csv(tmp_path / "d.csv", X, y)
    args = (["fit", "--data", data] if command == "fit"
            else ["predict", "--model", blob_model, "--data", data])
    needle = {"fifo": "is a FIFO (named pipe), not a regular file",
              "device": "is a device node, not a regular file", "read_only": "is read-only",
              "directory": "is a directory"}[kind]
    _assert_clean_failure(*_run(capsys, *args, "--out", target), f"--out {target} {needle}")
    after = os.lstat(target)
    assert (after.st_ino, after.st_mode) == (before.st_ino, before.st_mode)  # untouched
    assert _files(tmp_path) == {"target", "d.csv"}


def test_out_through_a_symbolic_link_writes_its_target(blob_model: Path, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture) -> None:
    real = tmp_path / "real.csv"
    real.write_text("old\n")
    link = tmp_path / "link.csv"
    link.symlink_to(real)
    X, y = _blobs(5)
    data = _write_csv(tmp_path / "d.csv", X, y)
    code, _, err = _run(capsys, "predict", "--model", blob_model, "--data", data, "--out", link)
    assert code == 0, err
    assert link.is_symlink() and real.read_text().startswith("prediction\n")


def test_labels_are_csv_both_ways(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """Quoted labels with commas and quotes are read (RFC 4180), and predictions are written
    quoted, with a formula-like label defused (OWASP: a leading ')."""
    import csv

    X, y = _blobs(15, seed=3)
    names = np.array(['a,b', '=HYPERLINK("x")'])[y]
    train = tmp_path / "train.csv"
    with train.open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["x0", "x1", "label"])
        writer.writerows([[a, b, n] for (a, b), n in zip(X, names, strict=True)])
    model = tmp_path / "m.model"
    code, _, err = _run(capsys, "fit", "--data", train, *QUICK, "--out", model, "--json")
    assert code == 0, err
    code, out, err = _run(capsys, "predict", "--model", model, "--data", train, "--out",
                          tmp_path / "p.csv")
    assert code == 0 and "30 predictions, error 0.0000" in out, err
    with (tmp_path / "p.csv").open(newline="") as fh:
        rows = list(csv.reader(fh))
    assert rows[0] == ["prediction"] and len(rows) == 31
    assert {r[0] for r in rows[1:]} == {"a,b", "'=HYPERLINK(\"x\")"}


def test_predict_matches_columns_by_name(tmp_path: Path,
                                         capsys: pytest.CaptureFixture) -> None:
    X, y = _blobs(15, seed=5)
    X[:, 1] *= 3  # the columns differ: swapping them changes the predictions
    train = _write_csv(tmp_path / "train.csv", X, y)
    model = tmp_path / "m.model"
    assert _run(capsys, "fit", "--data", train, *QUICK, "--out", model)[0] == 0
    swapped = tmp_path / "swapped.csv"
    np.savetxt(swapped, np.column_stack([y, X[:, 1], X[:, 0]]), delimiter=",",
               header="label,x1,x0", comments="")
    code, out, err = _run(capsys, "predict", "--model", model, "--data", swapped, "--json")
    assert code == 0, err
    direct = json.loads(_run(capsys, "predict", "--model", model, "--data", train,
                             "--json")[1])
    r = json.loads(out)
    assert r["predictions"] == direct["predictions"] and r["error"] == direct["error"]
    assert "columns matched to the model's by name (x0, x1)" in r["reading"]
    renamed = tmp_path / "renamed.csv"
    renamed.write_text(swapped.read_text().replace("label,x1,x0", "label,x1,width"))
    _assert_clean_failure(*_run(capsys, "predict", "--model", model, "--data", renamed),
                          "has no column named 'x0'", "pass --no-header")


def test_fit_warns_when_the_test_labels_are_coded_otherwise(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture) -> None:
    X, y = _blobs(15, seed=1)
    train = _write_csv(tmp_path / "train.csv", X, y)  # 0/1
    test = _write_csv(tmp_path / "test.csv", X, 2 * y - 1)  # -1/+1
    code, _, err = _run(capsys, "fit", "--data", train, "--test", test, *QUICK)
    assert code == 0
    assert ("sparsify: warning: The test data " + str(test) + " has labels the training data "
            "never had ([-1]; the training labels are [0, 1])") in err


def test_a_stdout_closed_from_the_start_is_one_error_line(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "sparsify", "plugins"], capture_output=False,
                          stderr=subprocess.PIPE, text=True, timeout=120,
                          preexec_fn=lambda: os.close(1))
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [
        "sparsify: error: standard output is closed (as by '>&-'), so the report has nowhere "
        "to go; redirect it to a file or to /dev/null instead."]


def test_numbers_with_underscores_are_not_numbers(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture) -> None:
    data = tmp_path / "u.csv"
    data.write_text("1.0,2.0,0\n1_000,3.0,1\n2.0,1.0,0\n3.0,3.0,1\n")
    _assert_clean_failure(*_run(capsys, "fit", "--data", data),
                          "line 2, column 1: could not convert '1_000' to a number")
    code, _, err = _run(capsys, "fit", "--C", "1_000")
    assert code == 2 and "argument --C: must be a number; got '1_000'" in err


def test_a_plugin_whose_declare_raises_is_one_error_line(capsys: pytest.CaptureFixture) -> None:
    import cvxpy as cp

    from sparsify import Formulation, hookimpl, register_plugin
    from sparsify.plugins.registry import get_registry

    class Exploding(Formulation):
        name, task = "issue43_exploding", "classifier"

        def declare(self, out):  # type: ignore[no-untyped-def]
            raise RuntimeError("the plugin's own bug " + str(cp.__name__))

    if Exploding.name not in get_registry().names("formulation"):
        register_plugin(SimpleNamespace(
            register_formulations=hookimpl(lambda register: register(Exploding))),
            "issue43_exploding_plugin")
    code, _, err = _run(capsys, "fit", "--formulation", "issue43_exploding", "--solver",
                        "clarabel", *QUICK)
    assert code == 2 and "Traceback" not in err
    line = err.strip().splitlines()[-1]
    assert line.startswith("sparsify: error: the formulation 'issue43_exploding' "
                           "(tests.test_cli_files.")
    assert "raised in declare() at " in line and "RuntimeError: the plugin's own bug cvxpy" in line


def test_a_sparsify_fault_keeps_its_traceback(monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture) -> None:
    import sparsify.cli.fit

    def bug(args: Any) -> None:
        raise RuntimeError("sparsify's own bug")

    monkeypatch.setattr(sparsify.cli.fit, "_load_fit_data", bug)
    with pytest.raises(RuntimeError, match="sparsify's own bug"):
        main(["fit"])


def test_a_c_or_targets_too_large_say_what_is_too_large(tmp_path: Path,
                                                         capsys: pytest.CaptureFixture) -> None:
    _assert_clean_failure(*_run(capsys, "fit", "--C", "1e300"),
                          "C=1e+300 is too large: above 1e+12")
    _assert_clean_failure(*_run(capsys, "fit", "--param", "C=1e20"),
                          "--param C=1e+20: C has an option of its own; give it as --C")
    X, _ = _blobs(10)
    y = 1e300 * np.sin(X[:, 0])
    data = _write_csv(tmp_path / "big.csv", X, y)
    _assert_clean_failure(*_run(capsys, "fit", "--formulation", "kernel_ridge", "--data", data),
                          f"The targets of {data} reach", "above 1e+100")


def test_a_csv_over_the_memory_budget_is_refused_before_it_is_read_whole(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import sparsify.core.memory

    rows = 3 * 4096
    data = tmp_path / "big.csv"
    data.write_text("".join(f"{i},{i},0\n" for i in range(rows)))
    monkeypatch.setattr(sparsify.core.memory, "available_memory", lambda: 4 * 4096 * 16 * 2)
    with pytest.raises(ValueError, match=rf"{data} is too large to read in the memory "
                                         r"available: its first 4096 rows already take"):
        load_file(data)


def test_predict_imports_neither_scikit_learn_nor_cvxpy(blob_model: Path,
                                                        tmp_path: Path) -> None:
    X, y = _blobs(25)
    data = _write_csv(tmp_path / "d.csv", X, y)
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "sparsify", "predict",
                           "--model", str(blob_model), "--data", str(data)],
                          capture_output=True, text=True, timeout=120, check=True)
    modules = {line.split("|")[-1].strip().split(".")[0] for line in proc.stderr.splitlines()
               if line.startswith("import time:")}
    assert "numpy" in modules and len(proc.stdout.split()) == 50  # the listing works
    assert not modules & {"sklearn", "cvxpy", "scipy", "matplotlib"}


@pytest.mark.slow
def test_fit_prints_its_first_line_before_the_heavy_imports() -> None:
    # one stream for both, so their order is kept: the first line, then scikit-learn's import
    proc = subprocess.run([sys.executable, "-u", "-X", "importtime", "-m", "sparsify", "fit",
                           *QUICK], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=300, check=True)
    lines = proc.stdout.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("sparsify "))
    heavy = next(i for i, line in enumerate(lines)
                 if line.startswith("import time:") and "| sklearn" in line)
    assert first < heavy, lines[first]


def test_a_binary_problem_has_no_problem_label_on_the_bar() -> None:
    """The fit driver names a binary problem ''; the bar then shows 'W = …', not 'problem , '."""
    bar = _Bar(total=10)
    _ProgressBar(bar, max_iter=10)(_info(1, problem=""))
    assert bar.postfix == "W = 1.5"


def test_the_plot_legend_names_integer_labels_as_integers() -> None:
    pytest.importorskip("matplotlib")
    from sparsify.cli.plotting import plot_decision_boundary

    X, y = _blobs(10)
    y = y.astype(float)  # as a CSV file gives them: 0.0 and 1.0
    clf = SparseSVC(n_expansion=2, max_iter=2, random_state=0).fit(X, y)
    fig = plot_decision_boundary(clf, X, y, resolution=20)
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert labels[:2] == ["class 0", "class 1"], labels


def test_no_hint_installs_a_package_named_sparsify_from_the_index() -> None:
    """'pip install "sparsify[plot]"' installs whatever the index holds under that name."""
    from tests.conftest import REPO

    for path in [*REPO.glob("sparsify/**/*.py"), *REPO.glob("docs/*.md"), REPO / "README.md"]:
        assert 'sparsify[plot]' not in path.read_text(), path
