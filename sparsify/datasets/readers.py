"""Readers of the data files the command line takes: ``.npz``, ``.csv`` and LIBSVM text.

Every decision a reader makes about a file (is line 1 a header? are LIBSVM
indices zero- or one-based? is the last column a label?) is taken once for the
whole file, by an explicit rule or by the caller's choice, and is reported in
`DataFile.notes`; a file the rules cannot read unambiguously is a ValueError
that names the file (and the line and column where there is one) and says which
option settles it. Nothing is dropped or guessed silently.
"""

from __future__ import annotations

import csv
import io
import math
import re
import zipfile
from collections.abc import Iterator
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
# ... nor one that a small file implies: above this floor, this many bytes per byte of text.
_DENSE_FLOOR = 2**26
_DENSE_PER_BYTE = 256

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
    columns : tuple of str or None
        CSV with a header: the names of the feature columns, in the order of X.
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
    columns: tuple[str, ...] | None = None

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
    feature_names: list[str] | None = None,
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
    feature_names : list of str, optional
        The feature names a model was trained on: a CSV file with a header
        that names them all is read by name (any order; the one other column,
        if any, is the label), and one that lacks a name is a ValueError.

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
                          n_features=n_features, feature_names=feature_names).as_tuple()


def read_data_file(
    path: str | Path,
    split: int = 1,
    *,
    header: bool | None = None,
    zero_based: bool | None = None,
    labels: bool | None = True,
    n_features: int | None = None,
    feature_names: list[str] | None = None,
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
    - **CSV cells** are read as RFC 4180 writes them (the csv module's excel
      dialect): a quoted cell may hold commas, doubled quotes and line breaks.
      A number is ASCII (``1_000`` and other digits than 0-9 are text).
    - **Missing values**: an empty or missing-value cell anywhere in the data is
      a ValueError naming the file, line and column; nothing is dropped.
    - **Memory**: a file whose arrays would take more than half the memory
      available (`sparsify.core.memory.available_memory`: the host's, a
      cgroup's and ``ulimit -v``'s limits) is refused as soon as that shows,
      before it is read whole.
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
        if path.exists():
            kind = ("a FIFO (named pipe)" if path.is_fifo() else "a device node"
                    if path.is_char_device() or path.is_block_device() else "a socket"
                    if path.is_socket() else "not a regular file")
            raise ValueError(f"{path} is {kind}, not a regular file: sparsify reads a data file "
                             "by its suffix and its size, and some parts of it twice. Save the "
                             "data to a file (.csv, .npz or LIBSVM text) and give that.")
        raise FileNotFoundError(f"No data file at {str(path)!r}; check the path.")
    if labels is None and n_features is None:
        raise ValueError("labels=None decides by the model's number of features: pass "
                         "n_features, or labels=True or False.")
    suffix = path.suffix.lower()
    if suffix == ".npz":
        return _read_npz(path, split, labels)
    if suffix == ".csv":
        return _read_csv(path, header, labels, n_features, feature_names)
    return _read_libsvm(path, zero_based, labels, n_features)


# --------------------------------------------------------------------------- .npz


def _read_npz(path: Path, split: int, labels: bool | None) -> DataFile:
    # numpy calls a non-zip file "pickled data", which misleads.
    if not zipfile.is_zipfile(path):
        raise ValueError(f"{path} is not a valid .npz file (not a zip archive); save the arrays "
                         "with numpy.savez, or give the data as .csv or LIBSVM text.")
    try:  # the arrays' sizes as stored, before numpy allocates them (a compressed member can
        # expand a thousandfold)
        with zipfile.ZipFile(path) as zf:
            size = sum(info.file_size for info in zf.infolist())
    except (OSError, zipfile.BadZipFile, EOFError) as exc:
        raise ValueError(f"Could not read {path} as .npz: {exc}.") from exc
    _check_size(path, size, "its arrays")
    _check_npz_headers(path)
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


def _check_npz_headers(path: Path) -> None:
    """Refuse, before numpy allocates anything, a member whose ``.npy`` header declares more data
    than the member holds (numpy allocates the declared shape first, then reads)."""
    try:
        with zipfile.ZipFile(path) as zf:
            for info in zf.infolist():
                if not info.filename.endswith(".npy"):
                    continue
                with zf.open(info) as fh:
                    version = np.lib.format.read_magic(fh)
                    read = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                            else np.lib.format.read_array_header_2_0)
                    shape, _, dtype = read(fh, max_header_size=2**16)
                    header_bytes = fh.tell()
                name = info.filename[:-4]
                declared = math.prod(shape) * dtype.itemsize
                if dtype.hasobject:
                    continue  # refused below, by np.load, without unpickling
                if declared > info.file_size - header_bytes:
                    raise ValueError(f"{path} is not a valid .npz file: its array {name!r} "
                                     f"declares the shape {tuple(shape)} of {dtype} "
                                     f"({declared:.3g} bytes) but holds "
                                     f"{info.file_size - header_bytes} bytes of data; it was "
                                     "cut short or edited. Save it again with numpy.savez.")
    except ValueError as exc:
        if str(exc).startswith(str(path)):
            raise
        raise ValueError(f"{path} is not a valid .npz file: a member's .npy header cannot be "
                         f"read ({exc}).") from exc
    except (OSError, zipfile.BadZipFile, EOFError, SyntaxError) as exc:
        raise ValueError(f"Could not read {path} as .npz: {exc}.") from exc


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

