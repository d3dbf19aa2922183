"""Readers of the data files the command line takes: ``.npz``, ``.csv`` and LIBSVM text.

Every decision a reader makes about a file (is line 1 a header? are LIBSVM
indices zero- or one-based? is the last column a label?) is taken once for the
whole file, by an explicit rule or by the caller's choice, and is reported in
`DataFile.notes`; a file the rules cannot read unambiguously is a ValueError
that names the file (and the line and column where there is one) and says which
option settles it. Nothing is dropped or guessed silently.
"""

from __future__ import annotations

import io
import re
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = ["MISSING_TOKENS", "DataFile", "load_file", "read_data_file"]

Array = NDArray[np.float64]

#: Cell texts (compared in lower case, quotes stripped) that mean "missing value" in a CSV file.
MISSING_TOKENS = frozenset({"", "na", "n/a", "nan", "-nan", "+nan", "null", "none", "?", "#n/a",
                            "."})

# Refuse to densify a LIBSVM matrix larger than this (bytes): LIBSVM text can name
# millions of features, and a dense float64 copy of N × d would exhaust memory.
_DENSE_LIMIT = 4 * 2**30

_INTEGER = re.compile(r"[0-9]+")


@dataclass(frozen=True)
class DataFile:
    """A data file as read, with every reading decision made explicit.

    Attributes
    ----------
    X : ndarray of shape (n_samples, n_features)
        The training part (every row for a file without splits).
    y : ndarray of shape (n_samples,) or None
        Its labels; None when the file was read as unlabelled.
    X_test, y_test : ndarray or None
        The test part of an ``.npz`` with splits; None otherwise.
    path : Path
        The file.
    format : {"npz", "csv", "libsvm"}
        How it was read (by suffix).
    header : bool or None
        CSV: whether the first line was a header; None for other formats.
    zero_based : bool or None
        LIBSVM: whether feature indices were read as zero-based; None otherwise.
    uses_index_zero : bool or None
        LIBSVM: whether some row names feature index 0.
    labelled : bool
        Whether ``y`` holds labels from the file.
    notes : tuple of str
        One sentence per decision, and how it was taken ("given" or "detected").
    """

    X: Array
    y: NDArray[Any] | None
    X_test: Array | None
    y_test: NDArray[Any] | None
    path: Path
    format: str
    header: bool | None = None
    zero_based: bool | None = None
    uses_index_zero: bool | None = None
    labelled: bool = True
    notes: tuple[str, ...] = field(default=())

    def as_tuple(self) -> tuple[Array, NDArray[Any] | None, Array | None, NDArray[Any] | None]:
        """``(X, y, X_test, y_test)``, as `load_file` returns them."""
        return self.X, self.y, self.X_test, self.y_test


def load_file(
    path: str | Path,
    split: int = 1,
    *,
    header: bool | None = None,
    zero_based: bool | None = None,
    labels: bool | None = True,
    n_features: int | None = None,
) -> tuple[Array, NDArray[Any] | None, Array | None, NDArray[Any] | None]:
    """Read a data file: ``(X_train, y_train, X_test, y_test)``; the test part may be None.

    The same as `read_data_file` without the record of how the file was read.

    Parameters
    ----------
    path : str or Path
        ``.npz`` in the benchmark format (``X``, ``y`` and optional
        ``train_idx``/``test_idx`` of shape (n_splits, n)), ``.csv`` (numeric
        features, label in the last column, an optional header line), or LIBSVM
        text (any other suffix, e.g. ``.libsvm``, ``.txt``, ``.svm``).
    split : int, default=1
        Which split of an ``.npz`` with splits, counted from 1.
    header : bool or None, default=None
        CSV only: whether the first line is a header; None detects it (see
        `read_data_file`).
    zero_based : bool or None, default=None
        LIBSVM only: whether feature indices start at 0; None detects it over the
        whole file (zero-based if and only if some row uses index 0).
    labels : bool or None, default=True
        Whether the file has labels (the last CSV column); False reads every
        column as a feature and returns ``y = None``; None decides a CSV file by
        ``n_features``.
    n_features : int, optional
        The number of features expected (a model's): a LIBSVM matrix with fewer
        columns is padded with zero columns, and ``labels=None`` reads a CSV
        with ``n_features + 1`` columns as labelled, ``n_features`` as
        unlabelled.

    Returns
    -------
    X_train, y_train, X_test, y_test : ndarray or None

    Raises
    ------
    FileNotFoundError
        If there is no file at ``path``.
    ValueError
        If the file cannot be read unambiguously; the message names the file.

    Examples
    --------
    >>> import numpy as np, tempfile, os
    >>> d = tempfile.mkdtemp(); p = os.path.join(d, "toy.csv")
    >>> np.savetxt(p, [[0.0, 1.0, -1], [1.0, 0.0, 1]], delimiter=",")
    >>> X, y, Xt, yt = load_file(p)
    >>> X.shape, y.tolist(), Xt is None
    ((2, 2), [-1.0, 1.0], True)
    >>> load_file(p, labels=False)[0].shape  # every column a feature, no labels
    (2, 3)
    """
    return read_data_file(path, split, header=header, zero_based=zero_based, labels=labels,
                          n_features=n_features).as_tuple()


