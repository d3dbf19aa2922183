"""How much memory this process may use, for the estimates made before large allocations.

Every problem whose size grows with N·Nz or N² is estimated before it is built
and refused with `sparsify.core.errors.MemoryEstimateError` when it would not fit.
"""

from __future__ import annotations

import os

__all__ = ["available_memory", "check_memory"]


def available_memory() -> int:
    """Bytes of memory available now (Linux's MemAvailable, else the total RAM).

    Examples
    --------
    >>> available_memory() > 0
    True
    """
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return 2**40  # unknown: do not refuse


def check_memory(need: int, what: str, advice: str, limit: int | None = None) -> None:
    """Raise `MemoryEstimateError` when ``need`` bytes exceed ``limit`` (default: available).

    Parameters
    ----------
    need : int
        The estimate, in bytes.
    what : str
        What needs it, with its sizes ("The generic path for the 'svm' formulation,
        N=8000, Nz=50,").
    advice : str
        What to change.
    limit : int, optional
        Bytes allowed; `available_memory` by default.

    Examples
    --------
    >>> check_memory(2**30, "A test problem (N=10)", "Use less.", limit=2**31)
    >>> check_memory(2**32, "A test problem (N=10)", "Use less.", limit=2**31)
    Traceback (most recent call last):
    ...
    sparsify.core.errors.MemoryEstimateError: A test problem (N=10) would need about 4.0 GiB; ...
    """
    from sparsify.core.errors import MemoryEstimateError

    limit = available_memory() if limit is None else limit
    if need > limit:
        raise MemoryEstimateError(f"{what} would need about {need / 2**30:.1f} GiB; "
                                  f"{limit / 2**30:.1f} GiB are available. {advice}")
