"""The families of issue 49's probe (hostile or careless input): one test or more per family.

Each family was unsafe or silent (a plugin that exits reported success, non-finite problem data
was "solved", a replaced output widened its permissions, a 12 KB file demanded minutes, ...)
or answered with an unhelpful message. Every test asserts what the input now gets: an error
that names the culprit and says what to change, a warning, or a sane result. The probe itself,
wider than these tests, is ``benchmarks/probe.py`` (docs/results/probe.md).
"""

from __future__ import annotations

import io
import os
import stat
import subprocess
import sys
import types
import zipfile
from pathlib import Path
from typing import Any

import cvxpy as cp
import numpy as np
import pytest
from sklearn.datasets import make_moons
from sklearn.exceptions import ConvergenceWarning

from sparsify import (
    Declaration,
    Formulation,
    Marginal,
    SparseKernelLogisticRegression,
    SparseKernelRidge,
    SparseKFD,
    SparseOneClassSVM,
    SparseSVC,
    SparseSVR,
    hookimpl,
    register_plugin,
)
from sparsify.cli import main
from sparsify.core.errors import PluginError
from sparsify.core.estimator import estimator_for
from sparsify.core.gradcheck import check_gradient
from sparsify.core.registry import get_registry
from sparsify.core.solvers import status_hint
from sparsify.io import dumps_model, load_model, loads_model, save_model
from sparsify.io.model_file import ModelFileError
from sparsify.testing import ConformanceError, check_formulation
from tests.test_cli import _assert_clean_failure, _blobs, _run, _write_csv
from tests.test_model_file import _forge, _npy, _valid

X_MOONS, Y_MOONS = make_moons(60, noise=0.1, random_state=0)
QUICK = ["--n-expansion", "2", "--max-iter", "2"]


# ------------------------------------------------------------------ plugins (families 1-3)


def _hinge(out: Any, b: Any) -> Any:
    return cp.sum(cp.pos(1 - cp.multiply(out.y, out.f + b)))


class _Exits(Formulation):
    """Ends the process from declare(), in the way its ``how`` names."""

    name, task = "probe49_exits", "classifier"

    def __init__(self, how: str = "sys_exit") -> None:
        self.how = how

    def declare(self, out: Any) -> Declaration:
        if self.how == "sys_exit":
            sys.exit(0)
        if self.how == "os_exit":
            os._exit(0)
        if self.how == "keyboard":
            raise KeyboardInterrupt
        raise SystemExit(3)


class _OsExits(_Exits):
    name = "probe49_os_exits"

    def __init__(self, how: str = "os_exit") -> None:
        self.how = how


class _LogTargets(Formulation):
    """np.log of the targets: NaN wherever a target is negative."""

    name, task = "probe49_log", "regressor"

    def declare(self, out: Any) -> Declaration:
        b = cp.Variable()
        with np.errstate(invalid="ignore"):
            target = np.log(out.y)
        return Declaration(cp.Minimize(cp.sum_squares(out.f + b - target) + out.norm_w2), [], b)


class _Integer(Formulation):
    name, task = "probe49_integer", "classifier"

    def declare(self, out: Any) -> Declaration:
        b = cp.Variable(integer=True)
        return Declaration(cp.Minimize(_hinge(out, b) + out.norm_w2), [], b)


class _WideIntercept(Formulation):
    name, task = "probe49_wide_b", "classifier"

    def declare(self, out: Any) -> Declaration:
        b = cp.Variable(5)
        return Declaration(cp.Minimize(_hinge(out, b[0]) + out.norm_w2 + cp.sum_squares(b)),
                           [], b)


class _Overflowing(Formulation):
    """Finite constants whose products overflow once cvxpy multiplies them out."""

    name, task = "probe49_overflow", "classifier"

    def declare(self, out: Any) -> Declaration:
        b = cp.Variable()
        return Declaration(cp.Minimize(cp.sum(1e300 * (1e300 * out.f)) + _hinge(out, b)
                                       + out.norm_w2), [], b)


