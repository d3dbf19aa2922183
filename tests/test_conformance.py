"""The conformance suite: every built-in formulation passes it, broken ones fail it clearly."""

from __future__ import annotations

import re
import unittest
from typing import Any

import cvxpy as cp
import numpy as np
import pytest

from sparsify import Declaration, Evaluation, Formulation, Marginal
from sparsify.algorithms.svm.formulation import SVM
from sparsify.core.gradcheck import random_problem
from sparsify.core.solvers import Unsolved
from sparsify.plugins.registry import get_registry
from sparsify.testing import (
    ConformanceError,
    ConformanceReport,
    FormulationCheck,
    check_formulation,
    formulation_checks,
    parametrize_formulation_checks,
)


def _three_classes(n: int = 30) -> tuple[np.ndarray, np.ndarray]:
    X, _ = random_problem(n, 3)
    score = X[:, 0] + 0.5 * X[:, 1] ** 2
    return X, np.digitize(score, np.quantile(score, [1 / 3, 2 / 3]))


# scikit-learn's checks already run for these estimators through parametrize_with_checks, with
# the suite's settings (n_expansion=3, max_iter=5, random_state=0; KLR with max_iter=3); running
# them again here would add about 40 s to the test suite for the same checks.
_SAME_SKLEARN_CHECKS = {
    "kfd": "SparseKFD passes parametrize_with_checks in tests/test_kfd.py (method='convex' "
           "shares every line of it but the formulation's name)",
    "skfd": "SparseKFD(method='rayleigh') passes parametrize_with_checks in tests/test_kfd.py",
    "oneclass": "SparseOneClassSVM passes parametrize_with_checks in tests/test_oneclass.py",
    "klr": "SparseKernelLogisticRegression passes parametrize_with_checks in tests/test_klr.py",
    "kernel_ridge": "SparseKernelRidge passes parametrize_with_checks in "
                    "tests/test_kernel_ridge.py",
    "svr": "SparseSVR passes parametrize_with_checks in tests/test_svr.py",
}

_X3, _Y3 = _three_classes()

#: (id, formulation, keyword arguments of formulation_checks)
BUILTINS: list[tuple[str, str, dict[str, Any]]] = [
    ("kfd", "kfd", {"kernels": ("rbf", "rbf+linear"), "solvers": ("clarabel", "osqp"),
                    "skip": {"estimator": _SAME_SKLEARN_CHECKS["kfd"]}}),
    ("kernel_ridge", "kernel_ridge", {"kernels": ("rbf", "poly"), "solvers": ("clarabel",),
                                      "skip": {"estimator": _SAME_SKLEARN_CHECKS["kernel_ridge"]}}),
    ("svr", "svr", {"kernels": ("rbf", "poly"), "solvers": ("clarabel",),
                    "skip": {"estimator": _SAME_SKLEARN_CHECKS["svr"]}}),
    ("oneclass", "oneclass", {"solvers": ("clarabel", "ecos"),
                              "skip": {"estimator": _SAME_SKLEARN_CHECKS["oneclass"]}}),
    # Clarabel's exponential-cone duals are good to 1e-6 to 3e-6 relative (tests/test_klr.py),
    # just above the suite's tol; ECOS's to 1e-8 to 3e-7. At the suite's solver_tol of 1e-9
    # ECOS leaves W noisy by 4e-10 on some processors (an AMD EPYC here), where the finite
    # differences' own error (3.6e-6) no longer judges ECOS's stated 3e-6: solved to 1e-10.
    ("klr-binary", "klr", {"solvers": ("ecos",), "solver_tol": 1e-10,
                           "skip": {"estimator": _SAME_SKLEARN_CHECKS["klr"]}}),
    ("klr-multiclass", "klr", {"X": _X3, "y": _Y3, "solvers": ("ecos",), "solver_tol": 1e-10,
                               "skip": {"estimator": _SAME_SKLEARN_CHECKS["klr"]}}),
    ("skfd", "skfd", {"skip": {
        "own_value": "skfd's own W is the Rayleigh quotient's, −4 / W of the convex KFD it "
                     "declares, not the same value (the relation is tested in tests/test_kfd.py)",
        "estimator": _SAME_SKLEARN_CHECKS["skfd"],
    }}),
]


