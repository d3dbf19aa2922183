"""Running a plugin's code: it may raise, but it may not exit or interrupt sparsify.

A plugin's code runs inside sparsify's process: its module when it loads, its
hooks, and then every call sparsify makes into what it registered (a
formulation's constructor, ``declare``, ``n_outputs``, its own W(Z)). Whatever
such code raises is the plugin's fault, and the report names the plugin; an
attempt to end the process (``sys.exit``, ``os._exit``, raising `SystemExit`,
`GeneratorExit` or a `KeyboardInterrupt` of its own) is stopped, and becomes an
error naming the plugin instead of a silent exit with status 0.

- `isolated` runs one call and returns what it raised (the registry turns that
  into a warning: a broken plugin does not take the host down);
- `plugin_code` is the context manager around sparsify's calls into a
  third-party object: an exit inside it becomes a `PluginError`;
- `exits_stopped` is what both use against `os._exit`, which ends the process
  without an exception: while it is active, ``os._exit`` (and the ``posix``
  module's) raises instead, in this process only (a forked child still exits).

A real Ctrl-C (a SIGINT that reached Python's handler) still interrupts. What
no Python code can stop is a plugin ending the process below Python (``_exit``
through ctypes, a signal such as SIGKILL it sends itself): the process then ends
with whatever status that gives, before any verdict is printed, which is why a
CI gate should check ``sparsify check-gradient``'s final line (or ``"passed"``
in its ``--json``) as well as its exit status.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Callable
from types import FrameType, TracebackType
from typing import Any

__all__ = ["InterruptWatch", "PluginError", "describe_plugin", "exits_stopped", "is_plugin",
           "isolated", "plugin_code", "stopped_exit"]


class PluginError(ValueError):
    """A plugin problem: under ``SPARSIFY_STRICT_PLUGINS=1``, or plugin code that tried to exit.

    The message is one line; a subclass of `ValueError`, so the command line
    prints it as ``sparsify: error: ...`` and exits with status 2.
    `sparsify.core.errors.PluginError` and `sparsify.plugins.registry.PluginError`
    are this class.

    Examples
    --------
    >>> from sparsify.plugins.registry import PluginError
    >>> issubclass(PluginError, ValueError)
    True
    """


class InterruptWatch:
    """Tell a real Ctrl-C from a `KeyboardInterrupt` that a plugin's code raises itself.

    While active in the main thread, SIGINT goes through a handler that records it
    and then calls the previous handler (which raises KeyboardInterrupt as usual).
    A KeyboardInterrupt with no SIGINT recorded came from the plugin's own code.
    In other threads no signal can arrive, so every KeyboardInterrupt is the
    plugin's. A plugin that sends itself SIGINT is taken for a real Ctrl-C.
    """

    def __init__(self) -> None:
        self.signalled = False
        self._previous: Callable[[int, FrameType | None], Any] | None = None

    def _handler(self, signum: int, frame: FrameType | None) -> Any:
        self.signalled = True
        assert self._previous is not None
        return self._previous(signum, frame)

    def __enter__(self) -> InterruptWatch:
        if threading.current_thread() is not threading.main_thread():
            return self
        previous = signal.getsignal(signal.SIGINT)
        if callable(previous):  # SIG_DFL kills the process and SIG_IGN drops it: no exception
            try:
                signal.signal(signal.SIGINT, self._handler)
            except ValueError:  # not the main interpreter
                return self
            self._previous = previous
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        # restore only our own handler: a plugin that installed one on purpose keeps it
        if self._previous is not None and signal.getsignal(signal.SIGINT) == self._handler:
            signal.signal(signal.SIGINT, self._previous)


class _ExitCalled(SystemExit):
    """What `os._exit` raises while plugin code runs (it would end the process unseen)."""

    def __repr__(self) -> str:
        return f"os._exit({self.code})"


class _ExitsStopped:
    """``os._exit`` raising `_ExitCalled` while any caller is inside (nested, any thread)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._depth = 0
        self._saved: list[tuple[Any, Any]] = []  # (module, its own _exit) to restore
        self._pid = 0

    def _stop(self, status: int = 0) -> Any:
        if os.getpid() != self._pid:  # a forked child exits as it means to
            self._saved[0][1](status)
        raise _ExitCalled(status)

    def __enter__(self) -> _ExitsStopped:
        with self._lock:
            if self._depth == 0:
                self._pid = os.getpid()
                modules = [os, sys.modules.get(os.name)]
                self._saved = [(m, m._exit) for m in modules if m is not None]
                for module, _ in self._saved:
                    module._exit = self._stop
            self._depth += 1
        return self

    def __exit__(self, *exc: object) -> None:
        with self._lock:
            self._depth -= 1
            if self._depth == 0:
                for module, real in self._saved:
                    module._exit = real


#: The one guard of the process (nested uses share it).
exits_stopped = _ExitsStopped()


