"""The ``sparsify`` command line: fit, predict, check gradients, list plugins.

Every command validates what it can (files, data, names, shapes) before the
expensive work, refuses an output that would overwrite one of its inputs,
writes its output files only once everything has succeeded, and writes them
atomically (a temporary file in the same directory, then `os.replace`). Bad
input ends with one line ``sparsify: error: ...`` on stderr and exit status 2;
``check-gradient`` exits 1 when the gradient check fails its threshold; a
closed stdout (``sparsify predict ... | head -1``) ends quietly with status 141.

Heavy modules (scikit-learn, cvxpy, matplotlib) are imported inside the
command functions only, so ``sparsify --help`` and ``--version`` start fast.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import os
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TextIO

import numpy as np
from numpy.typing import NDArray

import sparsify
from sparsify.core.errors import SolverError

if TYPE_CHECKING:
    from sparsify.datasets import DataFile

__all__ = ["build_parser", "main"]


_KINDS = ("formulation", "kernel", "solver")
_LIBSVM_HINT = "(.npz in the benchmark format, .csv with the label last, LIBSVM text otherwise)"
# Exit status of a process killed by SIGPIPE (128 + 13), what `cmd | head -1` expects.
_EXIT_BROKEN_PIPE = 141


# --------------------------------------------------------------------------- argument types


class _Parser(argparse.ArgumentParser):
    """ArgumentParser whose errors are the one-line ``sparsify: error: ...`` of the CLI."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"sparsify: error: {message} (see '{self.prog} --help')\n")


