"""The ``sparsify`` argument parser: its subcommands, options and help texts.

`build_parser` builds the whole parser; every subcommand's ``func`` default
runs the function of its command module (`sparsify.cli.fit`,
`sparsify.cli.predict`, `sparsify.cli.export`, `sparsify.cli.check_gradient`,
`sparsify.cli.plugins_cmd`), imported only when that command runs, so building
the parser (``sparsify --help``, ``--version``) imports not even numpy.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

import sparsify
from sparsify.cli.argtypes import (
    _float,
    _gamma,
    _int_at_least,
    _label,
    _list,
    _nonneg_int,
    _param,
    _param_values,
    _positive_float,
    _positive_int,
    _ratio,
)

_LIBSVM_HINT = "(.npz in the benchmark format, .csv with the label last, LIBSVM text otherwise)"


def _command(module: str, name: str) -> Callable[[argparse.Namespace], int]:
    """The command function ``name`` of ``sparsify.cli.<module>``, imported when it runs."""

    def run(args: argparse.Namespace) -> int:
        function = getattr(importlib.import_module(f"sparsify.cli.{module}"), name)
        return int(function(args))

    run.__name__ = run.__qualname__ = name
    return run


class _Parser(argparse.ArgumentParser):
    """ArgumentParser whose errors are the one-line ``sparsify: error: ...`` of the CLI."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"sparsify: error: {message} (see '{self.prog} --help')\n")


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
            "of support vectors (NSV) and test error for comparison. A regressor's formulation "
            "(e.g. kernel_ridge) reports RMSE, MAE and R² instead."
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
                          "the generic path with the structured interior point, then Clarabel, "
                          "OSQP, ECOS) or a backend for the generic path: structured, clarabel, "
                          "ecos, osqp, scs, or a plugin's (see 'sparsify plugins'; default: "
                          "%(default)s)")
    fit.add_argument("--max-iter", type=_nonneg_int, default=None, metavar="N",
                     help="maximum L-BFGS iterations per binary problem (default: 200)")
    fit.add_argument("--seed", type=_nonneg_int, default=0, metavar="S",
                     help="random seed of the initial XVs (default: %(default)s)")
    fit.add_argument("--out", type=Path, default=None, metavar="MODEL",
                     help="save the fitted model to this file: a data-only model file "
                          "(docs/model-format.md) that 'predict' reads")
    fit.add_argument("--plot", type=Path, default=None, metavar="PNG",
                     help="save a plot: a classifier's decision boundary (2-D data), a "
                          "regressor's prediction (1-D or 2-D data), with the XVs; needs "
                          "matplotlib (pip install matplotlib)")
    fit.add_argument("--inlier-label", type=_label, default=None,
                     metavar="LABEL",
                     help="for outlier detectors (e.g. --formulation oneclass): train on the "
                          "rows with this label; test rows with another label are outliers "
                          "(default: 1)")
    fit.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                     type=_param,
                     help="any other parameter of the formulation's estimator, e.g. "
                          "--param nu=0.1 (repeatable; numbers are parsed as int or float, "
                          "true/false as booleans, none as None; a parameter with an option of "
                          "its own, such as C, is given by that option)")
    fit.add_argument("--json", action="store_true",
                     help="print one JSON object on stdout instead of the report")
    fit.add_argument("-v", "--verbose", action="count", default=0,
                     help="-v: one line per finished problem (class, iterations, W, seconds); "
                          "-vv: also one per L-BFGS iteration (on stderr with --json), instead "
                          "of the progress bar; the bar is shown only when stderr is a terminal "
                          "and --json is not given")
    fit.set_defaults(func=_command("fit", "_cmd_fit"))

    _add_search_parser(sub)

    predict = sub.add_parser(
        "predict", help="predict with a saved model",
        description=(
            "Load a model saved by 'sparsify fit --out' and predict the labels (a regressor: the "
            "real values) of a data file: its test part when it has one (an .npz with splits), "
            "otherwise every row. Predictions go to stdout, one per line (how the file was read "
            "and the error, or a regressor's RMSE, MAE and R², if the file has labels, then go "
            "to stderr), or to --out as CSV. Whether a .csv has a "
            "label column is decided by --labels/--no-labels or by its column count, and "
            "stated. Model files hold data only (kernel, XVs, coefficients; a checksum): "
            "loading one never runs code, and a damaged one is refused."
        ),
    )
    predict.add_argument("--model", type=Path, required=True, metavar="MODEL",
                         help="model file written by 'sparsify fit --out'")
    predict.add_argument("--data", type=Path, required=True, metavar="FILE",
                         help=f"data to predict {_LIBSVM_HINT}")
    predict.add_argument("--split", type=_positive_int, default=None, metavar="K",
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
    predict.set_defaults(func=_command("predict", "_cmd_predict"))

    export = sub.add_parser(
        "export", help="export a saved model to ONNX",
        description=(
            "Write a model saved by 'sparsify fit --out' as an ONNX graph that computes its "
            "predictions with standard operators, for onnxruntime or any other ONNX runtime: "
            "input X (N rows of the model's features); outputs label, probabilities (models "
            "with a probability method) and scores (the decision values) for a classifier, "
            "label (+1/-1) and scores for an outlier detector, variable for a regressor "
            "(docs/onnx.md). Needs onnx and skl2onnx (pip install onnx skl2onnx). The model "
            "file is never overwritten."
        ),
    )
    export.add_argument("model", type=Path, metavar="MODEL",
                        help="model file written by 'sparsify fit --out'")
    export.add_argument("--onnx", type=Path, required=True, metavar="OUT",
                        help="the ONNX file to write (e.g. model.onnx)")
    export.add_argument("--dtype", choices=("float64", "float32"), default="float64",
                        help="the graph's input and arithmetic: float64 gives the model's "
                             "predictions to round-off; float32 is smaller and faster, at the "
                             "rounding error of float32 (default: %(default)s)")
    export.add_argument("--opset", type=_positive_int, default=None, metavar="N",
                        help="the ai.onnx opset to target, 9 or later (default: 17)")
    export.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    export.set_defaults(func=_command("export", "_cmd_export"))

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
                       help="'auto' (the fast path, if any) or a backend: structured, "
                            "clarabel, ecos, osqp, scs, or a plugin's (default: %(default)s)")
    check.add_argument("--data", type=Path, default=None, metavar="FILE",
                       help=f"data file {_LIBSVM_HINT} (default: a small random problem)")
    check.add_argument("--split", type=_positive_int, default=None, metavar="K",
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
    check.set_defaults(func=_command("check_gradient", "_cmd_check_gradient"))

    plugins = sub.add_parser(
        "plugins", help="list the formulations, kernels and solvers found",
        description=(
            "List the registered formulations, kernels and solver backends with the plugin "
            "and distribution each came from."
        ),
    )
    plugins.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    plugins.set_defaults(func=_command("plugins_cmd", "_cmd_plugins"))
    return parser


def _add_search_parser(sub: argparse._SubParsersAction[Any]) -> None:
    search = sub.add_parser(
        "search", help="choose Nz, C and gamma by a warm-started cross-validated search",
        description=(
            "Cross-validate a sparse kernel machine over a grid of Nz, C and gamma with "
            "sparsify.SparseSearchCV: each fit of a fold starts from its nearest fitted "
            "neighbour (Nz ascending: the expansion path, each size from the last plus new "
            "XVs where its loss is largest; then gamma; C innermost). Reports the "
            "cross-validated error against Nz (each Nz at its best C and gamma), the choice "
            "(the smallest Nz within one standard error of the best, or --select best), the "
            "full SVM's cross-validated error where affordable (svm, up to 20 000 points) and "
            "the chosen model's test error; refits it on all training data."
        ),
    )
    _add_data_options(search, with_test=True)
    search.add_argument("--formulation", default="svm", metavar="NAME",
                        help="registered formulation (see 'sparsify plugins'; default: "
                             "%(default)s)")
    search.add_argument("--kernel", default="rbf", metavar="NAME",
                        help="kernel name, or names joined by '+' (default: %(default)s)")
    search.add_argument("--degree", type=_positive_int, default=None, metavar="INT",
                        help="degree of the poly kernel (default: the estimator's, 3)")
    search.add_argument("--coef0", type=_float, default=None, metavar="FLOAT",
                        help="constant of the poly kernel (default: the estimator's, 0)")
    size = search.add_mutually_exclusive_group()
    size.add_argument("--n-expansion", type=_list(_positive_int), default=None,
                      metavar="N[,N...]", help="the Nz to try, e.g. 5,10,20")
    size.add_argument("--expansion-path", type=_positive_int, default=None, metavar="MAX",
                      help="Nz = 1, 2, 4, ... up to MAX (default: up to 32, or a tenth of the "
                           "training points if fewer)")
    search.add_argument("--C", type=_list(_positive_float), default=None,
                        metavar="C[,C...]", help="the C to try (default: 0.1,1,10,100)")
    search.add_argument("--gamma", type=_list(_gamma), default=None,
                        metavar="G[,G...]",
                        help="the kernel coefficients to try: numbers > 0, 'scale' or 'auto' "
                             "(default: 'scale' times 1/4, 1 and 4)")
    search.add_argument("--param", action="append", default=[], metavar="NAME=V[,V...]",
                        type=_param_values,
                        help="another parameter of the estimator and its values, e.g. "
                             "--param loss=hinge,squared_hinge (repeatable)")
    search.add_argument("--cv", type=_int_at_least(2), default=3, metavar="K",
                        help="folds of the cross-validation (stratified for a classifier; "
                             "default: %(default)s)")
    search.add_argument("--select", choices=("one_standard_error", "best"),
                        default="one_standard_error",
                        help="one_standard_error: the smallest Nz whose CV error is within one "
                             "standard error of the best; best: the best CV error (default: "
                             "%(default)s)")
    search.add_argument("--solver", default="auto", metavar="NAME",
                        help="the formulation's solver, as for 'sparsify fit' (default: "
                             "%(default)s)")
    search.add_argument("--max-iter", type=_nonneg_int, default=None, metavar="N",
                        help="maximum L-BFGS iterations per fit (default: 200)")
    search.add_argument("--n-jobs", type=_positive_int, default=None, metavar="N",
                        help="folds fitted in parallel (default: one at a time)")
    search.add_argument("--seed", type=_nonneg_int, default=0, metavar="S",
                        help="random seed of the folds and the initial XVs (default: "
                             "%(default)s)")
    search.add_argument("--out", type=Path, default=None, metavar="MODEL",
                        help="save the chosen model, refitted on all training data, as a "
                             "model file that 'predict' reads")
    search.add_argument("--plot", type=Path, default=None, metavar="PNG",
                        help="save a plot of the CV error and the fit time against Nz, with "
                             "the choice and the full SVM; needs matplotlib")
    search.add_argument("--json", action="store_true",
                        help="print one JSON object on stdout instead of the report")
    search.add_argument("-v", "--verbose", action="count", default=0,
                        help="-v: a line per fold; -vv: a line per fit (instead of the "
                             "progress bar)")
    search.set_defaults(func=_command("search", "_cmd_search"))


def _add_data_options(parser: argparse.ArgumentParser, *, with_test: bool) -> None:
    parser.add_argument("--data", type=Path, default=None, metavar="FILE",
                        help=f"training data {_LIBSVM_HINT}; default: the embedded Banana "
                             "data, split 1")
    parser.add_argument("--split", type=_positive_int, default=None, metavar="K",
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
