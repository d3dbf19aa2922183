"""How the command line reports failure: one-line errors and warnings, exit statuses.

Bad input ends with one line ``sparsify: error: ...`` on stderr, a library
warning shows as one line ``sparsify: warning: ... (Category)``, and a closed
stdout (``sparsify predict ... | head -1``) ends quietly with the status of a
process killed by SIGPIPE.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
from typing import TextIO

# Exit status of a process killed by SIGPIPE (128 + 13), what `cmd | head -1` expects.
_EXIT_BROKEN_PIPE = 141


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
