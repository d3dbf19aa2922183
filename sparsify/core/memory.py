"""How much memory this process may use, for the estimates made before large allocations.

Every problem whose size grows with N·Nz or N² is estimated before it is built
and refused with `sparsify.core.errors.MemoryEstimateError` when it would not fit.
"What fits" is the smallest of three limits, because any one of them ends the
process: the host's free memory (``MemAvailable``), the container's or
service's cgroup limit (cgroup v2 ``memory.max``, v1 ``memory.limit_in_bytes``,
less what the group already uses) and the process's address-space limit
(``ulimit -v``, ``RLIMIT_AS``, less the address space it already maps).
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["available_memory", "cgroup_memory", "check_memory", "format_bytes", "host_memory",
           "rlimit_memory"]

#: Where the kernel mounts the cgroup file systems.
CGROUP_ROOT = Path("/sys/fs/cgroup")

# An unknown amount: never refuse on its account.
_UNKNOWN = 2**62


def _read_int(path: Path) -> int | None:
    """The integer in a cgroup or proc file; None when absent, unreadable or ``max``."""
    try:
        text = path.read_text().strip()
    except (OSError, ValueError):
        return None
    try:
        return int(text.split()[0])
    except (ValueError, IndexError):
        return None  # "max": no limit


def host_memory() -> int:
    """Bytes the host has available now (Linux's MemAvailable, else the total RAM).

    Examples
    --------
    >>> host_memory() > 0
    True
    """
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return _UNKNOWN


def _cgroup_dirs(root: Path, proc_cgroup: Path) -> list[tuple[Path, str, str]]:
    """(directory, limit file, usage file) of this process's memory cgroup and its parents.

    A limit set on any ancestor applies too. Inside a container the process's
    own group is usually mounted at the root itself, which is always tried.
    """
    try:
        lines = proc_cgroup.read_text().splitlines()
    except OSError:
        lines = []
    found: list[tuple[Path, str, str]] = []
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, controllers, path = parts
        if controllers == "":  # v2: one unified hierarchy
            base, files = root, ("memory.max", "memory.current")
        elif "memory" in controllers.split(","):
            base, files = root / "memory", ("memory.limit_in_bytes", "memory.usage_in_bytes")
        else:
            continue
        rel = Path(path.lstrip("/"))
        for parent in [rel, *rel.parents]:
            found.append((base / parent, *files))
    # the mount roots themselves (a container's own group), v2 then v1
    found += [(root, "memory.max", "memory.current"),
              (root / "memory", "memory.limit_in_bytes", "memory.usage_in_bytes")]
    return found


def cgroup_memory(root: Path | None = None, proc_cgroup: Path | None = None) -> int:
    """Bytes this process's cgroups still allow: the smallest limit less its group's usage.

    Parameters
    ----------
    root : Path, optional
        The cgroup mount point; `CGROUP_ROOT` by default.
    proc_cgroup : Path, optional
        The file naming this process's groups; ``/proc/self/cgroup`` by default.

    Returns
    -------
    int
        A very large number when no limit is set or none can be read.

    Examples
    --------
    >>> cgroup_memory() > 0
    True
    """
    root = CGROUP_ROOT if root is None else root
    proc_cgroup = Path("/proc/self/cgroup") if proc_cgroup is None else proc_cgroup
    best = _UNKNOWN
    seen: set[Path] = set()
    for directory, limit_file, usage_file in _cgroup_dirs(root, proc_cgroup):
        if directory in seen:
            continue
        seen.add(directory)
        limit = _read_int(directory / limit_file)
        # cgroup v1 writes "no limit" as a huge number near 2**63
        if limit is None or limit >= 2**60:
            continue
        usage = _read_int(directory / usage_file) or 0
        best = min(best, max(limit - usage, 0))
    return best


def rlimit_memory() -> int:
    """Bytes of address space left under ``RLIMIT_AS`` (``ulimit -v``).

    The soft limit less the address space the process already maps (VmSize);
    a very large number when there is no limit.

    Examples
    --------
    >>> rlimit_memory() > 0
    True
    """
    try:
        import resource
    except ImportError:  # not on POSIX
        return _UNKNOWN
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft == resource.RLIM_INFINITY or soft < 0:
        return _UNKNOWN
    used = 0
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmSize:"):
                    used = int(line.split()[1]) * 1024
                    break
    except (OSError, ValueError, IndexError):
        pass
    return max(int(soft) - used, 0)


def available_memory() -> int:
    """Bytes of memory this process can still allocate: the smallest of the three limits.

    `host_memory` (MemAvailable), `cgroup_memory` (a container's or service's
    limit) and `rlimit_memory` (``ulimit -v``).

    Examples
    --------
    >>> 0 < available_memory() <= host_memory()
    True
    """
    return min(host_memory(), cgroup_memory(), rlimit_memory())


def _limit_name(limit: int) -> str:
    """Which limit ``limit`` is, for the message."""
    if limit == cgroup_memory() and limit < host_memory():
        return " (the cgroup's memory limit, memory.max)"
    if limit == rlimit_memory() and limit < host_memory():
        return " (the address-space limit, ulimit -v)"
    return ""


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

    given = limit is not None
    limit = available_memory() if limit is None else limit
    if need > limit:
        # (which limit it is reads the limits again: only for the message)
        where = "" if given else _limit_name(limit)
        raise MemoryEstimateError(f"{what} would need about {format_bytes(need)}; "
                                  f"{format_bytes(limit)} are available{where}. {advice}")


def format_bytes(size: float) -> str:
    """``size`` bytes in the largest binary unit that keeps it at least 1 (kiB to GiB).

    Examples
    --------
    >>> format_bytes(3 * 2**30), format_bytes(430_000), format_bytes(100)
    ('3.0 GiB', '420 kiB', '100 bytes')
    """
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("kiB", 2**10)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}" if unit == "GiB" else f"{size / scale:.0f} {unit}"
    return f"{size:.0f} bytes"
