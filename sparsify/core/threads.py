"""BLAS threads sized to the work of a fit, so small problems do not oversubscribe the CPUs.

A BLAS library starts one thread per core for every matrix product it is given,
however small. On a busy machine those threads wait for cores that other work
holds, and a fit whose products take microseconds runs ten times slower than on
one thread. `limit_blas_threads` gives a fit as many threads as its work can
use: one per `FLOPS_PER_THREAD` of one W(Z) evaluation (about N·Nz·(d + Nz)
multiply-adds), never more than the CPUs the process may use (its affinity and
a cgroup CPU quota) and never more than the BLAS already allows here, so inside
joblib's worker processes, which joblib limits to their share of the CPUs, the
threads do not nest. ``SPARSIFY_BLAS_THREADS=N`` sets the number instead.
"""

from __future__ import annotations

import contextlib
import functools
import math
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

__all__ = ["ENV_VARIABLE", "FLOPS_PER_THREAD", "blas_threads", "cpu_count",
           "limit_blas_threads"]

#: Multiply-adds of one W(Z) evaluation that make one more BLAS thread worth its start-up.
FLOPS_PER_THREAD = 5e7

#: The environment variable that sets the number of BLAS threads of a fit.
ENV_VARIABLE = "SPARSIFY_BLAS_THREADS"


def cpu_count(cgroup_root: Path | None = None) -> int:
    """CPUs this process may use: its affinity, lowered by a cgroup CPU quota.

    Examples
    --------
    >>> cpu_count() >= 1
    True
    """
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    root = Path("/sys/fs/cgroup") if cgroup_root is None else cgroup_root
    quotas = []
    try:  # cgroup v2: "quota period" or "max period"
        quota, period = (root / "cpu.max").read_text().split()[:2]
        if quota != "max":
            quotas.append(int(quota) / int(period))
    except (OSError, ValueError):
        pass
    try:  # cgroup v1: -1 for no quota
        quota = (root / "cpu" / "cpu.cfs_quota_us").read_text().strip()
        period = (root / "cpu" / "cpu.cfs_period_us").read_text().strip()
        if int(quota) > 0:
            quotas.append(int(quota) / int(period))
    except (OSError, ValueError):
        pass
    for q in quotas:
        cpus = min(cpus, max(1, math.ceil(q)))
    return max(1, cpus)


def _env_threads() -> int | None:
    """``SPARSIFY_BLAS_THREADS`` as a count, None when unset."""
    text = os.environ.get(ENV_VARIABLE, "").strip()
    if not text:
        return None
    if not text.isdigit() or int(text) < 1:
        raise ValueError(f"{ENV_VARIABLE}={text!r} must be a whole number >= 1 (the BLAS "
                         f"threads of a fit), or unset to size them to the work.")
    return int(text)


def blas_threads(n_samples: int, n_expansion: int, n_features: int,
                 cpus: int | None = None) -> int:
    """BLAS threads for a fit with N points, Nz XVs and d features.

    One thread per `FLOPS_PER_THREAD` multiply-adds of one W(Z) evaluation
    (N·Nz·(d + Nz)), at least 1 and at most ``cpus`` (`cpu_count` by default).

    Examples
    --------
    >>> blas_threads(400, 8, 2, cpus=16)  # the Banana fit: far too small for a second thread
    1
    >>> blas_threads(32_561, 100, 123, cpus=16)  # a9a with 100 XVs
    14
    >>> blas_threads(10**6, 100, 2, cpus=4)
    4
    """
    cpus = cpu_count() if cpus is None else cpus
    flops = float(n_samples) * n_expansion * (n_features + n_expansion)
    return int(max(1, min(cpus, flops // FLOPS_PER_THREAD)))


@functools.cache
def _controller() -> Any:
    """The process's thread pools, found once: finding them walks every loaded library
    (4 ms, a tenth of a small fit), and numpy's BLAS is loaded before the first fit."""
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


@contextlib.contextmanager
def limit_blas_threads(n_samples: int, n_expansion: int, n_features: int) -> Iterator[int]:
    """Run the block with BLAS threads sized to a fit's work (`blas_threads`); yield the count.

    The count never exceeds what the BLAS allows already (``OPENBLAS_NUM_THREADS``,
    or the share joblib gives a worker process), unless ``SPARSIFY_BLAS_THREADS``
    sets it.

    Examples
    --------
    >>> with limit_blas_threads(400, 8, 2) as n:
    ...     n
    1
    """
    controller = _controller()
    pools = [p for p in controller.info() if p.get("user_api") == "blas"]
    wanted = _env_threads()
    if wanted is None:
        wanted = blas_threads(n_samples, n_expansion, n_features)
        allowed = max((int(p.get("num_threads", 1)) for p in pools), default=1)
        wanted = min(wanted, allowed)
    if not pools:
        yield wanted
        return
    with controller.limit(limits=wanted, user_api="blas"):
        yield wanted
