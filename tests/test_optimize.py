"""The optimiser: initial XVs, L-BFGS stopping and the fallback on solver failure."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from sparsify import RBF, CvxpyMarginal, SolverError
from sparsify.core.formulation import make_formulation
from sparsify.core.gradcheck import random_problem
from sparsify.core.marginal import Evaluation, Marginal
from sparsify.core.optimize import FLAT, initial_expansion_vectors, minimize_marginal


def test_initial_xvs_are_distinct_training_points() -> None:
    X = np.array([[0.0, 0.0]] * 5 + [[1.0, 0.0], [0.0, 1.0]])
    Z = initial_expansion_vectors(X, 3, "random", 0)
    assert len(np.unique(Z, axis=0)) == 3
    assert all(any(np.array_equal(z, x) for x in X) for z in Z)
    with pytest.raises(ValueError, match="between 1 and the number of distinct training "
                                         r"points \(3\); got 4"):
        initial_expansion_vectors(X, 4)
    with pytest.raises(ValueError, match="init must be one of"):
        initial_expansion_vectors(X, 2, "grid")


def test_kmeans_init_gives_cluster_centres() -> None:
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(c, 0.05, size=(20, 2)) for c in (0.0, 5.0)])
    Z = initial_expansion_vectors(X, 2, "kmeans", 0)
    np.testing.assert_allclose(np.sort(Z[:, 0]), [0.0, 5.0], atol=0.1)


@pytest.mark.parametrize(("n_expansion", "expected"), [(4, [2, 2]), (7, [5, 2]), (1, None)])
def test_balanced_init_shares_the_xvs_among_the_classes(n_expansion: int, expected: list[int] | None
                                                        ) -> None:
    # 2 distinct rows of class 1 among 20; the duplicate row of each class counts once
    X = np.arange(20.0).reshape(-1, 1)
    X[1] = X[0]
    y = np.where(np.isin(np.arange(20), [0, 1, 19]), 1, -1)
    for seed in range(5):
        Z = initial_expansion_vectors(X, n_expansion, "balanced", seed, y=y)
        assert len(np.unique(Z, axis=0)) == n_expansion
        assert np.isin(Z, X).all()
        n_pos = int(np.isin(Z.ravel(), [0.0, 19.0]).sum())
        if expected is None:  # one XV: either class
            assert n_pos in (0, 1)
        else:  # even where it can be, the rest from the class with rows left
            assert [n_expansion - n_pos, n_pos] == expected


def test_balanced_init_never_draws_a_row_twice_across_classes() -> None:
    # the same row with both labels (conflicting duplicates) is one candidate
    X = np.array([[0.0], [0.0], [1.0], [2.0]])
    y = np.array([1, -1, -1, 1])
    Z = initial_expansion_vectors(X, 3, "balanced", 0, y=y)
    np.testing.assert_array_equal(np.sort(Z.ravel()), [0.0, 1.0, 2.0])


def test_balanced_init_needs_labels() -> None:
    X = np.arange(6.0).reshape(-1, 1)
    with pytest.raises(ValueError, match="needs the class labels y; use init='random'"):
        initial_expansion_vectors(X, 2, "balanced", 0)
    with pytest.raises(ValueError, match="y has 5 labels but X has 6 rows"):
        initial_expansion_vectors(X, 2, "balanced", 0, y=np.ones(5))


class _FailsLater(Marginal):
    """Delegates to a real marginal and fails from the n-th evaluation on."""

    formulation_name = "svm"

    def __init__(self, inner: Marginal, fail_at: int) -> None:
        self.inner, self.fail_at, self.calls = inner, fail_at, 0

    def evaluate(self, Z, grad=True) -> Evaluation:
        self.calls += 1
        if self.calls >= self.fail_at:
            raise SolverError("The clarabel solver did not solve the 'svm' formulation")
        return self.inner.evaluate(Z, grad)


def _marginal() -> tuple[CvxpyMarginal, np.ndarray]:
    X, y = random_problem(40, 2)
    return CvxpyMarginal(make_formulation("svm", C=5.0), X, y, RBF(1.0), 4), X[:4]


def test_solver_failure_mid_run_keeps_the_best_xvs_and_warns() -> None:
    inner, Z0 = _marginal()
    with pytest.warns(ConvergenceWarning, match="solver failed.*'svm' formulation"):
        res = minimize_marginal(_FailsLater(inner, fail_at=5), Z0)
    assert res.message.startswith("stopped early")
    assert res.evaluation.value <= res.history[0]
    assert res.evaluation.value == pytest.approx(inner.evaluate(res.Z).value, rel=1e-6)


def test_solver_failure_at_the_start_is_an_error() -> None:
    inner, Z0 = _marginal()
    with pytest.raises(SolverError, match="'svm' formulation"):
        minimize_marginal(_FailsLater(inner, fail_at=1), Z0)


def test_history_is_monotone_and_evaluations_counted() -> None:
    marginal, Z0 = _marginal()
    res = minimize_marginal(marginal, Z0, max_iter=30)
    assert res.n_iter >= 1 and res.n_evaluations >= res.n_iter
    assert len(res.history) == res.n_iter + 1
    assert np.all(np.diff(res.history) <= 1e-9 * abs(res.history[0]))
    # the best W may come from a line-search point after the last accepted iterate
    assert res.evaluation.value <= res.history.min()
    assert res.evaluation.value == pytest.approx(marginal.evaluate(res.Z).value, rel=1e-7)


def test_max_iter_that_stops_lbfgs_is_a_convergence_warning_naming_the_problem() -> None:
    from sklearn.datasets import make_blobs

    from sparsify import SparseKernelLogisticRegression

    X, y = make_blobs(60, centers=2, random_state=0)
    # the start kept (lowest W) is the one reported, as for every estimator
    with pytest.warns(ConvergenceWarning, match=r"SparseKernelLogisticRegression: L-BFGS stopped "
                      r"at max_iter=2 before W\(Z\) levelled off for 1 of 1 problem \(start "
                      r"\d: last relative decrease"):
        SparseKernelLogisticRegression(3, n_init=2, max_iter=2, random_state=0).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)  # converged: no warning
        SparseKernelLogisticRegression(3, max_iter=500, random_state=0).fit(X, y)


def test_verbose_prints_a_line_per_problem_and_per_iteration_at_2(capsys) -> None:
    from sklearn.datasets import make_blobs

    from sparsify import SparseKernelLogisticRegression

    X, y = make_blobs(60, centers=2, random_state=0)
    SparseKernelLogisticRegression(3, n_init=2, max_iter=3, verbose=1, random_state=0).fit(X, y)
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2 and all(re.match(r"\[sparsify\] start \d: \d+ iterations, W = ", x)
                                   for x in lines)
    SparseKernelLogisticRegression(3, n_init=2, max_iter=3, verbose=2, random_state=0).fit(X, y)
    lines = capsys.readouterr().out.splitlines()
    assert any(re.match(r"\[sparsify\] start 2: iter +\d+/3 ", x) for x in lines)


def test_one_vs_rest_names_each_problem_in_verbose_lines_and_in_the_warning(capsys) -> None:
    from sklearn.datasets import make_blobs

    from sparsify import SparseSVC

    X, y = make_blobs(60, centers=3, random_state=0)
    with pytest.warns(ConvergenceWarning, match=r"SparseSVC: L-BFGS stopped at max_iter=1 "
                      r"before W\(Z\) levelled off for \d of 3 problems \(class \d vs rest: "):
        SparseSVC(3, max_iter=1, verbose=2, random_state=0).fit(X, y)
    lines = capsys.readouterr().out.splitlines()
    done = [x for x in lines if "iterations, W =" in x]
    assert [x.split(":")[0] for x in done] == [f"[sparsify] class {k} vs rest" for k in range(3)]
    assert any(re.match(r"\[sparsify\] class 2 vs rest: iter +1/1 ", x) for x in lines)


def test_plateau_stops_once_the_window_decreased_less_than_its_tolerance() -> None:
    """(n, rtol): L-BFGS stops at the first iteration whose last n together fell ≤ rtol·|W|."""
    X, y = random_problem(60, 2, random_state=4)
    marginal = CvxpyMarginal(make_formulation("svm", C=10.0), X, y, RBF(1.0), 4)
    Z0 = initial_expansion_vectors(X, 4, "random", 0)
    full = minimize_marginal(marginal, Z0, max_iter=60, tol=0.0)
    h = full.history
    n, rtol = 3, 0.01
    windows = [h[k - n] - h[k] <= rtol * abs(h[k]) for k in range(n, len(h))]
    assert True in windows  # the test is meaningful: the full run levels off before its end
    stop = n + windows.index(True)
    res = minimize_marginal(marginal, Z0, max_iter=60, tol=0.0, plateau=(n, rtol))
    assert res.converged and res.n_iter == stop and res.n_iter < full.n_iter
    assert "decreased by at most 0.01 (relative) over the last 3 iterations" in res.message
    np.testing.assert_allclose(res.history, h[:stop + 1])


def test_sampling_plateau_is_the_relative_sampling_error() -> None:
    from sparsify.core.optimize import sampling_plateau

    assert sampling_plateau(10_000, "auto") == (3, 0.01)
    assert sampling_plateau(4_999, "auto") is None  # small data: run to tol or max_iter
    assert sampling_plateau(100, 4) == (4, 0.1)
    assert sampling_plateau(10**6, None) is None


class _Scaled(Marginal):
    """c · W of another marginal: the same minimisers at any scale c > 0."""

    formulation_name = "kernel_ridge"

    def __init__(self, inner: Marginal, c: float) -> None:
        self.inner, self.c = inner, c

    def evaluate(self, Z, grad=True) -> Evaluation:
        ev = self.inner.evaluate(Z, grad)
        return Evaluation(self.c * ev.value, None if ev.grad is None else self.c * ev.grad,
                          ev.coef, ev.intercept, ev.solver)


def test_the_stopping_test_is_relative_below_one_too() -> None:
    """L-BFGS-B's ftol divides by max(|W|, 1); a W far below 1 must not stop it at once."""
    from sparsify.algorithms.kernel_ridge.closed_form import RidgeMarginal

    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, size=(200, 2))
    y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=200)
    inner = RidgeMarginal(0.1, X, y, RBF(1.0), 5)
    Z0 = X[:5]
    assert inner.evaluate(Z0).value > 1  # the reference run: W ≥ 1, the test is relative
    # one L-BFGS run each (rescale_every=0): with the stages the paths are the same too, but
    # their slower tail meets the two tests (relative on W, relative to W(Z0)) further apart
    reference = minimize_marginal(inner, Z0, max_iter=200, tol=1e-6, rescale_every=0)
    small = minimize_marginal(_Scaled(inner, 1e-6 / inner.evaluate(Z0).value), Z0,
                              max_iter=200, tol=1e-6, rescale_every=0)
    # the same path up to rounding (scale-invariant L-BFGS, the test made relative)
    assert reference.n_iter > 5
    assert abs(small.n_iter - reference.n_iter) <= 2
    assert small.evaluation.value / small.history[0] == pytest.approx(
        reference.evaluation.value / reference.history[0], rel=1e-4)