class _ExitingMarginal(Marginal):
    def evaluate(self, Z: Any, grad: bool = True) -> Any:
        sys.exit(0)


class _OwnMarginalExits(Formulation):
    name, task = "probe49_own_exits", "classifier"

    def declare(self, out: Any) -> Declaration:
        b = cp.Variable()
        return Declaration(cp.Minimize(_hinge(out, b) + out.norm_w2), [], b)

    def marginal(self, X: Any, y: Any, kernel: Any, n_expansion: int, solver: str,
                 tol: float) -> Marginal:
        return _ExitingMarginal()


_PLUGINS = (_Exits, _OsExits, _LogTargets, _Integer, _WideIntercept, _Overflowing,
            _OwnMarginalExits)


@pytest.fixture(scope="module", autouse=True)
def _registered() -> None:
    if _Exits.name not in get_registry().names("formulation"):
        register_plugin(types.SimpleNamespace(register_formulations=hookimpl(
            lambda register: [register(f) for f in _PLUGINS])), "probe49_plugins")


@pytest.mark.parametrize("how", ["sys_exit", "os_exit", "keyboard", "system_exit"])
def test_a_plugin_that_exits_is_an_error_naming_it(how: str) -> None:
    est_cls, _ = estimator_for(_Exits)
    real_exit = os._exit
    with pytest.raises(PluginError, match=r"the formulation 'probe49_exits' "
                                          r"\(tests\.test_probe\._Exits, a plugin\) .* in "
                                          r"declare\(\) at .*test_probe\.py:\d+, which was "
                                          r"stopped: a plugin cannot exit or interrupt sparsify"):
        est_cls(n_expansion=3, how=how, max_iter=2, solver="clarabel").fit(X_MOONS, Y_MOONS)
    assert os._exit is real_exit  # itself again afterwards


@pytest.mark.parametrize("command", ["fit", "check-gradient"])
@pytest.mark.parametrize("formulation", ["probe49_exits", "probe49_os_exits"])
def test_the_command_line_never_exits_0_for_a_plugin_that_exits(
        capsys: pytest.CaptureFixture[str], command: str, formulation: str) -> None:
    # before: exit status 0, and check-gradient printed nothing (a CI gate passed)
    code, out, err = _run(capsys, command, "--formulation", formulation,
                          *(QUICK if command == "fit" else []))
    _assert_clean_failure(code, out, err, f"the formulation {formulation!r}",
                          "os._exit(0)" if "os" in formulation else "SystemExit(0)",
                          "a plugin cannot exit or interrupt sparsify")


@pytest.mark.slow
def test_os_exit_in_a_plugin_ends_no_process_with_status_0(tmp_path: Path) -> None:
    """In a fresh process, as a CI gate runs it: exit status 2 and one error line."""
    script = tmp_path / "run.py"
    script.write_text(
        "import os, sys, types, cvxpy as cp\n"
        "from sparsify import Formulation, hookimpl, register_plugin\n"
        "from sparsify.cli import main\n"
        "class Quits(Formulation):\n"
        "    name, task = 'quits', 'classifier'\n"
        "    def declare(self, out):\n"
        "        os._exit(0)\n"
        "register_plugin(types.SimpleNamespace(register_formulations=hookimpl(\n"
        "    lambda register: register(Quits))), 'quits_plugin')\n"
        "sys.exit(main(['check-gradient', '--formulation', 'quits']))\n")
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 2 and proc.stdout == ""
    assert "called os._exit(0) in declare()" in proc.stderr


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_still_exits_while_exits_are_stopped() -> None:
    from sparsify.plugins.plugin_code import exits_stopped

    with exits_stopped:
        pid = os.fork()
        if pid == 0:  # the child: its os._exit must end it, not raise
            os._exit(7)
        _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 7