# A number as a CSV cell may write it: ASCII digits, a sign, a point, an exponent, or inf/nan
# (Python's float() also takes "1_000" and non-ASCII digits, which no CSV writer means).
_NUMBER = re.compile(r"[+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:e[+-]?[0-9]+)?|inf|infinity|nan)",
                     re.IGNORECASE)
# Rows parsed at a time: numpy converts a block at C speed; memory is checked between blocks.
_BLOCK_ROWS = 4096


def _kind(cell: str) -> str:
    """'missing', 'number' or 'text'."""
    if cell.lower() in MISSING_TOKENS:
        return "missing"
    return "number" if _NUMBER.fullmatch(cell) else "text"


def _number(cell: str) -> float | None:
    return float(cell) if _NUMBER.fullmatch(cell) else None


def _csv_rows(fh: Any, path: Path, first_is_header: bool) -> Iterator[tuple[int, list[str]]]:
    """(line number, stripped cells) of every non-blank row; a ``#`` comment gives no cells.

    RFC 4180 (the csv module's excel dialect): a quoted cell may hold commas,
    quotes (doubled) and line breaks; the line number is the row's first line.
    With ``first_is_header`` the first non-blank row is given even if it starts
    with ``#``.
    """
    reader = csv.reader(fh, strict=True)
    start = 1
    try:
        for cells in reader:
            no, start = start, reader.line_num + 1
            stripped = [c.strip() for c in cells]
            if not any(stripped):
                continue
            if stripped[0].startswith("#") and not first_is_header:
                yield no, []  # a comment: counted, not read
                continue
            first_is_header = False
            yield no, stripped
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path} is not UTF-8 text ({exc.reason} near line {start}); save it "
                         "as UTF-8 CSV.") from exc
    except csv.Error as exc:
        if "field larger than field limit" in str(exc):
            limit = csv.field_size_limit()
            raise ValueError(f"{path}, line {start}: a cell is longer than {limit} "
                             "characters, the most a CSV cell may hold here; usually a quote "
                             "(\") that opens a cell and is never closed, which makes the rest of "
                             "the file one cell. Close or remove that quote (a quote inside a "
                             "quoted cell is doubled: \"\").") from exc
        raise ValueError(f"{path}, line {start}: not CSV as RFC 4180 writes it ({exc}); a cell "
                         "with a comma, a quote or a line break must be quoted, with its "
                         "quotes doubled.") from exc