def _ridge_problem(n: int = 300, nz: int = 8) -> tuple[Marginal, np.ndarray]:
    from sparsify.algorithms.kernel_ridge.closed_form import RidgeMarginal

    rng = np.random.default_rng(1)
    X = rng.uniform(-2, 2, size=(n, 2))
    y = np.sin(2 * X[:, 0]) * np.cos(X[:, 1]) + 0.05 * rng.normal(size=n)
    return RidgeMarginal(1e-3, X, y, RBF(2.0), nz), X[:nz].copy()


def test_row_scales_are_powers_of_two_from_beta() -> None:
    from sparsify.core.optimize import row_scales

    Z0 = np.ones((4, 3))
    d = row_scales(np.array([16.0, 1.0, 0.0, -1e-9]), Z0).ravel()
    # ‖β_j‖ floored at 1e-3 of the largest, d_j ∝ 1/√‖β_j‖ rounded to a power of two
    assert np.array_equal(d, np.exp2(np.round(np.log2(d))))
    assert d[0] < d[1] < d[2] == d[3]
    assert d[1] / d[0] == 4.0
    # K outputs: the row's norm; β = 0 or none: every scale is coordinate_scale's
    assert np.array_equal(row_scales(np.array([[3.0, 4.0], [5.0, 0.0]]), Z0[:2]).ravel(),
                          [1.0, 1.0])
    assert np.array_equal(row_scales(np.zeros(4), Z0 * 1e100),
                          np.full((4, 1), 2.0 ** round(np.log2(1e100))))


