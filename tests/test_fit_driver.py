"""The fit driver: a declared formulation becomes an estimator of its task in a few lines.

Classifier, regressor and outlier-detector estimators made from declared cvxpy
formulations pass scikit-learn's checks; the generated constructor carries the
shared parameters and the formulation's; Nz = N reproduces the full problem
solved directly; the registry maps formulations to estimators.
"""

from __future__ import annotations

import inspect
import json

import cvxpy as cp
import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import make_moons
from sklearn.utils.estimator_checks import parametrize_with_checks

from sparsify import (
    Declaration,
    Formulation,
    SemiSupervisedSVC,
    SparseKernelClassifier,
    SparseKernelLogisticRegression,
    SparseKernelRegressor,
    SparseKernelRidge,
    SparseKernelTransformer,
    SparseKFD,
    SparseOutlierDetector,
    SparseSVC,
    SparseSVR,
)
from sparsify.core.estimator import SHARED_PARAMS, estimator_for
from sparsify.kernels import RBF


class KernelRidge(Formulation):
    """min ‖y − f − b‖² + α‖w‖²."""

    name = "driver_kridge"
    task = "regressor"

    def __init__(self, alpha: float = 1.0) -> None:
        self.alpha = alpha

    def declare(self, out):  # type: ignore[no-untyped-def]
        b = cp.Variable()
        return Declaration(cp.Minimize(cp.sum_squares(out.y - out.f - b)
                                       + self.alpha * out.norm_w2), [], b)


class L2SVM(Formulation):
    """½‖w‖² + C Σ max(0, 1 − y(f + b))²."""

    name = "driver_l2svm"

    def __init__(self, C: float = 1.0) -> None:
        self.C = C

    def declare(self, out):  # type: ignore[no-untyped-def]
        b = cp.Variable()
        loss = cp.sum_squares(cp.pos(1 - cp.multiply(out.y, out.f + b)))
        return Declaration(cp.Minimize(0.5 * out.norm_w2 + self.C * loss), [], b)


class OneClass(Formulation):
    """The ν-one-class SVM, scaled by νN."""

    name = "driver_oneclass"

    def __init__(self, nu: float = 0.5) -> None:
        self.nu = nu

    def declare(self, out):  # type: ignore[no-untyped-def]
        rho = cp.Variable()
        scale = self.nu * out.n_samples
        objective = 0.5 * scale * out.norm_w2 - scale * rho + cp.sum(cp.pos(rho - out.f))
        return Declaration(cp.Minimize(objective), [], -rho)


class SparseRidge(SparseKernelRegressor):
    formulation_class = KernelRidge


class SparseL2SVC(SparseKernelClassifier):
    formulation_class = L2SVM


class SparseOneClass(SparseOutlierDetector):
    formulation_class = OneClass


class OneClassFeature(SparseKernelTransformer):
    """The one-class SVM's τ(x) as one feature (it ignores any y)."""

    formulation_class = OneClass


class MultiRidge(Formulation):
    """Multi-output kernel ridge: ‖Y − F − 1bᵀ‖² + α‖w‖², F of shape (N, K)."""

    name = "driver_multiridge"

    def __init__(self, alpha: float = 1.0) -> None:
        self.alpha = alpha

    def n_outputs(self, y):  # type: ignore[no-untyped-def]
        return np.shape(y)[1]

    def declare(self, out):  # type: ignore[no-untyped-def]
        b = cp.Variable(out.n_outputs)
        fit = out.y - out.f - cp.reshape(b, (1, out.n_outputs), order="C")
        return Declaration(cp.Minimize(cp.sum_squares(fit) + self.alpha * out.norm_w2), [], b)


class SparseMultiRidge(SparseKernelTransformer):
    formulation_class = MultiRidge


FAST = {"n_expansion": 3, "max_iter": 5, "random_state": 0}


@parametrize_with_checks([SparseRidge(**FAST), SparseL2SVC(**FAST), SparseOneClass(**FAST),
                          OneClassFeature(**FAST)])
def test_declared_estimators_pass_scikit_learn_checks(estimator, check) -> None:
    check(estimator)


