"""Continuation over the data: nested samples, the curvature memory, the whole set exact."""

from __future__ import annotations

import itertools
import warnings

import cvxpy as cp
import numpy as np
import pytest
from scipy.optimize import minimize, rosen, rosen_der
from sklearn.exceptions import ConvergenceWarning

from sparsify import RBF, ConicMarginal, Declaration, Formulation, SparseSVC, SparseSVR
from sparsify.algorithms.svm.formulation import SVM
from sparsify.core.conic import make_marginal
from sparsify.core.continuation import (
    POINTS_PER_XV,
    SMALLEST_SAMPLE,
    Continuation,
    nested_order,
    sample_sizes,
)
from sparsify.core.distinct import count_distinct, distinct_rows
from sparsify.core.lbfgs import CurvatureMemory, lbfgs


def _two_moons(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    from sklearn.datasets import make_moons

    X, y = make_moons(n, noise=0.25, random_state=seed)
    return X, np.where(y == 1, 1, -1)


@pytest.mark.parametrize("n, nz", [(3999, 5), (4000, 5), (32561, 20), (32561, 100), (10**6, 7)])
def test_sample_sizes_halve_down_to_the_smallest_sample(n: int, nz: int) -> None:
    sizes = sample_sizes(n, nz)
    smallest = max(SMALLEST_SAMPLE, POINTS_PER_XV * nz)
    assert sizes[-1] == n
    if n < 2 * smallest:
        assert sizes == [n]
    else:
        assert smallest <= sizes[0] < 2 * smallest
        assert all(b // 2 == a for a, b in itertools.pairwise(sizes))


def test_every_prefix_of_the_nested_order_is_stratified() -> None:
    y = np.array([1] * 900 + [-1] * 100 + [np.nan] * 50)
    order = nested_order(y, len(y), 3)
    assert sorted(order.tolist()) == list(range(len(y)))
    for m in (10, 100, 333, 1000):
        prefix = y[order[:m]]
        for value, share in ((1.0, 900 / 1050), (-1.0, 100 / 1050)):
            assert abs(int(np.sum(prefix == value)) - m * share) <= 2.0
        assert abs(int(np.isnan(prefix).sum()) - m * 50 / 1050) <= 2.0


def test_real_targets_give_a_plain_permutation() -> None:
    y = np.linspace(0, 1, 500)
    order = nested_order(y, 500, 0)
    assert sorted(order.tolist()) == list(range(500))


def test_a_samples_formulation_weighs_its_points_n_over_m() -> None:
    weights = np.linspace(0.5, 2.0, 9000)
    made = []

    def make_formulation(w):  # type: ignore[no-untyped-def]
        made.append(np.asarray(w))
        return SVM(1.0)

    X, y = _two_moons(9000)
    plan = Continuation((2250, 4500, 9000), make_formulation, weights)
    stages = plan.stages(X, y, 0, lambda f, Xm, ym: None)  # type: ignore[arg-type,return-value]
    assert [s.n_points for s in stages] == [2250, 4500]
    assert set(stages[0].index) <= set(stages[1].index)  # nested
    for stage, w in zip(stages, made, strict=True):
        np.testing.assert_allclose(w, weights[stage.index] * 9000 / stage.n_points)


def test_a_continued_fit_ends_with_the_exact_solution_on_every_point() -> None:
    X, y = _two_moons(6000)
    seen = []
    clf = SparseSVC(8, C=1.0, gamma=2.0, random_state=0,
                    callback=lambda info: seen.append((info.iteration, info.problem)))
    clf.fit(X, y)
    # iterations numbered on through the samples and the whole set
    assert [i for i, _ in seen] == list(range(1, len(seen) + 1))
    assert any("3000 points" in p for _, p in seen)
    assert int(clf.n_iter_[0]) == len(seen)
    # the fitted β, b and W are the exact solution at the fitted XVs on all 6000 points
    marginal = make_marginal(SVM(1.0), X, y, RBF(2.0), 8)
    ev = marginal.evaluate(clf.expansion_vectors_, grad=False)
    assert clf.objective_[0] == pytest.approx(ev.value, rel=1e-7)
    np.testing.assert_allclose(clf.expansion_coef_[0], ev.coef, rtol=1e-5, atol=1e-7)


def test_the_continued_fit_is_as_accurate_as_the_whole_set_from_the_start() -> None:
    X, y = _two_moons(8000, seed=1)
    X_test, y_test = _two_moons(4000, seed=2)
    continued = SparseSVC(10, C=1.0, gamma=2.0, random_state=0).fit(X, y)
    whole = SparseSVC(10, C=1.0, gamma=2.0, random_state=0, continuation=None).fit(X, y)
    # the Bayes error of these moons is about 9 %; both fits get within a point of each other
    assert abs(continued.score(X_test, y_test) - whole.score(X_test, y_test)) < 0.01
    assert continued.objective_[0] <= 1.05 * whole.objective_[0]


def test_samples_share_the_iteration_budget() -> None:
    X, y = _two_moons(6000)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        clf = SparseSVC(8, C=1.0, gamma=2.0, max_iter=3, random_state=0).fit(X, y)
    assert int(clf.n_iter_[0]) <= 3
    assert any(issubclass(w.category, ConvergenceWarning) for w in caught)


def test_a_regression_continues_where_it_stops_on_the_plateau() -> None:
    rng = np.random.default_rng(0)
    X = rng.uniform(-3, 3, size=(5000, 1))
    y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=5000)
    for plateau, continued in ((None, False), ("auto", True)):
        seen: list[str] = []
        reg = SparseSVR(6, C=10.0, epsilon=0.05, gamma=1.0, random_state=0, max_iter=30,
                        n_iter_no_change=plateau, callback=_recorder(seen))
        reg.fit(X, y)
        # run to tol or max_iter, a regression's default, it keeps to the whole set
        assert any("points" in p for p in seen) is continued
        assert reg.score(X, y) > 0.95


def _recorder(seen: list[str]):  # type: ignore[no-untyped-def]
    return lambda info: seen.append(info.problem)


class _WeightedQuantile(Formulation):
    """The pinball loss, each point's term weighted by out.weights."""

    name, task, weighted = "test_weighted_quantile", "regressor", True

    def __init__(self, tau: float = 0.5) -> None:
        self.tau = tau

    def declare(self, out):  # type: ignore[no-untyped-def]
        b = cp.Variable()
        r = out.y - out.f - b
        loss = out.weights @ cp.maximum(self.tau * r, (self.tau - 1) * r)
        return Declaration(cp.Minimize(0.1 * out.norm_w2 + loss), [], intercept=b)


def test_a_weighted_declaration_sees_its_weights_and_continues() -> None:
    from sparsify.core.estimator import estimator_for

    form = _WeightedQuantile()
    assert form.point_weights is None
    heavy = form.weigh(np.full(30, 2.0))
    X = np.linspace(-2, 2, 30)[:, None]
    y = np.sin(X[:, 0])
    k = RBF(1.0)
    light = ConicMarginal(form, X, y, k, 3, solver="structured").evaluate(X[::10], grad=False)
    doubled = ConicMarginal(heavy, X, y, k, 3, solver="structured").evaluate(X[::10],
                                                                            grad=False)
    # twice the loss against the same ½‖w‖²: W grows, but by less than twice
    assert light.value < doubled.value < 2 * light.value
    with pytest.raises(ValueError, match="weighted = False"):
        SVM(1.0).weigh(2.0)
    cls, _ = estimator_for(_WeightedQuantile)
    assert cls().get_params()["continuation"] == "auto"  # made for a weighted formulation
    rng = np.random.default_rng(1)
    Xb = rng.uniform(-3, 3, size=(4200, 1))
    yb = np.sin(Xb[:, 0]) + 0.1 * rng.normal(size=4200)
    seen: list[str] = []
    reg = cls(5, gamma=1.0, max_iter=8, n_iter_no_change="auto", random_state=0,
              callback=lambda info: seen.append(info.problem)).fit(Xb, yb)
    assert any("2100 points" in p for p in seen)
    assert np.mean(yb <= reg.predict(Xb)) == pytest.approx(0.5, abs=0.05)


def test_lbfgs_agrees_with_scipy_and_keeps_its_memory() -> None:
    x0 = np.full(6, -1.2)
    memory = CurvatureMemory()
    run = lbfgs(lambda x: (rosen(x), rosen_der(x)), x0, memory, 500, 1e-15, 2000)
    ref = minimize(rosen, x0, jac=rosen_der, method="L-BFGS-B", options={"ftol": 1e-15})
    assert run.status == "ftol"
    np.testing.assert_allclose(run.x, ref.x, atol=1e-5)
    # the pairs carried over: a restart at the end needs at most a couple of iterations
    again = lbfgs(lambda x: (rosen(x), rosen_der(x)), run.x, memory, 50, 1e-15, 200)
    assert again.n_iter <= 2
    assert len(memory.pairs) > 0


def test_lbfgs_drops_a_direction_that_does_not_descend() -> None:
    memory = CurvatureMemory()
    # a pair of negative curvature is refused, one of positive curvature kept
    assert not memory.add(np.array([1.0, 0.0]), np.array([-1.0, 0.0]))
    assert memory.add(np.array([1.0, 0.0]), np.array([1.0, 0.0]))
    # a gradient the pairs turn uphill: the run clears them and steps down the gradient
    A = np.diag([1.0, 100.0])
    memory.pairs.clear()
    memory.pairs.append((np.array([0.0, 1.0]), np.array([0.0, -1e-3])))
    run = lbfgs(lambda x: (0.5 * x @ A @ x, A @ x), np.array([1.0, 1.0]), memory, 100, 1e-14,
                400)
    assert run.f < 1e-10


def test_distinct_rows_are_numpys_unique_rows() -> None:
    rng = np.random.default_rng(0)
    X = rng.integers(0, 3, size=(2000, 4)).astype(float)
    X[5], X[6] = -0.0, 0.0
    _, first = np.unique(X, axis=0, return_index=True)
    np.testing.assert_array_equal(distinct_rows(X), first)
    assert count_distinct(X) == len(first)
    with pytest.raises(ValueError, match="2-D"):
        distinct_rows(np.zeros(3))