def test_a_fit_within_its_first_stage_runs_as_one_lbfgs_run() -> None:
    marginal, Z0 = _ridge_problem()
    one = minimize_marginal(marginal, Z0, max_iter=15, tol=1e-12, rescale_every=0)
    staged = minimize_marginal(marginal, Z0, max_iter=15, tol=1e-12, rescale_every=20)
    assert one.n_iter == staged.n_iter == 15
    np.testing.assert_array_equal(one.history, staged.history)
    np.testing.assert_array_equal(one.Z, staged.Z)
    assert one.n_stages == staged.n_stages == 1


def test_stages_share_the_budget_the_history_and_the_stopping_tests() -> None:
    marginal, Z0 = _ridge_problem()
    seen: list[int] = []
    res = minimize_marginal(marginal, Z0, max_iter=50, tol=1e-14, rescale_every=7,
                            callback=lambda info: seen.append(info.iteration))
    # one iteration count across the stages, W never rising at a stage's restart
    assert res.n_stages > 1
    assert res.n_iter == 50 and seen == list(range(1, 51))
    assert len(res.history) == 51 and np.all(np.diff(res.history) <= 0)
    assert res.n_evaluations <= 4 * 50 + 20
    # the XVs returned are where the evaluation returned was made: Z = U·d is exact
    assert marginal.evaluate(res.Z).value == res.evaluation.value
    stopped = minimize_marginal(marginal, Z0, max_iter=50, tol=1e-14, rescale_every=7,
                                callback=lambda info: info.iteration >= 10)
    assert stopped.n_iter == 10 and stopped.stop == "callback"


