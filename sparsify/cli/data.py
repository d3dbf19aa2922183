"""The data of the commands: data files read with the command's options, the default data.

`_read` reads one file (`sparsify.datasets.read_data_file`) with the
``--header``/``--zero-based`` choices of the command; `_load_fit_data` gives
``fit`` its training and test data (the embedded Banana data when no
``--data`` is given), validated and with one LIBSVM indexing for both files.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

if TYPE_CHECKING:
    from sparsify.datasets import DataFile


@dataclass
class _Data:
    X: NDArray[np.float64]
    y: NDArray[Any] | None
    X_test: NDArray[np.float64] | None
    y_test: NDArray[Any] | None
    source: str
    test_source: str | None
    # How the files were read (sparsify.datasets.DataFile.notes), for the report and JSON.
    reading: dict[str, list[str]] = field(default_factory=dict)
    csv_header: bool | None = None
    libsvm_indexing: str | None = None
    # The training CSV's column names (features), when it has a header.
    columns: tuple[str, ...] | None = None


def _read(path: Path, split: int | None, args: argparse.Namespace, *,
          labels: bool | None = True, n_features: int | None = None,
          zero_based: bool | None = None, feature_names: list[str] | None = None) -> DataFile:
    """`read_data_file` with the command's --header and --zero-based choices (split None: 1)."""
    from sparsify.datasets.readers import read_data_file

    if zero_based is None:
        zero_based = getattr(args, "zero_based", None)
    return read_data_file(path, 1 if split is None else split,
                          header=getattr(args, "header", None), zero_based=zero_based,
                          labels=labels, n_features=n_features, feature_names=feature_names)


def _check_reading_options(args: argparse.Namespace, *files: DataFile) -> None:
    """Refuse a reading option that none of the files read takes: it would be ignored.

    ``--split`` selects a split of an .npz with splits (of --data only), --header
    and --no-header read CSV, --zero-based and --one-based LIBSVM text.
    """
    names = ", ".join(str(f.path) for f in files)
    if getattr(args, "split", None) is not None and files[0].X_test is None:
        raise ValueError(f"--split {args.split} selects a split of an .npz file with splits "
                         f"(train_idx, test_idx); {files[0].path} has none, so it would be "
                         "ignored. Drop --split, or give the .npz file with the splits.")
    if getattr(args, "header", None) is not None and not any(f.format == "csv" for f in files):
        option = "--header" if args.header else "--no-header"
        raise ValueError(f"{option} applies to CSV files, and {names} is not one (read as "
                         f"{', '.join(sorted({f.format for f in files}))} by its suffix), so it "
                         f"would be ignored. Drop {option}.")
    if (getattr(args, "zero_based", None) is not None
            and not any(f.format == "libsvm" for f in files)):
        option = "--zero-based" if args.zero_based else "--one-based"
        raise ValueError(f"{option} applies to LIBSVM text, and {names} is not LIBSVM text "
                         f"(read as {', '.join(sorted({f.format for f in files}))} by its "
                         f"suffix), so it would be ignored. Drop {option}.")


def _refuse_reading_options(args: argparse.Namespace, instead: str) -> None:
    """Refuse --split, --header or --zero-based (or their opposites) given without --data."""
    given = [option for option, value in (
        ("--split", getattr(args, "split", None)),
        ("--header/--no-header", getattr(args, "header", None)),
        ("--zero-based/--one-based", getattr(args, "zero_based", None))) if value is not None]
    if given:
        raise ValueError(f"{given[0]} reads a --data file; without --data {instead}, so it would "
                         f"be ignored. Give --data, or drop {given[0]}.")


def _indexing(*files: DataFile | None) -> str | None:
    """'zero-based', 'one-based', or None when no file is LIBSVM."""
    for f in files:
        if f is not None and f.zero_based is not None:
            return "zero-based" if f.zero_based else "one-based"
    return None


def _finite(X: Any, y: Any, what: str) -> tuple[NDArray[np.float64], NDArray[Any] | None]:
    """X as a finite float64 matrix with rows, y as an array: numpy only (``predict``)."""
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or X.shape[0] == 0 or X.shape[1] == 0:
        raise ValueError(f"{what}: expected rows of features; got an array of shape {X.shape}.")
    bad = ~np.isfinite(X)
    if bad.any():
        row, col = (int(i) for i in np.argwhere(bad)[0])
        kind = "NaN" if np.isnan(X[row, col]) else "infinity"
        raise ValueError(f"{what}: Input X contains {kind} (row {row + 1}, feature {col + 1}); "
                         "remove or impute those values.")
    if y is None:
        return X, None
    y = np.asarray(y)
    if y.dtype.kind == "f" and not np.isfinite(y).all():
        raise ValueError(f"{what}: Input y contains NaN or infinity; remove those rows.")
    return X, y