def test_the_generated_constructor_has_the_shared_and_the_formulation_parameters() -> None:
    params = inspect.signature(SparseRidge.__init__).parameters
    assert list(params)[:3] == ["self", "n_expansion", "alpha"]
    assert set(params) == {"self", "alpha", *SHARED_PARAMS}
    assert params["alpha"].kind is inspect.Parameter.KEYWORD_ONLY
    reg = SparseRidge(7, alpha=0.5, gamma=2.0)
    assert reg.get_params()["alpha"] == 0.5 and reg.n_expansion == 7
    assert clone(reg).get_params() == reg.get_params()
    assert SparseL2SVC().init == "auto" and SparseRidge().init == "random"  # the tasks' defaults
    with pytest.raises(TypeError, match="unexpected keyword argument 'beta'"):
        SparseRidge(beta=1.0)
    assert "alpha" in (SparseRidge.__doc__ or "") and "n_expansion" in (SparseRidge.__doc__ or "")


def test_a_formulation_parameter_without_default_or_with_a_shared_name_is_refused() -> None:
    class NoDefault(KernelRidge):
        def __init__(self, alpha: float) -> None:
            self.alpha = alpha

    class Clash(KernelRidge):
        def __init__(self, tol: float = 1.0) -> None:
            self.tol = tol

    with pytest.raises(TypeError, match=r"give the NoDefault formulation's parameters "
                                        r"\['alpha'\] defaults"):
        type("Bad", (SparseKernelRegressor,), {"formulation_class": NoDefault})
    with pytest.raises(TypeError, match=r"parameters \['tol'\] have the names of shared"):
        type("Bad", (SparseKernelRegressor,), {"formulation_class": Clash})


def test_nz_equal_n_reproduces_kernel_ridge_solved_directly() -> None:
    """Z = X (every point an XV, no L-BFGS step): the full problem's linear system."""
    rng = np.random.default_rng(0)
    X = rng.uniform(-3, 3, size=(40, 2))
    y = np.sin(X[:, 0]) + X[:, 1] ** 2 / 4 + 0.1 * rng.normal(size=40)
    alpha, gamma = 0.3, 0.5
    reg = SparseRidge(40, alpha=alpha, gamma=gamma, max_iter=0, solver_tol=1e-10,
                      random_state=0).fit(X, y)
    K = RBF(gamma)(X, X)
    # stationarity: (K + αI)β + b1 = y and 1ᵀ(Kβ + b1 − y) = 0
    A = np.zeros((41, 41))
    A[:40, :40], A[:40, 40], A[40, :40], A[40, 40] = K + alpha * np.eye(40), 1.0, K.sum(0), 40.0
    beta_b = np.linalg.solve(A, np.append(y, y.sum()))
    X_new = rng.uniform(-3, 3, size=(25, 2))
    direct = RBF(gamma)(X_new, X) @ beta_b[:40] + beta_b[40]
    # the solver's accuracy (1e-10) through the conditioning of K + αI (about 1e2 here)
    assert np.allclose(reg.predict(X_new), direct, rtol=1e-6, atol=1e-6 * np.abs(direct).max())


def test_the_fitted_attributes_are_the_same_for_every_task() -> None:
    rng = np.random.default_rng(1)
    X = rng.normal(size=(60, 2))
    y_reg = X[:, 0] - X[:, 1]
    y_clf = np.where(X[:, 0] > 0, "a", "b")
    fitted = [SparseRidge(4, max_iter=3, random_state=0).fit(X, y_reg),
              SparseL2SVC(4, max_iter=3, random_state=0).fit(X, y_clf),
              SparseOneClass(4, max_iter=3, random_state=0).fit(X)]
    for est in fitted:
        assert est.expansion_vectors_.shape == (4, 2)
        assert est.expansion_coef_.shape == (1, 4) and est.intercept_.shape == (1,)
        for attr in ("n_expansion_", "n_iter_", "objective_"):
            assert getattr(est, attr).shape == (1,), (type(est).__name__, attr)
        assert len(est.objective_history_) == 1 and est.full_n_support_ is None
    reg, clf, det = fitted
    assert reg.predict(X).shape == (60,) and set(clf.predict(X)) <= {"a", "b"}
    assert set(det.predict(X)) <= {-1, 1}
    assert np.allclose(det.score_samples(X), det.decision_function(X) + det.offset_)


