"""Formulations a plugin author declares (examples/declared_formulations.py), on the generic path.

Each is checked as the core promises any declaration: the conic path (ConicMarginal)
agrees with cvxpy's DPP path, its reference; Z = X gives the full problem solved directly;
the gradient from the duals matches finite differences to 1e-6 with the default backend
(Clarabel), and to its stated accuracy with every other backend that takes the problem —
or that backend refuses it with a reason.
"""

from __future__ import annotations

import doctest
import importlib.util
import sys
import warnings

import cvxpy as cp
import numpy as np
import pytest

import sparsify
from sparsify import ConicMarginal, CvxpyMarginal, SolverError
from sparsify.core.formulation import make_formulation
from sparsify.core.gradcheck import check_gradient
from sparsify.core.optimize import initial_expansion_vectors
from sparsify.kernels import make_kernel
from sparsify.plugins.registry import get_registry
from tests.conftest import REPO

_spec = importlib.util.spec_from_file_location(
    "declared_formulations", REPO / "examples" / "declared_formulations.py")
declared = importlib.util.module_from_spec(_spec)
sys.modules["declared_formulations"] = declared
_spec.loader.exec_module(declared)

FORMULATIONS = {cls.name: cls for cls in declared.FORMULATIONS}
#: cvxpy's own Clarabel solve (the DPP reference) stops on the minimax probability
#: machine's second-order cones with gradients off by up to 2.7e-5 (the conic path
#: refines Clarabel's answer by SCS, `sparsify.core.conic._refine`): its reference is SCS.
REFERENCE_SOLVER = {"mpm": "scs"}


def _problem(name: str, seed: int = 0):
    form = FORMULATIONS[name]()
    X, y = declared.example_data(form, seed=seed)
    return form, X, y


def _backend_accuracy(solver: str) -> float:
    return float(get_registry().get("solver", solver).gradient_accuracy)


def test_the_module_doctests_pass() -> None:
    result = doctest.testmod(declared, optionflags=doctest.ELLIPSIS)
    assert result.attempted >= 6 and result.failed == 0


def test_registering_the_module_makes_every_formulation_a_name(monkeypatch) -> None:
    monkeypatch.setattr(get_registry(), "entries",
                        {kind: dict(entries) for kind, entries in get_registry().entries.items()})
    sparsify.register_plugin(declared, name="declared_formulations_test")
    try:
        names = get_registry().names("formulation")
        assert set(FORMULATIONS) <= set(names)
        assert isinstance(make_formulation("quantile", tau=0.9), declared.QuantileRegression)
    finally:  # the registry's entries are restored by monkeypatch, pluggy's plugin here
        get_registry().manager.unregister(name="declared_formulations_test")


@pytest.mark.parametrize("kernel", ["rbf", "rbf+linear"])
@pytest.mark.parametrize("name", sorted(FORMULATIONS))
def test_conic_path_agrees_with_the_dpp_reference(name: str, kernel: str) -> None:
    form, X, y = _problem(name)
    k = make_kernel(kernel, X)
    Z = initial_expansion_vectors(X, 4, "random", 0) + 0.05
    conic = ConicMarginal(form, X, y, k, 4, solver="clarabel", tol=1e-9).evaluate(Z)
    reference = CvxpyMarginal(form, X, y, k, 4, solver=REFERENCE_SOLVER.get(name, "clarabel"),
                              tol=1e-9).evaluate(Z)
    assert conic.value == pytest.approx(reference.value, rel=1e-6, abs=1e-9)
    scale = np.linalg.norm(reference.grad)
    assert np.linalg.norm(conic.grad - reference.grad) <= 1e-6 * scale
    assert conic.intercept == pytest.approx(reference.intercept, rel=1e-5, abs=1e-6)


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("kernel", ["rbf", "rbf+linear", "poly", "linear"])
@pytest.mark.parametrize("name", sorted(FORMULATIONS))
def test_gradient_with_the_default_backend_is_right_to_1e_6(name: str, kernel: str,
                                                            seed: int) -> None:
    form, X, y = _problem(name, seed)
    result = check_gradient(form, kernel, solver="clarabel", X=X, y=y, tol=1e-9,
                            random_state=seed)
    assert result.passed(1e-6), result.as_dict()


