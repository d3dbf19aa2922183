"""The ``sparsify`` command line: fit, predict, check gradients, list plugins.

Every command validates what it can (files, data, names, shapes) before the
expensive work, writes its output files only once everything has succeeded,
and writes them atomically (a temporary file in the same directory, then
`os.replace`). Bad input ends with one line ``sparsify: error: ...`` on
stderr and exit status 2; ``check-gradient`` exits 1 when the gradient check
fails its threshold.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import os
import pickle
import sys
import tempfile
import time
import warnings
import zipfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, NoReturn, TextIO

import numpy as np
from numpy.typing import NDArray

import sparsify
from sparsify.persistence import IncompatibleVersionError, is_compatible
from sparsify.solvers import SolverError

__all__ = ["MODEL_FORMAT", "build_parser", "load_model", "main", "save_model"]

#: Value of the "format" key that marks a sparsify model file.
MODEL_FORMAT = "sparsify-model"

_KINDS = ("formulation", "kernel", "solver")
_LIBSVM_HINT = "(.npz in the benchmark format, .csv with the label last, LIBSVM text otherwise)"


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
                     help="save the fitted model to this file (a pickle; see 'predict')")
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
                     help="print L-BFGS progress (on stderr with --json)")
    fit.set_defaults(func=_cmd_fit)

    predict = sub.add_parser(
        "predict", help="predict with a saved model",
        description=(
            "Load a model saved by 'sparsify fit --out' and predict the labels of a data file: "
            "its test part when it has one (an .npz with splits), otherwise every row. "
            "Predictions go to stdout, one per line (the error, if the file has labels, then "
            "goes to stderr), or to --out as CSV. A .csv with one column fewer than the model's "
            "features plus label is read as unlabelled. Model files are pickles: load only "
            "files you trust."
        ),
    )
    predict.add_argument("--model", type=Path, required=True, metavar="MODEL",
                         help="model file written by 'sparsify fit --out'")
    predict.add_argument("--data", type=Path, required=True, metavar="FILE",
                         help=f"data to predict {_LIBSVM_HINT}")
    predict.add_argument("--split", type=_positive_int, default=1, metavar="K",
                         help="split of an .npz with splits, counted from 1 (default: 1)")
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
            "class against the rest). Exit status 0 when the relative error is at most "
            "--threshold, 1 otherwise."
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
    check.add_argument("--n-expansion", type=_positive_int, default=4, metavar="N",
                       help="number of expansion vectors Nz (default: %(default)s)")
    check.add_argument("--seed", type=_nonneg_int, default=0, metavar="S",
                       help="random seed of the problem and of Z (default: %(default)s)")
    check.add_argument("--threshold", type=_positive_float, default=1e-6, metavar="T",
                       help="largest relative error that passes (default: %(default)g)")
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
        2 on bad input or a failed solve.
    """
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version and usage errors; return instead of exiting
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    with warnings.catch_warnings():
        # Library warnings (convergence, plugins) as one line each, not file:line noise.
        warnings.showwarning = _show_warning
        try:
            return int(args.func(args))
        except (ValueError, FileNotFoundError, SolverError) as exc:
            print(f"sparsify: error: {_one_line(exc)}", file=sys.stderr)
            return 2
        except KeyboardInterrupt:
            print("sparsify: interrupted", file=sys.stderr)
            return 130


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


def _read(path: Path, split: int) -> tuple[Any, Any, Any, Any]:
    """``load_file`` with the low-level errors of a damaged file turned into ValueError."""
    from sparsify.datasets import load_file

    try:
        return load_file(path, split=split)
    except FileNotFoundError:
        raise
    except (OSError, zipfile.BadZipFile, EOFError, KeyError) as exc:
        raise ValueError(f"Could not read {path}: {exc} {_LIBSVM_HINT}.") from exc


def _is_libsvm(path: Path | None) -> bool:
    return path is not None and path.suffix.lower() not in (".npz", ".csv")


def _pad_libsvm(X: NDArray[np.float64], path: Path | None, n_features: int) -> NDArray[np.float64]:
    """Pad a LIBSVM matrix with zero columns up to ``n_features``.

    LIBSVM text omits zero features, so a file whose highest feature index is
    lower than the model's has fewer columns but the same features.
    """
    if _is_libsvm(path) and X.shape[1] < n_features:
        return np.hstack([X, np.zeros((len(X), n_features - X.shape[1]))])
    return X


def _validated(X: Any, y: Any, what: str) -> tuple[NDArray[np.float64], NDArray[Any]]:
    from sklearn.utils.validation import check_array, check_X_y

    try:
        if y is None:
            return check_array(X, dtype=np.float64, input_name="X"), None  # type: ignore[return-value]
        return check_X_y(X, y, dtype=np.float64)
    except ValueError as exc:
        raise ValueError(f"{what}: {exc}") from exc


