"""Import vector machine: greedy selection, loss decrease, stopping rule, refinement."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import make_blobs, make_moons
from sklearn.utils.estimator_checks import parametrize_with_checks

from sparsify.algorithms.klr.estimator import SparseKernelLogisticRegression
from sparsify.algorithms.klr.newton import NewtonKLRMarginal
from sparsify.baselines.ivm import ImportVectorMachine


@pytest.fixture(scope="module")
def moons() -> tuple[np.ndarray, np.ndarray]:
    return make_moons(150, noise=0.2, random_state=0)


def test_selects_training_points_and_loss_decreases(moons) -> None:
    X, y = moons
    ivm = ImportVectorMachine(lam=1e-3, gamma=2.0, max_import_points=12, eta=0.0).fit(X, y)
    assert ivm.n_import_ == 12 and len(set(ivm.import_indices_.tolist())) == 12
    np.testing.assert_array_equal(ivm.import_vectors_, X[ivm.import_indices_])
    assert np.all(np.diff(ivm.loss_history_) < 0)
    assert ivm.loss_history_[-1] < 0.5 * ivm.loss_history_[0]
    assert ivm.score(X, y) > 0.9
    np.testing.assert_allclose(ivm.predict_proba(X).sum(1), 1.0)


def test_stopping_rule(moons) -> None:
    X, y = moons
    eta = 0.01
    ivm = ImportVectorMachine(lam=1e-3, gamma=2.0, max_import_points=60, eta=eta).fit(X, y)
    H = ivm.loss_history_
    rel = np.abs(np.diff(H)) / H[1:]
    assert ivm.n_import_ < 60
    assert rel[-1] < eta and np.all(rel[:-1] >= eta)


def test_loss_is_the_klr_objective_on_the_import_points(moons) -> None:
    # enough Newton steps: the IVM's H equals the cvxpy KLR solved at Z = import points
    X, y = moons
    ivm = ImportVectorMachine(lam=1e-2, gamma=2.0, max_import_points=6, eta=0.0,
                              n_newton=30).fit(X, y)
    klr = SparseKernelLogisticRegression(6, lam=1e-2, gamma=2.0, init=ivm.import_vectors_,
                                         max_iter=0).fit(X, y)
    assert ivm.loss_history_[-1] == pytest.approx(klr.objective_, rel=1e-6)


def test_refinement_lowers_the_objective(moons) -> None:
    X, y = moons
    ivm = ImportVectorMachine(lam=1e-3, gamma=2.0, max_import_points=5, eta=0.0, refine=True,
                              refine_max_iter=10).fit(X, y)
    assert ivm.refined_.objective_ < ivm.loss_history_[-1]
    assert not np.allclose(ivm.expansion_vectors_, ivm.import_vectors_)


def test_refinement_takes_the_klr_fast_path(moons, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    evaluate = NewtonKLRMarginal.evaluate

    def spy(self: NewtonKLRMarginal, Z: np.ndarray, grad: bool = True):  # type: ignore[no-untyped-def]
        calls.append(len(Z))
        return evaluate(self, Z, grad)

    monkeypatch.setattr(NewtonKLRMarginal, "evaluate", spy)
    X, y = moons
    params = dict(lam=1e-3, gamma=2.0, max_import_points=5, eta=0.0)
    ivm = ImportVectorMachine(**params, refine=True, refine_max_iter=4).fit(X, y)
    assert calls and set(calls) == {5}
    # the refinement is sparse KLR started from the import vectors (what the benchmark times)
    plain = ImportVectorMachine(**params).fit(X, y)
    ref = SparseKernelLogisticRegression(lam=1e-3, kernel=plain.kernel_,
                                         init=plain.import_vectors_, max_iter=4).fit(X, y)
    np.testing.assert_allclose(ivm.expansion_vectors_, ref.expansion_vectors_)
    assert ivm.refined_.objective_ == pytest.approx(ref.objective_, rel=1e-12)


def test_multiclass_and_candidate_subsets() -> None:
    X, y = make_blobs(120, centers=3, random_state=0)
    ivm = ImportVectorMachine(lam=1e-3, gamma=0.5, max_import_points=10, n_candidates=20,
                              eta=0.0, random_state=0).fit(X, y)
    assert ivm.expansion_coef_.shape == (3, 10) and ivm.intercept_.shape == (3,)
    assert np.all(np.diff(ivm.loss_history_) < 0)
    assert ivm.decision_function(X).shape == (120, 3)
    assert ivm.score(X, y) > 0.9


@parametrize_with_checks([ImportVectorMachine(max_import_points=5)])
def test_scikit_learn_conformance(estimator, check) -> None:
    check(estimator)


def test_errors() -> None:
    X, y = make_moons(20, random_state=0)
    with pytest.raises(ValueError, match="The 'lam' parameter of ImportVectorMachine must be"):
        ImportVectorMachine(lam=0).fit(X, y)
    with pytest.raises(ValueError, match="at least 2 classes"):
        ImportVectorMachine().fit(X, np.ones(len(X)))


@pytest.mark.parametrize("n_out", [1, 4])
def test_candidate_scoring_loss_is_the_mean_log_loss(n_out: int) -> None:
    from sparsify.baselines.ivm import _candidate_loss, _mean_loss

    rng = np.random.default_rng(0)
    outs = 3 * rng.normal(size=(n_out, 30, 7))
    T = (rng.random((30, 1)) < 0.5).astype(float) if n_out == 1 else np.eye(n_out)[
        rng.integers(n_out, size=30)]
    expected = _mean_loss(np.moveaxis(outs, 0, -1), T)
    np.testing.assert_allclose(_candidate_loss(outs.copy(), T), expected, rtol=1e-12)