def test_a_transformer_extracts_the_k_outputs_of_its_formulation() -> None:
    rng = np.random.default_rng(4)
    X = rng.uniform(-2, 2, size=(80, 2))
    Y = np.column_stack([np.sin(X[:, 0]), X[:, 0] * X[:, 1], X[:, 1] ** 2])
    tr = SparseMultiRidge(6, alpha=0.01, gamma=0.5, max_iter=20, random_state=0).fit(X, Y)
    features = tr.transform(X)
    assert features.shape == (80, 3) and tr.expansion_coef_.shape == (3, 6)
    # each feature fits its target (the formulation's job), at 6 kernel evaluations per point
    assert all(np.corrcoef(features[:, k], Y[:, k])[0, 1] > 0.95 for k in range(3))
    assert np.allclose(features, tr.kernel_features(X) @ tr.expansion_coef_.T + tr.intercept_)
    assert tr.get_feature_names_out().tolist() == [f"sparsemultiridge{k}" for k in range(3)]


def test_starts_run_in_parallel_with_the_same_result() -> None:
    rng = np.random.default_rng(2)
    X = rng.normal(size=(50, 2))
    y = X[:, 0] * X[:, 1]
    one = SparseRidge(4, n_init=3, max_iter=5, random_state=0).fit(X, y)
    two = SparseRidge(4, n_init=3, max_iter=5, random_state=0, n_jobs=2).fit(X, y)
    assert np.array_equal(one.expansion_vectors_, two.expansion_vectors_)
    assert np.array_equal(one.expansion_coef_, two.expansion_coef_)


def test_a_ratio_is_a_fraction_of_the_distinct_points_for_a_regressor() -> None:
    X = np.repeat(np.arange(20.0)[:, None], 2, axis=0)  # 20 distinct points, each twice
    reg = SparseRidge(0.25, max_iter=0, random_state=0).fit(X, np.sin(X[:, 0]))
    assert reg.n_expansion_.tolist() == [5]
    with pytest.raises(ValueError, match="more expansion vectors than the 20 distinct"):
        SparseRidge(21, max_iter=0).fit(X, X[:, 0])
    with pytest.raises(ValueError, match=r"SparseRidge is a regressor: y must hold numbers "
                                         r"\(could not convert"):
        SparseRidge(3).fit(X[:3], np.array(["a", "b", "c"]))


def test_the_registry_maps_a_formulation_to_its_estimator() -> None:
    from sparsify import SparseKFD, SparseSVC

    assert estimator_for("svm") == (SparseSVC, {})
    assert estimator_for("skfd") == (SparseKFD, {"method": "rayleigh"})
    assert issubclass(estimator_for(type("T", (MultiRidge,), {"task": "transformer"}))[0],
                      SparseKernelTransformer)
    made, params = estimator_for(KernelRidge)  # no estimator registered: its task's
    assert issubclass(made, SparseKernelRegressor) and made.formulation_class is KernelRidge
    assert params == {} and "alpha" in made().get_params()
    with pytest.raises(ValueError, match="has no estimator: register one with the "
                                         "register_estimators hook, or set its task"):
        estimator_for(L2SVM)  # task None, nothing registered


