"""One-vs-rest training and a hyperparameter search on a local Dask cluster (loopback only).

sparsify parallelises through joblib, so ``joblib.parallel_config(backend="dask")`` moves its
jobs onto a Dask cluster; the models must be the same as with joblib's default backend.
"""

from __future__ import annotations

import re
from typing import Any

import joblib
import numpy as np
import pytest
from sklearn.datasets import make_blobs, make_moons
from sklearn.model_selection import GridSearchCV

from sparsify import SparseSVC

distributed = pytest.importorskip("distributed", reason="needs dask[distributed]")


def _on_dask(client: Any, fit: Any) -> tuple[Any, list[dict[str, Any]]]:
    """Run ``fit()`` under joblib's Dask backend; also return the tasks the cluster ran."""
    with distributed.get_task_stream(client) as stream, joblib.parallel_config(backend="dask"):
        result = fit()
    return result, stream.data


def _calls(tasks: list[dict[str, Any]], function: str) -> int:
    """How many calls of ``function`` the cluster ran.

    joblib's Dask backend sends calls in batches whose size it tunes by their
    measured duration, so the number of tasks depends on the machine's speed; each
    task's key says how many calls it held ("batch_of__fit_and_score_3_calls-…").
    """
    pattern = re.compile(rf"batch_of_{re.escape(function)}_(\d+)_calls")
    return sum(int(m.group(1)) for t in tasks if (m := pattern.search(str(t["key"]))))


def _assert_same_model(a: SparseSVC, b: SparseSVC, X: np.ndarray) -> None:
    for name in ["expansion_vectors_", "expansion_coef_", "intercept_", "objective_",
                 "n_expansion_", "n_iter_"]:
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    np.testing.assert_array_equal(a.decision_function(X), b.decision_function(X))


@pytest.mark.slow
def test_one_vs_rest_on_a_dask_cluster(client: Any) -> None:
    X, y = make_blobs(n_samples=60, centers=3, cluster_std=1.0, random_state=2)
    params = {"n_expansion": 3, "max_iter": 10, "random_state": 0, "n_jobs": 2}
    local = SparseSVC(**params).fit(X, y)
    remote, tasks = _on_dask(client, lambda: SparseSVC(**params).fit(X, y))
    # the 3 binary problems ran on the workers (joblib names a task after its function)
    assert _calls(tasks, "_fit_start") == 3
    assert {t["worker"] for t in tasks} <= set(client.scheduler_info()["workers"])
    _assert_same_model(remote, local, X)


def test_grid_search_on_a_dask_cluster(client: Any) -> None:
    X, y = make_moons(n_samples=60, noise=0.15, random_state=0)
    grid = {"C": [1.0, 10.0], "gamma": [1.0, 2.0]}

    def search() -> GridSearchCV:
        est = SparseSVC(n_expansion=4, max_iter=10, random_state=0)
        return GridSearchCV(est, grid, cv=3, n_jobs=2).fit(X, y)

    local = search()
    remote, tasks = _on_dask(client, search)
    # every (candidate, fold) fit went to the cluster
    assert _calls(tasks, "_fit_and_score") == 4 * 3
    assert remote.best_params_ == local.best_params_
    for key in ["mean_test_score", "std_test_score", "rank_test_score"]:
        np.testing.assert_array_equal(remote.cv_results_[key], local.cv_results_[key])
    _assert_same_model(remote.best_estimator_, local.best_estimator_, X)