def _read_csv(path: Path, header: bool | None, labels: bool | None, n_features: int | None,
              feature_names: list[str] | None) -> DataFile:
    budget = _memory_budget()
    with path.open(newline="", encoding="utf-8-sig") as fh:  # -sig: a BOM is not part of cell 1
        rows = _csv_rows(fh, path, first_is_header=bool(header))
        n_comments = 0
        first = None
        for no, cells in rows:
            if cells:
                first = (no, cells)
                break
            n_comments += 1
        if first is None:
            raise ValueError(f"{path} is empty; give a .csv with rows of comma-separated "
                             "numbers.")
        notes: list[str] = []
        head: tuple[int, list[str]] | None = first if header else None
        decided: bool | None = None
        n_cols = len(first[1])
        labelled = _decide_labels(path, n_cols, labels, n_features, notes)
        if labelled and n_cols < 2:
            raise ValueError(f"{path} has {n_cols} column; a labelled .csv needs at least one "
                             "feature column and the label column last (or read it without "
                             "labels).")
        pending: tuple[int, list[str]] | None = None  # line 1 while header=None is undecided
        if header is None:
            decided = _header_from_first_row(path, first, labelled, notes)
            if decided:
                head = first
            elif decided is None:
                pending = first
        columns = _columns(path, head, n_cols, labelled, feature_names, notes)
        parser = _RowParser(path, n_cols, columns, budget, first[0])
        if header is False or (header is None and decided is False):
            parser.add(*first)
        for no, cells in rows:
            if cells:
                parser.add(no, cells)
            else:
                n_comments += 1
    if pending is not None:
        if _header_from_labels(path, pending, parser, labelled, notes):
            head = pending
        else:
            parser.add(*pending, front=True)
    if header:
        notes.insert(0, f"line {first[0]} is a header (given)")
    elif header is False:
        notes.insert(0, "no header (given)")
    if n_comments:  # after the header's note, before the labels'
        notes.insert(1, f"{n_comments} comment line(s) starting with '#' skipped")
    if parser.n_rows == 0:
        raise ValueError(f"{path} has no data rows"
                         + (f" after its header (line {head[0]})" if head else "")
                         + "; give a file with rows of comma-separated numbers.")
    X, y = parser.result()
    return DataFile(X, y, None, None, path, "csv", header=head is not None, labelled=labelled,
                    notes=tuple(notes),
                    columns=None if head is None else tuple(head[1][j] for j in columns[0]))


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


_ASK = "pass --header if it is a header, --no-header if it is data"


def _header_from_first_row(path: Path, first: tuple[int, list[str]], labelled: bool,
                           notes: list[str]) -> bool | None:
    """Whether line 1 is a header when line 1 alone says so; None when the labels must tell."""
    no, cells = first
    kinds = [_kind(c) for c in cells]
    n_feat = len(cells) - 1 if labelled else len(cells)
    for j in range(min(n_feat, len(cells))):
        if kinds[j] == "text":
            notes.insert(0, f"line {no} is a header (detected: {cells[j]!r} is not a number)")
            return True
    if "missing" in kinds:
        j = kinds.index("missing")
        raise ValueError(f"{path}: line {no} has no column names but an empty or missing "
                         f"value {cells[j]!r} in column {j + 1}, so it is neither clearly a "
                         f"header nor data; {_ASK} (and fill in the missing value).")
    return None


def _header_from_labels(path: Path, first: tuple[int, list[str]], parser: _RowParser,
                        labelled: bool, notes: list[str]) -> bool:
    """Whether an all-numeric-features line 1 is a header, from the other rows' last column."""
    no, cells = first
    if labelled and _kind(cells[-1]) == "text":
        if any(_kind(c) == "number" for c in parser.labels):
            raise ValueError(f"{path}: line {no} has text ({cells[-1]!r}) only in the label "
                             "column while other rows have numeric labels, so it is neither "
                             f"clearly a header nor data; {_ASK}.")
        notes.insert(0, f"no header (detected: line {no} has numeric features and a text "
                        "label, like the other rows)")
        return False
    # All numbers. Column numbers (pandas writes 0,1,2 for unnamed columns) are the one
    # numeric header that shows: consecutive integers from 0 or 1 whose last value is no
    # value of the last column elsewhere.
    if (len(cells) >= 2 and parser.n_rows > 0 and all(_INTEGER.fullmatch(c) for c in cells)
            and int(cells[0]) in (0, 1)
            and [int(c) for c in cells] == list(range(int(cells[0]), int(cells[0]) + len(cells)))):
        if float(cells[-1]) not in set(parser.last_values()):
            raise ValueError(f"{path}: line {no} reads {','.join(cells)}, like column numbers, "
                             f"and its last value occurs in no other row; {_ASK}.")
    notes.insert(0, f"no header (detected: line {no} is all numbers)")
    return False