def test_the_command_line_fits_a_declared_regressor(tmp_path, capsys) -> None:
    """`sparsify fit --formulation` on a regressor made from its task: RMSE, MAE and R²."""
    import types

    import sparsify
    from sparsify.cli import main
    from sparsify.plugins.registry import get_registry

    if "driver_kridge" not in get_registry().names("formulation"):
        plugin = types.SimpleNamespace(register_formulations=sparsify.hookimpl(
            lambda register: register(KernelRidge)))
        sparsify.register_plugin(plugin, "driver_kridge_plugin")
    rng = np.random.default_rng(3)
    X = rng.uniform(-2, 2, size=(120, 1))
    y = np.sin(2 * X[:, 0]) + 0.1 * rng.normal(size=120)
    np.savetxt(tmp_path / "train.csv", np.column_stack([X, y]), delimiter=",")
    args = ["fit", "--formulation", "driver_kridge", "--data", str(tmp_path / "train.csv"),
            "--no-header", "--n-expansion", "6", "--gamma", "1.0", "--param", "alpha=0.1",
            "--seed", "0"]
    assert main([*args, "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["estimator"] == "SparseKernelRidge" and result["classes"] == []
    assert result["train_r2"] > 0.9 and result["train_rmse"] < 0.3, result
    assert main(args) == 0
    report = capsys.readouterr().out
    assert "train:     RMSE" in report and "R² 0.9" in report
    assert main([*args, "--plot", str(tmp_path / "p.png")]) == 0  # 1-D: the fitted curve
    assert (tmp_path / "p.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_command_line_refuses_a_transformer_with_the_reason(tmp_path, capsys) -> None:
    from sparsify.cli import main

    rng = np.random.default_rng(5)
    np.savetxt(tmp_path / "train.csv", np.column_stack([rng.normal(size=(40, 2)),
                                                        np.tile([0, 1], 20)]), delimiter=",")
    assert main(["fit", "--formulation", "kernel_pca", "--data", str(tmp_path / "train.csv"),
                 "--no-header", "--n-expansion", "4"]) == 2
    err = capsys.readouterr().err
    assert "SparseKernelPCA is neither a classifier, a regressor nor an outlier detector" in err


def _noisy_sinc(n: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    X = rng.uniform(-3, 3, size=(n, 2))
    return X, np.sinc(X[:, 0]) * np.cos(X[:, 1]) + 0.1 * rng.normal(size=n)


@pytest.mark.parametrize("make, data", [
    (lambda **kw: SparseSVC(5, C=1.0, **kw), lambda: make_moons(400, noise=0.3, random_state=0)),
    (lambda **kw: SparseKernelLogisticRegression(5, lam=1e-2, **kw),
     lambda: make_moons(400, noise=0.3, random_state=0)),
    (lambda **kw: SparseSVR(5, C=10.0, epsilon=0.05, **kw), lambda: _noisy_sinc(400)),
    (lambda **kw: SparseKernelRidge(5, alpha=1e-2, **kw), lambda: _noisy_sinc(400)),
], ids=["SparseSVC", "SparseKernelLogisticRegression", "SparseSVR", "SparseKernelRidge"])
def test_n_iter_no_change_stops_once_w_has_levelled_off(make, data) -> None:
    X, y = data()
    # at N = 400 the window's tolerance is 1/√400 = 5 % of W
    full = make(n_iter_no_change=None, max_iter=60, tol=0.0, random_state=0).fit(X, y)
    early = make(n_iter_no_change=3, max_iter=60, tol=0.0, random_state=0).fit(X, y)
    history = np.asarray(early.objective_history_[0])
    n = int(early.n_iter_[0])
    assert n < int(full.n_iter_[0])
    # it stopped at the first iteration whose last 3 lowered W by less than 5 % of it
    drops = [(history[k - 3] - history[k]) / abs(history[k]) for k in range(3, n + 1)]
    assert drops[-1] < 0.05 and all(d >= 0.05 for d in drops[:-1])
    # "auto" leaves a fit below 10 000 points to tol and max_iter
    auto = make(n_iter_no_change="auto", max_iter=60, tol=0.0, random_state=0).fit(X, y)
    assert int(auto.n_iter_[0]) == int(full.n_iter_[0])


@pytest.mark.parametrize("cls", [SparseSVC, SparseSVR, SemiSupervisedSVC, SparseKFD])
def test_a_cost_too_large_for_float64_is_refused_before_the_fit(cls, monkeypatch) -> None:
    from sparsify.core.params import MAX_C

    costs = [name for name in ("C", "C_star") if name in cls().get_params()]
    assert costs
    X, y = np.random.default_rng(0).normal(size=(20, 2)), np.repeat([-1, 1], 10)
    # any solve would mean the check came too late
    monkeypatch.setattr("sparsify.core.estimator.optimise_start",
                        lambda *a, **k: pytest.fail("a fit started"))
    for name in costs:
        est = cls(**{name: 1e300})
        with pytest.raises(ValueError, match=rf"^{name}=1e\+300 is too large: above 1e\+12 .*"
                                             rf"Use {name} <= 1e\+12"):
            est.fit(X, y)
        cls(**{name: MAX_C})._validate_params()  # the bound itself is taken