def _int_at_least(low: int) -> Callable[[str], int]:
    """An argparse type: an integer >= ``low``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be an integer >= {low}; got {text!r}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be an integer >= {low}; got {value}")
        return value

    return parse


_positive_int = _int_at_least(1)
_nonneg_int = _int_at_least(0)


def _float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number; got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number; got {text!r}")
    return value


def _positive_float(text: str) -> float:
    value = _float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be > 0; got {value:g}")
    return value


def _ratio(text: str) -> float:
    value = _float(text)
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"must be in (0, 1]; got {value:g}")
    return value


def _gamma(text: str) -> float | str:
    if text in ("scale", "auto"):
        return text
    try:
        return _positive_float(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(
            f"must be 'scale', 'auto' or a number > 0; got {text!r}"
        ) from None


# --------------------------------------------------------------------------- parser


def _param(text: str) -> tuple[str, Any]:
    name, sep, value = text.partition("=")
    if not sep or not name.strip():
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE; got {text!r}")
    for convert in (int, float):
        try:
            return name.strip().replace("-", "_"), convert(value)
        except ValueError:
            pass
    return name.strip().replace("-", "_"), value


def build_parser() -> argparse.ArgumentParser:
    """Build the ``sparsify`` argument parser with its subcommands.

    Returns
    -------
    argparse.ArgumentParser
    """
    parser = _Parser(
        prog="sparsify",
        description=(
            "Sparse kernel machines by design: the direct sparse kernel method "
            "(Wu, Schölkopf & Bakır 2006), a kernel classifier with exactly Nz optimised "
            "expansion vectors (XVs)."
        ),
        epilog="Run 'sparsify COMMAND --help' for the options of a command.",
    )
    parser.add_argument("--version", action="version",
                        version=f"sparsify {sparsify.__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True,
                                parser_class=_Parser)

    fit = sub.add_parser(
        "fit", help="train a sparse kernel classifier and compare it with the full SVM",
        description=(
            "Train a sparse kernel classifier on the embedded Banana data (split 1) or on a "
            "file, report its test and train error, Nz and fit time, and the full SVM's number "
            "of support vectors (NSV) and test error for comparison."
        ),
    )
    _add_data_options(fit, with_test=True)
    fit.add_argument("--formulation", default="svm", metavar="NAME",
                     help="registered formulation (see 'sparsify plugins'; default: %(default)s)")
    fit.add_argument("--kernel", default="rbf", metavar="NAME",
                     help="kernel name, or names joined by '+' for a sum, e.g. 'rbf+linear' "
                          "(default: %(default)s)")
    fit.add_argument("--gamma", type=_gamma, default="scale", metavar="{scale,auto,FLOAT}",
                     help="kernel coefficient of rbf/poly: 'scale' = 1/(d·Var(X)), 'auto' = 1/d, "
                          "or a number > 0 (default: %(default)s)")
    fit.add_argument("--degree", type=_positive_int, default=None, metavar="INT",
                     help="degree of the poly kernel (default: the estimator's, 3)")
    fit.add_argument("--coef0", type=_float, default=None, metavar="FLOAT",
                     help="constant of the poly kernel (default: the estimator's, 0)")
    fit.add_argument("--C", type=_positive_float, default=None, metavar="FLOAT",
                     help="regularisation C > 0, as in sklearn.svm.SVC (default: 1.0)")
    size = fit.add_mutually_exclusive_group()
    size.add_argument("--n-expansion", type=_positive_int, default=None, metavar="N",
                      help="number of expansion vectors Nz (per binary problem)")
    size.add_argument("--expansion-ratio", type=_ratio, default=None, metavar="R",
                      help="Nz as a ratio in (0, 1] of the full SVM's number of support "
                           "vectors (default: 0.1)")
    fit.add_argument("--init", choices=("auto", "random", "balanced", "kmeans"), default=None,
                     help="initial XVs: random distinct training points, the same drawn evenly "
                          "from the classes (classifiers only), or k-means centres; auto: "
                          "balanced for more than two classes, else random (default: the "
                          "estimator's; auto for svm)")
    fit.add_argument("--n-init", type=_positive_int, default=None, metavar="N",
                     help="starts per binary problem; the one with the lowest W(Z) is kept "
                          "(default: 1)")
    fit.add_argument("--solver", default="auto", metavar="NAME",
                     help="'auto' (the formulation's exact fast path if it has one, else "
                          "the generic path with Clarabel, OSQP, ECOS) or a cvxpy backend for "
                          "the generic path: clarabel, ecos, osqp (default: %(default)s)")
    fit.add_argument("--max-iter", type=_nonneg_int, default=None, metavar="N",
                     help="maximum L-BFGS iterations per binary problem (default: 200)")
    fit.add_argument("--seed", type=_nonneg_int, default=0, metavar="S",
                     help="random seed of the initial XVs (default: %(default)s)")
    fit.add_argument("--out", type=Path, default=None, metavar="MODEL",
                     help="save the fitted model to this file: a data-only model file "
                          "(docs/model-format.md) that 'predict' reads")
    fit.add_argument("--plot", type=Path, default=None, metavar="PNG",
                     help="save a decision-boundary plot (2-D data only; needs matplotlib: "
                          'pip install "sparsify[plot]")')
    fit.add_argument("--inlier-label", type=lambda t: _param(f"label={t}")[1], default=1,
                     metavar="LABEL",
                     help="for outlier detectors (e.g. --formulation oneclass): train on the "
                          "rows with this label; test rows with another label are outliers "
                          "(default: %(default)s)")
    fit.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                     type=_param,
                     help="any other parameter of the formulation's estimator, e.g. "
                          "--param nu=0.1 (repeatable; numbers are parsed as int or float)")
    fit.add_argument("--json", action="store_true",
                     help="print one JSON object on stdout instead of the report")
    fit.add_argument("-v", "--verbose", action="count", default=0,
                     help="-v: one line per finished problem (class, iterations, W, seconds); "
                          "-vv: also one per L-BFGS iteration (on stderr with --json), instead "
                          "of the progress bar; the bar is shown only when stderr is a terminal "
                          "and --json is not given")
    fit.set_defaults(func=_cmd_fit)

    predict = sub.add_parser(
        "predict", help="predict with a saved model",
        description=(
            "Load a model saved by 'sparsify fit --out' and predict the labels of a data file: "
            "its test part when it has one (an .npz with splits), otherwise every row. "
            "Predictions go to stdout, one per line (how the file was read and the error, if "
            "the file has labels, then go to stderr), or to --out as CSV. Whether a .csv has a "
            "label column is decided by --labels/--no-labels or by its column count, and "
            "stated. Model files hold data only (kernel, XVs, coefficients; a checksum): "
            "loading one never runs code, and a damaged one is refused."
        ),
    )
    predict.add_argument("--model", type=Path, required=True, metavar="MODEL",
                         help="model file written by 'sparsify fit --out'")
    predict.add_argument("--data", type=Path, required=True, metavar="FILE",
                         help=f"data to predict {_LIBSVM_HINT}")
    predict.add_argument("--split", type=_positive_int, default=1, metavar="K",
                         help="split of an .npz with splits, counted from 1 (default: 1)")
    _add_reading_options(predict)
    labels = predict.add_mutually_exclusive_group()
    labels.add_argument("--labels", dest="labels", action="store_const", const=True,
                        default=None,
                        help="the last column of the .csv is the label (default: labelled if "
                             "the file has one column more than the model's features, "
                             "unlabelled if it has as many; any other count is an error)")
    labels.add_argument("--no-labels", dest="labels", action="store_const", const=False,
                        help="every column is a feature; for .npz and LIBSVM: ignore the "
                             "labels, so no error rate")
    predict.add_argument("--out", type=Path, default=None, metavar="CSV",
                         help="write the predictions to this CSV file (one column, "
                              "'prediction')")
    predict.add_argument("--json", action="store_true",
                         help="print one JSON object on stdout (with the predictions unless "
                              "--out is given)")
    predict.set_defaults(func=_cmd_predict)

    check = sub.add_parser(
        "check-gradient", help="compare the gradient of W(Z) with finite differences",
        description=(
            "Compare the gradient of the marginal function W(Z), computed from the dual "
            "solution, with central finite differences, on a small random problem or on the "
            "training part of a file (for a classifier with more than two classes: the first "
            "class against the rest). The finite differences are extrapolated, with a step "
            "chosen from the measured noise of W, and estimate their own error. Exit status "
            "0 when the relative error is at most --threshold plus that estimate and the "
            "estimate itself is at most --threshold (a check too noisy to tell fails), "
            "1 otherwise."
        ),
    )
    check.add_argument("--formulation", required=True, metavar="NAME",
                       help="registered formulation (see 'sparsify plugins')")
    check.add_argument("--kernel", default="rbf", metavar="NAME",
                       help="kernel name, or names joined by '+' (default: %(default)s)")
    check.add_argument("--gamma", type=_gamma, default="scale", metavar="{scale,auto,FLOAT}",
                       help="kernel coefficient of rbf/poly (default: %(default)s)")
    check.add_argument("--solver", default="auto", metavar="NAME",
                       help="'auto' (the fast path, if any) or a cvxpy backend "
                            "(default: %(default)s)")
    check.add_argument("--data", type=Path, default=None, metavar="FILE",
                       help=f"data file {_LIBSVM_HINT} (default: a small random problem)")
    check.add_argument("--split", type=_positive_int, default=1, metavar="K",
                       help="split of an .npz with splits, counted from 1 (default: 1)")
    _add_reading_options(check)
    check.add_argument("--n-expansion", type=_positive_int, default=4, metavar="N",
                       help="number of expansion vectors Nz (default: %(default)s)")
    check.add_argument("--seed", type=_nonneg_int, default=0, metavar="S",
                       help="random seed of the problem and of Z (default: %(default)s)")
    check.add_argument("--threshold", type=_positive_float, default=1e-6, metavar="T",
                       help="the relative accuracy to verify (default: %(default)g)")
    check.add_argument("--json", action="store_true",
                       help="print one JSON object on stdout")
    check.set_defaults(func=_cmd_check_gradient)

    plugins = sub.add_parser(
        "plugins", help="list the formulations, kernels and solvers found",
        description=(
            "List the registered formulations, kernels and solver backends with the plugin "
            "and distribution each came from."
        ),
    )
    plugins.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    plugins.set_defaults(func=_cmd_plugins)
    return parser


def _add_data_options(parser: argparse.ArgumentParser, *, with_test: bool) -> None:
    parser.add_argument("--data", type=Path, default=None, metavar="FILE",
                        help=f"training data {_LIBSVM_HINT}; default: the embedded Banana "
                             "data, split 1")
    parser.add_argument("--split", type=_positive_int, default=1, metavar="K",
                        help="split of an .npz with splits, counted from 1 (default: 1)")
    if with_test:
        parser.add_argument("--test", type=Path, default=None, metavar="FILE",
                            help="test data, for a --data file without a test part")
    _add_reading_options(parser)


def _add_reading_options(parser: argparse.ArgumentParser) -> None:
    """--header/--no-header and --zero-based/--one-based: how to read data files."""
    header = parser.add_mutually_exclusive_group()
    header.add_argument("--header", dest="header", action="store_const", const=True,
                        default=None,
                        help="CSV: the first line is a header (default: detected: a header "
                             "when a feature cell of line 1 is text, data when line 1 is all "
                             "numbers; an ambiguous line 1 is an error that asks for this "
                             "option or --no-header)")
    header.add_argument("--no-header", dest="header", action="store_const", const=False,
                        help="CSV: the first line is data")
    base = parser.add_mutually_exclusive_group()
    base.add_argument("--zero-based", dest="zero_based", action="store_const", const=True,
                      default=None,
                      help="LIBSVM: feature indices start at 0 (default: detected once for the "
                           "whole file, or for --data and --test together: zero-based if and "
                           "only if some row uses index 0)")
    base.add_argument("--one-based", dest="zero_based", action="store_const", const=False,
                      help="LIBSVM: feature indices start at 1 (the LIBSVM convention)")


# --------------------------------------------------------------------------- entry point


def main(argv: list[str] | None = None) -> int:
    """Run the ``sparsify`` command line.

    Parameters
    ----------
    argv : list of str, optional
        Arguments without the program name; ``sys.argv[1:]`` by default.

    Returns
    -------
    int
        Exit status: 0 on success, 1 when ``check-gradient`` fails its threshold,
        2 on bad input, a file that cannot be read or written, or a failed solve,
        130 when interrupted, 141 when stdout was closed early (a pipe into
        ``head``).

    Examples
    --------
    >>> main(["--version"])  # doctest: +ELLIPSIS
    sparsify ...
    0
    """
    parser = build_parser()
    try:
        try:
            args = parser.parse_args(argv)
        except SystemExit as exc:  # --help, --version and usage errors; return, don't exit
            sys.stdout.flush()
            return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
        with warnings.catch_warnings():
            # Library warnings (convergence, plugins) as one line each, not file:line noise.
            warnings.showwarning = _show_warning
            try:
                status = int(args.func(args))
                sys.stdout.flush()  # a closed pipe shows here, inside the handlers below
                return status
            except (ValueError, FileNotFoundError, SolverError) as exc:
                _print_error(_one_line(exc))
                return 2
            except BrokenPipeError:
                raise
            except OSError as exc:  # unreadable input, a full disk: one line naming the file
                _print_error(_os_error(exc))
                return 2
            except KeyboardInterrupt:
                print("sparsify: interrupted", file=sys.stderr)
                return 130
    except BrokenPipeError:
        return _broken_pipe()


def _print_error(message: str) -> None:
    print(f"sparsify: error: {message}", file=sys.stderr)


def _os_error(exc: OSError) -> str:
    """``FILE: reason`` for an OSError, without Python's ``[Errno N]`` prefix."""
    if exc.filename is None:
        return _one_line(exc)
    reason = exc.strerror or _one_line(exc)
    return f"{exc.filename}: {reason}"