def _params() -> list[Any]:
    params = []
    for case, name, kwargs in BUILTINS:
        kwargs = dict(kwargs)
        X, y = kwargs.pop("X", None), kwargs.pop("y", None)
        for check in formulation_checks(name, X, y, **kwargs):
            params.append(pytest.param(check, id=f"{case}-{check}"))
    return params


@parametrize_formulation_checks(
    "svm", kernels=("rbf", "poly"), solvers=("clarabel", "osqp"),
    skip={"estimator": "run by test_svm_estimator_passes_the_suite, marked slow"})
def test_svm_passes_the_suite(check: FormulationCheck) -> None:
    check()


@pytest.mark.slow
def test_svm_estimator_passes_the_suite() -> None:
    # about 3 s: scikit-learn's check_estimator fits SparseSVC some 60 times
    report = check_formulation("svm", kernels=(), solvers=())
    assert report.result("estimator").status == "passed"
    assert report.result("estimator").figures["n_checks"] > 40


@pytest.mark.parametrize("check", _params())
def test_builtin_formulations_pass_the_suite(check: FormulationCheck) -> None:
    check()


def test_s3vm_passes_the_suite_when_registered() -> None:
    if "s3vm" not in get_registry().names("formulation"):
        pytest.skip("the 's3vm' formulation is not registered (its plugin is being written)")
    try:
        check_formulation("s3vm", kernels=(), solvers=(), estimator=False)
    except AssertionError as exc:
        if "'declaration'" in str(exc):
            pytest.skip(f"the 's3vm' formulation does not declare a problem yet: {exc}")
        raise
    report = check_formulation("s3vm", skip={
        "estimator": "SemiSupervisedSVC passes parametrize_with_checks in tests/test_s3vm.py"})
    assert report.passed
    assert report.result("gradient[rbf-clarabel]").status == "passed"


def test_report_lists_every_check_with_its_figures() -> None:
    # the SVM: OSQP's polishing succeeds on it (on the one-class SVM's small objective
    # it does not, and the gradient check says so)
    report = check_formulation("svm", estimator=False, solvers=("clarabel", "osqp"))
    assert isinstance(report, ConformanceReport) and report.passed
    names = [r.name for r in report.results]
    assert names == ["declaration", "full_problem[rbf-clarabel]", "gradient[rbf-clarabel]",
                     "full_problem[rbf-osqp]", "gradient[rbf-osqp]", "own_value[rbf]",
                     "own_gradient[rbf]", "estimator"]
    gradient = report.result("gradient[rbf-osqp]")
    assert gradient.status == "passed" and gradient.figures["rel_error"] < 1e-6
    assert gradient.figures["grad_norm"] > 0
    full = report.result("full_problem[rbf-clarabel]").figures
    assert full["value_z_eq_x"] == pytest.approx(full["value_direct"], rel=1e-6)
    assert report.result("own_value[rbf]").status == "passed"  # the exact fast path
    assert (check_formulation("oneclass", estimator=False).result("own_value[rbf]").status
            == "not applicable")
    assert report.result("estimator").message == "estimator=False"
    assert "gradient[rbf-osqp]" in str(report)
    assert report.as_dict()["passed"] is True


def test_a_solver_that_cannot_take_the_problem_is_skipped_with_the_reason() -> None:
    report = check_formulation("klr", solvers=("osqp",), estimator=False,
                               skip={"full_problem": "compared with clarabel elsewhere"})
    skipped = report.result("gradient[rbf-osqp]")
    assert skipped.status == "not applicable" and report.passed
    assert "quadratic programs only" in skipped.message
    assert report.result("own_gradient[rbf]").status == "passed"  # the Newton fast path