def _columns(path: Path, head: tuple[int, list[str]] | None, n_cols: int, labelled: bool,
             feature_names: list[str] | None, notes: list[str]) -> tuple[list[int], int | None]:
    """(feature columns, label column) to read: by position, or by the names a model knows."""
    by_position = (list(range(n_cols - 1 if labelled else n_cols)),
                   n_cols - 1 if labelled else None)
    if head is None or feature_names is None:
        return by_position
    names = head[1]
    if names[:len(feature_names)] == list(feature_names):
        return by_position
    missing = [n for n in feature_names if n not in names]
    twice = sorted({n for n in feature_names if names.count(n) > 1})
    if missing or twice:
        problem = (f"has no column named {missing[0]!r}" if missing
                   else f"names the column {twice[0]!r} twice")
        raise ValueError(f"{path} {problem} (line {head[0]}: {', '.join(names)}); the model was "
                         f"trained on the columns {', '.join(feature_names)}. Rename the "
                         "columns, or pass --no-header to read them by position.")
    features = [names.index(n) for n in feature_names]
    rest = [j for j in range(n_cols) if j not in features]
    if len(rest) != (1 if labelled else 0):
        raise ValueError(f"{path} has the columns {', '.join(names[j] for j in rest)} beside the "
                         f"model's features {', '.join(feature_names)}; give one label column "
                         "at most.")
    notes.append(f"columns matched to the model's by name ({', '.join(feature_names)})")
    return features, (rest[0] if rest else None)


def _check_size(path: Path, need: int, what: str) -> None:
    """Refuse a file whose arrays would take more than `_memory_budget`, before reading it."""
    budget = _memory_budget()
    if need > budget:
        raise ValueError(f"{path} is too large to read in the memory available: {what} would "
                         f"take about {need / 2**20:.0f} MiB, and sparsify may use "
                         f"{budget / 2**20:.0f} MiB for a data file (half the memory "
                         "available, counting cgroup and ulimit -v limits). Use a subsample of "
                         "the rows.")


def _memory_budget() -> int:
    """Bytes a data file's arrays may take: half the memory available (parsing needs more)."""
    from sparsify.core.memory import available_memory

    return available_memory() // 2


class _RowParser:
    """Rows of a CSV file parsed into float features and label cells, a block at a time.

    Numbers are parsed by numpy (`numpy.loadtxt`: ASCII numbers only); a block it
    refuses, or one with a NaN, is scanned cell by cell for the line and column
    to name. The memory the rows take is checked against ``budget`` after every
    block, so a file too large is refused when its rows reach the budget, not
    after it was read whole.
    """

    def __init__(self, path: Path, n_cols: int, columns: tuple[list[int], int | None],
                 budget: int, ref_line: int) -> None:
        self.path, self.n_cols, self.budget = path, n_cols, budget
        self.ref_line = ref_line  # the line the others' cell count is compared with
        self.features, self.label = columns
        self.blocks: list[Array] = []
        self.labels: list[str] = []
        self.block: list[tuple[int, list[str]]] = []
        self.n_rows = 0

    def add(self, no: int, cells: list[str], front: bool = False) -> None:
        if len(cells) != self.n_cols:
            raise ValueError(f"{self.path}, line {no}: {len(cells)} cells where line "
                             f"{self.ref_line} has {self.n_cols}; every line needs the same "
                             "number of comma-separated cells.")
        if not self.n_rows:
            self.ref_line = no
        if self.label is not None and _kind(cells[self.label]) == "missing":
            self._missing(no, self.label, cells[self.label])
        self.n_rows += 1
        if front:  # line 1, decided last: parsed alone and put first
            self.blocks.insert(0, self._parse([(no, cells)]))
            if self.label is not None:
                self.labels.insert(0, cells[self.label])
            return
        self.block.append((no, cells))
        if self.label is not None:
            self.labels.append(cells[self.label])
        if len(self.block) >= _BLOCK_ROWS:
            self._flush()

    def _flush(self) -> None:
        if not self.block:
            return
        self.blocks.append(self._parse(self.block))
        self.block = []
        used = 8 * self.n_rows * len(self.features) + 64 * len(self.labels)
        if 2 * used > self.budget:  # the blocks, and their concatenation at the end
            raise ValueError(
                f"{self.path} is too large to read in the memory available: its first "
                f"{self.n_rows} rows already take {used / 2**20:.0f} MiB, and sparsify may use "
                f"{self.budget / 2**20:.0f} MiB for a data file (half the memory available, "
                "counting cgroup and ulimit -v limits). Use a subsample of the rows.")

    def _parse(self, block: list[tuple[int, list[str]]]) -> Array:
        text = "\n".join(",".join(cells[j] for j in self.features) for _, cells in block)
        try:
            data = np.loadtxt(io.StringIO(text), delimiter=",", dtype=float, ndmin=2,
                              comments=None)
        except ValueError:
            data = None
        if data is not None and data.shape == (len(block), len(self.features)) \
                and np.isfinite(data).all():
            return data
        for no, cells in block:  # name the first bad cell
            for j in (*self.features, *(() if self.label is None else (self.label,))):
                kind = _kind(cells[j])
                if kind == "missing":
                    self._missing(no, j, cells[j])
                if kind == "text" and j != self.label:
                    raise ValueError(f"{self.path}, line {no}, column {j + 1}: could not "
                                     f"convert {cells[j]!r} to a number; feature columns must "
                                     "be numeric.")
                if kind == "number" and j != self.label and not np.isfinite(float(cells[j])):
                    raise ValueError(f"{self.path}, line {no}, column {j + 1}: {cells[j]!r} "
                                     "is not a finite number (inf, or beyond float64's "
                                     "1.8e308); give finite features (rescale the column, or "
                                     "remove the row).")
        raise ValueError(f"{self.path}: could not read lines {block[0][0]} to {block[-1][0]} "
                         "as numbers.")  # numpy refused what the scan accepts: not expected

    def _missing(self, no: int, j: int, cell: str) -> None:
        raise ValueError(f"{self.path}, line {no}, column {j + 1}: missing value {cell!r}; "
                         "sparsify takes no missing values (no NaN, NA or empty cells): fill it "
                         "in or remove the row.")

    def last_values(self) -> list[float | None]:
        """The last column of every row (labels or the last feature), as numbers."""
        if self.label == self.n_cols - 1:
            return [_number(c) for c in self.labels]
        self._flush()
        last = self.features.index(self.n_cols - 1) if self.n_cols - 1 in self.features else -1
        return [float(v) for block in self.blocks for v in block[:, last]]

    def result(self) -> tuple[Array, NDArray[Any] | None]:
        self._flush()
        X = np.concatenate(self.blocks) if len(self.blocks) > 1 else self.blocks[0]
        if self.label is None:
            return X, None
        values = [_number(c) for c in self.labels]
        if all(v is not None for v in values):
            return X, np.array(values, dtype=float)
        return X, np.array(self.labels)  # class names