def read_data_file(
    path: str | Path,
    split: int = 1,
    *,
    header: bool | None = None,
    zero_based: bool | None = None,
    labels: bool | None = True,
    n_features: int | None = None,
) -> DataFile:
    """Read a data file, and say how it was read.

    Parameters are those of `load_file`. The rules for what they leave open:

    - **CSV header** (``header=None``): line 1 (the first line that is not
      blank nor a ``#`` comment) is a header when one of its feature cells is
      text, i.e. neither a number nor a missing-value mark; it is data when
      all its cells are numbers. A line 1 whose only non-numbers are empty or
      missing-value cells (``NA``, ``nan``, ``?`` … see `MISSING_TOKENS`), or
      whose only text is in the label column while the other rows' labels are
      numbers, or that reads like column numbers (``0,1,2`` or ``1,2,3`` with a
      last value found in no other row's last column), is ambiguous: a
      ValueError asks for ``header=True`` or ``False``. With ``header=True``
      the first non-blank line is the header even if it starts with ``#``.
    - **Missing values**: an empty or missing-value cell anywhere in the data is
      a ValueError naming the file, line and column; nothing is dropped.
    - **LIBSVM indices** (``zero_based=None``): zero-based if and only if some
      row of the file uses index 0, decided once for the whole file.
    - **CSV labels** (``labels=None``): labelled if and only if the file has
      ``n_features + 1`` columns, unlabelled if it has ``n_features``; any other
      count is a ValueError naming both counts.

    Returns
    -------
    DataFile
        The arrays, and ``header``, ``zero_based``, ``labelled`` and ``notes``
        saying how they were read.

    Examples
    --------
    >>> import tempfile, os
    >>> d = tempfile.mkdtemp(); p = os.path.join(d, "toy.csv")
    >>> with open(p, "w") as fh:
    ...     _ = fh.write("width,height,label\\n1.5,2.0,0\\n0.5,1.0,1\\n")
    >>> data = read_data_file(p)
    >>> data.X.tolist(), data.y.tolist(), data.header
    ([[1.5, 2.0], [0.5, 1.0]], [0.0, 1.0], True)
    >>> data.notes[0]
    "line 1 is a header (detected: 'width' is not a number)"
    >>> p2 = os.path.join(d, "toy.libsvm")
    >>> with open(p2, "w") as fh:
    ...     _ = fh.write("1 1:0.5 3:2\\n-1 2:1\\n")
    >>> data = read_data_file(p2)
    >>> data.X.tolist(), data.zero_based
    ([[0.5, 0.0, 2.0], [0.0, 1.0, 0.0]], False)
    """
    path = Path(path)
    if not path.is_file():
        if path.is_dir():
            raise ValueError(f"{path} is a directory; give a data file.")
        raise FileNotFoundError(f"No data file at {str(path)!r}; check the path.")
    if labels is None and n_features is None:
        raise ValueError("labels=None decides by the model's number of features: pass "
                         "n_features, or labels=True or False.")
    suffix = path.suffix.lower()
    if suffix == ".npz":
        return _read_npz(path, split, labels)
    if suffix == ".csv":
        return _read_csv(path, header, labels, n_features)
    return _read_libsvm(path, zero_based, labels, n_features)


# --------------------------------------------------------------------------- .npz


