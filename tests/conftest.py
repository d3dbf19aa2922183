"""Shared fixtures: the benchmark data beside the repository, if present; a local Dask cluster."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]


def shared_data_dir() -> Path | None:
    """``$SPARSIFY_DATA_DIR`` or ``../shared/data`` beside the repository, if it exists."""
    env = os.environ.get("SPARSIFY_DATA_DIR")
    path = Path(env) if env else REPO.parent / "shared" / "data"
    return path if (path / "banana" / "banana.npz").is_file() else None


@pytest.fixture
def data_dir() -> Path:
    path = shared_data_dir()
    if path is None:
        pytest.skip("needs the benchmark data in ../shared/data (or $SPARSIFY_DATA_DIR)")
    return path


def _network_cause(exc: BaseException) -> BaseException | None:
    """The socket error or timeout behind a failed cluster start, if that is what it was."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, OSError | TimeoutError):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    """A scheduler and two single-threaded workers talking TCP on 127.0.0.1; closed afterwards.

    The workers are threads of this process (``processes=False``): every task still goes
    through the scheduler over TCP as a pickle, but no interpreter has to start and import
    sparsify, which keeps the test to a few seconds. The scheduler's HTTP server takes any
    free port (``dashboard_address=":0"``; None would still ask for 8787, which another
    pytest-xdist worker's cluster may hold).
    """
    distributed = pytest.importorskip("distributed", reason="needs dask[distributed]")
    try:
        cluster = distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=False, protocol="tcp",
            host="127.0.0.1", dashboard_address=":0", silence_logs=logging.ERROR,
        )
    except Exception as exc:  # only a network failure is a reason to skip; the rest fails
        cause = _network_cause(exc)
        if cause is None:
            raise
        pytest.skip(f"dask.distributed cannot start a LocalCluster on 127.0.0.1: {cause!r}")
    with cluster, distributed.Client(cluster) as dask_client:
        yield dask_client