def isolated(call: Callable[[], Any]) -> tuple[Any, BaseException | None]:
    """Run a plugin's code; return ``(result, None)`` or ``(None, what it raised)``.

    Everything is caught, `SystemExit` and `GeneratorExit` included: a plugin must
    not end the host. `os._exit` raises instead while the call runs. Only a
    KeyboardInterrupt from a real SIGINT propagates.

    Examples
    --------
    >>> isolated(lambda: os._exit(3))
    (None, os._exit(3))
    >>> isolated(lambda: 7)
    (7, None)
    """
    with exits_stopped, InterruptWatch() as watch:
        try:
            return call(), None
        except KeyboardInterrupt as exc:
            if watch.signalled:
                raise
            return None, exc
        except BaseException as exc:
            return None, exc


def stopped_exit(exc: BaseException) -> str:
    """How a report quotes what plugin code raised: an exit is said to have been stopped.

    Examples
    --------
    >>> stopped_exit(SystemExit(0))
    'SystemExit(0), which was ignored: a plugin cannot exit or interrupt sparsify'
    >>> stopped_exit(RuntimeError("bug"))
    "RuntimeError('bug')"
    """
    if isinstance(exc, Exception):
        return repr(exc)
    return f"{exc!r}, which was ignored: a plugin cannot exit or interrupt sparsify"


def is_plugin(owner: object) -> bool:
    """Whether ``owner`` (an object or a class) is defined outside sparsify.

    Examples
    --------
    >>> from sparsify.kernels import RBF
    >>> is_plugin(RBF(1.0)), is_plugin(type("Mine", (), {"__module__": "mypkg"}))
    (False, True)
    """
    cls = owner if isinstance(owner, type) else type(owner)
    module = getattr(cls, "__module__", "") or ""
    return not (module == "sparsify" or module.startswith("sparsify."))


def describe_plugin(owner: object) -> str:
    """How a message names a plugin's formulation, kernel or other object.

    Examples
    --------
    >>> from sparsify.kernels import RBF
    >>> describe_plugin(RBF(1.0))
    'the kernel RBF (sparsify.kernels.RBF)'
    """
    cls = owner if isinstance(owner, type) else type(owner)
    names = [base.__name__ for base in cls.__mro__]
    kind = ("formulation" if "Formulation" in names else "kernel" if "Kernel" in names
            else "estimator" if "BaseEstimator" in names else "object")
    label = getattr(owner, "name", "") if kind == "formulation" else ""
    what = f"{label!r}" if isinstance(label, str) and label else cls.__name__
    plugin = ", a plugin" if is_plugin(cls) else ""
    return f"the {kind} {what} ({cls.__module__}.{cls.__qualname__}{plugin})"


def _where(tb: TracebackType | None, owner: object) -> str:
    """`` in NAME() at FILE:LINE``: the innermost frame of the owner's module, if any."""
    cls = owner if isinstance(owner, type) else type(owner)
    module = cls.__module__
    found = ""
    while tb is not None:
        if tb.tb_frame.f_globals.get("__name__") == module:
            code = tb.tb_frame.f_code
            found = f" in {code.co_name}() at {code.co_filename}:{tb.tb_lineno}"
        tb = tb.tb_next
    return found


class plugin_code:
    """Around sparsify's calls into a third-party object: an exit becomes a `PluginError`.

    Built-in objects (defined in sparsify) run unguarded. Exceptions pass
    through unchanged; `SystemExit`, `GeneratorExit`, `os._exit` and a
    `KeyboardInterrupt` that no SIGINT caused become a `PluginError` (a
    ValueError: the command line prints one line and exits with status 2).

    Parameters
    ----------
    owner : object or class
        The plugin's formulation (or kernel, estimator) whose code runs inside.
    what : str
        What sparsify was doing, for the message ("declare()", "a fit").

    Examples
    --------
    >>> import sys
    >>> quitter = type("Quitter", (), {"__module__": "mypkg", "run": lambda self: sys.exit(0)})()
    >>> with plugin_code(quitter, "a call"):  # doctest: +ELLIPSIS
    ...     quitter.run()
    Traceback (most recent call last):
    ...
    sparsify.plugins.plugin_code.PluginError: the object Quitter (mypkg.Quitter, a plugin) ...
    """

    def __init__(self, owner: object, what: str) -> None:
        self.owner, self.what = owner, what
        self._active = is_plugin(owner)
        self._watch = InterruptWatch()

    def __enter__(self) -> plugin_code:
        if self._active:
            exits_stopped.__enter__()
            self._watch.__enter__()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if not self._active:
            return
        self._watch.__exit__(exc_type, exc, tb)
        exits_stopped.__exit__()
        if exc is None or isinstance(exc, Exception):
            return
        if isinstance(exc, KeyboardInterrupt) and self._watch.signalled:
            return  # a real Ctrl-C
        if isinstance(exc, (SystemExit, GeneratorExit, KeyboardInterrupt)):
            what = (f"called {exc!r}" if isinstance(exc, _ExitCalled)
                    else f"raised {exc!r} (sys.exit)" if isinstance(exc, SystemExit)
                    else f"raised {exc!r}")
            raise PluginError(
                f"{describe_plugin(self.owner)} {what}"
                f"{_where(tb, self.owner) or ' during ' + self.what}, which was stopped: a "
                "plugin cannot exit or interrupt sparsify. "
                "Fix the plugin (sparsify.testing.check_formulation shows the same), or "
                "uninstall it.") from exc