def _load_fit_data(data: Path | None, split: int, test: Path | None) -> _Data:
    if data is None:
        if test is not None:
            raise ValueError("--test needs --data: the embedded Banana data has its own test set.")
        from sparsify.datasets import load_banana

        X, y, X_test, y_test = load_banana()
        return _Data(X, y, X_test, y_test, "banana (embedded, split 1)", "banana test part")
    X, y, X_test, y_test = _read(data, split)
    has_splits = X_test is not None
    source = f"{data} (split {split})" if has_splits else str(data)
    X, y = _validated(X, y, f"training data {source}")
    test_source: str | None = f"{data} (split {split}, test part)" if has_splits else None
    if test is not None:
        if has_splits:
            raise ValueError(f"{data} already has a test part (split {split}); drop --test.")
        parts = _read(test, 1)
        # All labelled rows of the test file, whether or not it has splits of its own.
        X_test = parts[0] if parts[2] is None else np.vstack([parts[0], parts[2]])
        y_test = parts[1] if parts[3] is None else np.concatenate([parts[1], parts[3]])
        test_source = str(test)
    if X_test is not None:
        n = max(X.shape[1], np.shape(X_test)[1])
        X = _pad_libsvm(X, data, n)
        X_test = _pad_libsvm(np.asarray(X_test, dtype=float), test or data, n)
        X_test, y_test = _validated(X_test, y_test, f"test data {test_source}")
        if X_test.shape[1] != X.shape[1]:
            raise ValueError(f"The test data {test_source} has {X_test.shape[1]} features but "
                             f"the training data {source} has {X.shape[1]}.")
    return _Data(X, y, X_test, y_test, source, test_source)


# --------------------------------------------------------------------------- registry helpers


def _formulation_class(name: str) -> type:
    from sparsify.plugins import get_registry

    return get_registry().get("formulation", name)  # type: ignore[no-any-return]


def _check_solver(name: str) -> None:
    """Refuse an unknown or uninstalled solver before any work is done."""
    if name == "auto":
        return
    from sparsify.plugins import get_registry

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


def _check_output_path(path: Path | None, option: str) -> None:
    """Fail early when an output file could not be written at the end."""
    if path is None:
        return
    if path.is_dir():
        raise ValueError(f"{option} {path} is a directory; give a file name.")
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise FileNotFoundError(f"The directory of {option} {path} does not exist; create it "
                                "first.")


def _write_atomically(outputs: Sequence[tuple[Path, bytes]]) -> None:
    """Write every file to a temporary sibling, then move them all into place.

    If any write fails, the temporaries are removed and no target is touched.
    """
    mask = os.umask(0)
    os.umask(mask)
    temps: list[tuple[str, Path]] = []
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
    except BaseException:
        for tmp, _ in temps:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
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


# --------------------------------------------------------------------------- model files


def save_model(payload: dict[str, Any]) -> bytes:
    """Serialise a model payload (the estimator and its metadata) to bytes.

    Parameters
    ----------
    payload : dict
        At least ``"estimator"`` and ``"formulation"``; ``"format"`` and
        ``"sparsify_version"`` are added.

    Returns
    -------
    bytes
        The pickled dict, ready to be written to a file.
    """
    return pickle.dumps(
        {"format": MODEL_FORMAT, "sparsify_version": sparsify.__version__, **payload},
        protocol=pickle.HIGHEST_PROTOCOL,
    )


