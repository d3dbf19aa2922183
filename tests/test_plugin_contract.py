"""The contract a plugin author needs, shown by four plugins (tests/contract_plugins.py).

Named variables kept after the fit (SVOR's thresholds), data beside y (a ranker's pairs
within groups, sample weights), the kernel diagonal and a k(x, x) term in the decision
function (SVDD with a polynomial kernel), the ordinal and ranking tasks, and ‖w‖² inside
constraints solved as its equivalent form. Each plugin fits, predicts and passes the
conformance suite with its task's estimator; `fitted` holds one fitted estimator per
plugin with its data, for tests that save and load them.
"""

from __future__ import annotations

import inspect
import pickle

import cvxpy as cp
import numpy as np
import pytest
from sklearn.utils.validation import has_fit_parameter

import sparsify
from sparsify import RBF, Declaration, Formulation, Outputs, Polynomial, SparseKernelRidge
from sparsify.core.conic import ConicMarginal, compile_linked
from sparsify.core.declared import CvxpyMarginal, declare
from sparsify.core.errors import MemoryEstimateError
from sparsify.core.estimator import estimator_for
from sparsify.core.formulation import count_pairs, ranking_pairs
from sparsify.core.gradcheck import check_gradient, example_problem
from sparsify.core.ordinal import interval_margins
from sparsify.core.ranking import pairwise_accuracy
from sparsify.io import load_model, save_model
from sparsify.plugins.registry import get_registry
from sparsify.testing import check_formulation, formulation_checks
from tests import contract_plugins as plugins
from tests.contract_plugins import SVDD, SVOR, RankSVM, RobustLSSVM, ShiftedSVDD

POLY = {"kernel": "poly", "degree": 2, "gamma": 0.5, "coef0": 1.0}


def _ordinal(n: int = 90, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, size=(n, 2))
    return X, np.digitize(X[:, 0] ** 2 + X[:, 1], [0.5, 2.0])  # levels 0, 1, 2