def test_a_report_in_which_no_full_problem_check_ran_fails() -> None:
    # OSQP cannot take KLR, so nothing compared W with the full problem: not a pass
    with pytest.raises(ConformanceError, match=r"ran\[full_problem\]: no full-problem check "
                                               "tested anything") as info:
        check_formulation("klr", solvers=("osqp",), estimator=False)
    assert info.value.report.result("ran[full_problem]").status == "could not run"
    assert "ran[gradient]" not in [r.name for r in info.value.report.results]  # own gradient


# ------------------------------------------------------------- checks that could not run


@pytest.fixture
def unsolvable_reference(monkeypatch):
    """The direct full problem, the full_problem check's reference, cannot be solved."""
    import sparsify.testing as testing

    def fail(problem, chain, tol):  # type: ignore[no-untyped-def]
        raise Unsolved([(backend, "user_limit") for backend in chain], None)

    monkeypatch.setattr(testing, "solve_problem", fail)


def test_a_reference_that_cannot_be_solved_fails_the_report(unsolvable_reference) -> None:
    with pytest.raises(ConformanceError) as raised:
        check_formulation("oneclass", estimator=False)
    report = raised.value.report
    assert not report.passed
    unrun = report.result("full_problem[rbf-clarabel]")
    assert unrun.status == "could not run" and "could not be solved" in unrun.message
    assert report.result("gradient[rbf-clarabel]").status == "passed"
    message = str(raised.value)
    assert "could not run 1 of 6" in message and "full_problem[rbf-clarabel]" in message
    assert "expected_skips={'full_problem[rbf-clarabel]': 'why'}" in message


def test_a_declared_reason_turns_it_into_a_skip_with_the_reason(unsolvable_reference) -> None:
    report = check_formulation("oneclass", estimator=False, expected_skips={
        "full_problem": "no backend solves the dense problem at this size"})
    assert report.passed and not report.stale
    skipped = report.result("full_problem[rbf-clarabel]")
    assert skipped.status == "skipped"
    assert "(declared: no backend solves the dense problem at this size)" in skipped.message


def test_a_declaration_that_did_not_happen_is_reported_as_stale() -> None:
    report = check_formulation("oneclass", estimator=False,
                               expected_skips={"full_problem[rbf-clarabel]": "slow solver"})
    assert report.passed
    assert [r.name for r in report.stale] == ["full_problem[rbf-clarabel]"]
    assert report.as_dict()["stale"] == ["full_problem[rbf-clarabel]"]
    assert report.result("full_problem[rbf-clarabel]").status == "passed"
    assert ("warning: full_problem[rbf-clarabel] was declared in expected_skips ('slow solver') "
            "but ran and passed; remove the declaration.") in str(report)


def test_under_pytest_undeclared_fails_declared_skips_stale_warns(unsolvable_reference) -> None:
    def only(name: str, **kwargs: Any) -> FormulationCheck:
        return next(c for c in formulation_checks("oneclass", estimator=False, **kwargs)
                    if c.name == name)

    with pytest.raises(AssertionError, match=r"full_problem\[rbf-clarabel\] of the 'oneclass' "
                                             r"formulation could not run: the direct full"):
        only("full_problem[rbf-clarabel]")()
    with pytest.raises(unittest.SkipTest, match=r"skipped: .*\(declared: known\)"):
        only("full_problem[rbf-clarabel]", expected_skips={"full_problem": "known"})()
    with pytest.raises(unittest.SkipTest, match="not applicable: the formulation supplies no"):
        only("own_value[rbf]")()
    with pytest.warns(UserWarning, match="was declared in expected_skips .* but ran and passed"):
        only("gradient[rbf-clarabel]", expected_skips={"gradient": "slow"})()


def test_unknown_check_names_are_refused() -> None:
    # refused when the checks are made, not when the first one runs
    with pytest.raises(ValueError, match=r"The 'expected_skips' parameter of the conformance "
                                         r"suite names checks that do not exist here: "
                                         r"\['ful_problem'\]\. The checks are \['declaration', "):
        formulation_checks("oneclass", expected_skips={"ful_problem": "typo"})