def test_an_own_marginal_that_exits_is_stopped() -> None:
    est_cls, _ = estimator_for(_OwnMarginalExits)
    with pytest.raises(PluginError, match=r"'probe49_own_exits' .* raised SystemExit\(0\) "
                                          r"\(sys\.exit\) in evaluate\(\)"):
        est_cls(n_expansion=3, max_iter=2).fit(X_MOONS, Y_MOONS)


def test_the_conformance_suite_reports_an_exit_as_a_failure() -> None:
    with pytest.raises(ConformanceError, match=r"SystemExit\(0\)") as info:
        check_formulation(_Exits(), estimator=False)
    assert info.value.report.result("declaration").status == "failed"


def test_non_finite_declared_data_is_refused_before_any_solve(
        capsys: pytest.CaptureFixture[str]) -> None:
    X = np.linspace(-2, 2, 30)[:, None]
    y = np.sin(X[:, 0])  # negative targets: log is NaN there
    est_cls, _ = estimator_for(_LogTargets)
    message = (r"The 'probe49_log' formulation \(tests\.test_probe\._LogTargets, a plugin\) "
               r"declares non-finite data in its objective: a constant of shape \(30,\) holds "
               r"NaN \(15 of 30 values\)")
    for solver in ("auto", "structured", "clarabel", "ecos", "scs"):
        with pytest.raises(ValueError, match=message):
            est_cls(n_expansion=3, solver=solver).fit(X, y)
    with pytest.raises(ValueError, match=message.replace("30", r"\d+").replace("15", r"\d+")):
        check_gradient(_LogTargets(), X=X, y=y)
    code, out, err = _run(capsys, "check-gradient", "--formulation", "probe49_log")
    _assert_clean_failure(code, out, err, "declares non-finite data")


def test_overflow_in_the_compiled_data_is_refused_naming_the_formulation() -> None:
    est_cls, _ = estimator_for(_Overflowing)
    with pytest.raises(ValueError, match=r"'probe49_overflow' formulation \(.*a plugin\) "
                                         r"compiles to a problem whose linear objective c "
                                         r"holds infinity"):
        est_cls(n_expansion=3, solver="clarabel").fit(X_MOONS, Y_MOONS)