def _broken_pipe() -> int:
    """The reader of stdout went away (``sparsify predict ... | head -1``): end quietly.

    As the Python docs advise ("Note on SIGPIPE"): point stdout at /dev/null so
    the interpreter's final flush does not raise again, and exit with the
    status of a process killed by SIGPIPE.
    """
    with contextlib.suppress(OSError, ValueError, AttributeError, io.UnsupportedOperation):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    return _EXIT_BROKEN_PIPE


def _show_warning(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                  file: TextIO | None = None, line: str | None = None) -> None:
    print(f"sparsify: warning: {_one_line(message)} ({category.__name__})",
          file=sys.stderr if file is None else file)


def _one_line(exc: BaseException | str) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


# --------------------------------------------------------------------------- data


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


def _read(path: Path, split: int, args: argparse.Namespace, *, labels: bool | None = True,
          n_features: int | None = None, zero_based: bool | None = None) -> DataFile:
    """`read_data_file` with the command's --header and --zero-based choices."""
    from sparsify.datasets import read_data_file

    if zero_based is None:
        zero_based = getattr(args, "zero_based", None)
    return read_data_file(path, split, header=getattr(args, "header", None),
                          zero_based=zero_based, labels=labels, n_features=n_features)


def _indexing(*files: DataFile | None) -> str | None:
    """'zero-based', 'one-based', or None when no file is LIBSVM."""
    for f in files:
        if f is not None and f.zero_based is not None:
            return "zero-based" if f.zero_based else "one-based"
    return None


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
                 csv_header=csv[0] if csv else None, libsvm_indexing=_indexing(train, tested))