@pytest.mark.parametrize("solver", ["ecos", "osqp", "scs"])
@pytest.mark.parametrize("name", sorted(FORMULATIONS))
def test_other_backends_meet_their_stated_accuracy_or_refuse(name: str, solver: str) -> None:
    form, X, y = _problem(name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # SCS's own warnings about its accuracy
        try:
            result = check_gradient(form, "rbf", solver=solver, X=X, y=y, tol=1e-9)
        except (ValueError, SolverError) as exc:
            message = str(exc)
            if isinstance(exc, SolverError):
                # OSQP refuses where its polishing fails; SCS, a first-order method, where it
                # stops short of tol within its iterations (the ν-SVM on an Intel Xeon, where
                # an AMD EPYC's round-off let it through)
                refusals = {"osqp": "polishing failed", "scs": "scs: optimal_inaccurate"}
                assert refusals.get(solver, "no refusal") in message, message
            else:
                assert "handles quadratic programs only" in message, message
                assert solver == "osqp", message
            return
    assert result.passed(_backend_accuracy(solver)), result.as_dict()


def _full_value(form, X: np.ndarray, y: np.ndarray, kernel) -> float:
    """The full problem (w in the span of every φ(x_i)) solved directly over the Gram matrix."""
    K = kernel(X, X) + 1e-10 * np.eye(len(X))
    lam, V = np.linalg.eigh(K)
    R = np.sqrt(np.clip(lam, 0.0, None))[:, None] * V.T  # RᵀR = K
    k = int(form.n_outputs(y))
    a = cp.Variable(len(X) if k == 1 else (len(X), k))
    u = R @ a
    norms = (cp.sum_squares(u),) if k == 1 else tuple(cp.sum_squares(u[:, j])
                                                       for j in range(k))
    out = sparsify.Outputs(f=K @ a, norm_w2=cp.sum_squares(u), norms_w2=norms, y=y,
                           n_samples=len(X), n_outputs=k, norm_w=cp.norm(cp.vec(u, order="F")),
                           X=X)
    declaration = form.declare(out)
    problem = cp.Problem(declaration.objective, declaration.constraints)
    problem.solve(solver="CLARABEL")
    return float(problem.value)


@pytest.mark.parametrize("name", sorted(FORMULATIONS))
def test_xvs_on_every_point_give_the_full_problem(name: str) -> None:
    """Reduction: Nz = N with Z = X is the full kernel machine, solved directly."""
    form = FORMULATIONS[name]()
    X, y = declared.example_data(form, n_samples=25)
    k = make_kernel("rbf", X)
    ev = ConicMarginal(form, X, y, k, len(X), solver="clarabel", tol=1e-9).evaluate(X)
    assert ev.value == pytest.approx(_full_value(form, X, y, k), rel=1e-6, abs=1e-8)


@pytest.mark.parametrize(("make", "message"), [
    (lambda: declared.EpsilonSVR(C=0.0), "The 'C' parameter of EpsilonSVR must be a float"),
    (lambda: declared.HuberSVM(h=-1), "The 'h' parameter of HuberSVM must be a float"),
    (lambda: declared.QuantileRegression(tau=1.0),
     "The 'tau' parameter of QuantileRegression must be a float in the range (0.0, 1.0)"),
    (lambda: declared.NuSVM(nu=0.0), "The 'nu' parameter of NuSVM must be a float"),
    (lambda: declared.MinimaxProbabilityMachine(rho=0),
     "The 'rho' parameter of MinimaxProbabilityMachine must be a float"),
    (lambda: declared.KernelRidgeRegression(lam=-1.0),
     "The 'lam' parameter of KernelRidgeRegression must be a float"),
])
def test_bad_hyperparameters_are_refused_when_made(make, message) -> None:
    with pytest.raises(ValueError) as raised:
        make()
    assert message in str(raised.value)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["ls_svm", "laprls", "crammer_singer"])
def test_the_new_declarations_pass_the_conformance_suite(name: str) -> None:
    """The LS-SVM, LapRLS (its graph from X) and the Crammer–Singer SVM (K outputs): every
    check of the suite, with the structured backend and Clarabel."""
    from sparsify.testing import check_formulation

    form = FORMULATIONS[name]()
    estimator = {"ls_svm": declared.SparseLSSVM, "laprls": declared.SparseLapRLS,
                 "crammer_singer": declared.SparseCrammerSinger}[name]
    X, y = declared.example_data(form, n_samples=30)
    report = check_formulation(form, X=X, y=y, kernels=("rbf", "poly"),
                               solvers=("structured", "clarabel"),
                               estimator=estimator(max_iter=5, n_expansion=3, random_state=0))
    assert report.passed, report.table()


@pytest.mark.parametrize("name", ["laprls", "crammer_singer"])
def test_check_gradient_on_the_command_line_takes_them(name: str, monkeypatch, capsys) -> None:
    """LapRLS builds its graph from the inputs and the Crammer–Singer SVM gets three class
    codes: both work through `sparsify check-gradient` as through check_gradient."""
    import json

    from sparsify.cli import main

    monkeypatch.setattr(get_registry(), "entries",
                        {kind: dict(entries) for kind, entries in get_registry().entries.items()})
    sparsify.register_plugin(declared, name="declared_formulations_cli")
    try:
        assert main(["check-gradient", "--formulation", name, "--solver", "structured",
                     "--json"]) == 0
    finally:
        get_registry().manager.unregister(name="declared_formulations_cli")
    result = json.loads(capsys.readouterr().out)
    assert result["passed"] and result["solver"] == "structured"
    assert result["rel_error"] < 1e-6


def test_the_conformance_suite_runs_a_backend_as_check_gradient_does() -> None:
    """The suite's gradient check is check_gradient's, same marginal and settings: the same
    relative error, held to the backend's stated accuracy (ECOS: 3e-6)."""
    from sparsify.testing import formulation_checks

    form = FORMULATIONS["eps_svr"]()
    X, y = declared.example_data(form, n_samples=30)
    (check,) = [c for c in formulation_checks(form, X, y, solvers=("ecos",), estimator=False)
                if str(c) == "gradient[rbf-ecos]"]
    result = check.run()
    direct = check_gradient(form, "rbf", solver="ecos", X=X, y=y, n_expansion=4, tol=1e-9)
    assert result.status == "passed", result.message
    assert result.figures["rel_error"] == pytest.approx(direct.rel_error, rel=1e-6)
