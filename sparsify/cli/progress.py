"""The progress bar of ``sparsify fit``: a tqdm bar on stderr fed by the estimator's callback.

Shown only where it helps and harms nothing: on a terminal, without ``--json``
or ``-v``, for estimators with a ``callback`` parameter, and for fits in one
process.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Iterator
from typing import Any

import numpy as np


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
        label = f"problem {problem}, " if problem else ""  # a binary problem has no name
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
    from sparsify.core.classifier import SparseKernelClassifier

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