def _validated(X: Any, y: Any, what: str) -> tuple[NDArray[np.float64], NDArray[Any]]:
    from sklearn.utils.validation import check_array, check_X_y

    try:
        if y is None:
            return check_array(X, dtype=np.float64, input_name="X"), None  # type: ignore[return-value]
        return check_X_y(X, y, dtype=np.float64)
    except ValueError as exc:
        raise ValueError(f"{what}: {exc}") from exc


def _load_fit_data(args: argparse.Namespace) -> _Data:
    data, split, test = args.data, args.split, getattr(args, "test", None)
    if data is None:
        if test is not None:
            raise ValueError("--test needs --data: the embedded Banana data has its own test set.")
        _refuse_reading_options(args, "the embedded Banana data (split 1) is used")
        from sparsify.datasets import load_banana

        X, y, X_test, y_test = load_banana()
        return _Data(X, y, X_test, y_test, "banana (embedded, split 1)", "banana test part")
    train = _read(data, split, args)
    has_splits = train.X_test is not None
    if test is not None and has_splits:
        raise ValueError(f"{data} already has a test part (split {split}); drop --test.")
    tested = None if test is None else _read(test, 1, args)
    if (tested is not None and args.zero_based is None and train.uses_index_zero is not None
            and tested.uses_index_zero is not None
            and train.uses_index_zero != tested.uses_index_zero):
        # One data set, one indexing: zero-based when either file uses index 0.
        which = data if train.uses_index_zero else test
        if train.uses_index_zero:
            tested = _read(test, 1, args, zero_based=True)
        else:
            train = _read(data, split, args, zero_based=True)
        note = f"LIBSVM indices: zero-based (detected over --data and --test: {which} uses index 0)"
        train = replace(train, notes=_swap_note(train.notes, note))
        tested = replace(tested, notes=_swap_note(tested.notes, note))
    _check_reading_options(args, train, *([] if tested is None else [tested]))
    split = 1 if split is None else split
    source = f"{data} (split {split})" if has_splits else str(data)
    X, y = _validated(train.X, train.y, f"training data {source}")
    test_source: str | None = f"{data} (split {split}, test part)" if has_splits else None
    X_test, y_test = train.X_test, train.y_test
    reading = {str(data): list(train.notes)}
    if tested is not None:
        # All labelled rows of the test file, whether or not it has splits of its own.
        X_test = tested.X if tested.X_test is None else np.vstack([tested.X, tested.X_test])
        y_test = tested.y if tested.y_test is None else np.concatenate([tested.y, tested.y_test])
        test_source = str(test)
        reading[str(test)] = list(tested.notes)
    if X_test is not None:
        if tested is not None and _indexing(train, tested):
            # LIBSVM omits zero features: pad the narrower matrix with zero columns.
            n = max(X.shape[1], X_test.shape[1])
            X = _pad_columns(X, n) if train.format == "libsvm" else X
            X_test = _pad_columns(X_test, n) if tested.format == "libsvm" else X_test
        X_test, y_test = _validated(X_test, y_test, f"test data {test_source}")
        if X_test.shape[1] != X.shape[1]:
            raise ValueError(f"The test data {test_source} has {X_test.shape[1]} features but "
                             f"the training data {source} has {X.shape[1]}.")
    csv = [f.header for f in (train, tested) if f is not None and f.format == "csv"]
    return _Data(X, y, X_test, y_test, source, test_source, reading,
                 csv_header=csv[0] if csv else None, libsvm_indexing=_indexing(train, tested),
                 columns=train.columns)


def _swap_note(notes: tuple[str, ...], note: str) -> tuple[str, ...]:
    return tuple(note if n.startswith("LIBSVM indices") else n for n in notes)


def _pad_columns(X: NDArray[np.float64], n: int) -> NDArray[np.float64]:
    return X if X.shape[1] >= n else np.hstack([X, np.zeros((len(X), n - X.shape[1]))])