def test_a_full_name_wins_over_a_family_and_a_family_over_a_pattern() -> None:
    checks = formulation_checks(
        "oneclass", kernels=("rbf", "poly"), solvers=("clarabel", "osqp"),
        skip={"own_*": "measured elsewhere"},
        expected_skips={"full_problem[poly-osqp]": "name", "full_problem": "family",
                        "*[*-osqp]": "pattern"})
    declared = {c.name: (c.skip_reason, c.expected_skip) for c in checks}
    assert declared == {
        "declaration": (None, None),
        "full_problem[rbf-clarabel]": (None, "family"),
        "gradient[rbf-clarabel]": (None, None),
        "full_problem[rbf-osqp]": (None, "family"),
        "gradient[rbf-osqp]": (None, "pattern"),
        "full_problem[poly-clarabel]": (None, "family"),
        "gradient[poly-clarabel]": (None, None),
        "full_problem[poly-osqp]": (None, "name"),
        "gradient[poly-osqp]": (None, "pattern"),
        "own_value[rbf]": ("measured elsewhere", None),
        "own_gradient[rbf]": ("measured elsewhere", None),
        "own_value[poly]": ("measured elsewhere", None),
        "own_gradient[poly]": ("measured elsewhere", None),
        "estimator": (None, None),
    }


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"expected_skips": ["full_problem"]},
         r"The 'expected_skips' parameter of the conformance suite must be a mapping of check "
         r"names to reasons, such as \{'full_problem\[rbf-clarabel\]': 'why'\}\. Got list "
         r"instead\."),
        ({"expected_skips": {"full_problem": ""}},
         r"must map each check name to its reason, a non-empty str, .* Got 'full_problem': '' "
         r"instead\."),
        ({"skip": {"estimator": None}},
         r"The 'skip' parameter .* Got 'estimator': None instead\."),
        ({"expected_skips": {"gradient[*-scs]": "no SCS here"}},
         r"names checks that do not exist here: \['gradient\[\*-scs\]'\]"),
        ({"skip": {"gradient": "a"}, "expected_skips": {"gradient[rbf-clarabel]": "b"}},
         r"The check 'gradient\[rbf-clarabel\]' is in both skip= \('a'\) and expected_skips= "
         r"\('b'\): .* Keep one\."),
        ({"solvers": ("mosek",)}, r"Unknown solver 'mosek'\. Use one of \["),
        ({"kernels": ("rbff",)}, r"Unknown kernel 'rbff'\. Use one of \["),
    ],
    ids=["not-a-mapping", "empty-reason", "reason-not-str", "pattern-matches-nothing",
         "skip-and-expected", "unknown-solver", "unknown-kernel"],
)
def test_bad_arguments_are_refused_before_any_check_runs(kwargs: dict[str, Any],
                                                         message: str) -> None:
    for run in (formulation_checks, check_formulation):
        with pytest.raises(ValueError, match=message):
            run("oneclass", estimator=False, **kwargs)


def test_a_check_too_large_for_memory_could_not_run(monkeypatch) -> None:
    import sparsify.core.memory
    from sparsify.core.conic import estimate_memory

    # room for the gradient check's Nz = 4, not for the full problem's Z = X (Nz = N = 30)
    limit = estimate_memory(30, 30) - 1
    assert estimate_memory(30, 4) < limit
    monkeypatch.setattr(sparsify.core.memory, "available_memory", lambda: limit)
    with pytest.raises(ConformanceError) as raised:
        check_formulation("oneclass", estimator=False)
    report = raised.value.report
    unrun = report.result("full_problem[rbf-clarabel]")
    assert unrun.status == "could not run" and not report.passed
    assert unrun.message.startswith(
        "it would not fit in memory, so it was refused before anything was built (pass a "
        "smaller X: the conformance suite needs no more than a few dozen points): The generic "
        "path for the 'oneclass' formulation with N=30, Nz=30 would need about")
    assert report.result("gradient[rbf-clarabel]").status == "passed"
    declared = check_formulation("oneclass", estimator=False,
                                 expected_skips={"full_problem": "a small test machine"})
    assert declared.passed
    assert declared.result("full_problem[rbf-clarabel]").status == "skipped"