def _read_npz(path: Path, split: int, labels: bool | None) -> DataFile:
    # numpy calls a non-zip file "pickled data", which misleads.
    if not zipfile.is_zipfile(path):
        raise ValueError(f"{path} is not a valid .npz file (not a zip archive).")
    try:
        with np.load(path, allow_pickle=False) as z:
            names = set(z.files)
            if not {"X", "y"} <= names:
                raise ValueError(f"{path} lacks the arrays 'X' and 'y' of the benchmark format "
                                 f"(it has {sorted(names)}).")
            X, y = z["X"], z["y"]
            idx = {name: z[name] for name in ("train_idx", "test_idx") if name in names}
    except ValueError as exc:
        if "allow_pickle" in str(exc):  # numpy's wording for an object array
            raise ValueError(f"{path} holds an object array (pickled Python objects); "
                             "sparsify reads only numeric arrays from an .npz file.") from exc
        raise
    except (OSError, zipfile.BadZipFile, EOFError, KeyError) as exc:
        raise ValueError(f"Could not read {path} as .npz: {exc}.") from exc
    if X.ndim != 2 or X.dtype.kind not in "biuf":
        raise ValueError(f"X in {path} must be a numeric array of shape (n_samples, "
                         f"n_features); it has shape {X.shape} and dtype {X.dtype}.")
    if y.ndim != 1 or len(y) != len(X):
        raise ValueError(f"y in {path} must have shape ({len(X)},), one label per row of X; it "
                         f"has shape {y.shape}.")
    X = X.astype(float)
    keep = labels is not False
    note = "labels: the array y" if keep else "labels: none (y is ignored)"
    if not idx:
        return DataFile(X, y if keep else None, None, None, path, "npz", labelled=keep,
                        notes=(note,))
    tr, te = _split_indices(path, idx, split, len(X))
    return DataFile(X[tr], y[tr] if keep else None, X[te], y[te] if keep else None, path, "npz",
                    labelled=keep, notes=(f"split {split}: {len(tr)} training and {len(te)} "
                                          "test rows", note))


def _split_indices(path: Path, idx: dict[str, NDArray[Any]], split: int,
                   n_rows: int) -> tuple[NDArray[np.intp], NDArray[np.intp]]:
    """Row indices of one split, checked: integers, in range, train and test disjoint."""
    if len(idx) == 1:
        (have,) = idx
        other = "test_idx" if have == "train_idx" else "train_idx"
        raise ValueError(f"{path} has {have} but no {other}; a split needs both.")
    arrays = {}
    for name, a in idx.items():
        if a.dtype.kind not in "iu":
            raise ValueError(f"{name} in {path} has dtype {a.dtype}; split indices must be "
                             "integers (row numbers of X, counted from 0).")
        if a.ndim == 1:  # one split
            a = a[np.newaxis, :]
        if a.ndim != 2:
            raise ValueError(f"{name} in {path} must have shape (n_splits, n); it has shape "
                             f"{a.shape}.")
        arrays[name] = a
    n_splits = arrays["train_idx"].shape[0]
    if arrays["test_idx"].shape[0] != n_splits:
        raise ValueError(f"{path} has {n_splits} rows of train_idx but "
                         f"{arrays['test_idx'].shape[0]} of test_idx; each split needs one "
                         "of each.")
    if not 1 <= split <= n_splits:
        raise ValueError(f"split must be between 1 and {n_splits} for {path.name}; got {split}.")
    chosen = {name: a[split - 1].astype(np.intp) for name, a in arrays.items()}
    for name, a in chosen.items():
        bad = a[(a < 0) | (a >= n_rows)]
        if bad.size:
            raise ValueError(f"{name} of split {split} in {path} holds row {int(bad[0])}, "
                             f"outside 0..{n_rows - 1} (X has {n_rows} rows); "
                             f"{bad.size} indices are out of range.")
    common = np.intersect1d(chosen["train_idx"], chosen["test_idx"])
    if common.size:
        raise ValueError(f"Split {split} in {path} has {common.size} rows in both train_idx "
                         f"and test_idx (e.g. row {int(common[0])}); a test row must not be "
                         "trained on.")
    return chosen["train_idx"], chosen["test_idx"]


# --------------------------------------------------------------------------- .csv


def _unquote(cell: str) -> str:
    cell = cell.strip()
    if len(cell) >= 2 and cell[0] == cell[-1] == '"':
        cell = cell[1:-1].strip()
    return cell


def _kind(cell: str) -> str:
    """'missing', 'number' or 'text'."""
    if cell.lower() in MISSING_TOKENS:
        return "missing"
    try:
        float(cell)
    except ValueError:
        return "text"
    return "number"