def _swap_note(notes: tuple[str, ...], note: str) -> tuple[str, ...]:
    return tuple(note if n.startswith("LIBSVM indices") else n for n in notes)


def _pad_columns(X: NDArray[np.float64], n: int) -> NDArray[np.float64]:
    return X if X.shape[1] >= n else np.hstack([X, np.zeros((len(X), n - X.shape[1]))])


# --------------------------------------------------------------------------- registry helpers


def _formulation_class(name: str) -> type:
    from sparsify.core.registry import get_registry

    return get_registry().get("formulation", name)  # type: ignore[no-any-return]


def _check_solver(name: str) -> None:
    """Refuse an unknown or uninstalled solver before any work is done."""
    if name == "auto":
        return
    from sparsify.core.registry import get_registry

    backend = get_registry().get("solver", name)
    available = getattr(backend, "available", None)
    if callable(available) and not available():
        raise SolverError(f"The solver {name!r} is registered but cvxpy cannot find it "
                          "installed; install it or choose another --solver.")


def _kernel_gamma(kernel: Any) -> float | None:
    """The resolved gamma of a kernel (the first one of a sum that has one), or None."""
    if hasattr(kernel, "gamma"):
        return float(kernel.gamma)
    for part in getattr(kernel, "kernels", ()):
        gamma = _kernel_gamma(part)
        if gamma is not None:
            return gamma
    return None


# --------------------------------------------------------------------------- output helpers


def _check_paths(inputs: dict[str, Path | None], outputs: dict[str, Path | None]) -> None:
    """Refuse, before any work, outputs that would destroy an input or each other, or that
    could not be written at the end.

    Files are compared by path after resolving symlinks and ``..``, and by device and
    inode, so a hard link, a symlink or ``./x`` against ``x`` count as the same file.
    """
    given_out = [(opt, path) for opt, path in outputs.items() if path is not None]
    given_in = [(opt, path) for opt, path in inputs.items() if path is not None]
    for i, (opt, path) in enumerate(given_out):
        for in_opt, in_path in given_in:
            if _same_file(path, in_path):
                raise ValueError(f"{opt} {path} is the same file as {in_opt} {in_path}; writing "
                                 f"it would destroy the input. Give {opt} another file name.")
        for other_opt, other in given_out[:i]:
            if _same_file(path, other):
                raise ValueError(f"{other_opt} {other} and {opt} {path} name the same file; "
                                 "give two names.")
        _check_writable(path, opt)


def _same_file(a: Path, b: Path) -> bool:
    try:
        if os.path.samefile(a, b):  # hard links too
            return True
    except OSError:  # one of them does not exist yet
        pass
    return os.path.realpath(a) == os.path.realpath(b)


def _check_writable(path: Path, option: str) -> None:
    """Fail early when an output file could not be written at the end."""
    if path.is_dir():
        raise ValueError(f"{option} {path} is a directory; give a file name.")
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.exists():
        raise FileNotFoundError(f"The directory of {option} {path} does not exist; create it "
                                "first.")
    if not parent.is_dir():
        raise ValueError(f"Cannot write {option} {path}: {parent} is not a directory.")
    # The file is written as a temporary in this directory, then renamed: both need
    # write and search permission on the directory (not on an existing file).
    if not os.access(parent, os.W_OK | os.X_OK):
        raise ValueError(f"Cannot write {option} {path}: the directory {parent} is not "
                         "writable; choose another directory or change its permissions.")


def _write_atomically(outputs: Sequence[tuple[Path, bytes]]) -> None:
    """Write every file to a temporary sibling, then move them all into place.

    If any write fails, the temporaries are removed and no target is touched;
    the ValueError names the target, not the temporary.
    """
    mask = os.umask(0)
    os.umask(mask)
    temps: list[tuple[str, Path]] = []
    moved: list[Path] = []
    path = None
    try:
        for path, content in outputs:
            fd, tmp = tempfile.mkstemp(dir=path.parent if str(path.parent) else ".",
                                       prefix=f".{path.name}.", suffix=".tmp")
            temps.append((tmp, path))
            with os.fdopen(fd, "wb") as fh:
                fh.write(content)
                fh.flush()
                os.fsync(fh.fileno())
            # mkstemp makes the file private (0600); give it the usual permissions.
            os.chmod(tmp, 0o666 & ~mask)
        for tmp, path in temps:
            os.replace(tmp, path)
            moved.append(path)
    except BaseException as exc:
        for tmp, _ in temps:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
        if isinstance(exc, OSError) and path is not None:
            reason = exc.strerror or _one_line(exc)
            done = ("nothing was written" if not moved else
                    f"{', '.join(map(str, moved))} had already been written")
            raise ValueError(f"Could not write {path}: {reason}; {done}.") from exc
        raise


def _label(value: Any) -> Any:
    """A label as a plain JSON value: integral floats become ints (CSV labels are floats)."""
    value = value.item() if isinstance(value, np.generic) else value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return [_jsonable(v) for v in value.tolist()]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None  # JSON has no NaN or inf
    if isinstance(value, Path):
        return str(value)
    return value


def _print_json(obj: dict[str, Any]) -> None:
    print(json.dumps(_jsonable(obj), indent=2, allow_nan=False))


@contextlib.contextmanager
def _stdout_to_stderr(active: bool) -> Iterator[None]:
    """Keep stdout for the one JSON object: library progress output goes to stderr."""
    if not active:
        yield
        return
    with contextlib.redirect_stdout(sys.stderr):
        yield