class Flat(Formulation):
    """W(Z) = 0 for every Z (β = 0 is optimal): no gradient check can judge it."""

    name = "flat"

    def declare(self, out):  # type: ignore[no-untyped-def]
        return Declaration(cp.Minimize(cp.sum_squares(out.f) + out.norm_w2))


def test_a_gradient_that_is_zero_everywhere_could_not_be_checked() -> None:
    with pytest.raises(ConformanceError) as raised:
        check_formulation(Flat())
    report = raised.value.report
    gradient = report.result("gradient[rbf-clarabel]")
    assert gradient.status == "could not run"
    assert "are both zero here" in gradient.message
    assert "cannot tell a right gradient from a wrong one" in gradient.message
    assert report.result("full_problem[rbf-clarabel]").status == "passed"
    assert report.result("estimator").status == "not applicable"  # Flat names no estimator
    assert check_formulation(Flat(), expected_skips={"gradient": "W is 0 for every Z"}).passed


def test_finite_differences_too_noisy_to_judge_could_not_run(monkeypatch) -> None:
    import dataclasses

    import sparsify.testing as testing

    real = testing.check_gradient

    def noisy(*args, **kwargs):  # type: ignore[no-untyped-def]
        return dataclasses.replace(real(*args, **kwargs), fd_error=1e-3, noise=1e-4)

    monkeypatch.setattr(testing, "check_gradient", noisy)
    report = check_formulation("oneclass", estimator=False,
                               expected_skips={"gradient": "W is noisy at this data"})
    skipped = report.result("gradient[rbf-clarabel]")
    assert report.passed and skipped.status == "skipped"
    assert skipped.message.startswith("the finite differences of W are not accurate enough to "
                                      "judge ∇W(Z) to 1e-06: their own error is estimated "
                                      "at 1.00e-03")
    assert skipped.message.endswith("(declared: W is noisy at this data)")


def test_a_solver_that_is_not_installed_could_not_run(monkeypatch) -> None:
    from sparsify.core.solvers import SolverBackend

    real = SolverBackend.available
    monkeypatch.setattr(SolverBackend, "available",
                        lambda self: self.name != "ecos" and real(self))
    with pytest.raises(ConformanceError, match=r"could not run 2 of 6") as raised:
        check_formulation("oneclass", solvers=("ecos",), estimator=False)
    for name in ("full_problem[rbf-ecos]", "gradient[rbf-ecos]"):
        result = raised.value.report.result(name)
        assert result.status == "could not run"
        assert result.message.startswith("the solver 'ecos' is not installed; nothing was tested")


def test_a_declared_check_that_fails_says_so() -> None:
    with pytest.raises(ConformanceError) as raised:
        check_formulation(WrongValue(), estimator=False,
                          expected_skips={"own_value": "the reference is slow"})
    failed = raised.value.report.result("own_value[rbf]")
    assert failed.status == "failed"
    assert failed.message.endswith("(expected_skips declared that it would not run, 'the "
                                   "reference is slow', but it ran and failed.)")


def test_a_check_run_alone_after_a_broken_declaration_fails() -> None:
    checks = {c.name: c for c in formulation_checks(NotDCP(), estimator=False)}
    result = checks["gradient[rbf-clarabel]"].run()  # run() returns, it does not raise
    assert result.status == "failed"
    assert result.message.startswith("Conformance check 'gradient[rbf-clarabel]' of the "
                                     "'broken_not_dcp' formulation failed: its problem cannot "
                                     "be built: The 'broken_not_dcp' formulation "
                                     "(tests.test_conformance.NotDCP, a plugin) is not DCP")
    with pytest.raises(AssertionError, match=r"To fix: see the 'declaration' check\.$"):
        checks["full_problem[rbf-clarabel]"]()


