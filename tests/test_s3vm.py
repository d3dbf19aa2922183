"""The semi-supervised SVM: its convex stage (the "s3vm" formulation) and SemiSupervisedSVC."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pytest
from sklearn.datasets import make_moons
from sklearn.svm import SVC
from sklearn.utils.estimator_checks import parametrize_with_checks

from sparsify import RBF, CvxpyMarginal, Linear, Polynomial, SumKernel
from sparsify.algorithms.s3vm.engines import _Sparse
from sparsify.algorithms.s3vm.estimator import SemiSupervisedSVC
from sparsify.algorithms.s3vm.formulation import S3VM, LowRankSVMMarginal
from sparsify.algorithms.s3vm.labels import switch_labels
from sparsify.algorithms.svm.formulation import SVM
from sparsify.core.conic import make_marginal
from sparsify.core.gradcheck import check_gradient, random_problem
from sparsify.core.optimize import initial_expansion_vectors
from sparsify.kernels import make_kernel
from sparsify.kernels.manifold import ManifoldKernel
from sparsify.plugins.registry import get_registry
from sparsify.svm_dual import SVMDualMarginal

# --- the convex stage -------------------------------------------------------------------------


def _stage(n: int = 40, seed: int = 0) -> tuple[np.ndarray, np.ndarray, S3VM]:
    """A small problem: a third of the points labeled, the rest with temporary labels."""
    X, y = random_problem(n, 2, random_state=seed)
    labeled = np.zeros(n, dtype=bool)
    labeled[:: 3] = True
    return X, y, S3VM(C=3.0, C_star=0.3, labeled=labeled)


def _kernels(X: np.ndarray) -> dict[str, object]:
    """The three kinds of convex stage: one kernel, a fixed-θ MKL sum, a manifold kernel."""
    base = RBF(0.7)
    return {
        "single": base,
        "mkl": SumKernel((RBF(0.3), RBF(2.0), Polynomial(0.5, 2, 1.0)), (0.6, 0.5, 0.62)),
        "manifold": ManifoldKernel(base, X, n_neighbors=4, gamma_ratio=3.0),
        "mkl+manifold": SumKernel((base, ManifoldKernel(RBF(2.0), X, n_neighbors=4)),
                                  (0.8, 0.6)),
    }


def test_s3vm_is_registered_through_its_entry_point_and_serves_the_estimator() -> None:
    pyproject = (Path(__file__).resolve().parents[1] / "pyproject.toml").read_text()
    assert 's3vm = "sparsify.algorithms.s3vm.plugin"' in pyproject
    entry = get_registry().entries["formulation"]["s3vm"]
    assert entry.obj is S3VM and entry.distribution == "sparsify"
    from sparsify.core.estimator import estimator_for

    assert estimator_for("s3vm") == (SemiSupervisedSVC, {"unlabeled": 0})


def test_costs_are_c_on_labeled_and_c_star_on_unlabeled_points() -> None:
    form = S3VM(C=2.0, C_star=0.01, labeled=[True, False, True])
    np.testing.assert_array_equal(form.costs(3), [2.0, 0.01, 2.0])
    np.testing.assert_array_equal(S3VM(C=2.0).costs(2), [2.0, 2.0])
    with pytest.raises(ValueError, match="labeled mask has shape"):
        form.costs(4)
    with pytest.raises(ValueError, match=r"The 'C_star' parameter of S3VM must be a float in "
                       r"the range \(0.0, inf\)\. Got 0.0 instead\."):
        S3VM(C_star=0.0)


def test_all_labeled_is_the_svm() -> None:
    X, y = random_problem(30, 2)
    kernel = make_kernel("rbf", X)
    Z = X[:5] + 0.01
    ours = CvxpyMarginal(S3VM(C=2.0, C_star=1e-3), X, y, kernel, 5, solver="clarabel").evaluate(Z)
    svm = CvxpyMarginal(SVM(2.0), X, y, kernel, 5, solver="clarabel").evaluate(Z)
    assert ours.value == pytest.approx(svm.value, rel=1e-7)


def test_per_point_costs_change_the_solution() -> None:
    X, y, form = _stage()
    kernel = RBF(0.7)
    Z = initial_expansion_vectors(X, 6, "random", 0)
    weighted = CvxpyMarginal(form, X, y, kernel, 6, solver="clarabel").evaluate(Z, grad=False)
    plain = CvxpyMarginal(SVM(3.0), X, y, kernel, 6, solver="clarabel").evaluate(Z, grad=False)
    assert weighted.value < plain.value - 1e-3  # the unlabeled points cost 10× less


@pytest.mark.parametrize("kind", ["single", "mkl", "manifold", "mkl+manifold"])
@pytest.mark.parametrize("solver", ["clarabel", "auto"])
def test_gradient_of_every_convex_stage_matches_central_differences(kind: str,
                                                                    solver: str) -> None:
    X, y, form = _stage()
    kernel = _kernels(X)[kind]
    Z = initial_expansion_vectors(X, 4, "random", 1) + 0.05
    result = check_gradient(form, kernel, solver=solver, X=X, y=y, Z=Z, tol=1e-10)
    assert result.solver == ("svm-dual" if solver == "auto" else "clarabel")
    assert result.passed(1e-6), result.as_dict()


@pytest.mark.parametrize("kind", ["single", "mkl", "manifold"])
def test_fast_path_agrees_with_the_generic_path(kind: str) -> None:
    X, y, form = _stage(50, seed=2)
    kernel = _kernels(X)[kind]
    fast = make_marginal(form, X, y, kernel, 6, "auto", 1e-10)
    assert isinstance(fast, SVMDualMarginal)
    generic = CvxpyMarginal(form, X, y, kernel, 6, solver="clarabel", tol=1e-10)
    rng = np.random.default_rng(0)
    Z = initial_expansion_vectors(X, 6, "random", 0)
    for _ in range(3):  # the later evaluations are warm-started
        ev, ref = fast.evaluate(Z), generic.evaluate(Z)
        assert ev.value == pytest.approx(ref.value, rel=1e-6)
        np.testing.assert_allclose(ev.grad, ref.grad, atol=1e-5 * np.abs(ref.grad).max())
        Z = Z + 0.02 * rng.normal(size=Z.shape)


@pytest.mark.parametrize("kind", ["single", "mkl", "manifold"])
def test_low_rank_libsvm_marginal_agrees_with_the_generic_path(kind: str) -> None:
    X, y, form = _stage(50, seed=5)
    kernel = _kernels(X)[kind]
    Z = initial_expansion_vectors(X, 6, "random", 2) + 0.03
    ev = LowRankSVMMarginal(form, X, y, kernel, 6, tol=1e-10).evaluate(Z)
    ref = CvxpyMarginal(form, X, y, kernel, 6, solver="clarabel", tol=1e-10).evaluate(Z)
    assert ev.solver == "libsvm" and ev.value == pytest.approx(ref.value, rel=1e-6)
    np.testing.assert_allclose(ev.grad, ref.grad, atol=1e-5 * np.abs(ref.grad).max())


def test_a_stalled_fast_path_answers_through_libsvm(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import sparsify.svm_dual.marginal as svm_fast

    monkeypatch.setattr(svm_fast, "warm_active_set", lambda *args, **kwargs: None)
    monkeypatch.setattr(svm_fast, "interior_point", lambda *args, **kwargs: None)
    X, y, form = _stage(40, seed=6)
    fast = form.marginal(X, y, RBF(0.7), 4, "auto", 1e-10)
    Z = X[:4] + 0.05
    ev = fast.evaluate(Z)
    assert fast.n_generic == 1 and ev.solver == "libsvm"
    ref = CvxpyMarginal(form, X, y, RBF(0.7), 4, solver="clarabel", tol=1e-10).evaluate(Z)
    assert ev.value == pytest.approx(ref.value, rel=1e-6)


def test_full_problem_by_libsvm_agrees_with_the_generic_path() -> None:
    """Dense convex stage: XVs = all training points, libsvm against cvxpy with Z = X."""
    X, y, form = _stage(40, seed=3)
    kernel = RBF(0.7)
    sol = form.solve_precomputed(kernel(X, X), y, tol=1e-10)
    ref = CvxpyMarginal(form, X, y, kernel, len(X), solver="clarabel",
                        tol=1e-10).evaluate(X, grad=False)
    assert sol.value == pytest.approx(ref.value, rel=1e-6)
    np.testing.assert_allclose(sol.outputs, kernel(X, X) @ ref.coef + ref.intercept, atol=1e-4)


# --- label switching ------------------------------------------------------------------------


def test_switching_lowers_the_loss_and_keeps_the_balance() -> None:
    rng = np.random.default_rng(0)
    for _ in range(20):
        y = rng.choice([-1.0, 1.0], size=30)
        g = 2.0 * rng.normal(size=30)
        cand = np.arange(5, 30)
        before = y.copy()
        k = switch_labels(y, g, cand)
        np.testing.assert_array_equal(y[:5], before[:5])  # labeled points never switch
        assert (y > 0).sum() == (before > 0).sum()
        assert np.count_nonzero(y != before) == 2 * k
        loss = np.maximum(0.0, 1 - y * g).sum()
        assert loss <= np.maximum(0.0, 1 - before * g).sum() - (1e-6 if k else 0.0)
    # a second call at the same outputs finds nothing left to switch
    y = rng.choice([-1.0, 1.0], size=40)
    g = rng.normal(size=40)
    switch_labels(y, g, np.arange(40))
    assert switch_labels(y, g, np.arange(40)) == 0


def test_exact_rule_refuses_a_swap_that_raises_the_loss() -> None:
    # ξ_i + ξ_j = 4 > 2 (S3VMlight's rule would swap), yet the loss goes from 4 to 4.5
    y = np.array([1.0, -1.0])
    assert switch_labels(y, np.array([-3.0, -3.5]), np.arange(2)) == 0


# --- the estimator --------------------------------------------------------------------------


def _expected_failures(estimator: SemiSupervisedSVC) -> dict[str, str]:
    return {
        "check_classifiers_classes": (
            "fits y with the classes -1 and 1 only; with the default unlabeled=-1 that y is "
            "ambiguous (every -1 would be unlabeled), which SemiSupervisedSVC rejects with a "
            "ValueError by design (see test_bad_input_is_a_clear_error)"
        ),
    }


@parametrize_with_checks(
    [SemiSupervisedSVC(), SemiSupervisedSVC(n_expansion=3, max_iter=3, random_state=0)],
    expected_failed_checks=_expected_failures,
)
def test_scikit_learn_conformance(estimator, check) -> None:  # type: ignore[no-untyped-def]
    check(estimator)


def _moons(n_labeled: int = 10, seed: int = 0, n: int = 200):  # type: ignore[no-untyped-def]
    X, y_true = make_moons(n, noise=0.1, random_state=seed)
    rng = np.random.default_rng(seed)
    lab = np.concatenate([rng.choice(np.flatnonzero(y_true == c), n_labeled // 2, replace=False)
                          for c in (0, 1)])
    y = np.full(n, -1)
    y[lab] = y_true[lab]
    return X, y, y_true


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_unlabeled_points_beat_the_supervised_svm_on_two_moons(seed: int) -> None:
    X, y, y_true = _moons(seed=seed)
    unl = y == -1
    clf = SemiSupervisedSVC(C=10.0, gamma=2.0).fit(X, y)
    sup = SVC(C=10.0, gamma=2.0).fit(X[~unl], y[~unl])
    ours = np.mean(clf.transduction_[unl] != y_true[unl])
    theirs = np.mean(sup.predict(X[unl]) != y_true[unl])
    assert ours <= theirs and ours < 0.03
    assert np.mean(clf.predict(X[unl]) != y_true[unl]) < 0.03
    assert clf.n_switches_ > 0


@pytest.mark.parametrize("params", [{}, {"n_expansion": 6, "max_iter": 3, "random_state": 0},
                                    {"optimizer": "smooth-qn"}])
def test_it_is_on_the_fit_driver_with_its_fitted_attribute_shapes(params: dict) -> None:
    from sparsify.algorithms.s3vm import estimator
    from sparsify.algorithms.s3vm.smooth import s3vm_objective
    from sparsify.core.estimator import SparseKernelEstimator

    assert issubclass(SemiSupervisedSVC, SparseKernelEstimator)
    assert SemiSupervisedSVC.formulation_class is S3VM
    assert SemiSupervisedSVC()._formulation_type() is S3VM
    # the moved names are still importable from the estimator module
    assert estimator.switch_labels is switch_labels and estimator.s3vm_objective is s3vm_objective
    X, y, _ = _moons(seed=1, n=80)
    clf = SemiSupervisedSVC(C=10.0, gamma=2.0, **params).fit(X, y)
    nz = len(clf.expansion_vectors_)
    assert clf.n_expansion_.shape == clf.n_iter_.shape == clf.objective_.shape == (1,)
    assert clf.n_expansion_[0] == nz and clf.expansion_coef_.shape == (1, nz)
    assert clf.coef_ is clf.expansion_coef_ and clf.full_n_support_ is None
    (history,) = clf.objective_history_
    assert len(history) == clf.n_iter_[0] and history[-1] == clf.objective_[0]
    with pytest.raises(ValueError, match="solver"):
        SemiSupervisedSVC(solver="no-such-solver").fit(X, y)


def test_transduction_keeps_given_labels_and_the_balance() -> None:
    X, y, _ = _moons()
    unl = y == -1
    clf = SemiSupervisedSVC(C=10.0, gamma=2.0, balance=0.3).fit(X, y)
    np.testing.assert_array_equal(clf.transduction_[~unl], y[~unl])
    assert (clf.transduction_[unl] == 1).sum() == round(0.3 * unl.sum())
    assert clf.balance_ == 0.3
    assert SemiSupervisedSVC(C=10.0, gamma=2.0).fit(X, y).balance_ == 0.5


def test_without_unlabeled_points_it_is_the_svm() -> None:
    X, y_true = make_moons(80, noise=0.2, random_state=3)
    clf = SemiSupervisedSVC(C=5.0, gamma=1.5).fit(X, y_true)
    svc = SVC(C=5.0, gamma=1.5, tol=1e-8).fit(X, y_true)
    np.testing.assert_allclose(clf.decision_function(X), svc.decision_function(X), atol=1e-6)
    np.testing.assert_array_equal(clf.n_expansion_, [svc.n_support_.sum()])
    np.testing.assert_array_equal(clf.transduction_, y_true)


@pytest.mark.parametrize("marker", [0, np.nan])
def test_classes_minus_one_and_plus_one_with_another_marker(marker: float) -> None:
    X, y, y_true = _moons(seed=1)
    pm = np.where(y_true == 1, 1.0, -1.0)
    y_pm = np.where(y == -1, marker, pm)
    clf = SemiSupervisedSVC(C=10.0, gamma=2.0, unlabeled=marker).fit(X, y_pm)
    ref = SemiSupervisedSVC(C=10.0, gamma=2.0).fit(X, y)
    np.testing.assert_array_equal(clf.classes_, [-1.0, 1.0])
    np.testing.assert_array_equal(clf.transduction_, np.where(ref.transduction_ == 1, 1, -1))
    np.testing.assert_allclose(clf.decision_function(X), ref.decision_function(X))


def test_string_labels_and_marker() -> None:
    X, y, _ = _moons(seed=2)
    names = np.array(["left", "right", "?"], dtype=object)[np.where(y == -1, 2, y)]
    clf = SemiSupervisedSVC(C=10.0, gamma=2.0, unlabeled="?").fit(X, names)
    assert list(clf.classes_) == ["left", "right"]
    assert set(clf.transduction_) == {"left", "right"}
    assert set(clf.predict(X)) <= {"left", "right"}


def test_bad_input_is_a_clear_error() -> None:
    X, y, _ = _moons()
    with pytest.raises(ValueError, match=r"only the values -1 and 1.*unlabeled=0"):
        SemiSupervisedSVC().fit(X, np.where(y == 0, 1, -1))
    with pytest.raises(ValueError, match="needs labeled points of 2 classes; got 1 class"):
        SemiSupervisedSVC().fit(X, np.where(y == 1, -1, y))  # no labeled point of class 1
    with pytest.raises(ValueError, match="All 200 points are unlabeled"):
        SemiSupervisedSVC().fit(X, np.full(200, -1))
    with pytest.raises(ValueError, match=r"'balance' parameter .* range \(0.0, 1.0\)"):
        SemiSupervisedSVC(balance=1.0).fit(X, y)
    with pytest.raises(ValueError, match="'balance' parameter"):
        SemiSupervisedSVC(balance=0.0).fit(X, y)
    with pytest.raises(ValueError, match=r"'p' parameter .* range \[1.0, inf\)"):
        SemiSupervisedSVC(p=0.5, kernels=["rbf", "linear"]).fit(X, y)
    with pytest.raises(ValueError, match="Only binary classification"):
        SemiSupervisedSVC().fit(X, np.where(y == -1, -1, np.arange(200) % 3))
    with pytest.raises(ValueError, match="entry of kernels"):
        SemiSupervisedSVC(kernels=[RBF(1.0), 3]).fit(X, y)
    with pytest.raises(ValueError, match=r"more than|only .* distinct"):
        SemiSupervisedSVC(n_expansion=500).fit(X, y)


def test_dense_fit_agrees_with_the_generic_path() -> None:
    X, y, _ = _moons(n_labeled=6, seed=4, n=40)
    fast = SemiSupervisedSVC(C=10.0, gamma=2.0, solver_tol=1e-10).fit(X, y)
    # Clarabel stops short of 1e-9 on this full-rank (Nz = N) problem
    generic = SemiSupervisedSVC(C=10.0, gamma=2.0, solver="clarabel",
                                solver_tol=1e-8).fit(X, y)
    np.testing.assert_allclose(fast.objective_, generic.objective_, rtol=1e-6)
    np.testing.assert_array_equal(fast.transduction_, generic.transduction_)
    np.testing.assert_allclose(fast.decision_function(X), generic.decision_function(X),
                               atol=1e-4)


def test_sparse_fit_agrees_with_the_generic_path() -> None:
    X, y, _ = _moons(n_labeled=6, seed=5, n=40)
    params = {"C": 10.0, "gamma": 2.0, "n_expansion": 5, "max_iter": 4, "random_state": 0,
              "solver_tol": 1e-10}
    fast = SemiSupervisedSVC(**params).fit(X, y)
    generic = SemiSupervisedSVC(**params, solver="clarabel").fit(X, y)
    np.testing.assert_allclose(fast.objective_, generic.objective_, rtol=1e-5)
    np.testing.assert_array_equal(fast.transduction_, generic.transduction_)


@pytest.mark.parametrize("kernel", [RBF(2.0), SumKernel((RBF(0.5), RBF(4.0)), (0.7, 0.5))])
def test_fixed_xv_resolve_by_libsvm_agrees_with_the_generic_path(kernel) -> None:  # type: ignore[no-untyped-def]
    """The re-solves after label switching (XVs fixed) use libsvm on K_XZ K_ZZ⁻¹ K_ZX."""
    X, y, form = _stage(60, seed=4)
    est = SemiSupervisedSVC(C=form.C, n_expansion=7, solver_tol=1e-10)
    engine = _Sparse(est._stage_settings(), X, [kernel], form.labeled, 7, seed=0)
    state = engine.solve(np.ones(1), y.astype(float), form.C_star, move=False)
    ref = CvxpyMarginal(form, X, y, kernel, 7, solver="clarabel",
                        tol=1e-10).evaluate(engine.Z, grad=False)
    assert state.value == pytest.approx(ref.value, rel=1e-6)
    np.testing.assert_allclose(state.coef, ref.coef, atol=1e-4 * np.abs(ref.coef).max())
    np.testing.assert_allclose(state.outputs, kernel(X, engine.Z) @ state.coef + state.intercept,
                               atol=1e-8)


def test_sparse_version_moves_free_xvs_and_keeps_data_xvs() -> None:
    X, y, y_true = _moons(seed=0)
    unl = y == -1
    free = SemiSupervisedSVC(C=10.0, gamma=2.0, n_expansion=8, max_iter=15,
                             random_state=0).fit(X, y)
    data = SemiSupervisedSVC(C=10.0, gamma=2.0, n_expansion=8, xv="data",
                             random_state=0).fit(X, y)
    assert free.expansion_vectors_.shape == (8, 2) and free.n_expansion_.tolist() == [8]
    on_data = [np.any(np.all(np.isclose(X, z), axis=1)) for z in data.expansion_vectors_]
    assert all(on_data)
    assert not any(np.any(np.all(np.isclose(X, z), axis=1)) for z in free.expansion_vectors_)
    assert free.objective_[0] < data.objective_[0]  # moving the XVs lowers the objective
    assert np.mean(free.transduction_[unl] != y_true[unl]) < 0.05
    ratio = SemiSupervisedSVC(C=10.0, gamma=2.0, n_expansion=0.05, max_iter=2,
                              random_state=0).fit(X, y)
    assert ratio.n_expansion_.tolist() == [10]


def test_mkl_learns_lp_norm_weights() -> None:
    X, y, _ = _moons(seed=1)
    kernels = SemiSupervisedSVC.default_mkl_kernels(sigmas=[0.1, 0.5, 1.0])
    for p, check in [(1.0, lambda t: t.min() < 1e-2), (5.0, lambda t: t.min() > 0.3)]:
        clf = SemiSupervisedSVC(C=10.0, kernels=kernels, p=p).fit(X, y)
        theta = clf.kernel_weights_
        assert theta.shape == (6,) and np.all(theta >= 0)
        assert np.sum(theta ** p) ** (1 / p) == pytest.approx(1.0, rel=1e-9)
        assert check(theta), theta
        assert isinstance(clf.kernel_, SumKernel) and clf.kernel_.weights == tuple(theta)
        assert clf.n_mkl_iter_ >= 1


def test_kernel_entries_are_resolved() -> None:
    X, y, _ = _moons(seed=3, n=60)
    clf = SemiSupervisedSVC(kernels=["rbf", "manifold", "manifold:linear", Linear(),
                                     ManifoldKernel(RBF(1.0), n_neighbors=3),
                                     {"kernel": RBF(0.3), "manifold": {"n_neighbors": 6}},
                                     {"kernel": "poly", "manifold": None}],
                            manifold={"n_neighbors": 4, "gamma_ratio": 2.0}, gamma=2.0,
                            mkl_max_iter=1, normalize_kernels=False).fit(X, y)
    ks = clf.kernel_.kernels
    assert isinstance(ks[0], RBF) and ks[0].gamma == 2.0
    assert isinstance(ks[1], ManifoldKernel) and ks[1].n_neighbors == 4
    assert isinstance(ks[2].base, Linear) and ks[2].X_graph is not None
    assert isinstance(ks[3], Linear) and ks[4].n_neighbors == 3
    assert ks[5].base == RBF(0.3) and ks[5].n_neighbors == 6 and ks[5].gamma_ratio == 1.0
    assert ks[6] == Polynomial(2.0, 3, 1.0)
    assert all(k.X_graph.shape == X.shape for k in ks if isinstance(k, ManifoldKernel))
    with pytest.raises(ValueError, match="hold one ManifoldKernel does not take"):
        SemiSupervisedSVC(manifold={"k": 3}).fit(X, y)
    with pytest.raises(ValueError, match="'manifold' of a kernels entry"):
        SemiSupervisedSVC(kernels=[{"kernel": "rbf", "manifold": 5}]).fit(X, y)
    with pytest.raises(ValueError, match="dict with the keys"):
        SemiSupervisedSVC(kernels=[{"kernels": "rbf"}]).fit(X, y)


def test_kernels_are_normalised_to_unit_mean_diagonal_before_mkl() -> None:
    X, y, _ = _moons(seed=2, n=80)
    kernels = ["poly", {"kernel": "rbf", "manifold": {"gamma_ratio": 100.0}}, RBF(1.0)]
    clf = SemiSupervisedSVC(kernels=kernels, gamma=2.0, mkl_max_iter=2).fit(X, y)
    for k in clf.kernel_.kernels:
        assert np.mean(k.diag(X)) == pytest.approx(1.0)
    assert clf.kernel_.kernels[2] == RBF(1.0)  # already unit diagonal: left as it is
    raw = SemiSupervisedSVC(kernels=kernels, gamma=2.0, mkl_max_iter=2,
                            normalize_kernels=False).fit(X, y)
    assert np.mean(raw.kernel_.kernels[1].diag(X)) < 0.5  # the graph norm shrinks k(x, x)
    # the raw manifold kernel looks costly to the θ-step and gets less weight
    assert raw.kernel_weights_[1] < clf.kernel_weights_[1]


def test_a_collapsed_decision_function_is_reported() -> None:
    # r = 0.2 and a kernel too stiff to follow the labels: f ≈ b < 0 everywhere, while
    # transduction_ keeps 20 % positives from the supervised start
    X, y_true = make_moons(200, noise=0.1, random_state=1)
    rng = np.random.default_rng(1)
    lab = np.r_[rng.choice(np.flatnonzero(y_true == 0), 8, replace=False),
                rng.choice(np.flatnonzero(y_true == 1), 2, replace=False)]
    y = np.full(200, -1)
    y[lab] = y_true[lab]
    with pytest.warns(UserWarning, match="all 190 unlabeled points on the negative side"):
        clf = SemiSupervisedSVC(C=10.0, gamma=2.0, manifold={"gamma_ratio": 1e6}).fit(X, y)
    assert (clf.predict(X) == 0).all() and (clf.transduction_ == 1).sum() == 2 + 38


@pytest.mark.parametrize("seed", [7, 9])
def test_manifold_kernel_follows_the_moons_from_one_label_per_class(seed: int) -> None:
    X, y, y_true = _moons(n_labeled=2, seed=seed)
    unl = y == -1
    plain = SemiSupervisedSVC(C=10.0, gamma=8.0).fit(X, y)
    deformed = SemiSupervisedSVC(C=10.0, gamma=8.0, manifold={"gamma_ratio": 100.0}).fit(X, y)
    err = [np.mean(m.transduction_[unl] != y_true[unl]) for m in (plain, deformed)]
    assert err[0] > 0.2 and err[1] < 0.02, err


def test_fitted_model_pickles_and_predicts_inductively() -> None:
    X, y, _ = _moons(seed=0)
    clf = SemiSupervisedSVC(C=10.0, gamma=2.0, manifold=True).fit(X, y)
    X_new, y_new = make_moons(50, noise=0.1, random_state=9)
    again = pickle.loads(pickle.dumps(clf))
    np.testing.assert_allclose(again.decision_function(X_new), clf.decision_function(X_new))
    assert clf.score(X_new, y_new) > 0.9


def test_smooth_quasi_newton_optimizer_for_comparison() -> None:
    X, y, y_true = _moons(seed=3)
    unl = y == -1
    qn = SemiSupervisedSVC(C=10.0, gamma=2.0, optimizer="smooth-qn").fit(X, y)
    exact = SemiSupervisedSVC(C=10.0, gamma=2.0).fit(X, y)
    assert np.mean(qn.transduction_[unl] != y_true[unl]) < 0.03
    # its labels are the signs of its outputs; the balance holds on average only
    np.testing.assert_array_equal(qn.transduction_[unl], (qn.decision_function(X[unl]) > 0))
    assert np.mean(qn.decision_function(X[unl])) == pytest.approx(0.0, abs=1e-6)  # r = 0.5
    # both report the paper's eq. 1; with switching it never exceeds the convex stage's value
    assert qn.objective_[0] == pytest.approx(qn.s3vm_objective_)
    assert exact.s3vm_objective_ <= exact.objective_[0] + 1e-9
    with pytest.raises(ValueError, match="dense model only"):
        SemiSupervisedSVC(optimizer="smooth-qn", n_expansion=5).fit(X, y)


def test_sparse_mkl_moves_the_xvs_of_the_final_f_step() -> None:
    X, y, y_true = _moons(seed=4, n=80)
    unl = y == -1
    clf = SemiSupervisedSVC(C=10.0, kernels=[RBF(1.0), RBF(8.0)], p=2.0, n_expansion=6,
                            max_iter=5, mkl_max_iter=3, random_state=0).fit(X, y)
    assert clf.expansion_vectors_.shape == (6, 2) and clf.n_mkl_iter_ >= 1
    assert clf.n_lbfgs_iter_ > 0
    assert np.sum(clf.kernel_weights_ ** 2) == pytest.approx(1.0)
    assert np.mean(clf.transduction_[unl] != y_true[unl]) < 0.1
    fixed = SemiSupervisedSVC(C=10.0, kernels=[RBF(1.0), RBF(8.0)], p=2.0, n_expansion=6,
                              xv="data", mkl_max_iter=3, random_state=0).fit(X, y)
    assert clf.s3vm_objective_ < fixed.s3vm_objective_