# --------------------------------------------------------------------------- progress


class _ProgressBar:
    """Feeds a tqdm bar from the estimator's ``callback``: binary problems × L-BFGS iterations.

    Called with a `sparsify.core.optimize.IterationInfo` after each iteration. A new
    problem (or start) shows as the iteration count going back, or as a change of
    the info's ``problem`` field where it has one; the bar then jumps to the end
    of the problem that stopped early. Never asks the fit to stop.
    """

    def __init__(self, bar: Any, max_iter: int) -> None:
        self.bar = bar
        self.max_iter = max_iter
        self.problem_start = 0  # bar position where the current problem began
        self.iteration = 0
        self.problem: Any = None
        self.started = False

    def __call__(self, info: Any) -> None:
        problem = getattr(info, "problem", None)
        if self.started and (info.iteration <= self.iteration or problem != self.problem):
            self.end_problem()
        self.started, self.problem, self.iteration = True, problem, int(info.iteration)
        self._move_to(self.problem_start + min(self.iteration, self.max_iter))
        label = "" if problem is None else f"problem {problem}, "
        self.bar.set_postfix_str(f"{label}W = {info.value:.6g}", refresh=False)

    def end_problem(self) -> None:
        self.problem_start += self.max_iter
        self._move_to(self.problem_start)
        self.iteration = 0

    def finish(self) -> None:
        """The fit ended: every problem is done, however early each stopped."""
        self._move_to(max(self.bar.total, self.bar.n))

    def _move_to(self, position: int) -> None:
        if position > self.bar.total:  # more problems than counted (a plugin's estimator)
            self.bar.total = position
        if position > self.bar.n:
            self.bar.update(position - self.bar.n)


def _n_binary_problems(estimator: Any, y: Any) -> int:
    """Binary problems a fit solves: one per class for one-vs-rest, else one."""
    from sparsify.core.estimator import SparseKernelClassifier

    n_classes = len(np.unique(y))
    return n_classes if isinstance(estimator, SparseKernelClassifier) and n_classes > 2 else 1


@contextlib.contextmanager
def _progress(args: argparse.Namespace, estimator: Any, n_problems: int) -> Iterator[None]:
    """Show a progress bar on stderr during the fit, where it helps and harms nothing.

    Off with --json or -v (its lines are the progress), when stderr is not a
    terminal, for estimators without a ``callback`` parameter, and for parallel
    fits (the callback would run in other processes). Never writes to stdout.
    """
    params = estimator.get_params()
    max_iter = int(params.get("max_iter") or 0)
    if (args.json or args.verbose or "callback" not in params or max_iter == 0
            or params.get("n_jobs") not in (None, 1) or not _isatty(sys.stderr)):
        yield
        return
    try:
        from tqdm import tqdm
    except ImportError:  # a dependency, but a missing bar must not stop a fit
        yield
        return
    n_runs = n_problems * int(params.get("n_init") or 1)
    bar = tqdm(total=n_runs * max_iter, desc="fit", unit="iter", file=sys.stderr, leave=False,
               dynamic_ncols=True)
    progress = _ProgressBar(bar, max_iter)
    estimator.set_params(callback=progress)
    try:
        yield
        progress.finish()
    finally:
        # The model file must not hold the bar.
        estimator.set_params(callback=params["callback"])
        bar.close()


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # no isatty, or closed
        return False


# --------------------------------------------------------------------------- fit


