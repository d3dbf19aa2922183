"""BLAS threads sized to a fit's work, never nested inside joblib's worker processes."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from threadpoolctl import threadpool_info

import sparsify.core.threads as threads
from sparsify import SparseSVC
from sparsify.datasets import load_banana


def _blas_threads() -> int:
    return max((p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"),
               default=1)


@pytest.mark.parametrize(("shape", "cpus", "expected"), [
    ((400, 8, 2), 64, 1),  # Banana: a W(Z) evaluation is 32 000 multiply-adds
    ((32_561, 100, 123), 4, 4),  # a9a with 100 XVs: 7e8, capped by the CPUs
    ((32_561, 100, 123), 64, 14),
    ((5_000, 50, 10), 64, 1),  # 1.5e7: still one
])
def test_threads_follow_the_work_of_one_evaluation(shape: tuple[int, int, int], cpus: int,
                                                   expected: int) -> None:
    assert threads.blas_threads(*shape, cpus=cpus) == expected


def test_a_cgroup_cpu_quota_caps_the_cpus(tmp_path: Path) -> None:
    (tmp_path / "cpu.max").write_text("150000 100000\n")  # 1.5 CPUs
    assert threads.cpu_count(tmp_path) <= 2
    (tmp_path / "cpu.max").write_text("max 100000\n")
    assert threads.cpu_count(tmp_path) == threads.cpu_count(tmp_path / "none")


def test_a_small_fit_runs_on_one_blas_thread_and_the_setting_is_restored() -> None:
    before = _blas_threads()
    X, y, _, _ = load_banana()
    seen: list[int] = []
    SparseSVC(n_expansion=5, max_iter=3, random_state=0,
              callback=lambda info: seen.append(_blas_threads())).fit(X, y)
    assert seen and set(seen) == {1}
    assert _blas_threads() == before


def test_the_environment_variable_sets_the_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    if not [p for p in threadpool_info() if p["user_api"] == "blas"]:
        pytest.skip("no BLAS library that threadpoolctl can control")
    monkeypatch.setenv(threads.ENV_VARIABLE, "2")
    with threads.limit_blas_threads(400, 8, 2) as n:
        assert n == 2 and _blas_threads() == 2
    monkeypatch.setenv(threads.ENV_VARIABLE, "two")
    with pytest.raises(ValueError, match=r"SPARSIFY_BLAS_THREADS='two' must be a whole number "
                                         r">= 1"), threads.limit_blas_threads(400, 8, 2):
        pass


def test_threads_never_exceed_what_the_blas_allows(monkeypatch: pytest.MonkeyPatch) -> None:
    """A large problem in a process limited to one thread (OPENBLAS_NUM_THREADS=1, or a joblib
    worker's share) stays on one."""
    monkeypatch.setattr(threads, "cpu_count", lambda cgroup_root=None: 64)
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="blas"), \
            threads.limit_blas_threads(10**6, 100, 50) as n:
        assert n == 1 and _blas_threads() == 1


@pytest.mark.slow
@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="n_jobs=2 needs two CPUs to mean anything")
def test_joblib_workers_get_their_share_not_nested_threads() -> None:
    """One-vs-rest with n_jobs=2: each worker process fits with at most cpus // 2 threads."""
    code = textwrap.dedent("""
        import json, os
        from threadpoolctl import threadpool_info
        from sklearn.datasets import make_blobs
        from sparsify import SparseSVC

        def blas(info):
            n = max(p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas")
            with open(os.path.join(os.environ["SEEN_DIR"], str(os.getpid())), "a") as fh:
                fh.write(f"{n}\\n")

        X, y = make_blobs(300, centers=3, random_state=0)
        SparseSVC(n_expansion=4, max_iter=2, n_jobs=2, random_state=0, callback=blas).fit(X, y)
    """)
    import tempfile

    with tempfile.TemporaryDirectory() as seen_dir:
        env = {k: v for k, v in os.environ.items() if not k.endswith("_NUM_THREADS")}
        env["SEEN_DIR"] = seen_dir
        subprocess.run([sys.executable, "-c", code], env=env, check=True, timeout=300,
                       capture_output=True)
        counts = [int(line) for f in Path(seen_dir).iterdir()
                  for line in f.read_text().split()]
    assert counts and max(counts) <= max(1, (os.cpu_count() or 1) // 2), counts
