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


def _closed_streams() -> str | None:
    """The error for a closed stdout (``sparsify ... >&-``); a closed stderr goes to /dev/null.

    With file descriptor 1 closed, Python's ``sys.stdout`` is None and every
    report would fail half-way; refuse before any work. Errors with nowhere to
    go are dropped rather than raise.
    """
    if sys.stderr is None:
        sys.stderr = open(os.devnull, "w")  # for the rest of the process
    if sys.stdout is None:
        return ("standard output is closed (as by '>&-'), so the report has nowhere to go; "
                "redirect it to a file or to /dev/null instead.")
    return None


def _plugin_fault(exc: BaseException) -> str | None:
    """One line for an exception a third-party formulation or kernel raised; None otherwise.

    The innermost frame of the traceback that runs a method of a `Formulation`
    or `Kernel` defined outside sparsify names the plugin's class, method and
    line. Anything else is sparsify's own fault, whose traceback is the report.
    """
    # only what is imported can have raised: no import here (cvxpy is heavy)
    bases = tuple(getattr(sys.modules.get(module), name, None) for module, name in
                  (("sparsify.core.formulation", "Formulation"), ("sparsify.kernels", "Kernel")))
    plugin_types = tuple(b for b in bases if isinstance(b, type))
    tb = exc.__traceback__
    culprit = raiser = None
    while tb is not None:
        owner = tb.tb_frame.f_locals.get("self")
        if (plugin_types and isinstance(owner, plugin_types)
                and not type(owner).__module__.startswith("sparsify.")):
            culprit = tb
        raiser, tb = tb, tb.tb_next
    if culprit is None:
        return None
    hint = ""
    if raiser is not None and str(raiser.tb_frame.f_globals.get("__name__")).startswith("cvxpy"):
        hint = (" (cvxpy's words: in declare(), out.f has shape (N,) for one output or (N, K) "
                "for K, out.y (N,), out.norm_w2 is a scalar, and the objective must be a scalar "
                "expression: sum the losses over the points)")
    owner = culprit.tb_frame.f_locals["self"]
    cls = type(owner)
    is_formulation = any(b.__name__ == "Formulation" and isinstance(owner, b)
                         for b in plugin_types)
    what = (f"formulation {getattr(owner, 'name', '') or cls.__name__!r}" if is_formulation
            else f"kernel {cls.__name__}")
    code = culprit.tb_frame.f_code
    return (f"the {what} ({cls.__module__}.{cls.__qualname__}, a plugin) raised in "
            f"{code.co_name}() at {code.co_filename}:{culprit.tb_lineno}: "
            f"{type(exc).__name__}: {_one_line(exc)}{hint}. Fix the plugin (its author's "
            "sparsify.testing.check_formulation shows the same), or uninstall it.")


def _exit_fault(exc: BaseException) -> str:
    """One line for code that tried to end the command (sys.exit, os._exit, an interrupt of its
    own) where sparsify's own calls into plugins did not catch it: the innermost frame outside
    sparsify and the standard library is named."""
    import sysconfig

    stdlib = tuple(p for p in {sysconfig.get_path("stdlib"), sysconfig.get_path("platstdlib")}
                   if p)
    tb, where = exc.__traceback__, ""
    while tb is not None:
        module = str(tb.tb_frame.f_globals.get("__name__", ""))
        filename = tb.tb_frame.f_code.co_filename
        if not (module == "sparsify" or module.startswith("sparsify.")
                or (stdlib and filename.startswith(stdlib))):
            where = (f" in {tb.tb_frame.f_code.co_name}() at {filename}:{tb.tb_lineno} "
                     f"(module {module})")
        tb = tb.tb_next
    return (f"code run by the command{where} raised {exc!r}, which was stopped: a plugin cannot "
            "exit or interrupt sparsify, and sparsify reports its result itself. Fix or "
            "uninstall the plugin (sparsify plugins lists them).")


def _show_warning(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                  file: TextIO | None = None, line: str | None = None) -> None:
    print(f"sparsify: warning: {_one_line(message)} ({category.__name__})",
          file=sys.stderr if file is None else file)


def _one_line(exc: BaseException | str) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__