class _Stiff(Marginal):
    """W(Z) = Σ_j |β_j| ‖z_j − c_j‖²: the curvature along z_j is |β_j|, as Lemma 1's
    gradient makes it for a fitted model, with β over four decades."""

    formulation_name = "svm"

    def __init__(self, nz: int = 30) -> None:
        rng = np.random.default_rng(0)
        self.beta = np.logspace(-2, 2, nz) * rng.choice([-1.0, 1.0], nz)
        self.c = rng.normal(size=(nz, 2))

    def evaluate(self, Z, grad=True) -> Evaluation:
        w = np.abs(self.beta)[:, None]
        return Evaluation(float(np.sum(w * (Z - self.c) ** 2)), 2 * w * (Z - self.c),
                          self.beta, 0.0, "toy")


def test_scaling_the_xvs_by_beta_evens_out_their_curvature() -> None:
    """Once the scales are read (iteration 20), the toy W is a round bowl in U = Z / d:
    L-BFGS ends at its minimum where one run on Z is still creeping along the flat XVs."""
    marginal = _Stiff()
    Z0 = np.zeros((30, 2))
    plain = minimize_marginal(marginal, Z0, max_iter=40, tol=1e-15, rescale_every=0)
    staged = minimize_marginal(marginal, Z0, max_iter=40, tol=1e-15, rescale_every=20)
    np.testing.assert_array_equal(plain.history[:21], staged.history[:21])  # the same first stage
    assert (plain.n_stages, staged.n_stages) == (1, 2)
    assert staged.evaluation.value < 1e-6 * plain.evaluation.value