def _cmd_fit(args: argparse.Namespace) -> int:
    from sklearn.base import is_classifier, is_outlier_detector
    from sklearn.utils.multiclass import check_classification_targets

    from sparsify.kernels import make_kernel

    # Cheap checks first: outputs, names, data; the fit is the expensive part.
    _check_paths({"--data": args.data, "--test": args.test},
                 {"--out": args.out, "--plot": args.plot})
    form_cls = _formulation_class(args.formulation)
    est_cls = getattr(form_cls, "estimator", None)
    if est_cls is None:
        raise ValueError(f"The {args.formulation!r} formulation names no estimator class "
                         "(Formulation.estimator), so the command line cannot fit it.")
    _check_solver(args.solver)

    data = _load_fit_data(args)
    X, y = data.X, data.y

    estimator = est_cls()
    accepted = estimator.get_params()
    n_expansion: int | float = (args.n_expansion if args.n_expansion is not None
                                else args.expansion_ratio if args.expansion_ratio is not None
                                else 0.1)
    wanted = {
        "n_expansion": n_expansion, "kernel": args.kernel, "gamma": args.gamma,
        "degree": args.degree, "coef0": args.coef0, "C": args.C, "init": args.init,
        "n_init": args.n_init, "solver": args.solver, "max_iter": args.max_iter,
        "random_state": args.seed, "verbose": args.verbose,
    }
    # None means not given: keep the estimator's default
    optional = {"degree", "coef0", "C", "init", "n_init", "max_iter"}
    params = {k: v for k, v in wanted.items()
              if k in accepted and not (k in optional and v is None)}
    given = {k for k in optional if wanted[k] is not None}
    if args.gamma != "scale":
        given.add("gamma")
    for name in sorted(given - set(accepted)):
        warnings.warn(f"--{name.replace('_', '-')} is ignored: the {args.formulation!r} "
                      f"estimator {est_cls.__name__} has no parameter {name!r}.", UserWarning,
                      stacklevel=1)
    params.update(getattr(form_cls, "estimator_params", {}))
    for name, value in args.param:
        if name not in accepted:
            raise ValueError(f"--param {name}: the {args.formulation!r} estimator "
                             f"{est_cls.__name__} has no parameter {name!r}; it has "
                             f"{sorted(accepted)}.")
        params[name] = value
    estimator.set_params(**params)
    p = estimator.get_params()

    detector = is_outlier_detector(estimator)
    if detector:
        inliers = np.asarray(y == args.inlier_label)
        if not inliers.any():
            raise ValueError(f"No training row has the inlier label {args.inlier_label!r}; pass "
                             f"--inlier-label with one of {sorted(map(_label, set(y)))}.")
        if args.plot is not None:
            raise ValueError("--plot draws classifiers only; drop it for an outlier detector.")
        X = X[inliers]
    if is_classifier(estimator):
        check_classification_targets(y)
        classes = np.unique(y)
        if len(classes) < 2:
            raise ValueError(f"The training data {data.source} has only one class "
                             f"({_label(classes[0])!r}); a classifier needs at least 2.")
    n_distinct = len(np.unique(X, axis=0))
    if isinstance(n_expansion, int) and n_expansion > n_distinct:
        raise ValueError(f"--n-expansion {n_expansion} asks for more expansion vectors than the "
                         f"{n_distinct} distinct training points; lower it or use "
                         "--expansion-ratio.")
    # Resolves the kernel names (unknown ones fail here) exactly as the estimator will.
    kernel = make_kernel(p.get("kernel", args.kernel), X, p.get("gamma", args.gamma),
                         p.get("degree", 3), p.get("coef0", 0.0))
    if args.out is not None:
        from sparsify.io.saveable import check_saveable

        check_saveable(estimator, kernel)  # a model file holds data only: refuse before fitting
    if args.plot is not None:
        if X.shape[1] != 2:
            raise ValueError(f"--plot needs data with 2 features; {data.source} has "
                             f"{X.shape[1]}.")
        _plot_format(args.plot)

    n_problems = 1 if detector else _n_binary_problems(estimator, y)
    with _stdout_to_stderr(args.json), _progress(args, estimator, n_problems):
        start = time.perf_counter()
        estimator.fit(X, None if detector else y)
        fit_seconds = time.perf_counter() - start

    has_test = data.X_test is not None
    if detector:
        result = _compare_detector(estimator, p, X, data, args.inlier_label)
    else:
        result = _compare_classifier(estimator, p, X, y, data, args.C)
    result = {
        **result,
        "n_expansion": len(estimator.expansion_vectors_),
        "fit_seconds": fit_seconds,
        "formulation": args.formulation,
        "estimator": est_cls.__name__,
        "kernel": p.get("kernel", args.kernel),
        "gamma": _kernel_gamma(estimator.kernel_),
        "n_expansion_requested": n_expansion,
        "n_expansion_per_problem": np.asarray(
            getattr(estimator, "n_expansion_", len(estimator.expansion_vectors_))).tolist(),
        "n_iter": np.asarray(getattr(estimator, "n_iter_", [])).tolist(),
        "init": p.get("init"),
        "solver": p.get("solver", args.solver),
        "seed": args.seed,
        "classes": [_label(c) for c in getattr(estimator, "classes_", [-1, 1])],
        "data": data.source,
        "test_data": data.test_source,
        "reading": data.reading,
        "csv_header": data.csv_header,
        "libsvm_indexing": data.libsvm_indexing,
        "n_train": len(X),
        "n_test": len(data.X_test) if has_test else 0,
        "n_features": int(X.shape[1]),
        "model": args.out,
        "plot": args.plot,
        "sparsify_version": sparsify.__version__,
    }

    # Render everything in memory, then write all files at once.
    outputs: list[tuple[Path, bytes]] = []
    if args.out is not None:
        from sparsify.io import dumps_model

        outputs.append((args.out, dumps_model(estimator, metadata={
            "formulation": args.formulation,
            "kernel": result["kernel"],
            "n_features": result["n_features"],
            "classes": result["classes"],
            "data": data.source,
            "test_error": result["test_error"],
            "inlier_label": result.get("inlier_label"),  # predict's error rate for detectors
            "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        })))
    if args.plot is not None:
        outputs.append((args.plot, _render_plot(estimator, data, args.plot, result)))
    _write_atomically(outputs)

    if args.json:
        _print_json(result)
    else:
        _print_fit_report(result)
    return 0


def _compare_classifier(estimator: Any, p: dict[str, Any], X: Any, y: Any, data: _Data,
                        C_arg: float | None) -> dict[str, Any]:
    """Errors of the sparse classifier and of the full SVM with the same kernel and C."""
    from sparsify.core.estimator import full_svm

    C = float(p["C"]) if "C" in p else (C_arg if C_arg is not None else 1.0)
    start = time.perf_counter()
    full = full_svm(estimator.kernel_, C).fit(X, y)
    seconds = time.perf_counter() - start
    has_test = data.X_test is not None
    return {
        "test_error": _error(estimator, data.X_test, data.y_test) if has_test else None,
        "train_error": _error(estimator, X, y),
        "full_svm_n_support": int(np.sum(full.n_support_)),
        "full_svm_test_error": _error(full, data.X_test, data.y_test) if has_test else None,
        "full_svm_fit_seconds": seconds,
        "C": C,
    }


def _compare_detector(estimator: Any, p: dict[str, Any], X: Any, data: _Data,
                      inlier: Any) -> dict[str, Any]:
    """Errors and ROC AUC of the sparse detector and of the full OneClassSVM (same ν, kernel).

    ``X`` holds the training inliers; test rows labelled ``inlier`` are +1, others −1.
    """
    from sklearn.metrics import roc_auc_score

    from sparsify.algorithms.oneclass.estimator import full_oneclass_svm

    start = time.perf_counter()
    full = full_oneclass_svm(estimator.kernel_, p["nu"]).fit(X)
    seconds = time.perf_counter() - start
    out: dict[str, Any] = {
        "train_error": float(np.mean(estimator.predict(X) != 1)),
        "full_svm_n_support": len(full.support_),
        "full_svm_fit_seconds": seconds,
        "full_machine": "OneClassSVM",
        "nu": p["nu"],
        "inlier_label": _label(inlier),
        "test_error": None, "full_svm_test_error": None, "test_auc": None, "full_test_auc": None,
    }
    if data.X_test is not None:
        truth = np.where(np.asarray(data.y_test == inlier), 1, -1)
        out["test_error"] = float(np.mean(estimator.predict(data.X_test) != truth))
        out["full_svm_test_error"] = float(np.mean(full.predict(data.X_test) != truth))
        if len(np.unique(truth)) == 2:
            out["test_auc"] = float(roc_auc_score(truth, estimator.decision_function(data.X_test)))
            out["full_test_auc"] = float(roc_auc_score(truth, full.decision_function(data.X_test)))
    return out


def _error(clf: Any, X: Any, y: Any) -> float:
    return float(np.mean(clf.predict(X) != y))


def _plot_format(path: Path) -> str:
    """Image format of ``path`` by suffix; fails if matplotlib or the format is missing."""
    from sparsify.cli.plotting import require_matplotlib

    try:
        require_matplotlib()
    except ImportError as exc:
        raise ValueError(str(exc)) from exc
    from matplotlib.backend_bases import FigureCanvasBase

    fmt = path.suffix.lower().lstrip(".") or "png"
    supported = FigureCanvasBase.get_supported_filetypes()
    if fmt not in supported:
        raise ValueError(f"--plot {path}: unknown image format {fmt!r}; use one of "
                         f"{sorted(supported)}, e.g. .png.")
    return fmt


def _render_plot(estimator: Any, data: _Data, path: Path, result: dict[str, Any]) -> bytes:
    import matplotlib.pyplot as plt

    from sparsify.cli.plotting import plot_decision_boundary

    test = "" if result["test_error"] is None else f", test error {result['test_error']:.3f}"
    fig = plot_decision_boundary(
        estimator, data.X, data.y, X_test=data.X_test, y_test=data.y_test,
        title=f"{result['formulation']}, {result['kernel']} kernel: "
              f"Nz = {result['n_expansion']}{test}",
    )
    buf = io.BytesIO()
    try:
        fig.savefig(buf, format=_plot_format(path), dpi=120)
    finally:
        plt.close(fig)
    return buf.getvalue()


def _fmt(value: float | None, spec: str = ".4f") -> str:
    return "n/a (no test data)" if value is None else format(value, spec)


def _print_fit_report(r: dict[str, Any]) -> None:
    gamma = "" if r["gamma"] is None else f", gamma={r['gamma']:.4g}"
    hyper = f", C={r['C']:g}" if "C" in r else f", nu={r['nu']:g}" if "nu" in r else ""
    print(f"sparsify {r['sparsify_version']}: {r['formulation']} ({r['estimator']}), "
          f"kernel {r['kernel']}{gamma}{hyper}")
    print(f"data:      {r['data']}: {r['n_train']} training points, {r['n_test']} test points, "
          f"{r['n_features']} features")
    for path, notes in r["reading"].items():
        print(f"read:      {path}: {'; '.join(notes)}")
    n_iter = int(np.sum(r["n_iter"]))
    print(f"sparse:    Nz = {r['n_expansion']} expansion vectors, test error "
          f"{_fmt(r['test_error'])}, train error {r['train_error']:.4f}, "
          f"fit {r['fit_seconds']:.2f} s ({n_iter} L-BFGS iterations)")
    full = r.get("full_machine", "SVM")
    print(f"full {full}: NSV = {r['full_svm_n_support']} support vectors, test error "
          f"{_fmt(r['full_svm_test_error'])}")
    if r.get("test_auc") is not None:
        print(f"ROC AUC:   sparse {r['test_auc']:.4f}, full {r['full_test_auc']:.4f} "
              f"(inliers: label {r['inlier_label']})")
    if r["model"] is not None:
        print(f"model saved to {r['model']}")
    if r["plot"] is not None:
        print(f"plot saved to {r['plot']}")


# --------------------------------------------------------------------------- predict


def _cmd_predict(args: argparse.Namespace) -> int:
    from sklearn.base import is_outlier_detector

    _check_paths({"--model": args.model, "--data": args.data}, {"--out": args.out})
    from sparsify.io import load_model

    estimator = load_model(args.model)  # data only: nothing in the file can run
    n_features = int(estimator.n_features_in_)

    labels = args.labels if args.labels is not None or n_features is not None else True
    data = _read(args.data, args.split, args, labels=labels, n_features=n_features)
    X, y = data.X, data.y
    if data.X_test is not None:  # an .npz with splits: predict its held-out part
        X, y = data.X_test, data.y_test
    X, y = _validated(X, y, f"data {args.data}")
    if n_features is not None and X.shape[1] != n_features:
        raise ValueError(f"{args.data} has {X.shape[1]} features but the model {args.model} "
                         f"was trained on {n_features} (read with {'; '.join(data.notes)}).")

    predictions = estimator.predict(X)
    values = [_label(v) for v in predictions]
    obj: dict[str, Any] = {
        "model": args.model, "data": args.data, "n_samples": len(values), "error": None,
        "labelled": data.labelled, "reading": list(data.notes), "csv_header": data.header,
        "libsvm_indexing": _indexing(data),
        "formulation": estimator.formulation_,
        "sparsify_version": estimator.sparsify_version_, "out": args.out,
    }
    report = f"{len(values)} predictions"
    if is_outlier_detector(estimator):
        # +1 inlier, -1 outlier; an error rate needs to know which label meant "inlier".
        n_in = int(np.sum(predictions == 1))
        inlier = estimator.metadata.get("inlier_label")
        obj.update(n_inliers=n_in, n_outliers=len(values) - n_in, inlier_label=inlier)
        report += f": {n_in} inliers (+1), {len(values) - n_in} outliers (-1)"
        if y is not None and inlier is not None:
            truth = np.where(np.asarray(y == inlier), 1, -1)
            obj["error"] = float(np.mean(predictions != truth))
            report += f", error {obj['error']:.4f} (inliers: label {_label(inlier)})"
        elif y is not None:
            report += ("; no error rate: the model file does not say which label was the "
                       "inlier class (refit it with 'sparsify fit --out')")
    elif y is not None:
        obj["error"] = float(np.mean(predictions != y))
        report += f", error {obj['error']:.4f}"
        classes = getattr(estimator, "classes_", None)
        if classes is not None and not np.isin(np.unique(y), classes).all():
            warnings.warn(f"{args.data} has labels the model never saw (it knows "
                          f"{[_label(c) for c in classes]}); the error counts them as "
                          "wrong.", UserWarning, stacklevel=1)

    if args.out is not None:
        text = "prediction\n" + "".join(f"{v}\n" for v in values)
        _write_atomically([(args.out, text.encode())])

    if args.json:
        if args.out is None:
            obj["predictions"] = values
        _print_json(obj)
        return 0
    reading = f"read {args.data}: {'; '.join(data.notes)}"
    if args.out is not None:
        print(reading)
        print(f"{report}; written to {args.out}")
    else:
        # stdout stays one prediction per line; the rest goes to stderr
        print(reading, file=sys.stderr)
        sys.stdout.write("".join(f"{v}\n" for v in values))
        print(report, file=sys.stderr)
    return 0


# --------------------------------------------------------------------------- check-gradient


def _cmd_check_gradient(args: argparse.Namespace) -> int:
    from sklearn.base import is_classifier
    from sklearn.utils.multiclass import check_classification_targets

    from sparsify.core.gradcheck import check_gradient

    form_cls = _formulation_class(args.formulation)
    _check_solver(args.solver)
    X = y = None
    reading: list[str] = []
    if args.data is not None:
        data = _read(args.data, args.split, args)
        reading = list(data.notes)
        X, y = _validated(data.X, data.y, f"data {args.data}")
        est_cls = getattr(form_cls, "estimator", None)
        if est_cls is not None and is_classifier(est_cls()):
            # Classifier formulations take labels -1/+1, as the estimator hands them over.
            check_classification_targets(y)
            classes = np.unique(y)
            if len(classes) < 2:
                raise ValueError(f"The data {args.data} has only one class "
                                 f"({_label(classes[0])!r}); a classifier needs at least 2.")
            positive = classes[1] if len(classes) == 2 else classes[0]
            y = np.where(y == positive, 1, -1)
    with _stdout_to_stderr(args.json):
        res = check_gradient(args.formulation, args.kernel, args.solver, X=X, y=y,
                             n_expansion=args.n_expansion, gamma=args.gamma,
                             random_state=args.seed)
    passed = res.passed(args.threshold)  # NaN fails
    if args.json:
        _print_json({**res.as_dict(), "threshold": args.threshold, "passed": passed,
                     "data": args.data if args.data is not None else "random problem",
                     "reading": reading, "seed": args.seed})
    else:
        if reading:
            print(f"read {args.data}: {'; '.join(reading)}")
        print(f"gradient check: formulation {res.formulation}, kernel {res.kernel}, solver "
              f"{res.solver}, Nz = {res.grad.shape[0]}, d = {res.grad.shape[1]}")
        verdict = "OK" if passed else "FAILED"
        print(f"rel_error = {res.rel_error:.3e}, finite differences accurate to "
              f"{res.fd_error:.1e} (noise of W {res.noise:.1e}, step {res.step:.1e}); "
              f"threshold {args.threshold:g}: {verdict}")
    return 0 if passed else 1


# --------------------------------------------------------------------------- plugins


def _describe(entry: Any) -> dict[str, Any]:
    obj = entry.obj
    info: dict[str, Any] = {
        "name": entry.name,
        "plugin": entry.plugin,
        "distribution": entry.distribution,
        "object": f"{getattr(obj, '__module__', type(obj).__module__)}."
                  f"{getattr(obj, '__qualname__', type(obj).__qualname__)}",
    }
    if entry.kind == "formulation":
        est = getattr(obj, "estimator", None)
        info["estimator"] = None if est is None else est.__name__
    if entry.kind == "solver":
        available: Callable[[], bool] | None = getattr(obj, "available", None)
        info["available"] = bool(available()) if callable(available) else None
    return info


def _cmd_plugins(args: argparse.Namespace) -> int:
    from sparsify.core.registry import get_registry

    registry = get_registry()
    listing = {
        f"{kind}s": [_describe(registry.entries[kind][name]) for name in registry.names(kind)]
        for kind in _KINDS
    }
    if args.json:
        _print_json(listing)
        return 0
    for kind in _KINDS:
        rows = listing[f"{kind}s"]
        print(f"{kind}s:")
        if not rows:
            print("  (none)")
        for row in rows:
            extra = ""
            if row.get("estimator"):
                extra = f"  estimator {row['estimator']}"
            if row.get("available") is False:
                extra = "  (not installed)"
            print(f"  {row['name']:<12} plugin {row['plugin']:<20} "
                  f"distribution {row['distribution']}{extra}")
    return 0
