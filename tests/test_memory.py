"""How much memory a process may use: the host's, a cgroup's and ``ulimit -v``'s limits."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import sparsify.core.memory as memory
from sparsify.core.errors import MemoryEstimateError

GIB = 2**30


def _cgroup_v2(root: Path, path: str, limit: str, current: int) -> Path:
    group = root / path.lstrip("/")
    group.mkdir(parents=True, exist_ok=True)
    (group / "memory.max").write_text(f"{limit}\n")
    (group / "memory.current").write_text(f"{current}\n")
    proc = root / "proc_cgroup"
    proc.write_text(f"0::{path}\n")
    return proc


def test_cgroup_v2_memory_max_less_its_usage(tmp_path: Path) -> None:
    proc = _cgroup_v2(tmp_path, "/user.slice/job", str(4 * GIB), GIB)
    assert memory.cgroup_memory(tmp_path, proc) == 3 * GIB


def test_a_parent_groups_limit_applies_too(tmp_path: Path) -> None:
    proc = _cgroup_v2(tmp_path, "/a/b", "max", 0)  # the group itself: no limit
    (tmp_path / "a" / "memory.max").write_text(f"{2 * GIB}\n")
    (tmp_path / "a" / "memory.current").write_text(f"{GIB // 2}\n")
    assert memory.cgroup_memory(tmp_path, proc) == 3 * GIB // 2


def test_cgroup_v1_limit_in_bytes(tmp_path: Path) -> None:
    group = tmp_path / "memory" / "docker" / "abc"
    group.mkdir(parents=True)
    (group / "memory.limit_in_bytes").write_text(f"{8 * GIB}\n")
    (group / "memory.usage_in_bytes").write_text(f"{5 * GIB}\n")
    proc = tmp_path / "proc_cgroup"
    proc.write_text("12:pids:/docker/abc\n4:memory:/docker/abc\n0::/\n")
    assert memory.cgroup_memory(tmp_path, proc) == 3 * GIB


@pytest.mark.parametrize("limit", ["max", str(2**63 - 4096)])
def test_no_cgroup_limit_is_no_limit(tmp_path: Path, limit: str) -> None:
    proc = _cgroup_v2(tmp_path, "/job", limit, GIB)
    assert memory.cgroup_memory(tmp_path, proc) >= 2**60
    assert memory.cgroup_memory(tmp_path / "none", tmp_path / "no_such_file") >= 2**60


def test_available_memory_is_the_least_of_the_three(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(memory, "host_memory", lambda: 16 * GIB)
    monkeypatch.setattr(memory, "cgroup_memory", lambda: 2 * GIB)
    monkeypatch.setattr(memory, "rlimit_memory", lambda: 8 * GIB)
    assert memory.available_memory() == 2 * GIB
    with pytest.raises(MemoryEstimateError, match=r"would need about 3\.0 GiB; 2\.0 GiB are "
                                                  r"available \(the cgroup's memory limit, "
                                                  r"memory\.max\)\. Use less\."):
        memory.check_memory(3 * GIB, "A problem", "Use less.")


@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_AS and /proc are Linux's")
def test_ulimit_v_lowers_the_memory_available() -> None:
    """A process started under ``ulimit -v`` (RLIMIT_AS) sees its limit, less what it maps."""
    code = ("import resource, json; resource.setrlimit(resource.RLIMIT_AS, (4 * 2**30, "
            "resource.RLIM_INFINITY)); import sparsify.core.memory as m; "
            "print(json.dumps([m.rlimit_memory(), m.available_memory()]))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, timeout=120)
    left, available = (int(v) for v in proc.stdout.strip()[1:-1].split(","))
    assert 0 < left < 4 * GIB and available <= left