def _read_csv(path: Path, header: bool | None, labels: bool | None,
              n_features: int | None) -> DataFile:
    try:
        text = path.read_bytes().decode("utf-8-sig")  # -sig: a BOM is not part of cell 1
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path} is not UTF-8 text ({exc.reason} at byte {exc.start}); "
                         "save it as UTF-8 CSV.") from exc
    lines = [(no, line.strip()) for no, line in enumerate(text.split("\n"), 1) if line.strip()]
    if not lines:
        raise ValueError(f"{path} is empty; a .csv needs rows of comma-separated numbers.")
    notes: list[str] = []
    head: tuple[int, list[str]] | None = None
    if header:
        no, line = lines[0]
        head = (no, [_unquote(c) for c in line.split(",")])
        lines = lines[1:]
    n_lines = len(lines)
    lines = [(no, line) for no, line in lines if not line.startswith("#")]  # comments
    if len(lines) < n_lines:
        notes.append(f"{n_lines - len(lines)} comment line(s) starting with '#' skipped")
    rows = [(no, [_unquote(c) for c in line.split(",")]) for no, line in lines]
    if not rows:
        raise ValueError(f"{path} has no data rows"
                         + (f" after its header (line {head[0]})." if head else "."))

    n_cols = len(head[1]) if head else len(rows[0][1])
    labelled = _decide_labels(path, n_cols, labels, n_features, notes)
    if labelled and n_cols < 2:
        raise ValueError(f"{path} has {n_cols} column; a labelled .csv needs at least one "
                         "feature column and the label column last (or read it without labels).")
    if header is None:
        header = _detect_header(path, rows, labelled, notes)
        if header:
            head, rows = rows[0], rows[1:]
            if not rows:
                raise ValueError(f"{path} has no data rows after its header (line {head[0]}).")
    elif header:
        notes.insert(0, f"line {head[0]} is a header (given)")  # type: ignore[index]
    else:
        notes.insert(0, "no header (given)")
    if head is not None and len(head[1]) != len(rows[0][1]):
        raise ValueError(f"{path}: the header (line {head[0]}) has {len(head[1])} cells but line "
                         f"{rows[0][0]} has {len(rows[0][1])}; every line needs the same number "
                         "of comma-separated cells.")
    X, y = _parse_rows(path, rows, labelled)
    return DataFile(X, y, None, None, path, "csv", header=bool(header), labelled=labelled,
                    notes=tuple(notes))


def _decide_labels(path: Path, n_cols: int, labels: bool | None, n_features: int | None,
                   notes: list[str]) -> bool:
    if labels is not None:
        notes.append("labels: the last column" if labels
                     else "labels: none, every column is a feature")
        return labels
    assert n_features is not None
    if n_cols == n_features + 1:
        notes.append(f"labels: the last column (detected: {n_cols} columns = the model's "
                     f"{n_features} features + 1)")
        return True
    if n_cols == n_features:
        notes.append(f"labels: none (detected: {n_cols} columns = the model's {n_features} "
                     "features)")
        return False
    raise ValueError(f"{path} has {n_cols} columns but the model has {n_features} features: "
                     f"give a file with {n_features} columns (features only) or "
                     f"{n_features + 1} (features, then the label).")


def _detect_header(path: Path, rows: list[tuple[int, list[str]]], labelled: bool,
                   notes: list[str]) -> bool:
    """Whether the first row is a header, by the rules of `read_data_file`."""
    no, cells = rows[0]
    kinds = [_kind(c) for c in cells]
    n_feat = len(cells) - 1 if labelled else len(cells)
    ask = "pass --header if it is a header, --no-header if it is data"
    for j in range(min(n_feat, len(cells))):
        if kinds[j] == "text":
            notes.insert(0, f"line {no} is a header (detected: {cells[j]!r} is not a number)")
            return True
    if "missing" in kinds:
        j = kinds.index("missing")
        raise ValueError(f"{path}: line {no} has no column names but an empty or missing "
                         f"value {cells[j]!r} in column {j + 1}, so it is neither clearly a "
                         f"header nor data; {ask} (and fill in the missing value).")
    if labelled and kinds[-1] == "text":
        rest = [r[1][-1] for r in rows[1:] if len(r[1]) == len(cells)]
        if any(_kind(c) == "number" for c in rest):
            raise ValueError(f"{path}: line {no} has text ({cells[-1]!r}) only in the label "
                             "column while other rows have numeric labels, so it is neither "
                             f"clearly a header nor data; {ask}.")
        notes.insert(0, f"no header (detected: line {no} has numeric features and a text "
                        "label, like the other rows)")
        return False
    # All numbers. Column numbers (pandas writes 0,1,2 for unnamed columns) are the one
    # numeric header that shows: consecutive integers from 0 or 1 whose last value is no
    # value of the last column elsewhere.
    if (len(cells) >= 2 and len(rows) > 1 and all(_INTEGER.fullmatch(c) for c in cells)
            and int(cells[0]) in (0, 1)
            and [int(c) for c in cells] == list(range(int(cells[0]), int(cells[0]) + len(cells)))):
        last = {_last_value(r[1]) for r in rows[1:]}
        if float(cells[-1]) not in last:
            raise ValueError(f"{path}: line {no} reads {','.join(cells)}, like column numbers, "
                             f"and its last value occurs in no other row; {ask}.")
    notes.insert(0, f"no header (detected: line {no} is all numbers)")
    return False