_PLUGIN_TESTS = """
import pytest
import sparsify.testing
from sparsify.core.solvers import Unsolved
from sparsify.testing import parametrize_formulation_checks

def fail(problem, chain, tol):
    raise Unsolved([(backend, "user_limit") for backend in chain], None)

sparsify.testing.solve_problem = fail  # the direct full problem cannot be solved

@parametrize_formulation_checks("oneclass", estimator=False, kernels=("rbf", "poly"),
                                expected_skips={"full_problem[poly-*]": "known",
                                                "gradient[poly-clarabel]": "stale"})
def test_conformance(check):
    check()
"""


@pytest.mark.slow
def test_under_pytest_itself(tmp_path) -> None:
    # about 3 s: a pytest run in a subprocess, on a plugin's test file
    import subprocess
    import sys

    (tmp_path / "test_plugin.py").write_text(_PLUGIN_TESTS)
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rfsw", "-p", "no:cacheprovider",
         "test_plugin.py"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    out = run.stdout
    assert run.returncode == 1, out
    # undeclared: a failure; declared: skipped with the reason; not applicable: skipped (the
    # four own_* checks and the estimator); a stale declaration: passed, with a warning
    assert "FAILED test_plugin.py::test_conformance[full_problem[rbf-clarabel]]" in out
    assert re.search(r"SKIPPED \[1\] .*skipped: the direct full problem could not be solved "
                     r".*\(declared: known\)", out), out
    assert re.search(r"SKIPPED \[4\] .*not applicable: the formulation supplies no W", out), out
    assert re.search(r"SKIPPED \[1\] .*not applicable: estimator=False", out), out
    assert "gradient[poly-clarabel] of the 'oneclass' formulation was declared in " \
           "expected_skips ('stale') but ran and passed; remove the declaration." in out
    assert "1 failed, 3 passed, 6 skipped, 1 warning" in out, out


# --------------------------------------------------------------------------- broken plugins


class NotDCP(Formulation):
    name = "broken_not_dcp"

    def declare(self, out):  # type: ignore[no-untyped-def]
        return Declaration(cp.Minimize(cp.sum_squares(out.f - out.y) - out.norm_w2))


class NotDPP(Formulation):
    name = "broken_not_dpp"

    def declare(self, out):  # type: ignore[no-untyped-def]
        # quad_form with a Parameter matrix: DCP (P is declared PSD) but not DPP
        P = cp.Parameter((out.n_samples, out.n_samples), PSD=True, value=np.eye(out.n_samples))
        return Declaration(cp.Minimize(cp.quad_form(out.f - out.y, P) + out.norm_w2))


class ForeignParameter(Formulation):
    name = "broken_parameter"

    def declare(self, out):  # type: ignore[no-untyped-def]
        lam = cp.Parameter(nonneg=True, value=1.0)  # DPP, but a Parameter of its own
        return Declaration(cp.Minimize(cp.sum_squares(out.f - out.y) + lam * out.norm_w2))


class IgnoresF(Formulation):
    name = "broken_ignores_f"

    def declare(self, out):  # type: ignore[no-untyped-def]
        return Declaration(cp.Minimize(out.norm_w2))


class Stateful(Formulation):
    """Changes its own hyperparameter at every declare(): the problem depends on the call."""

    name = "broken_stateful"

    def __init__(self) -> None:
        self.C = 1.0

    def declare(self, out):  # type: ignore[no-untyped-def]
        self.C *= 2.0
        hinge = cp.sum(cp.pos(1 - cp.multiply(out.y, out.f)))
        return Declaration(cp.Minimize(0.5 * out.norm_w2 + self.C * hinge))