class _Coupled(Marginal):
    """W(Z) = ½ (z − c)ᵀ A (z − c), A dense of condition 100, with β over four decades
    reversing its order every ten evaluations: the scales move at nearly every reading, and
    the quadratic's curvature is only learnt from L-BFGS's pairs."""

    formulation_name = "svm"

    def __init__(self, nz: int = 5) -> None:
        rng = np.random.default_rng(1)
        q, _ = np.linalg.qr(rng.normal(size=(2 * nz, 2 * nz)))
        self.A = (q * np.logspace(0, 2, 2 * nz)) @ q.T
        self.c = rng.normal(size=2 * nz)
        self.patterns = np.logspace(-2, 2, nz), np.logspace(2, -2, nz)
        self.calls = 0

    def evaluate(self, Z, grad=True) -> Evaluation:
        self.calls += 1
        r = Z.ravel() - self.c
        coef = self.patterns[(self.calls // 10) % 2]
        return Evaluation(0.5 * float(r @ self.A @ r), (self.A @ r).reshape(Z.shape), coef,
                          0.0, "toy")


def test_the_pairs_carry_over_to_new_scales(monkeypatch) -> None:
    """With its pairs carried to the new coordinates L-BFGS goes on to W's minimum (0, to
    rounding); forgetting them at each change (as a restart does) leaves it far above."""
    from sparsify.core.lbfgs import Pairs

    Z0 = np.zeros((5, 2))
    carried = minimize_marginal(_Coupled(), Z0, max_iter=60, tol=1e-15, rescale_every=5)
    monkeypatch.setattr(Pairs, "rescale", lambda self, ratio: self.clear())
    forgotten = minimize_marginal(_Coupled(), Z0, max_iter=60, tol=1e-15, rescale_every=5)
    assert carried.n_stages > 5 and forgotten.n_stages > 5
    np.testing.assert_array_equal(carried.history[:6], forgotten.history[:6])
    assert carried.evaluation.value < 1e-6 * forgotten.evaluation.value


class _WrongGradient(_Stiff):
    """_Stiff whose gradient points uphill once ``flipped``: no step lowers W along it."""

    flipped = False

    def evaluate(self, Z, grad=True) -> Evaluation:
        ev = super().evaluate(Z, grad)
        return Evaluation(ev.value, -ev.grad, ev.coef, 0.0, "toy") if self.flipped else ev


def test_a_line_search_that_finds_no_lower_w_ends_the_run_at_the_best_xvs() -> None:
    marginal = _WrongGradient()

    def flip(info) -> None:
        marginal.flipped = info.iteration >= 20

    res = minimize_marginal(marginal, np.zeros((30, 2)), max_iter=60, tol=1e-15, callback=flip)
    # the scales move at iteration 20 (β spans four decades): our L-BFGS goes on from there,
    # finds no lower W along the flipped gradient, forgets its pairs, finds none along -g
    assert res.n_stages == 2 and 20 <= res.n_iter < 60
    assert res.message.startswith("ABNORMAL") and res.stop == "converged"
    assert res.evaluation.value == res.history[-1] == res.history.min()


class _Plateau(Marginal):
    """W(z) = 1 − ½ exp(−‖z − c‖² / 8), one XV, c at distance 14 from the start: W is flat
    there to 10⁻¹¹ (the gradient of a hinge's corner, β of rounding's size), and its basin
    (W = ½) lies 3-4 unit steps away."""

    formulation_name = "svm"
    c = np.array([[14.0, 0.0]])

    def evaluate(self, Z, grad=True) -> Evaluation:
        bump = 0.5 * np.exp(-float(np.sum((Z - self.c) ** 2)) / 8.0)
        return Evaluation(1.0 - bump, bump * (Z - self.c) / 4.0, np.array([bump]), 0.0, "toy")


def test_a_flat_start_takes_a_step_long_enough_to_leave_the_flat() -> None:
    """L-BFGS-B's unit first step stays on the flat and its line search ends the run there;
    steps of 1, 2, 4, … along the gradient reach the basin, and L-BFGS goes on to its
    minimum. The step is the run's first iteration, its evaluations in the count."""
    res = minimize_marginal(_Plateau(), np.zeros((1, 2)), max_iter=50, tol=1e-9)
    assert res.history[0] > 1 - 1e-10
    assert res.evaluation.value == pytest.approx(0.5, abs=1e-9)
    np.testing.assert_allclose(res.Z, _Plateau.c, atol=1e-3)
    # steps 1, 2 (flat), 4, 8, 16 (falling), 32 (up again): the first iteration ends at 16
    assert res.history[1] == pytest.approx(1 - 0.5 * np.exp(-4 / 8), rel=1e-12)
    assert np.all(np.diff(res.history) <= 0) and res.n_evaluations >= 7


class _TwoBasins(Marginal):
    """W(z) = 1 − 0.2 exp(−‖z − a‖² / 8) − 0.5 exp(−‖z − b‖² / 8), a at distance 14 and b at
    18 on the other side: flat at the start, its gradient pointing to the shallow basin a."""

    formulation_name = "svm"
    a, b = np.array([[14.0, 0.0]]), np.array([[-18.0, 0.0]])
    #: (depth, centre) of each basin
    bumps: tuple[tuple[float, np.ndarray], ...] = ((0.2, a), (0.5, b))

    def evaluate(self, Z, grad=True) -> Evaluation:
        bumps = [(h * np.exp(-float(np.sum((Z - c) ** 2)) / 8.0), c) for h, c in self.bumps]
        gradient = sum(bump * (Z - c) / 4.0 for bump, c in bumps)
        depth = sum(bump for bump, _ in bumps)
        return Evaluation(1.0 - depth, gradient, np.array([depth]), 0.0, "toy")


def test_a_flat_start_walks_both_ways_and_takes_the_lower() -> None:
    """The gradient's sign at a flat is the stopped iterate's: walked along it alone, the
    step ends at the shallow basin (W = 0.8); both ways, the deeper one (W = 0.5)."""
    marginal = _TwoBasins()
    W0, g = marginal.evaluate(np.zeros((1, 2))).value, marginal.evaluate(np.zeros((1, 2))).grad
    assert g[0, 0] < 0 and np.linalg.norm(g) < 1e-10 * W0  # flat, pointing towards a
    res = minimize_marginal(marginal, np.zeros((1, 2)), max_iter=50, tol=1e-9)
    assert res.evaluation.value == pytest.approx(0.5, abs=1e-6)
    np.testing.assert_allclose(res.Z, _TwoBasins.b, atol=1e-2)
    # the first iteration: the 16-unit step towards b (distance 2 from it)
    assert res.history[1] == pytest.approx(1 - 0.5 * np.exp(-4 / 8), rel=1e-9)


class _ShallowThenDeep(_TwoBasins):
    """Flat at the start, the gradient pointing to a basin at x = −12 (depth 0.2); the other
    way a shallow dip at x = 12 (depth 0.01) before a deep basin at x = 32 (depth 0.5)."""

    bumps = ((0.2, np.array([[-12.0, 0.0]])), (0.01, np.array([[12.0, 0.0]])),
             (0.5, np.array([[32.0, 0.0]])))

    def __init__(self) -> None:
        self.seen: list[float] = []

    def evaluate(self, Z, grad=True) -> Evaluation:
        self.seen.append(float(Z[0, 0]))
        return super().evaluate(Z, grad)


def test_each_walk_off_a_flat_stops_where_it_stops_falling() -> None:
    """The walk against the gradient follows the same rule as the walk along it: once W has
    fallen and then stops falling, it ends (at 16 units, past the dip at 12), so a flat start
    costs the two walks' evaluations and no more, and the fit goes on from the lower end."""
    marginal = _ShallowThenDeep()
    g = marginal.evaluate(np.zeros((1, 2))).grad
    assert g[0, 0] > 0 and np.linalg.norm(g) < FLAT * 1.0  # flat, pointing to x = −12
    marginal.seen.clear()
    res = minimize_marginal(marginal, np.zeros((1, 2)), max_iter=50, tol=1e-9)
    walks = [0.0, -1.0, -2.0, -4.0, -8.0, -16.0, 1.0, 2.0, 4.0, 8.0, 16.0]
    np.testing.assert_allclose(marginal.seen[:len(walks)], walks, atol=1e-12)
    assert max(marginal.seen) < 17.0  # never as far as the deep basin at 32
    assert res.evaluation.value == pytest.approx(0.8, abs=1e-6)  # the basin at −12


def test_a_start_that_is_not_flat_is_left_to_lbfgs() -> None:
    """Away from a flat (the gradient above √ε of W), no step is tried: the run is
    scipy's L-BFGS-B from the start, bit for bit."""
    from scipy.optimize import minimize

    marginal, Z0 = _ridge_problem()

    def fun(z: np.ndarray) -> tuple[float, np.ndarray]:
        ev = marginal.evaluate(z.reshape(Z0.shape))
        return ev.value, ev.grad.ravel()

    assert marginal.evaluate(Z0).value > 1  # W itself is L-BFGS-B's objective then
    res = minimize_marginal(marginal, Z0, max_iter=10, tol=1e-12, rescale_every=0)
    ref = minimize(fun, Z0.ravel(), jac=True, method="L-BFGS-B",
                   options={"maxiter": 10, "ftol": 1e-12, "gtol": 1e-10})
    np.testing.assert_array_equal(res.Z.ravel(), ref.x)


@pytest.mark.parametrize("seed", [0, 1, 3])
def test_an_svm_whose_initial_xv_is_dead_leaves_the_majority_model(seed: int) -> None:
    """A quarter of positives along a direction, one XV at a training point, a nearly
    linear kernel: β = 0 is optimal there (W = 2 · C · the positives, the majority model)
    and W is flat around it. The fit leaves it to a model that separates; with L-BFGS-B's
    unit first step alone these seeds ended at the majority model."""
    from sparsify import SparseSVC

    rng = np.random.RandomState(0)
    X = rng.randn(600, 5)
    score = X @ np.array([1.0, 0.5, 0.0, 0.0, 0.0])
    y = np.where(score > np.quantile(score, 0.75), 1, -1)
    flip = rng.rand(600) < 0.1
    y[flip] = -y[flip]
    model = SparseSVC(1, C=10, gamma=0.01, random_state=seed).fit(X, y)
    history = model.objective_history_[0]
    assert history[0] == pytest.approx(2 * 10 * np.sum(y == 1), rel=1e-9)  # flat: β = 0
    assert history[-1] < 0.9 * history[0]
    assert model.score(X, y) > np.mean(y == -1) + 0.05


class _PlateauThatFailsFarOut(_Plateau):
    """_Plateau whose solver fails beyond distance 6 from the start."""

    def evaluate(self, Z, grad=True) -> Evaluation:
        if np.linalg.norm(Z) > 6:
            raise SolverError("the toy solver fails far out")
        return super().evaluate(Z, grad)


def test_a_solver_that_fails_during_the_flat_step_ends_the_step_not_the_fit() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        res = minimize_marginal(_PlateauThatFailsFarOut(), np.zeros((1, 2)), max_iter=5,
                                tol=1e-5)
    # steps 1, 2, 4 stay on the flat to 10⁻⁵ (tol), 8 fails: L-BFGS-B goes on from the start,
    # no warning; the lowest W evaluated (the 4-unit step's, 2·10⁻⁶ lower) is kept as ever
    assert res.stop == "converged" and res.n_evaluations >= 4
    assert res.history[0] - 1e-5 < res.evaluation.value <= res.history[0]


def test_the_flat_step_reports_the_gradient_of_the_point_it_took() -> None:
    seen = []
    minimize_marginal(_Plateau(), np.zeros((1, 2)), max_iter=3, tol=1e-9,
                      callback=lambda info: seen.append((info.Z.copy(), info.grad_norm)))
    Z, norm = seen[0]  # the first iteration: the 16-unit step, not the last one tried (32)
    assert norm == pytest.approx(np.linalg.norm(_Plateau().evaluate(Z).grad), rel=1e-12)