def _last_value(cells: list[str]) -> float | None:
    try:
        return float(cells[-1])
    except ValueError:
        return None


def _parse_rows(path: Path, rows: list[tuple[int, list[str]]],
                labelled: bool) -> tuple[Array, NDArray[Any] | None]:
    n_cols = len(rows[0][1])
    for no, cells in rows:
        if len(cells) != n_cols:
            raise ValueError(f"{path}, line {no}: {len(cells)} cells where line {rows[0][0]} has "
                             f"{n_cols}; every line needs the same number of comma-separated "
                             "cells.")
    # Fast path: numpy parses plain numbers; any cell it refuses, or a NaN it accepted,
    # sends us to the cell-by-cell scan, which names the line and column.
    try:
        data = np.loadtxt(io.StringIO("\n".join(",".join(c) for _, c in rows)), delimiter=",",
                          dtype=float, ndmin=2, comments=None)
    except ValueError:
        data = None
    if data is not None and data.shape == (len(rows), n_cols) and not np.isnan(data).any():
        return (data[:, :-1], data[:, -1]) if labelled else (data, None)
    n_feat = n_cols - 1 if labelled else n_cols
    X = np.empty((len(rows), n_feat))
    label_cells = []
    for i, (no, cells) in enumerate(rows):
        for j, cell in enumerate(cells):
            kind = _kind(cell)
            if kind == "missing":
                raise ValueError(
                    f"{path}, line {no}, column {j + 1}: missing value {cell!r}; sparsify takes "
                    "no missing values (no NaN, NA or empty cells): fill it in or remove the "
                    "row.")
            if j < n_feat:
                if kind == "text":
                    raise ValueError(f"{path}, line {no}, column {j + 1}: could not convert "
                                     f"{cell!r} to a number; feature columns must be numeric.")
                X[i, j] = float(cell)
        if labelled:
            label_cells.append(cells[-1])
    if not labelled:
        return X, None
    try:
        return X, np.array([float(c) for c in label_cells])
    except ValueError:
        return X, np.array(label_cells)  # class names


# --------------------------------------------------------------------------- LIBSVM


def _read_libsvm(path: Path, zero_based: bool | None, labels: bool | None,
                 n_features: int | None) -> DataFile:
    from sklearn.datasets import load_svmlight_file

    try:
        # Read the indices as written (column j = index j); the base is decided below.
        X_sparse, y = load_svmlight_file(str(path), zero_based=True)
    except ValueError as exc:
        raise ValueError(
            f"Could not read {path} as LIBSVM text ({exc}); use .npz, .csv or LIBSVM format."
        ) from exc
    X_sparse = X_sparse.tocsc()
    uses_zero = bool(X_sparse.indptr[1] > X_sparse.indptr[0])  # column 0 has an entry
    if zero_based is None:
        zero_based = uses_zero
        how = ("detected: some row uses index 0" if uses_zero
               else "detected: no row uses index 0")
    else:
        how = "given"
        if not zero_based and uses_zero:
            row = int(X_sparse[:, [0]].tocoo().row.min())
            raise ValueError(f"{path} uses feature index 0 (data row {row + 1}), which one-based "
                             "indices do not have; pass --zero-based.")
    if not zero_based:
        X_sparse = X_sparse[:, 1:]
    n_cols = max(X_sparse.shape[1], n_features or 0)
    if X_sparse.shape[0] * n_cols * 8 > _DENSE_LIMIT:
        raise ValueError(f"{path} has {X_sparse.shape[0]} rows and {n_cols} features: "
                         f"{X_sparse.shape[0] * n_cols * 8 / 2**30:.1f} GiB as the dense matrix "
                         f"sparsify works on, more than its limit of {_DENSE_LIMIT / 2**30:.0f} "
                         "GiB; reduce the features first.")
    X = np.zeros((X_sparse.shape[0], n_cols))
    # LIBSVM omits zero features, so a file whose highest index is below the model's
    # has fewer columns but the same features: the missing columns are zeros.
    X[:, :X_sparse.shape[1]] = X_sparse.toarray()
    keep = labels is not False
    notes = (f"LIBSVM indices: {'zero' if zero_based else 'one'}-based ({how})",
             "labels: the first field of each line" if keep
             else "labels: none (the first field is ignored)")
    return DataFile(X, y if keep else None, None, None, path, "libsvm", zero_based=zero_based,
                    uses_index_zero=uses_zero, labelled=keep, notes=notes)