class _Tampered(Marginal):
    """The SVM's exact W(Z) with a bug: a flipped gradient or a shifted value."""

    def __init__(self, inner: Marginal, flip: bool, shift: float) -> None:
        self.inner, self.flip, self.shift = inner, flip, shift
        self.formulation_name = inner.formulation_name

    def evaluate(self, Z, grad=True):  # type: ignore[no-untyped-def]
        ev = self.inner.evaluate(Z, grad)
        g = None if ev.grad is None else (-ev.grad if self.flip else ev.grad)
        return Evaluation(ev.value + self.shift, g, ev.coef, ev.intercept, ev.solver)


class WrongGradient(SVM):
    name = "broken_gradient"

    def marginal(self, X, y, kernel, n_expansion, solver, tol):  # type: ignore[no-untyped-def]
        inner = super().marginal(X, y, kernel, n_expansion, solver, tol)
        return None if inner is None else _Tampered(inner, flip=True, shift=0.0)


class WrongValue(SVM):
    name = "broken_value"

    def marginal(self, X, y, kernel, n_expansion, solver, tol):  # type: ignore[no-untyped-def]
        inner = super().marginal(X, y, kernel, n_expansion, solver, tol)
        return None if inner is None else _Tampered(inner, flip=False, shift=1.0)


@pytest.mark.parametrize(
    ("formulation", "check", "message"),
    [
        (NotDCP(), "declaration", r"is not DCP .* To fix: declare a cp\.Minimize problem"),
        # its own Parameter is what breaks DPP, and what the check names
        (NotDPP(), "declaration", r"creates cvxpy Parameters of its own"),
        (ForeignParameter(), "declaration", r"creates cvxpy Parameters of its own"),
        (IgnoresF(), "declaration", r"ignores the outputs f"),
        (Stateful(), "full_problem[rbf-clarabel]",
         r"with Z = X \(Nz = N = 30\) W\(Z\) = .* but the direct solve .* gives .* To fix: "
         r"declare\(\) must be a pure function"),
        (WrongGradient(), "own_gradient[rbf]",
         r"its own \(Formulation\.marginal\) ∇W\(Z\) differs from central finite differences "
         r"of W by a relative 2\.00e\+00 > 1e-06 .* To fix: the evaluate\(\) of the "
         r"Marginal"),
        (WrongValue(), "own_value[rbf]",
         r"its own W\(Z\) = .* but the generic cvxpy path, its reference, gives"),
    ],
    ids=["not-dcp", "not-dpp", "foreign-parameter", "ignores-f", "stateful", "wrong-gradient",
         "wrong-value"],
)
def test_broken_formulations_fail_with_the_check_and_the_fix(
    formulation: Formulation, check: str, message: str
) -> None:
    with pytest.raises(AssertionError) as info:
        check_formulation(formulation, estimator=False)
    text = str(info.value)
    assert f"Conformance check {check!r} of the {formulation.name!r} formulation failed" in text
    assert re.search(message, text, flags=re.DOTALL), text
    # the failed check is the only failure; a failed declaration stops the others
    lines = [line for line in text.splitlines() if line.startswith("- ")]
    assert len(lines) == 1, text
    if check == "declaration":
        assert "not run: the declaration check failed" in text


def test_wrong_value_keeps_a_right_gradient() -> None:
    """A shifted W has the right derivative: only the value check can catch it."""
    checks = {c.name: c for c in formulation_checks(WrongValue(), estimator=False)}
    assert checks["own_gradient[rbf]"]()["rel_error"] < 1e-6
    with pytest.raises(AssertionError, match="own_value"):
        checks["own_value[rbf]"]()


def test_checks_skip_through_unittest_and_take_reasons() -> None:
    checks = {c.name: c for c in formulation_checks(
        "kfd", estimator=False, skip={"gradient": "measured elsewhere"})}
    with pytest.raises(unittest.SkipTest, match="estimator=False"):
        checks["estimator"]()
    with pytest.raises(unittest.SkipTest, match="measured elsewhere"):
        checks["gradient[rbf-clarabel]"]()
    with pytest.raises(unittest.SkipTest, match="supplies no W"):
        checks["own_value[rbf]"]()
    assert str(checks["declaration"]) == "declaration"