def test_integer_variables_and_a_wide_intercept_are_refused_at_declaration(
        capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(ConformanceError) as info:  # before: passed with estimator=False
        check_formulation(_Integer(), estimator=False)
    assert "declares the integer or boolean variable(s)" in \
        info.value.report.result("declaration").message
    with pytest.raises(ConformanceError) as info:
        check_formulation(_WideIntercept(), estimator=False)
    assert "declares an intercept of shape (5,)" in info.value.report.result("declaration").message
    # sparsify fit refuses it before the fit, not after it
    code, out, err = _run(capsys, "fit", "--formulation", "probe49_wide_b", *QUICK)
    _assert_clean_failure(code, out, err, "intercept must have shape () or (1,)")
    code, out, err = _run(capsys, "fit", "--formulation", "probe49_integer", *QUICK)
    _assert_clean_failure(code, out, err, "integer or boolean variable(s)")
    assert "Use solver='clarabel'" not in err  # the hint that followed Clarabel's own refusal


def test_a_plugins_cvxpy_error_is_named_with_a_hint(capsys: pytest.CaptureFixture[str]) -> None:
    class VectorObjective(Formulation):
        name, task = "probe49_vector", "classifier"

        def declare(self, out: Any) -> Declaration:
            return Declaration(cp.Minimize(cp.pos(1 - cp.multiply(out.y, out.f))))

    if VectorObjective.name not in get_registry().names("formulation"):
        register_plugin(types.SimpleNamespace(register_formulations=hookimpl(
            lambda register: register(VectorObjective))), "probe49_vector_plugin")
    code, out, err = _run(capsys, "fit", "--formulation", "probe49_vector", *QUICK)
    _assert_clean_failure(code, out, err, "the formulation 'probe49_vector'", "a plugin",
                          "raised in declare()", "the objective must be a scalar")


def test_a_failing_estimator_check_names_its_causes() -> None:
    from sklearn.base import BaseEstimator, ClassifierMixin

    class Refusing(ClassifierMixin, BaseEstimator):
        def fit(self, X: Any, y: Any) -> Any:
            raise ValueError("this estimator refuses every data set")

    # the most frequent cause first, with the checks it failed
    with pytest.raises(ConformanceError, match=r"for \d+ cause\(s\): \d+ raised ValueError: "
                                               r"this estimator refuses every data set "
                                               r"\(check_"):
        check_formulation("svm", estimator=Refusing(), skip={"gradient": "elsewhere",
                                                             "full_problem": "elsewhere"})


def test_a_certificate_gives_its_hint_among_stalled_backends() -> None:
    assert status_hint(["error (stalled)", "unbounded", "user_limit"]).startswith(
        "The solver finds the objective unbounded below")


# ------------------------------------------------------------------ outputs keep their mode (4)


@pytest.mark.parametrize("mode", [0o600, 0o640])
def test_a_replaced_output_keeps_its_mode_and_owner(tmp_path: Path, mode: int,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    targets = {name: tmp_path / name for name in ("m.spm", "p.csv", "m.onnx", "s.spm")}
    for path in targets.values():
        path.write_bytes(b"old")
        path.chmod(mode)
        if os.geteuid() == 0:
            os.chown(path, 1234, 4321)
    data = _write_csv(tmp_path / "d.csv", *_blobs(10))
    assert main(["fit", "--data", str(data), *QUICK, "--out", str(targets["m.spm"])]) == 0
    assert main(["predict", "--model", str(targets["m.spm"]), "--data", str(data), "--out",
                 str(targets["p.csv"])]) == 0
    pytest.importorskip("skl2onnx")
    assert main(["export", str(targets["m.spm"]), "--onnx", str(targets["m.onnx"])]) == 0
    save_model(SparseSVC(2, max_iter=2).fit(*_blobs(10)), targets["s.spm"])
    capsys.readouterr()
    for path in targets.values():
        info = path.stat()
        assert path.read_bytes() != b"old" and stat.S_IMODE(info.st_mode) == mode, path
        if os.geteuid() == 0:
            assert (info.st_uid, info.st_gid) == (1234, 4321), path


# ------------------------------------------------------------------ costs bounded (5)


def test_a_model_whose_prediction_costs_more_than_its_size_is_refused() -> None:
    members, header = _valid()
    taylor = {"name": "taylor_rbf", "gamma": 0.5, "order": 1000}
    header["kernel"] = {"name": "sum", "weights": None, "parts": [taylor] * 110}
    Z = np.load(io.BytesIO(members["expansion_vectors.npy"]))
    beta = np.load(io.BytesIO(members["expansion_coef.npy"]))
    Z = np.tile(Z, (max(1, 300 // len(Z)) + 1, 1))[:300]
    members["expansion_vectors.npy"] = _npy(Z)
    members["expansion_coef.npy"] = _npy(np.resize(beta, (beta.shape[0], 300)))
    for entry in header["arrays"]:
        if entry["name"] in ("expansion_vectors", "expansion_coef"):
            entry["shape"][-1 if entry["name"] == "expansion_coef" else 0] = 300
    with pytest.raises(ModelFileError, match=r"predicting one row would take about 3\.3e\+07 "
                                             r"multiply-adds \(110 kernel parts, Taylor order up "
                                             r"to 1000, 300 XVs, \d+ features\)"):
        loads_model(_forge(members, header=header), source="costly.spm")


def test_a_model_declaring_huge_features_without_xvs_is_refused() -> None:
    members, header = _valid()
    coef = np.load(io.BytesIO(members["expansion_coef.npy"]))
    members["expansion_vectors.npy"] = _npy(np.zeros((0, 10**9)))
    members["expansion_coef.npy"] = _npy(np.zeros((coef.shape[0], 0)))
    header["n_features_in"] = 10**9
    header["feature_names_in"] = None
    for entry in header["arrays"]:
        if entry["name"] == "expansion_vectors":
            entry["shape"] = [0, 10**9]
        if entry["name"] == "expansion_coef":
            entry["shape"] = [coef.shape[0], 0]
    with pytest.raises(ModelFileError, match=r"predicting one row would take about 1e\+09"):
        loads_model(_forge(members, header=header), source="wide.spm")


def test_an_onnx_graph_too_large_to_convert_is_refused_before_skl2onnx() -> None:
    pytest.importorskip("skl2onnx")
    from sparsify import SumKernel, TaylorRBF, to_onnx

    kernel = SumKernel(tuple(TaylorRBF(gamma=1.0, order=100) for _ in range(20)))
    clf = SparseSVC(4, kernel=kernel, max_iter=0, random_state=0).fit(X_MOONS, Y_MOONS)
    with pytest.raises(ValueError, match=r"would have \d+ nodes, more than the 4096"):
        to_onnx(clf)


def test_sizes_a_data_file_implies_are_bounded(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    libsvm = tmp_path / "wide.libsvm"
    libsvm.write_text("1 1000000000:1\n-1 2:1\n")
    code, out, err = _run(capsys, "fit", "--data", libsvm, *QUICK)
    _assert_clean_failure(code, out, err, "feature indices up to 1000000000",
                          "more than its limit")
    X = np.random.default_rng(0).normal(size=(150, 2))
    classes = _write_csv(tmp_path / "ids.csv", X, np.arange(150) // 2)
    code, out, err = _run(capsys, "fit", "--data", classes, *QUICK)
    _assert_clean_failure(code, out, err, "got 75 classes in 150 samples",
                          "fit a regressor")
    code, out, err = _run(capsys, "fit", "--n-init", "1000000", *QUICK)
    _assert_clean_failure(code, out, err, "'n_init' parameter of SparseSVC must be an int in "
                                          "the range [1, 1000]")
    # an .npz member whose header declares far more than it holds
    buf = io.BytesIO()
    np.savez(buf, X=np.zeros((3, 2)), y=np.zeros(3))
    source = zipfile.ZipFile(io.BytesIO(buf.getvalue()))
    forged = tmp_path / "huge.npz"
    with zipfile.ZipFile(forged, "w") as out_zip:
        for info in source.infolist():
            raw = source.read(info)
            if info.filename == "X.npy":
                header = io.BytesIO()
                np.lib.format.write_array_header_1_0(
                    header, {"descr": "<f8", "fortran_order": False, "shape": (10**8, 10**4)})
                raw = header.getvalue() + raw[raw.index(b"\n") + 1:]
            out_zip.writestr(info.filename, raw)
    code, out, err = _run(capsys, "fit", "--data", forged, *QUICK)
    _assert_clean_failure(code, out, err, "huge.npz is not a valid .npz file: its array 'X' "
                                          "declares the shape (100000000, 10000)")


# ------------------------------------------------------------------ float32 export (6)


@pytest.mark.parametrize("field", ["coef", "weights", "platt"])
def test_a_float32_export_that_would_overflow_is_refused(field: str) -> None:
    pytest.importorskip("skl2onnx")
    from sparsify import RBF, SumKernel, to_onnx

    if field == "weights":
        kernel = SumKernel((RBF(1.0), RBF(2.0)), weights=(1e300, 1.0))
        clf = SparseSVC(4, kernel=kernel, max_iter=0, random_state=0).fit(X_MOONS, Y_MOONS)
    else:
        clf = SparseSVC(4, max_iter=0, random_state=0, probability=field == "platt").fit(
            X_MOONS, Y_MOONS)
        if field == "coef":
            clf.expansion_coef_ = clf.expansion_coef_ * 1e300
        else:
            clf.probA_ = np.full_like(clf.probA_, 1e200)
    with pytest.raises(ValueError, match=r"SparseSVC cannot be exported in float32: .*beyond "
                                         r"float32's largest 3\.4e\+38.*Export it in float64"):
        to_onnx(clf, dtype="float32")
    to_onnx(clf, dtype="float64")  # what the model holds: float64 takes it


# ------------------------------------------------------------------ extreme scales (7)


@pytest.mark.parametrize("scale", [1e150, 1e-150])
def test_extreme_feature_scales_fit_as_the_unscaled_data(scale: float) -> None:
    # before: n_iter_ == 0, the XVs never moved, no warning
    reference = SparseSVC(5, random_state=0).fit(X_MOONS, Y_MOONS)
    clf = SparseSVC(5, random_state=0).fit(X_MOONS * scale, Y_MOONS)
    assert clf.n_iter_[0] > 0
    assert clf.score(X_MOONS * scale, Y_MOONS) >= reference.score(X_MOONS, Y_MOONS) - 0.05


@pytest.mark.parametrize(("scale", "how"), [(1e300, "overflow"), (1e-300, "underflow")])
def test_inputs_whose_squares_leave_float64_are_refused(scale: float, how: str) -> None:
    with pytest.raises(ValueError, match=rf"the inputs reach .*, so their squares {how} "
                                         r"float64.*Standardise the features"):
        SparseSVC(5).fit(X_MOONS * scale, Y_MOONS)


def test_a_gamma_that_overflows_is_named_and_a_flat_w_warns() -> None:
    with pytest.raises(ValueError, match=r"SparseSVC: gamma=1e\+308 is too large for these "
                                         r"inputs.*Use gamma='scale'"):
        SparseSVC(5, gamma=1e308).fit(X_MOONS, Y_MOONS)
    with pytest.warns(ConvergenceWarning, match=r"L-BFGS made no step from the initial XVs.*"
                                                r"check gamma"):
        SparseSVC(5, gamma=1e-30, random_state=0).fit(X_MOONS, Y_MOONS)


def test_a_gradient_check_says_when_w_is_flat_and_validates_its_steps(
        capsys: pytest.CaptureFixture[str]) -> None:
    result = check_gradient("svm", gamma=1e300)
    assert result.flat and not result.passed()
    code, out, _ = _run(capsys, "check-gradient", "--formulation", "svm", "--gamma", "1e-300")
    assert code == 1 and "does not change with the XVs here" in out and "CANNOT JUDGE" in out
    for eps in (0.0, float("nan"), -1e-3):
        with pytest.raises(ValueError, match=r"The 'eps' parameter of check_gradient must be a "
                                             r"float in the range \(0\.0, 1\.0\) or None"):
            check_gradient("svm", eps=eps)


# ------------------------------------------------------------------ options not ignored (8)


def test_reading_options_a_file_does_not_use_are_refused(tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]
                                                         ) -> None:
    X, y = _blobs(10)
    npz = tmp_path / "plain.npz"
    np.savez(npz, X=X, y=y)
    csv_file = _write_csv(tmp_path / "d.csv", X, y)
    model = tmp_path / "m.spm"
    assert main(["fit", "--data", str(csv_file), *QUICK, "--out", str(model)]) == 0
    capsys.readouterr()
    cases = [
        (["fit", "--data", npz, "--split", "5", *QUICK], "--split 5 selects a split"),
        (["predict", "--model", model, "--data", npz, "--split", "5"], "has none"),
        (["fit", "--data", csv_file, "--split", "2", *QUICK], "d.csv has none"),
        (["fit", "--data", npz, "--header", *QUICK], "--header applies to CSV files"),
        (["fit", "--data", csv_file, "--zero-based", *QUICK], "--zero-based applies to LIBSVM"),
        (["fit", "--split", "3", *QUICK], "without --data the embedded Banana data"),
        (["check-gradient", "--formulation", "svm", "--split", "2"], "a small random problem"),
    ]
    for args, needle in cases:
        _assert_clean_failure(*_run(capsys, *args), needle)


def test_options_are_not_overridden_by_param(capsys: pytest.CaptureFixture[str]) -> None:
    cases = [
        (["--C", "5", "--param", "C=7"], "--param C=7: C has an option of its own; give it as --C"),
        (["--param", "kernel=linear"], "give it as --kernel"),
        (["--param", "random_state=3"], "give it as --seed"),
        (["--param", "probability=true", "--param", "probability=false"], "given twice"),
        (["--formulation", "skfd", "--param", "method=convex"],
         "the formulation 'skfd' fixes method='rayleigh'"),
        (["--param", "n_expansion=true"], "give it as --n-expansion"),
    ]
    for args, needle in cases:
        _assert_clean_failure(*_run(capsys, "fit", *QUICK, *args), needle)
    with pytest.raises(ValueError, match=r"The 'n_expansion' parameter of SparseSVC must be a "
                                         r"number, not a bool\. Got True instead\."):
        SparseSVC(True).fit(X_MOONS, Y_MOONS)
    code, _, _ = _run(capsys, "fit", *QUICK, "--param", "probability=True", "--json")
    assert code == 0  # typed: a bool, not the string 'True' that no check can take
    code, _, err = _run(capsys, "fit", *QUICK, "--degree", "4", "--inlier-label", "2")
    assert code == 0
    assert "--degree is ignored: the kernel 'rbf' has no parameter 'degree'" in err
    assert "--inlier-label is ignored" in err


def test_an_opset_out_of_range_is_a_usage_error(capsys: pytest.CaptureFixture[str],
                                                tmp_path: Path) -> None:
    pytest.importorskip("skl2onnx")
    model = tmp_path / "m.spm"
    assert main(["fit", *QUICK, "--out", str(model)]) == 0
    capsys.readouterr()
    code, out, err = _run(capsys, "export", model, "--onnx", tmp_path / "m.onnx", "--opset",
                          "1000")
    _assert_clean_failure(code, out, err, "--opset 1000 is not an opset this export can target")
    assert not (tmp_path / "m.onnx").exists()


# ------------------------------------------------------------------ Dask never gathered (9)


def _estimators() -> list[type]:
    from sklearn.base import BaseEstimator

    import sparsify

    return [getattr(sparsify, name) for name in sparsify.__all__
            if isinstance(getattr(sparsify, name), type)
            and issubclass(getattr(sparsify, name), BaseEstimator)
            and name not in ("SparseKernelClassifier", "SparseKernelRegressor",
                             "SparseKernelTransformer", "SparseOutlierDetector",
                             "SparseSearchCV")]  # a search needs its estimator: test_search


@pytest.mark.parametrize("estimator", _estimators(), ids=lambda cls: cls.__name__)
def test_no_estimator_gathers_dask_collections_silently(estimator: type) -> None:
    da = pytest.importorskip("dask.array")
    X = da.from_array(X_MOONS, chunks=20)
    y = da.from_array(Y_MOONS, chunks=20)
    try:
        estimator().fit(X, y)
    except (ValueError, TypeError) as exc:
        message = str(exc)
    else:
        raise AssertionError(f"{estimator.__name__} gathered the dask collections")
    # refused with the reason, or (the estimators that fit row blocks) asked for a Client
    assert ("does not take dask collections" in message
            or "needs a dask.distributed Client" in message
            or "dask arrays" in message), message


@pytest.mark.slow
def test_the_worker_memory_check_fires_for_the_reported_case() -> None:
    """300 000-row blocks, 200 XVs, 1 GB workers: the workers ran out of memory three times."""
    da = pytest.importorskip("dask.array")
    distributed = pytest.importorskip("distributed")
    rng = np.random.default_rng(0)
    X = rng.normal(size=(600_000, 2))
    y = (X[:, 0] > 0).astype(int)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, memory_limit="1GB",
                                  dashboard_address=":0") as cluster, \
            distributed.Client(cluster):
        with pytest.raises(ValueError, match=r"blocks on worker .* \(Nz=200\) would need about "
                                             r".* MiB are available\. \(Dask pauses a worker"):
            SparseSVC(200, max_iter=2, random_state=0).fit(da.from_array(X, chunks=300_000),
                                                           da.from_array(y, chunks=300_000))


@pytest.mark.slow
def test_bad_dask_input_is_named() -> None:
    da = pytest.importorskip("dask.array")
    dd = pytest.importorskip("dask.dataframe")
    distributed = pytest.importorskip("distributed")
    import pandas as pd

    y_nan = Y_MOONS.astype(float)
    y_nan[3] = np.nan
    frame = pd.DataFrame({"a": X_MOONS[:, 0], "b": X_MOONS[:, 1], "name": ["x"] * 60})
    with distributed.LocalCluster(n_workers=1, processes=False, dashboard_address=":0") as \
            cluster, distributed.Client(cluster):
        with pytest.raises(ValueError, match=r"y passed to SparseSVC\.fit contains NaN or "
                                             r"infinity in its dask blocks"):
            SparseSVC(3).fit(da.from_array(X_MOONS, chunks=20), da.from_array(y_nan, chunks=20))
        with pytest.raises(ValueError, match=r"X passed to SparseSVC\.fit has columns that are "
                                             r"not numbers: name"):
            SparseSVC(3).fit(dd.from_pandas(frame, npartitions=2),
                             dd.from_pandas(pd.Series(Y_MOONS), npartitions=2))


# ------------------------------------------------------------------ unhelpful messages


def test_data_errors_name_the_file_and_the_cause(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    fifo = tmp_path / "data.csv"
    os.mkfifo(fifo)
    _assert_clean_failure(*_run(capsys, "fit", "--data", fifo, *QUICK),
                          "is a FIFO (named pipe), not a regular file")
    long_cell = tmp_path / "long.csv"
    long_cell.write_text('a,b,label\n1,"2,3\n' + "x" * 200_000 + "\n")
    _assert_clean_failure(*_run(capsys, "fit", "--data", long_cell, *QUICK),
                          "a cell is longer than", "a quote")


def test_estimator_api_errors_say_what_to_change() -> None:
    with pytest.raises(ValueError, match=r"sample_weight reaches 1e\+300.*divide sample_weight "
                                         r"by its mean"):
        SparseSVC(5).fit(X_MOONS, Y_MOONS, sample_weight=np.full(60, 1e300))
    with pytest.raises(ValueError, match=r"The targets of y reach .*e\+200: above 1e\+100"):
        SparseKernelRidge(5).fit(X_MOONS, Y_MOONS * 1e200 + 1.0)
    mixed = np.array([1, "a", None] * 20, dtype=object)
    for est in (SparseSVC(5), SparseKFD(5), SparseKernelLogisticRegression(5)):
        with pytest.raises(ValueError, match=r"got labels of mixed types in y \(None, int, "
                                             r"str\)"):
            est.fit(X_MOONS, mixed)
    for y in (Y_MOONS, np.arange(60) % 3):
        with pytest.raises(ValueError, match=r"The 'n_jobs' parameter of SparseSVC must be an "
                                             r"int in the range \(-inf, -1\], an int in the "
                                             r"range \[1, inf\) or None\. Got 0 instead\."):
            SparseSVC(5, n_jobs=0).fit(X_MOONS, y)


def test_outputs_that_work_are_unchanged(tmp_path: Path) -> None:
    """The families' guards let ordinary work through: fits, saves and loads."""
    clf = SparseSVC(4, random_state=0, max_iter=5).fit(X_MOONS, Y_MOONS)
    path = save_model(clf, tmp_path / "ok.spm")
    assert (load_model(path).predict(X_MOONS) == clf.predict(X_MOONS)).all()
    assert (loads_model(dumps_model(clf), "ok.spm").predict(X_MOONS) == clf.predict(X_MOONS)).all()
    SparseSVR(4, random_state=0, max_iter=5).fit(X_MOONS, np.sin(X_MOONS[:, 0]))
    SparseOneClassSVM(4, random_state=0, max_iter=5).fit(X_MOONS)