def _ranking(n: int = 80, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    relevance = np.digitize(np.sin(X[:, 0]) + X[:, 1] ** 2, [0.0, 1.0, 2.0])
    return X, relevance, np.repeat(np.arange(n // 10), 10)


def _regression(n: int = 80, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.uniform(-3, 3, size=(n, 1))
    y = np.sin(X[:, 0]) + 0.05 * rng.normal(size=n)
    y[:4] += 8.0  # outliers, which Huber's loss holds at a linear cost
    return X, y


def _blob(n: int = 80, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(n, 2))


@pytest.fixture(scope="module")
def fitted() -> dict[str, tuple[object, np.ndarray]]:
    """One fitted estimator per plugin (made from its task) and the X it predicts on."""
    X_o, y_o = _ordinal()
    X_r, rel, groups = _ranking()
    X_h, y_h = _regression()
    X_s = _blob()
    made = {name: estimator_for(cls)[0] for name, cls in
            (("svor", SVOR), ("ranksvm", RankSVM), ("huber", RobustLSSVM), ("svdd", SVDD))}
    common = {"n_expansion": 5, "max_iter": 25, "random_state": 0}
    return {
        "svor": (made["svor"](C=10.0, gamma=0.5, **common).fit(X_o, y_o), X_o),
        "ranksvm": (made["ranksvm"](gamma=0.5, **common).fit(X_r, rel, groups=groups), X_r),
        "huber": (made["huber"](gamma=0.5, **common).fit(
            X_h, y_h, sample_weight=np.linspace(0.5, 2.0, len(X_h))), X_h),
        "svdd": (made["svdd"](nu=0.2, **{**common, **POLY}).fit(X_s), X_s),
    }


# --------------------------------------------------------------------------- each plugin


@pytest.mark.parametrize("name", ["svor", "ranksvm", "huber", "svdd"])
def test_each_plugin_fits_predicts_and_pickles(fitted, name: str) -> None:
    est, X = fitted[name]
    predicted = est.predict(X)
    assert predicted.shape == (len(X),)
    # the estimator its task made pickles (by its formulation class) and predicts the same
    again = pickle.loads(pickle.dumps(est))
    assert type(again) is type(est)
    np.testing.assert_array_equal(again.predict(X), predicted)


@pytest.mark.parametrize("name", ["ranksvm", "huber"])
def test_a_score_or_a_regression_is_saved_as_a_model_file(fitted, name: str, tmp_path) -> None:
    est, X = fitted[name]
    save_model(est, tmp_path / "m.model")
    np.testing.assert_allclose(load_model(tmp_path / "m.model").predict(X), est.predict(X),
                               rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize(("name", "match"), [("svor", "thresholds"), ("svdd", r"k\(x, x\)")])
def test_a_rule_a_model_file_cannot_hold_is_refused_before_writing(fitted, name: str, match: str,
                                                                   tmp_path) -> None:
    est, _ = fitted[name]
    with pytest.raises(ValueError, match=match):
        save_model(est, tmp_path / "m.model")
    assert not (tmp_path / "m.model").exists()


def test_svor_keeps_its_thresholds_and_predicts_by_them(fitted) -> None:
    est, X = fitted["svor"]
    _, y = _ordinal()
    theta = est.declared_variables_[0]["thresholds"]
    assert theta.shape == (2,) and np.all(np.diff(theta) > 0)
    np.testing.assert_array_equal(est.thresholds_, np.sort(theta))
    scores = est.transform(X) @ est.expansion_coef_[0] + est.intercept_[0]
    levels = (scores[:, None] > theta).sum(1)
    np.testing.assert_array_equal(est.predict(X), est.classes_[levels])
    assert est.score(X, y) > 0.85
    margins = est.decision_function(X)
    assert margins.shape == (len(X), 3)
    np.testing.assert_array_equal(margins.argmax(1), levels)


def test_the_ranker_orders_each_groups_points(fitted) -> None:
    est, X = fitted["ranksvm"]
    _, relevance, groups = _ranking()
    assert est.score(X, relevance, groups) > 0.9
    shuffled = np.random.default_rng(1).permutation(len(X))
    assert pairwise_accuracy(relevance, est.predict(X)[shuffled], groups) < 0.7
    assert not hasattr(est, "decision_function")


def test_the_weighted_huber_regressor_takes_sample_weight(fitted) -> None:
    est, X = fitted["huber"]
    clean = slice(4, None)
    assert np.abs(est.predict(X)[clean] - np.sin(X[clean, 0])).max() < 0.3  # outliers held
    assert has_fit_parameter(est, "sample_weight")


def test_svdd_with_a_polynomial_kernel_decides_by_the_sphere(fitted) -> None:
    est, X = fitted["svdd"]
    beta, Z = est.expansion_coef_[0], est.expansion_vectors_
    kernel = est.kernel_
    assert isinstance(kernel, Polynomial) and np.ptp(kernel.diag(X)) > 1.0
    r2 = est.declared_variables_[0]["r2"]
    distance = kernel.diag(X) - 2 * kernel(X, Z) @ beta + beta @ kernel(Z, Z) @ beta
    np.testing.assert_allclose(est.decision_function(X), (r2 - distance) / 2, atol=1e-6)
    assert est.diagonal_coef_.tolist() == [-0.5]
    inside = est.predict(X) == 1
    assert 0.65 < inside.mean() < 0.95  # ν = 0.2 leaves out about a fifth
    assert est.predict([[8.0, 8.0]]).tolist() == [-1]


# --------------------------------------------------------------------------- conformance


@pytest.mark.parametrize("cls", [SVOR, RankSVM, RobustLSSVM, SVDD], ids=lambda c: c.__name__)
def test_each_plugin_passes_the_generic_checks(cls: type[Formulation]) -> None:
    kernels = ("poly",) if cls is SVDD else ("rbf",)
    report = check_formulation(cls(), kernels=kernels, solvers=("clarabel", "structured"),
                               estimator=False)
    assert report.passed and report.result(f"gradient[{kernels[0]}-structured]").status == \
        "passed"


@pytest.mark.slow
@pytest.mark.parametrize("cls", [SVOR, RankSVM, RobustLSSVM, SVDD], ids=lambda c: c.__name__)
def test_each_plugins_estimator_passes_scikit_learns_checks(cls: type[Formulation]) -> None:
    made = estimator_for(cls)[0]
    params = {"n_expansion": 3, "max_iter": 5, "random_state": 0}
    estimator = made(**params, **(POLY if cls is SVDD else {}))
    # the suite's estimator check; its others run in test_each_plugin_passes_the_generic_checks
    check = next(c for c in formulation_checks(cls(), estimator=estimator)
                 if c.name == "estimator")
    result = check.run()
    assert result.status == "passed", result.message


# --------------------------------------------------------------------------- named variables


def test_variables_are_the_same_on_every_generic_path() -> None:
    X, y = _ordinal(40)
    Z = X[:4] + 0.05
    kernel = RBF(0.5)
    structured = ConicMarginal(SVOR(C=10.0), X, y.astype(float), kernel, 4).evaluate(Z)
    reference = CvxpyMarginal(SVOR(C=10.0), X, y.astype(float), kernel, 4,
                              solver="clarabel").evaluate(Z)
    assert structured.solver == "structured"
    # the thresholds are primal variables: good to √(gap) of W's scale where W is flat in them
    np.testing.assert_allclose(structured.variables["thresholds"],
                               reference.variables["thresholds"], atol=1e-4)


class _WrongIntercept(SVOR):
    name = "contract_wrong_intercept"

    def declare(self, out):
        decl = super().declare(out)
        return Declaration(decl.objective, decl.constraints,
                           intercept=decl.variables["thresholds"])


class _NoThresholds(SVOR):
    name = "contract_no_thresholds"

    def declare(self, out):
        decl = super().declare(out)
        return Declaration(decl.objective, decl.constraints)


class _Slacks(RobustLSSVM):
    name = "contract_unused_variable"

    def declare(self, out):
        decl = super().declare(out)
        return Declaration(decl.objective, decl.constraints, decl.intercept,
                           variables={"loose": cp.Variable(3)})


@pytest.mark.parametrize(("cls", "y", "match"), [
    (_WrongIntercept, np.array([0, 1, 2, 3, 4] * 4, dtype=float),
     r"declares an intercept of shape \(4,\): a fitted machine keeps one bias per output.*"
     r"Declaration.variables"),
    (_NoThresholds, np.array([0, 1, 2] * 4, dtype=float),
     r"declares no variable 'thresholds', which its task needs \(shape \(2,\)\)"),
    (_Slacks, np.linspace(0, 1, 12),
     r"declares the variable 'loose' over the variable\(s\) .*which neither its objective"),
])
def test_a_declaration_the_fit_cannot_keep_is_refused_before_any_solve(cls, y, match) -> None:
    X = np.random.default_rng(0).normal(size=(len(y), 2))
    with pytest.raises(ValueError, match=match):
        ConicMarginal(cls(), X, y, RBF(1.0), 3)


def test_an_ordinal_estimator_refuses_a_formulation_without_thresholds() -> None:
    X, y = _ordinal(30)
    est = estimator_for(_NoThresholds)[0](n_expansion=3, max_iter=2)
    with pytest.raises(ValueError, match="declares no variable 'thresholds'"):
        est.fit(X, y)


def test_interval_margins_argmax_is_the_count_of_thresholds_below() -> None:
    rng = np.random.default_rng(0)
    scores = rng.normal(size=200)
    theta = np.array([0.3, -0.5, 1.0])  # unsorted: the margins sort them
    levels = (scores[:, None] > theta).sum(1)
    np.testing.assert_array_equal(interval_margins(scores, theta).argmax(1), levels)


# --------------------------------------------------------------------------- data beside y


def test_the_ranker_sees_the_pairs_of_its_groups() -> None:
    y = np.array([2.0, 0.0, 1.0, 1.0, 0.0, 3.0])
    groups = np.array(["a", "a", "b", "a", "b", "b"])
    seen = {}

    class Probe(RankSVM):
        name = "contract_probe"

        def declare(self, out):
            seen["pairs"], seen["groups"] = out.pairs, out.groups
            return super().declare(out)

    declare(Probe().group(groups), y, len(y), 2)
    expected = {(i, j) for i in range(6) for j in range(6)
                if groups[i] == groups[j] and y[i] > y[j]}
    assert {tuple(p) for p in seen["pairs"].tolist()} == expected
    assert len(seen["pairs"]) == count_pairs(y, groups) == len(ranking_pairs(y, groups))
    assert seen["groups"].tolist() == [0, 0, 1, 0, 1, 1]


def test_too_many_pairs_are_refused_before_they_are_made() -> None:
    n = 300_000  # one group: 4.5e10 pairs
    X = np.linspace(0, 1, n)[:, None]
    with pytest.raises(MemoryEstimateError, match=r"preference pairs .*fit\(X, y, groups"):
        ConicMarginal(RankSVM(), X, np.arange(n, dtype=float), RBF(1.0), 2)


def test_integer_weights_count_as_repeated_points() -> None:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 2))
    y = np.sin(X[:, 0])
    weights = rng.integers(0, 3, size=30)
    Z = X[:4] + 0.05
    weighted = ConicMarginal(RobustLSSVM().weigh(weights.astype(float)), X, y, RBF(0.5), 4)
    rows = np.repeat(np.arange(30), weights)
    repeated = ConicMarginal(RobustLSSVM(), X[rows], y[rows], RBF(0.5), 4)
    a, b = weighted.evaluate(Z), repeated.evaluate(Z)
    assert a.value == pytest.approx(b.value, rel=1e-8)
    np.testing.assert_allclose(a.grad, b.grad, rtol=0, atol=1e-6 * np.abs(b.grad).max())


def test_sample_weight_is_refused_where_the_formulation_cannot_weigh() -> None:
    X, y = _regression(30)
    assert not has_fit_parameter(SparseKernelRidge(), "sample_weight")
    assert "sample_weight" not in inspect.signature(estimator_for(SVOR)[0].fit).parameters
    with pytest.raises(ValueError, match=r"SparseKernelRidge.fit does not take sample_weight: "
                                         r"the 'kernel_ridge' formulation does not weigh"):
        SparseKernelRidge(n_expansion=3, max_iter=1).fit(X, y, sample_weight=np.ones(30))


def test_a_subclass_that_weighs_shows_sample_weight_again() -> None:
    from sparsify.core.regressor import SparseKernelRegressor

    class Unweighted(RobustLSSVM):
        name, weighted = "contract_unweighted", False

    class First(SparseKernelRegressor):
        formulation_class = Unweighted

    class Second(First):
        formulation_class = RobustLSSVM

    assert not has_fit_parameter(First(), "sample_weight")
    assert has_fit_parameter(Second(), "sample_weight")


# --------------------------------------------------------------------------- the kernel diagonal


def test_the_kernel_diagonal_is_computed_once_when_read() -> None:
    calls = []
    u = cp.Variable(2)
    out = Outputs(f=cp.Variable(3), norm_w2=cp.sum_squares(u), norms_w2=(cp.sum_squares(u),),
                  y=None, n_samples=3, n_outputs=1,
                  diagonal=lambda: calls.append(1) or np.full(3, 2.0))
    assert calls == []
    assert out.kernel_diagonal.tolist() == [2.0, 2.0, 2.0] and out.kernel_diagonal.sum() == 6
    assert calls == [1]
    without = Outputs(f=cp.Variable(3), norm_w2=out.norm_w2, norms_w2=out.norms_w2, y=None,
                      n_samples=3, n_outputs=1)
    with pytest.raises(ValueError, match="not known here"):
        _ = without.kernel_diagonal


# --------------------------------------------------------------------------- ‖w‖² in constraints


def test_the_literal_svdd_is_its_shifted_form() -> None:
    X = _blob(200)
    kernel = Polynomial(gamma=0.5, degree=2, coef0=1.0)
    Z = X[:6] + 0.05
    literal = ConicMarginal(SVDD(), X, None, kernel, 6)
    shifted = ConicMarginal(ShiftedSVDD(), X, None, kernel, 6)
    a, b = literal.evaluate(Z), shifted.evaluate(Z)
    assert a.solver == b.solver == "structured"
    assert a.value == pytest.approx(b.value, rel=1e-9)
    assert a.intercept == pytest.approx(b.intercept, rel=1e-7, abs=1e-9)
    assert a.variables["r2"] == pytest.approx(b.variables["r2"], rel=1e-7)
    np.testing.assert_allclose(a.grad, b.grad, rtol=0, atol=1e-7 * np.abs(b.grad).max())
    compiled = literal._compile("CLARABEL")
    assert compiled.problem.own.cones.soc == () and compiled.shift is not None


def test_norms_in_constraints_without_a_free_partner_keep_their_cone() -> None:
    class Budget(RobustLSSVM):  # ‖w‖² ≤ 4: no free variable shares its rows
        name = "contract_budget"

        def declare(self, out):
            b = cp.Variable()
            loss = cp.sum(cp.huber(out.y - out.f - b, self.delta))
            return Declaration(cp.Minimize(loss), [out.norm_w2 <= 4.0], b)

    decl, f, u, K = declare(Budget(), np.ones(10), 10, 3)
    compiled = compile_linked(cp.Problem(decl.objective, decl.constraints), f, u, 10, 3, K,
                              "CLARABEL")
    assert compiled.shift is None and compiled.problem.own.cones.soc == (5,)


# --------------------------------------------------------------------------- check-gradient


def test_the_default_problem_is_shaped_for_each_task() -> None:
    _, y = example_problem(SVOR(), 30)
    assert sorted(set(y.tolist())) == [0, 1, 2]
    _, relevance = example_problem(RankSVM(), 40)
    assert sorted(set(relevance.tolist())) == [0, 1, 2, 3]
    result = check_gradient(RankSVM(), "rbf", n_expansion=3)
    assert result.passed(1e-6), result


def test_check_gradient_refuses_weights_for_a_formulation_that_cannot_weigh() -> None:
    X, y = _regression(20)
    with pytest.raises(ValueError, match="does not weigh its points' losses"):
        check_gradient(RankSVM(), "rbf", X=X, y=y, sample_weight=np.ones(20))


@pytest.fixture
def registered(monkeypatch):
    registry = get_registry()
    monkeypatch.setattr(registry, "entries",
                        {kind: dict(entries) for kind, entries in registry.entries.items()})
    sparsify.register_plugin(plugins, name="contract_plugins_test")
    yield
    registry.manager.unregister(name="contract_plugins_test")


@pytest.mark.parametrize("name", ["contract_svor", "contract_ranksvm", "contract_huber_lssvm",
                                  "contract_svdd"])
def test_the_command_line_checks_each_plugins_gradient(registered, capsys, name: str) -> None:
    from sparsify.cli import main

    kernel = ["--kernel", "poly"] if name == "contract_svdd" else []
    assert main(["check-gradient", "--formulation", name, *kernel]) == 0
    assert "OK" in capsys.readouterr().out


def test_the_command_line_hands_an_ordinal_formulation_its_levels(registered, tmp_path,
                                                                  capsys, monkeypatch) -> None:
    from sparsify.cli import main

    seen: set[float] = set()
    declare_svor = SVOR.declare

    def recording(self, out):
        seen.update(np.unique(out.y).tolist())
        return declare_svor(self, out)

    monkeypatch.setattr(SVOR, "declare", recording)
    X, levels = _ordinal(40)
    data = tmp_path / "ordinal.csv"
    np.savetxt(data, np.column_stack([X, levels + 1]), delimiter=",")  # ratings 1, 2, 3
    assert main(["check-gradient", "--formulation", "contract_svor", "--data", str(data),
                 "--no-header"]) == 0
    assert "OK" in capsys.readouterr().out
    assert seen == {0.0, 1.0, 2.0}  # the levels of the ratings, not ±1


def test_a_model_file_refuses_a_k_x_x_term_it_cannot_describe(tmp_path) -> None:
    class WithDiagonal(RobustLSSVM):
        name = "contract_with_diagonal"

        def declare(self, out):
            decl = super().declare(out)
            decl.diagonal_coef = 0.1
            return decl

    X, y = _regression(30)
    est = estimator_for(WithDiagonal)[0](n_expansion=3, max_iter=2, random_state=0).fit(X, y)
    assert est.diagonal_coef_.tolist() == [0.1]
    target = tmp_path / "diagonal.model"
    with pytest.raises(ValueError, match=r"has a k\(x, x\) term \(diagonal_coef_"):
        save_model(est, target)
    assert not target.exists()
