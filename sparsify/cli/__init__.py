"""The ``sparsify`` command line: fit, predict, export to ONNX, check gradients, list plugins.

Every command validates what it can (files, data, names, shapes) before the
expensive work, refuses an output that would overwrite one of its inputs,
writes its output files only once everything has succeeded, and writes them
atomically (a temporary file in the same directory, then `os.replace`). Bad
input ends with one line ``sparsify: error: ...`` on stderr and exit status 2;
``check-gradient`` exits 1 when the gradient check fails its threshold; a
closed stdout (``sparsify predict ... | head -1``) ends quietly with status 141.

Heavy modules (scikit-learn, cvxpy, matplotlib) are imported inside the
command functions only, so ``sparsify --help`` and ``--version`` start fast.

The package holds one module per concern: `sparsify.cli.parser` (the argument
parser and its help texts, with the option types of `sparsify.cli.argtypes`),
one module per command (`sparsify.cli.fit`, `sparsify.cli.predict`,
`sparsify.cli.export`, `sparsify.cli.check_gradient`, `sparsify.cli.plugins_cmd`), and what they
share: `sparsify.cli.data` (reading the data), `sparsify.cli.lookup`
(registry names), `sparsify.cli.files` (checking and writing output files),
`sparsify.cli.output` (JSON and stdout), `sparsify.cli.errors` (error lines
and exit statuses), `sparsify.cli.progress` (the fit's progress bar),
`sparsify.cli.report` (the fit's report and its comparison with the full SVM),
`sparsify.cli.plot_file` and `sparsify.cli.plotting` (the ``--plot`` figure).
"""

from __future__ import annotations

import sys
import warnings

from sparsify.cli.errors import (
    _broken_pipe,
    _closed_streams,
    _exit_fault,
    _one_line,
    _os_error,
    _plugin_fault,
    _print_error,
    _show_warning,
)
from sparsify.cli.parser import build_parser
from sparsify.core.errors import SolverError
from sparsify.plugins.plugin_code import InterruptWatch, exits_stopped

__all__ = ["build_parser", "main"]


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
        ``head``). A closed stdout (``>&-``) is an error before any work; an
        exception raised by a third-party plugin's code (a formulation's
        ``declare``) is one error line naming the plugin, not a traceback.

    Examples
    --------
    >>> main(["--version"])  # doctest: +ELLIPSIS
    sparsify ...
    0
    """
    closed = _closed_streams()
    if closed is not None:
        _print_error(closed)
        return 2
    parser = build_parser()
    try:
        try:
            args = parser.parse_args(argv)
        except SystemExit as exc:  # --help, --version and usage errors; return, don't exit
            sys.stdout.flush()
            return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
        # Plugin code may not end the command (os._exit raises meanwhile): sparsify reports
        # every outcome itself, so a CI gate never reads an exit status nobody chose.
        with warnings.catch_warnings(), exits_stopped, InterruptWatch() as watch:
            # Library warnings (convergence, plugins) as one line each, not file:line noise.
            warnings.showwarning = _show_warning
            try:
                status = int(args.func(args))
                sys.stdout.flush()  # a closed pipe shows here, inside the handlers below
                return status
            except (ValueError, FileNotFoundError, SolverError) as exc:
                _print_error(_plugin_fault(exc) or _one_line(exc))
                return 2
            except BrokenPipeError:
                raise
            except OSError as exc:  # unreadable input, a full disk: one line naming the file
                _print_error(_os_error(exc))
                return 2
            except KeyboardInterrupt as exc:
                if not watch.signalled:  # raised by code, not by Ctrl-C
                    _print_error(_exit_fault(exc))
                    return 2
                print("sparsify: interrupted", file=sys.stderr)
                return 130
            except (SystemExit, GeneratorExit) as exc:
                _print_error(_exit_fault(exc))
                return 2
            except Exception as exc:
                fault = _plugin_fault(exc)
                if fault is None:  # sparsify's own: the traceback is the bug report
                    raise
                _print_error(fault)
                return 2
    except BrokenPipeError:
        return _broken_pipe()