# --------------------------------------------------------------------------- LIBSVM


def _read_libsvm(path: Path, zero_based: bool | None, labels: bool | None,
                 n_features: int | None) -> DataFile:
    from sklearn.datasets import load_svmlight_file

    # a value takes at least 4 bytes of text ("1:1 ") and 16 bytes parsed
    _check_size(path, 4 * path.stat().st_size, "its values, parsed,")
    try:
        # Read the indices as written (column j = index j); the base is decided below.
        X_sparse, y = load_svmlight_file(str(path), zero_based=True)
    except OverflowError as exc:  # scikit-learn's reader keeps indices in C integers
        raise ValueError(
            f"{path} has a feature index too large for any data set (beyond a C integer: "
            f"{exc}); check the feature indices (an index is a column number)."
        ) from exc
    except ValueError as exc:
        raise ValueError(
            f"Could not read {path} as LIBSVM text ({exc}); use .npz, .csv or LIBSVM format."
        ) from exc
    n_cols = max(X_sparse.shape[1] - (0 if zero_based else 1), n_features or 0, 1)
    dense = X_sparse.shape[0] * n_cols * 8
    # a few bytes of text must not imply gigabytes: at most 4 GiB, half the memory available,
    # and (beyond 64 MiB) 256 bytes of matrix per byte of the file
    limit = min(_DENSE_LIMIT, _memory_budget(),
                max(_DENSE_FLOOR, _DENSE_PER_BYTE * path.stat().st_size))
    if dense > limit:  # before tocsc(), whose column pointers alone take 8 bytes per column
        raise ValueError(f"{path} has {X_sparse.shape[0]} rows and feature indices up to "
                         f"{X_sparse.shape[1] - 1}: {dense / 2**20:.4g} MiB as the dense matrix "
                         f"sparsify works on, more than its limit of {limit / 2**20:.4g} MiB for "
                         f"this file (the least of 4 GiB, half the memory available, and 256 "
                         "bytes per byte of the file beyond 64 MiB). Check the indices (a "
                         "feature index is a column number), or reduce the features first.")
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