def load_model(path: str | Path) -> dict[str, Any]:
    """Load and check a model file written by ``sparsify fit --out``.

    Model files are pickles: load only files you trust.

    Parameters
    ----------
    path : str or Path
        The model file.

    Returns
    -------
    dict
        The saved payload: ``"estimator"``, ``"formulation"``, ``"sparsify_version"``, ...

    Raises
    ------
    FileNotFoundError
        If there is no file at ``path``.
    ValueError
        If the file is not a sparsify model, or was saved by another
        major.minor version of sparsify.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"No model file at {str(path)!r}; check the path.")
    refit = f"refit it with this version: sparsify fit ... --out {path}"
    try:
        with path.open("rb") as fh:
            payload = pickle.load(fh)
    except IncompatibleVersionError as exc:  # the estimator inside refused to load
        raise ValueError(f"{path}: {exc} ({refit})") from exc
    except (pickle.UnpicklingError, EOFError, AttributeError, ImportError, IndexError,
            TypeError, ValueError) as exc:
        raise ValueError(f"{path} is not a readable sparsify model file ({exc!r}); if it came "
                         f"from another sparsify version, {refit}.") from exc
    if not isinstance(payload, dict) or payload.get("format") != MODEL_FORMAT:
        raise ValueError(f"{path} is not a sparsify model file (no format marker "
                         f"{MODEL_FORMAT!r}); write one with 'sparsify fit --out'.")
    saved = str(payload.get("sparsify_version", "unknown"))
    if not is_compatible(saved):
        raise ValueError(f"{path} was saved by sparsify {saved} and this is sparsify "
                         f"{sparsify.__version__}; models are read only by the same major.minor "
                         f"version, so {refit}.")
    if "estimator" not in payload:
        raise ValueError(f"{path} holds no estimator; {refit}.")
    return payload


# --------------------------------------------------------------------------- fit


def _cmd_fit(args: argparse.Namespace) -> int:
    from sklearn.base import is_classifier, is_outlier_detector
    from sklearn.utils.multiclass import check_classification_targets

    from sparsify.kernels import make_kernel

    # Cheap checks first: outputs, names, data; the fit is the expensive part.
    _check_output_path(args.out, "--out")
    _check_output_path(args.plot, "--plot")
    if args.out is not None and args.plot is not None and args.out.resolve() == \
            args.plot.resolve():
        raise ValueError("--out and --plot name the same file; give two names.")
    form_cls = _formulation_class(args.formulation)
    est_cls = getattr(form_cls, "estimator", None)
    if est_cls is None:
        raise ValueError(f"The {args.formulation!r} formulation names no estimator class "
                         "(Formulation.estimator), so the command line cannot fit it.")
    _check_solver(args.solver)

    data = _load_fit_data(args.data, args.split, getattr(args, "test", None))
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
    make_kernel(p.get("kernel", args.kernel), X, p.get("gamma", args.gamma),
                p.get("degree", 3), p.get("coef0", 0.0))
    if args.plot is not None:
        if X.shape[1] != 2:
            raise ValueError(f"--plot needs data with 2 features; {data.source} has "
                             f"{X.shape[1]}.")
        _plot_format(args.plot)

    with _stdout_to_stderr(args.json):
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
        outputs.append((args.out, save_model({
            "estimator": estimator,
            "formulation": args.formulation,
            "kernel": result["kernel"],
            "n_features": result["n_features"],
            "classes": result["classes"],
            "data": data.source,
            "test_error": result["test_error"],
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
    from sparsify.estimators import full_svm

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

    from sparsify.outlier import full_oneclass_svm

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
    from sparsify.plotting import require_matplotlib

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

    from sparsify.plotting import plot_decision_boundary

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
    _check_output_path(args.out, "--out")
    payload = load_model(args.model)
    estimator = payload["estimator"]
    n_features = getattr(estimator, "n_features_in_", payload.get("n_features"))

    X, y, X_test, y_test = _read(args.data, args.split)
    if X_test is not None:  # an .npz with splits: predict its held-out part
        X, y = X_test, y_test
    if (args.data.suffix.lower() == ".csv" and n_features is not None
            and X.shape[1] + 1 == n_features):
        # The label column is the last one only if there is room for it.
        X, y = np.column_stack([X, y]), None
    X = _pad_libsvm(X, args.data, n_features or 0)
    X, y = _validated(X, y, f"data {args.data}")
    if n_features is not None and X.shape[1] != n_features:
        raise ValueError(f"{args.data} has {X.shape[1]} features but the model {args.model} "
                         f"was trained on {n_features}.")

    predictions = estimator.predict(X)
    labels = [_label(v) for v in predictions]
    error = None if y is None else float(np.mean(predictions != y))
    if y is not None and not np.isin(np.unique(y), estimator.classes_).all():
        warnings.warn(f"{args.data} has labels the model never saw (it knows "
                      f"{[_label(c) for c in estimator.classes_]}); the error counts them as "
                      "wrong.", UserWarning, stacklevel=1)

    if args.out is not None:
        text = "prediction\n" + "".join(f"{v}\n" for v in labels)
        _write_atomically([(args.out, text.encode())])

    if args.json:
        obj: dict[str, Any] = {
            "model": args.model, "data": args.data, "n_samples": len(labels), "error": error,
            "formulation": payload.get("formulation"),
            "sparsify_version": payload.get("sparsify_version"), "out": args.out,
        }
        if args.out is None:
            obj["predictions"] = labels
        _print_json(obj)
        return 0
    report = (f"{len(labels)} predictions" if error is None
              else f"{len(labels)} predictions, error {error:.4f}")
    if args.out is not None:
        print(f"{report}; written to {args.out}")
    else:
        print("\n".join(str(v) for v in labels))
        print(report, file=sys.stderr)  # stdout stays one prediction per line
    return 0


# --------------------------------------------------------------------------- check-gradient


def _cmd_check_gradient(args: argparse.Namespace) -> int:
    from sklearn.base import is_classifier
    from sklearn.utils.multiclass import check_classification_targets

    from sparsify.gradcheck import check_gradient

    form_cls = _formulation_class(args.formulation)
    _check_solver(args.solver)
    X = y = None
    if args.data is not None:
        X, y, _, _ = _read(args.data, args.split)
        X, y = _validated(X, y, f"data {args.data}")
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
    passed = bool(res.rel_error <= args.threshold)  # NaN fails
    if args.json:
        _print_json({**res.as_dict(), "threshold": args.threshold, "passed": passed,
                     "data": args.data if args.data is not None else "random problem",
                     "seed": args.seed})
    else:
        print(f"gradient check: formulation {res.formulation}, kernel {res.kernel}, solver "
              f"{res.solver}, Nz = {res.grad.shape[0]}, d = {res.grad.shape[1]}")
        verdict = "OK" if passed else "FAILED"
        op = "<=" if passed else ">"
        print(f"rel_error = {res.rel_error:.3e} {op} threshold {args.threshold:g}: {verdict}")
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
    from sparsify.plugins import get_registry

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
