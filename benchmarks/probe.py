"""The probe of issue 49: hostile or careless inputs, family by family, and what each one gets.

Several hundred inputs, tried as an attacker and as a careless user would, in the families
the second probe found unsafe or unhelpful: plugins that exit or declare what cannot work,
non-finite problem data, outputs replaced over private files, files that imply minutes or
gigabytes of work, float32 exports that overflow, extreme feature scales, options a command
would ignore, Dask collections, and the data, estimator, gradient-check and command-line
errors that used to be unhelpful. Each input is judged:

* **handled clearly**: refused (or warned about) with a message that names the culprit (the
  case's own words: the file, the parameter, the plugin) and says what to change, or accepted
  where it is valid, with a sane result;
* **unhelpful**: refused, but the message misses the culprit, gives no hint, or is a library's
  raw words (numpy's "'<' not supported", a traceback);
* **unsafe or silent**: accepted where it must not be (exit status 0 after a plugin exited, a
  replaced file whose mode widened, non-finite scores, a fit whose XVs never moved without a
  word), an exit that escapes, a process that dies, or a case that runs past ``--timeout``.

Every case runs in a child process (one child runs many cases in turn, each in a fresh
scratch folder, under an 8 GiB address-space limit); a child that dies mid-case marks that
case unsafe and a new child takes the rest, and a case past ``--timeout`` is killed and
counted unsafe. Usage::

    python benchmarks/probe.py --out docs/results [--families plugins data ...] [--timeout 120]

writes ``probe.md`` (the counts per family, then every case that is not handled clearly, with
its message) and ``probe.csv`` (every case, its outcome and message).
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import io
import json
import os
import platform
import resource
import shlex
import subprocess
import sys
import tempfile
import time
import traceback
import types
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import harness

FAMILIES = ("plugins", "nonfinite", "declarations", "outputs", "costs", "float32", "scales",
            "options", "dask", "data", "estimator_api", "gradient_check", "cli")
VERDICTS = ("handled clearly", "unhelpful", "unsafe or silent")
#: Words of a library's raw error: a message that holds one is unhelpful whatever else it says.
RAW = ("Traceback", "could not be broadcast", "'<' not supported", "Unable to allocate",
       "has no attribute", "NoneType", "unsupported operand", "index out of bounds",
       "list index out of range", "Unknown label type: unknown", "n_jobs == 0 in Parallel",
       "Expecting value", "KilledWorker")
#: A message that says what to change holds one of these (compared in lower case).
HINTS = ("use ", "give ", "drop ", "pass ", "remove", "rescale", "standardise", "refit", "fix ",
         "lower ", "raise ", "choose", "export it", "save ", "check ", "declare", "fit ",
         "convert", "close", "merge", "divide", "install", "keep ", "rename", "reduce",
         "try ", "leave it out", "create ", "be ", "must ", "a gamma near", "code the labels",
         "only ", "needs ")
MEMORY_LIMIT = 8 * 2**30


# --------------------------------------------------------------------------- cases


@dataclass
class Obs:
    """What a case did: ``ok`` (accepted), ``error`` (refused), ``escape`` (an exception
    that left the command or an exit), ``died`` or ``timeout`` (judged in the parent)."""

    outcome: str
    message: str = ""
    warnings: list[str] = field(default_factory=list)
    problem: str = ""  # an unsafe effect found after the case (a mode widened, NaN scores)


@dataclass
class Case:
    id: str
    family: str
    what: str
    run: Callable[[Path], Obs] = field(repr=False)
    expect: str = "refuse"  # "refuse", "warn", "work" or "either"
    needles: tuple[str, ...] = ()


def judge(case: Case, obs: Obs) -> tuple[str, str]:
    """(verdict, why) of one case."""
    if obs.outcome in ("died", "timeout"):
        return VERDICTS[2], obs.message
    if obs.outcome == "escape":
        if obs.message.startswith(("SystemExit", "KeyboardInterrupt", "GeneratorExit")):
            return VERDICTS[2], f"escaped: {obs.message}"
        return VERDICTS[1], f"a traceback: {obs.message}"
    if obs.problem:
        return VERDICTS[2], obs.problem
    text = obs.message if obs.outcome == "error" else " | ".join(obs.warnings)
    lower = text.lower()
    named = all(n.lower() in lower for n in case.needles)
    clean = not any(raw.lower() in lower for raw in RAW)
    hinted = any(h in lower for h in HINTS)
    if obs.outcome == "ok":
        if case.expect == "refuse":
            return VERDICTS[2], "accepted: " + (text or "no error, no warning")
        if case.expect == "warn":
            if obs.warnings and named:
                return VERDICTS[0], "warned"
            return VERDICTS[2], "accepted without the warning: " + (text or "none")
        return VERDICTS[0], "accepted, sane"
    if case.expect == "work":
        return VERDICTS[1], "refused a valid input"
    if named and clean and hinted:
        return VERDICTS[0], "refused clearly"
    why = [w for w, bad in (("misses " + ", ".join(n for n in case.needles
                                                   if n.lower() not in lower), not named),
                            ("a library's raw words", not clean), ("no hint", not hinted)) if bad]
    return VERDICTS[1], "; ".join(why)


# --------------------------------------------------------------------------- child helpers


def _cli(*argv: Any) -> Obs:
    """Run ``sparsify`` in this process; the last error line is the message."""
    from sparsify.cli import main

    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), \
                warnings.catch_warnings():
            warnings.simplefilter("default")  # as a command runs: each warning shown once
            code = main([str(a) for a in argv])
    except BaseException as exc:
        return Obs("escape", f"{type(exc).__name__}: {exc}"[:600])
    lines = err.getvalue().strip().splitlines()
    warned = [line for line in lines if line.startswith("sparsify: warning:")]
    if code == 0:
        return Obs("ok", out.getvalue()[-300:], warned)
    if code == 1:  # check-gradient's verdict: on stdout
        return Obs("error", out.getvalue().strip().splitlines()[-1][:600], warned)
    errors = [line for line in lines if line.startswith("sparsify: error:")]
    return Obs("error", (errors or lines or ["(nothing on stderr)"])[-1][:600], warned)


def _lib(call: Callable[[], Any], check: Callable[[Any], str] | None = None) -> Obs:
    """Run a library call: its exception, its warnings, and ``check`` of its result."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = call()
        except Exception as exc:
            return Obs("error", f"{type(exc).__name__}: {' '.join(str(exc).split())}"[:1000],
                       [str(w.message)[:1000] for w in caught])
        except BaseException as exc:
            return Obs("escape", f"{type(exc).__name__}: {exc}"[:600])
    problem = check(result) if check is not None else ""
    relevant = [str(w.message)[:1000] for w in caught
                if not issubclass(w.category, (DeprecationWarning, PendingDeprecationWarning))]
    return Obs("ok", repr(result)[:200], relevant, problem)


def _moons(n: int = 60, seed: int = 0) -> tuple[Any, Any]:
    from sklearn.datasets import make_moons

    return make_moons(n, noise=0.1, random_state=seed)


def _csv(path: Path, X: Any, y: Any) -> Path:
    import numpy as np

    cols = [f"x{j}" for j in range(X.shape[1])] + ["label"]
    with open(path, "w") as fh:
        fh.write(",".join(cols) + "\n")
        for row, label in zip(np.asarray(X), np.asarray(y), strict=True):
            fh.write(",".join(repr(float(v)) for v in row) + f",{label}\n")
    return path


QUICK = ("--n-expansion", "3", "--max-iter", "3")


def _fitted(kind: str = "svc", **params: Any) -> Any:
    from sparsify import SparseSVC

    X, y = _moons()
    return SparseSVC(4, max_iter=2, random_state=0, **params).fit(X, y)


def _finite_decision(est: Any, X: Any) -> str:
    import numpy as np

    scores = est.decision_function(X)
    return "" if np.isfinite(scores).all() else "non-finite decision values"


# --------------------------------------------------------------------------- plugins


EXITS = ("sys_exit0", "sys_exit1", "os_exit0", "system_exit", "keyboard", "generator_exit")
WHERE = ("declare", "init", "n_outputs", "marginal", "own_evaluate", "nondifferentiable")


def _do_exit(how: str) -> None:
    if how == "sys_exit0":
        sys.exit(0)
    if how == "sys_exit1":
        sys.exit(1)
    if how == "os_exit0":
        os._exit(0)
    if how == "system_exit":
        raise SystemExit
    if how == "keyboard":
        raise KeyboardInterrupt
    raise GeneratorExit


def _plugin_classes() -> list[type]:
    """The probe's formulations: one per (exit, place), and the bad declarations."""
    import cvxpy as cp
    import numpy as np

    from sparsify import Declaration, Formulation, Marginal

    def hinge(out: Any, b: Any) -> Any:
        return cp.sum(cp.pos(1 - cp.multiply(out.y, out.f + b)))

    classes: list[type] = []
    for how in EXITS:
        for where in WHERE:
            def declare(self: Any, out: Any, _how: str = how, _where: str = where) -> Any:
                if _where == "declare":
                    _do_exit(_how)
                b = cp.Variable()
                return Declaration(cp.Minimize(hinge(out, b) + out.norm_w2), [], b)

            def init(self: Any, C: float = 1.0, _how: str = how, _where: str = where) -> None:
                if _where == "init":
                    _do_exit(_how)
                self.C = C

            def n_outputs(self: Any, y: Any, _how: str = how, _where: str = where) -> int:
                if _where == "n_outputs":
                    _do_exit(_how)
                return 1

            def nondifferentiable(self: Any, y: Any, nu: Any, _how: str = how,
                                  _where: str = where) -> Any:
                if _where == "nondifferentiable":
                    _do_exit(_how)
                return None

            class Exiting(Marginal):
                def evaluate(self, Z: Any, grad: bool = True, _how: str = how) -> Any:
                    _do_exit(_how)

            def marginal(self: Any, X: Any, y: Any, kernel: Any, n_expansion: int, solver: str,
                         tol: float, _how: str = how, _where: str = where,
                         _m: type = Exiting) -> Any:
                if _where == "marginal":
                    _do_exit(_how)
                return _m() if _where == "own_evaluate" else None

            classes.append(type(f"Exit_{where}_{how}", (Formulation,), {
                "name": f"probe_{where}_{how}", "task": "classifier", "__init__": init,
                "declare": declare, "n_outputs": n_outputs, "marginal": marginal,
                "nondifferentiable": nondifferentiable, "__module__": "probe_plugins"}))

    bad: dict[str, tuple[str, Callable[[Any], Any]]] = {
        "log_targets": ("regressor", lambda out: Declaration(cp.Minimize(
            cp.sum_squares(out.f - np.log(out.y)) + out.norm_w2))),
        "inverse_zero": ("regressor", lambda out: Declaration(cp.Minimize(
            cp.sum_squares(out.f - 1.0 / (out.y - out.y)) + out.norm_w2))),
        "sqrt_negative": ("classifier", lambda out: Declaration(cp.Minimize(
            hinge(out, 0) + np.sqrt(-1.0) * out.norm_w2))),
        "inf_bound": ("classifier", lambda out: Declaration(cp.Minimize(
            hinge(out, 0) + out.norm_w2), [out.f <= np.inf * np.ones(out.n_samples)])),
        "nan_bound": ("classifier", lambda out: Declaration(cp.Minimize(
            hinge(out, 0) + out.norm_w2), [out.f >= np.full(out.n_samples, np.nan)])),
        "overflow": ("classifier", lambda out: Declaration(cp.Minimize(
            cp.sum(1e300 * (1e300 * out.f)) + hinge(out, 0) + out.norm_w2))),
        "integer": ("classifier", lambda out: (lambda b: Declaration(cp.Minimize(
            hinge(out, b) + out.norm_w2), [], b))(cp.Variable(integer=True))),
        "boolean": ("classifier", lambda out: (lambda b: Declaration(cp.Minimize(
            hinge(out, b) + out.norm_w2), [], b))(cp.Variable(boolean=True))),
        "wide_intercept": ("classifier", lambda out: (lambda b: Declaration(cp.Minimize(
            hinge(out, b[0]) + out.norm_w2 + cp.sum_squares(b)), [], b))(cp.Variable(5))),
        "matrix_intercept": ("classifier", lambda out: (lambda b: Declaration(cp.Minimize(
            hinge(out, b[0, 0]) + out.norm_w2 + cp.sum_squares(b)), [], b))(
                cp.Variable((2, 2)))),
        "text_intercept": ("classifier", lambda out: Declaration(cp.Minimize(
            hinge(out, 0) + out.norm_w2), [], "b")),
        "unused_intercept": ("classifier", lambda out: Declaration(cp.Minimize(
            hinge(out, 0) + out.norm_w2), [], cp.Variable())),
        "vector_objective": ("classifier", lambda out: Declaration(cp.Minimize(
            cp.pos(1 - cp.multiply(out.y, out.f))))),
        "shape_error": ("classifier", lambda out: Declaration(cp.Minimize(
            cp.sum(cp.pos(1 - cp.multiply(out.y[:3], out.f))) + out.norm_w2))),
        "maximize": ("classifier", lambda out: Declaration(cp.Maximize(
            -hinge(out, 0) - out.norm_w2))),
        "not_dcp": ("classifier", lambda out: Declaration(cp.Minimize(
            hinge(out, 0) - out.norm_w2))),
        "unbounded": ("classifier", lambda out: (lambda t: Declaration(cp.Minimize(
            hinge(out, 0) + out.norm_w2 - t)))(cp.Variable())),
        "not_constraint": ("classifier", lambda out: Declaration(cp.Minimize(
            hinge(out, 0) + out.norm_w2), [True])),
    }
    for name, (task, body) in bad.items():
        classes.append(type(f"Bad_{name}", (Formulation,), {
            "name": f"probe_bad_{name}", "task": task, "__module__": "probe_plugins",
            "declare": lambda self, out, _b=body: _b(out)}))
    return classes


def _register_plugins() -> None:
    from sparsify import hookimpl, register_plugin
    from sparsify.core.registry import get_registry

    if "probe_declare_sys_exit0" in get_registry().names("formulation"):
        return
    classes = _plugin_classes()
    module = types.ModuleType("probe_plugins")
    sys.modules["probe_plugins"] = module
    for cls in classes:
        setattr(module, cls.__name__, cls)
    register_plugin(types.SimpleNamespace(register_formulations=hookimpl(
        lambda register: [register(c) for c in classes])), "probe_plugins")


def _plugin_fit(name: str, solver: str, y_kind: str = "labels") -> Obs:
    import numpy as np

    from sparsify.core.estimator import estimator_for
    from sparsify.core.registry import get_registry

    _register_plugins()
    cls = get_registry().get("formulation", name)
    est_cls, params = estimator_for(cls)
    X, y = _moons(40)
    if y_kind == "real":
        y = np.sin(3 * X[:, 0])  # negative targets among them
    return _lib(lambda: est_cls(n_expansion=3, max_iter=3, solver=solver, **params).fit(X, y))


def _plugin_conformance(name: str) -> Obs:
    from sparsify.core.registry import get_registry
    from sparsify.testing import check_formulation

    _register_plugins()
    get_registry().get("formulation", name)  # registered: sparsify makes it from its name

    def run() -> Any:
        return check_formulation(name, estimator=False).passed

    return _lib(run)


def _plugin_cli(command: str, name: str, *extra: str) -> Obs:
    _register_plugins()
    args = [command, "--formulation", name, *extra]
    return _cli(*args, *(QUICK if command == "fit" else ()))


def _plugin_entry(entry: str, name: str, solver: str) -> Obs:
    if entry == "cli fit":
        return _plugin_cli("fit", name, "--solver", solver)
    if entry == "cli check-gradient":
        return _plugin_cli("check-gradient", name, "--solver", solver)
    if entry == "library fit":
        return _plugin_fit(name, solver)
    return _plugin_conformance(name)


def plugin_cases() -> list[Case]:
    cases = []
    for how in EXITS:
        for where in WHERE:
            name = f"probe_{where}_{how}"
            solver = "clarabel" if where == "nondifferentiable" else "auto"
            words = ("a plugin cannot exit", name)
            for entry in ("cli fit", "cli check-gradient", "library fit", "check_formulation"):
                cases.append(Case(f"plugins/{where}/{how}/{entry.replace(' ', '_')}",
                                  "plugins", f"{how} in {where}(), through {entry}",
                                  lambda d, n=name, s=solver, e=entry: _plugin_entry(e, n, s),
                                  "refuse", words))
    return cases


def nonfinite_cases() -> list[Case]:
    cases = []
    for bad, y_kind in (("log_targets", "real"), ("inverse_zero", "real"),
                        ("sqrt_negative", "labels"), ("inf_bound", "labels"),
                        ("nan_bound", "labels"), ("overflow", "labels")):
        name = f"probe_bad_{bad}"
        for solver in ("auto", "structured", "clarabel", "ecos", "scs", "osqp"):
            cases.append(Case(f"nonfinite/{bad}/{solver}", "nonfinite",
                              f"{bad} declared, fit with solver={solver}",
                              lambda d, n=name, s=solver, k=y_kind: _plugin_fit(n, s, k),
                              "refuse", (name,)))
        cases.append(Case(f"nonfinite/{bad}/check-gradient", "nonfinite",
                          f"{bad} declared, sparsify check-gradient",
                          lambda d, n=name: _plugin_cli("check-gradient", n), "refuse", (name,)))
    return cases


def declaration_cases() -> list[Case]:
    cases = []
    for bad in ("integer", "boolean", "wide_intercept", "matrix_intercept", "text_intercept",
                "unused_intercept", "vector_objective", "shape_error", "maximize", "not_dcp",
                "not_constraint"):
        name = f"probe_bad_{bad}"
        cases.append(Case(f"declarations/{bad}/conformance", "declarations",
                          f"{bad}: check_formulation(estimator=False)",
                          lambda d, n=name: _plugin_conformance(n), "refuse", ()))
        cases.append(Case(f"declarations/{bad}/fit", "declarations", f"{bad}: sparsify fit",
                          lambda d, n=name: _plugin_cli("fit", n), "refuse", (name,)))
    cases.append(Case("declarations/unbounded/fit", "declarations",
                      "an unbounded declaration: sparsify fit",
                      lambda d: _plugin_cli("fit", "probe_bad_unbounded"), "refuse",
                      ("unbounded",)))
    return cases


# --------------------------------------------------------------------------- outputs


def _output_case(directory: Path, command: str, mode: int, link: bool) -> Obs:
    import stat

    from sparsify.io import save_model

    X, y = _moons(30)
    data = _csv(directory / "d.csv", X, y)
    model = directory / "m.spm"
    target = directory / {"fit": "out.spm", "predict": "p.csv", "export": "m.onnx",
                          "save_model": "s.spm"}[command]
    if command in ("predict", "export"):
        assert _cli("fit", "--data", data, *QUICK, "--out", model).outcome == "ok"
    real = target
    if link:
        real = directory / ("real_" + target.name)
        real.write_bytes(b"old")
        target.symlink_to(real)
    else:
        target.write_bytes(b"old")
    real.chmod(mode)
    owner = None
    if os.geteuid() == 0:
        os.chown(real, 4242, 4343)
        owner = (4242, 4343)
    if command == "fit":
        obs = _cli("fit", "--data", data, *QUICK, "--out", target)
    elif command == "predict":
        obs = _cli("predict", "--model", model, "--data", data, "--out", target)
    elif command == "export":
        obs = _cli("export", model, "--onnx", target)
    else:
        obs = _lib(lambda: save_model(_fitted(), target))
    info = real.stat()
    if obs.outcome == "ok":
        if real.read_bytes() == b"old":
            obs.problem = "the output was not written"
        elif stat.S_IMODE(info.st_mode) != mode:
            obs.problem = (f"the replaced file's mode went from {oct(mode)} to "
                           f"{oct(stat.S_IMODE(info.st_mode))}")
        elif owner is not None and (info.st_uid, info.st_gid) != owner:
            obs.problem = "the replaced file's owner or group changed"
        elif link and not target.is_symlink():
            obs.problem = "the symbolic link was replaced by a file"
    return obs


def output_cases() -> list[Case]:
    cases = []
    for command in ("fit", "predict", "export", "save_model"):
        for mode in (0o600, 0o640, 0o604, 0o660, 0o700):
            cases.append(Case(f"outputs/{command}/{oct(mode)}", "outputs",
                              f"{command} over an existing {oct(mode)} file",
                              lambda d, c=command, m=mode: _output_case(d, c, m, False), "work"))
        cases.append(Case(f"outputs/{command}/link", "outputs",
                          f"{command} through a symbolic link to a 0600 file",
                          lambda d, c=command: _output_case(d, c, 0o600, True), "work"))
    return cases


# --------------------------------------------------------------------------- costs


def _forged_model(directory: Path, kernel: dict[str, Any], n_expansion: int,
                  n_features: int = 2) -> Path:
    """A model file written as save_model writes one, with this kernel and these sizes."""
    import zipfile

    import numpy as np

    from sparsify.io import dumps_model
    from sparsify.io.model_file import checksum

    raw = dumps_model(_fitted())
    header = json.loads(zipfile.ZipFile(io.BytesIO(raw)).read("header.json"))
    rng = np.random.default_rng(0)
    arrays = {"expansion_vectors": rng.normal(size=(n_expansion, n_features)),
              "expansion_coef": rng.normal(size=(1, n_expansion)),
              "intercept": np.zeros(1)}
    header["kernel"] = kernel
    header["n_features_in"] = n_features
    header["feature_names_in"] = None
    header["arrays"] = [{"name": n, "dtype": "<f8", "shape": list(a.shape)}
                        for n, a in arrays.items()]
    out = {"header.json": json.dumps(header).encode()}
    for name, a in arrays.items():
        buf = io.BytesIO()
        np.lib.format.write_array(buf, np.ascontiguousarray(a), allow_pickle=False)
        out[f"{name}.npy"] = buf.getvalue()
    out["checksum.sha256"] = checksum(out).encode()
    path = directory / "forged.spm"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as zf:
        for name in sorted(out):
            zf.writestr(zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0)), out[name])
    return path


def _taylor_sum(parts: int, order: int) -> dict[str, Any]:
    part = {"name": "taylor_rbf", "gamma": 0.5, "order": order}
    return part if parts == 1 else {"name": "sum", "weights": None, "parts": [part] * parts}


def _predict_forged(directory: Path, kernel: dict[str, Any], nz: int, d: int = 2,
                    command: str = "predict", rows: int = 200) -> Obs:
    import numpy as np

    path = _forged_model(directory, kernel, nz, d)
    X = np.random.default_rng(1).normal(size=(rows, d))
    data = directory / "x.csv"
    np.savetxt(data, X, delimiter=",")
    if command == "export":
        return _cli("export", path, "--onnx", directory / "m.onnx")
    return _cli("predict", "--model", path, "--data", data, "--no-labels", "--out",
                directory / "p.csv")


def _features_case(directory: Path, n_features: int, command: str) -> Obs:
    """A model without XVs whose header declares ``n_features`` features: load, or export."""
    path = _forged_model(directory, {"name": "rbf", "gamma": 1.0}, 0, n_features)
    if command == "export":
        return _cli("export", path, "--onnx", directory / "m.onnx")
    from sparsify.io import load_model

    return _lib(lambda: load_model(path))


def _npz_case(directory: Path, member: str, shape: tuple[int, ...]) -> Obs:
    import zipfile

    import numpy as np

    buf = io.BytesIO()
    np.savez(buf, X=np.zeros((40, 2)), y=np.arange(40) % 2,
             train_idx=np.arange(20)[None], test_idx=np.arange(20, 40)[None])
    source = zipfile.ZipFile(io.BytesIO(buf.getvalue()))
    path = directory / "declared.npz"
    with zipfile.ZipFile(path, "w") as zf:
        for info in source.infolist():
            raw = source.read(info)
            if info.filename == f"{member}.npy":
                header = io.BytesIO()
                dtype = np.load(io.BytesIO(raw)).dtype
                np.lib.format.write_array_header_1_0(header, {
                    "descr": np.lib.format.dtype_to_descr(dtype), "fortran_order": False,
                    "shape": shape})
                raw = header.getvalue() + raw[raw.index(b"\n") + 1:]
            zf.writestr(info.filename, raw)
    return _cli("fit", "--data", path, *QUICK)


def _classes_case(directory: Path, n_rows: int, n_classes: int) -> Obs:
    import numpy as np

    X = np.random.default_rng(0).normal(size=(n_rows, 2))
    y = np.arange(n_rows) % n_classes
    path = directory / "classes.csv"
    np.savetxt(path, np.column_stack([X, y]), delimiter=",", fmt="%.6g",
               header="a,b,label", comments="")
    return _cli("fit", "--data", path, *QUICK)


def cost_cases() -> list[Case]:
    cases = []
    for parts in (1, 10, 110):
        for order in (10, 100, 1000):
            for nz in (10, 300):
                cost = parts * nz * (2 + order)
                cases.append(Case(
                    f"costs/taylor/{parts}x{order}x{nz}", "costs",
                    f"a model file: a sum of {parts} Taylor kernels of order {order}, {nz} XVs, "
                    "predict 200 rows", lambda d, p=parts, o=order, n=nz: _predict_forged(
                        d, _taylor_sum(p, o), n),
                    "either" if cost <= 2**24 else "refuse", ("multiply-adds",)))
    for parts, order in ((20, 100), (5, 500), (3, 1000), (1, 100)):
        cases.append(Case(f"costs/export/{parts}x{order}", "costs",
                          f"export a sum of {parts} Taylor kernels of order {order}",
                          lambda d, p=parts, o=order: _predict_forged(
                              d, _taylor_sum(p, o), 10, command="export"),
                          "either", ("nodes",)))
    for d_in in (10**6, 10**8, 10**9):
        for command in ("predict", "export"):
            cases.append(Case(f"costs/features/{d_in}/{command}", "costs",
                              f"a model file with n_features_in {d_in:.0e} and no XVs, "
                              f"{command}", lambda d, f=d_in, c=command: _features_case(d, f, c),
                              "either" if d_in <= 2**24 else "refuse", ("multiply-adds",)))
    for index in (10**7, 10**9, 2**40):
        cases.append(Case(f"costs/libsvm/{index}", "costs",
                          f"a 2-row LIBSVM file with feature index {index}",
                          lambda d, i=index: (Path(d / "w.libsvm").write_text(
                              f"1 {i}:1\n-1 2:1\n"), _cli("fit", "--data", d / "w.libsvm",
                                                          *QUICK))[1],
                          "refuse", ("w.libsvm", "feature ind")))
    for n_rows, n_classes in ((150, 75), (4000, 2000), (100_000, 100_000)):
        cases.append(Case(f"costs/classes/{n_classes}in{n_rows}", "costs",
                          f"a CSV of {n_rows} rows with {n_classes} classes",
                          lambda d, r=n_rows, c=n_classes: _classes_case(d, r, c), "refuse",
                          (f"{n_classes} classes",)))
    for n_init in ("1001", "1000000", "1000000000000"):
        cases.append(Case(f"costs/n_init/cli/{n_init}", "costs", f"fit --n-init {n_init}",
                          lambda d, n=n_init: _cli("fit", *QUICK, "--n-init", n), "refuse",
                          ("n_init",)))
        cases.append(Case(f"costs/n_init/lib/{n_init}", "costs", f"SparseSVC(n_init={n_init})",
                          lambda d, n=n_init: _lib(lambda: __import__("sparsify").SparseSVC(
                              3, n_init=int(n)).fit(*_moons())), "refuse", ("n_init",)))
    for member, shape in (("X", (10**8, 10**4)), ("X", (10**12, 2)), ("y", (10**12,)),
                          ("train_idx", (1, 10**11))):
        cases.append(Case(f"costs/npz/{member}/{'x'.join(map(str, shape))}", "costs",
                          f"an .npz whose {member} declares the shape {shape}",
                          lambda d, m=member, s=shape: _npz_case(d, m, s), "refuse",
                          ("declared.npz", member)))
    return cases


# --------------------------------------------------------------------------- float32 export


def _export_case(directory: Path, how: str, value: float, dtype: str) -> Obs:
    import numpy as np

    from sparsify import RBF, SparseSVC, SumKernel
    from sparsify.io import save_model

    X, y = _moons()
    if how == "weights":
        clf = SparseSVC(4, kernel=SumKernel((RBF(1.0), RBF(2.0)), weights=(value, 1.0)),
                        max_iter=0, random_state=0).fit(X, y)
    elif how == "gamma":
        clf = SparseSVC(4, gamma=value, max_iter=0, random_state=0).fit(X, y)
    else:
        clf = SparseSVC(4, max_iter=0, random_state=0, probability=how in ("prob_a", "prob_b"))
        clf.fit(X, y)
        if how == "coef":
            clf.expansion_coef_ = clf.expansion_coef_ * value
        elif how == "intercept":
            clf.intercept_ = np.full_like(clf.intercept_, value)
        elif how == "prob_a":
            clf.probA_ = np.full_like(clf.probA_, value)
        elif how == "prob_b":
            clf.probB_ = np.full_like(clf.probB_, value)
    model = directory / "m.spm"
    obs = _lib(lambda: save_model(clf, model))
    if obs.outcome != "ok":
        return obs
    obs = _cli("export", model, "--onnx", directory / "m.onnx", "--dtype", dtype)
    if obs.outcome == "ok":  # the graph must give finite scores where the model does
        import onnxruntime as ort

        session = ort.InferenceSession(str(directory / "m.onnx"),
                                       providers=["CPUExecutionProvider"])
        outputs = session.run(None, {"X": X.astype(dtype)})
        if not all(np.isfinite(np.asarray(o, dtype=float)).all() for o in outputs[1:]):
            obs.problem = "the exported graph computes non-finite scores"
    return obs


def float32_cases() -> list[Case]:
    cases = []
    for how, values in (("coef", (1e39, 1e100, 1e300)), ("intercept", (1e39, 1e300)),
                        ("weights", (1e40, 1e300)), ("prob_a", (1e40, 1e200)),
                        ("prob_b", (1e40, 1e200)), ("gamma", (1e-50, 1e-300))):
        for value in values:
            cases.append(Case(f"float32/{how}/{value:g}", "float32",
                              f"export --dtype float32 of a model whose {how} is {value:g}",
                              lambda d, h=how, v=value: _export_case(d, h, v, "float32"),
                              "refuse", ("float32", "float64")))
            cases.append(Case(f"float32/{how}/{value:g}/float64", "float32",
                              "export --dtype float64 of the same model",
                              lambda d, h=how, v=value: _export_case(d, h, v, "float64"),
                              "either", ("float64",)))
    return cases


# --------------------------------------------------------------------------- scales


ESTIMATORS = ("SparseSVC", "SparseKernelLogisticRegression", "SparseKFD", "SparseKernelRidge",
              "SparseSVR", "SparseOneClassSVM")


def _scaled_fit(name: str, scale: float, **params: Any) -> Obs:
    import numpy as np

    import sparsify

    X, y = _moons(80)
    target: Any = y
    if name in ("SparseKernelRidge", "SparseSVR"):
        target = np.sin(X[:, 0])
    if name == "SparseOneClassSVM":
        target = None
    est = getattr(sparsify, name)(5, random_state=0, **params)

    def check(fitted: Any) -> str:
        if (np.asarray(fitted.n_iter_) == 0).any() and not any(
                "made no step" in w for w in obs_warnings):
            return "n_iter_ == 0: the XVs never moved, without a warning"
        return _finite_decision(fitted, X * scale) if hasattr(fitted, "decision_function") \
            else ""

    obs_warnings: list[str] = []
    obs = _lib(lambda: est.fit(X * scale, target))
    if obs.outcome == "ok":
        obs_warnings[:] = obs.warnings
        obs.problem = check(est)
    return obs


def scale_cases() -> list[Case]:
    cases = []
    for name in ESTIMATORS:
        for scale in (1e150, 1e-150, 1e100, 1e-100, 1e300, 1e-300, 1e155, 1e-155):
            cases.append(Case(f"scales/{name}/{scale:g}", "scales",
                              f"{name} on features × {scale:g}, gamma='scale'",
                              lambda d, n=name, s=scale: _scaled_fit(n, s), "either",
                              ("standardise",)))
    for gamma in (1e308, 1e300, 1e100, 1e-30, 1e-100, 1e-300):
        cases.append(Case(f"scales/gamma/{gamma:g}", "scales", f"SparseSVC(gamma={gamma:g})",
                          lambda d, g=gamma: _scaled_fit("SparseSVC", 1.0, gamma=g),
                          "warn", ("gamma",)))
    return cases


# --------------------------------------------------------------------------- options


def _options_case(directory: Path, args: list[str], expect_warning: bool = False) -> Obs:
    import numpy as np

    X, y = _moons(40)
    data = _csv(directory / "d.csv", X, y)
    np.savez(directory / "plain.npz", X=X, y=y)
    (directory / "d.libsvm").write_text("".join(
        f"{int(label)} 1:{row[0]} 2:{row[1]}\n" for row, label in zip(X, y, strict=True)))
    model = directory / "m.spm"
    if any("{model}" in a for a in args):
        assert _cli("fit", "--data", data, *QUICK, "--out", model).outcome == "ok"
    argv = [a.format(csv=data, npz=directory / "plain.npz", model=model, dir=directory,
                     libsvm=directory / "d.libsvm") for a in args]
    return _cli(*argv)


OPTIONS: list[tuple[str, list[str], str, tuple[str, ...]]] = [
    ("split on npz without splits (fit)", ["fit", "--data", "{npz}", "--split", "5", *QUICK],
     "refuse", ("--split",)),
    ("split on npz without splits (predict)", ["predict", "--model", "{model}", "--data",
                                               "{npz}", "--split", "5"], "refuse", ("--split",)),
    ("split on a CSV (fit)", ["fit", "--data", "{csv}", "--split", "2", *QUICK], "refuse",
     ("--split",)),
    ("split on a CSV (predict)", ["predict", "--model", "{model}", "--data", "{csv}",
                                  "--split", "2"], "refuse", ("--split",)),
    ("split without --data", ["fit", "--split", "3", *QUICK], "refuse", ("--split",)),
    ("split for check-gradient without --data", ["check-gradient", "--formulation", "svm",
                                                 "--split", "2"], "refuse", ("--split",)),
    ("--header on an npz", ["fit", "--data", "{npz}", "--header", *QUICK], "refuse",
     ("--header",)),
    ("--no-header on LIBSVM", ["fit", "--data", "{libsvm}", "--no-header", *QUICK], "refuse",
     ("--no-header",)),
    ("--zero-based on a CSV", ["fit", "--data", "{csv}", "--zero-based", *QUICK], "refuse",
     ("--zero-based",)),
    ("--one-based on an npz (predict)", ["predict", "--model", "{model}", "--data", "{npz}",
                                         "--one-based"], "refuse", ("--one-based",)),
    ("--C and --param C", ["fit", *QUICK, "--C", "5", "--param", "C=7"], "refuse", ("--C",)),
    ("--param C alone", ["fit", *QUICK, "--param", "C=7"], "refuse", ("--C",)),
    ("--param kernel", ["fit", *QUICK, "--param", "kernel=linear"], "refuse", ("--kernel",)),
    ("--param gamma", ["fit", *QUICK, "--param", "gamma=2"], "refuse", ("--gamma",)),
    ("--param n_expansion=true", ["fit", *QUICK, "--param", "n_expansion=true"], "refuse",
     ("n_expansion",)),
    ("--param random_state", ["fit", *QUICK, "--param", "random_state=1"], "refuse",
     ("--seed",)),
    ("--param max_iter", ["fit", *QUICK, "--param", "max_iter=1"], "refuse", ("--max-iter",)),
    ("--param solver", ["fit", *QUICK, "--param", "solver=ecos"], "refuse", ("--solver",)),
    ("--param twice", ["fit", *QUICK, "--param", "tol=1e-3", "--param", "tol=1e-4"],
     "refuse", ("twice",)),
    ("--param method for skfd", ["fit", "--formulation", "skfd", *QUICK, "--param",
                                 "method=convex"], "refuse", ("method",)),
    ("--param probability=True", ["fit", *QUICK, "--param", "probability=True"], "work", ()),
    ("--param probability=yes", ["fit", *QUICK, "--param", "probability=yes"], "refuse",
     ("probability",)),
    ("--param class_weight=balanced", ["fit", *QUICK, "--param", "class_weight=balanced"],
     "work", ()),
    ("--param class_weight=none", ["fit", *QUICK, "--param", "class_weight=none"], "work", ()),
    ("--param unknown", ["fit", *QUICK, "--param", "nu=0.1"], "refuse", ("nu",)),
    ("--degree with rbf", ["fit", *QUICK, "--degree", "4"], "warn", ("--degree",)),
    ("--coef0 with rbf", ["fit", *QUICK, "--coef0", "1"], "warn", ("--coef0",)),
    ("--gamma with linear", ["fit", *QUICK, "--kernel", "linear", "--gamma", "2"], "warn",
     ("--gamma",)),
    ("--gamma with linear (check-gradient)", ["check-gradient", "--formulation", "svm",
                                              "--kernel", "linear", "--gamma", "2"], "warn",
     ("--gamma",)),
    ("--inlier-label for a classifier", ["fit", *QUICK, "--inlier-label", "2"], "warn",
     ("--inlier-label",)),
    ("--test with an npz with splits", ["fit", "--data", "{npz}", "--test", "{csv}", *QUICK],
     "either", ()),
    ("export --opset 1000", ["export", "{model}", "--onnx", "{dir}/m.onnx", "--opset", "1000"],
     "refuse", ("--opset",)),
    ("export --opset 8", ["export", "{model}", "--onnx", "{dir}/m.onnx", "--opset", "8"],
     "refuse", ("--opset",)),
    ("export --opset 17", ["export", "{model}", "--onnx", "{dir}/m.onnx", "--opset", "17"],
     "work", ()),
]


def option_cases() -> list[Case]:
    return [Case(f"options/{i:02d}", "options", what,
                 lambda d, a=args: _options_case(d, a), expect, needles)
            for i, (what, args, expect, needles) in enumerate(OPTIONS)]


# --------------------------------------------------------------------------- dask


def _dask_no_client(name: str) -> Obs:
    import dask.array as da

    import sparsify

    X, y = _moons(60)
    est = getattr(sparsify, name)()
    return _lib(lambda: est.fit(da.from_array(X, chunks=20), da.from_array(y, chunks=20)))


@contextlib.contextmanager
def _cluster(processes: bool = False, **kwargs: Any) -> Iterator[Any]:
    from distributed import Client, LocalCluster

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with LocalCluster(n_workers=kwargs.pop("n_workers", 1), processes=processes,
                          threads_per_worker=1, dashboard_address=":0", **kwargs) as cluster, \
                Client(cluster) as client:
            yield client


def _dask_with_client(kind: str) -> Obs:
    import dask.array as da
    import numpy as np

    from sparsify import SparseKernelRidge, SparseSVC

    X, y = _moons(60)
    if kind == "nan_labels":
        labels = y.astype(float)
        labels[5] = np.nan
        with _cluster():
            return _lib(lambda: SparseSVC(3, max_iter=2).fit(
                da.from_array(X, chunks=20), da.from_array(labels, chunks=20)))
    if kind == "text_column":
        import dask.dataframe as dd
        import pandas as pd

        frame = pd.DataFrame({"a": X[:, 0], "b": X[:, 1], "name": ["x"] * 60})
        with _cluster():
            return _lib(lambda: SparseSVC(3, max_iter=2).fit(
                dd.from_pandas(frame, npartitions=3), dd.from_pandas(pd.Series(y),
                                                                     npartitions=3)))
    if kind == "klr_on_cluster":
        from sparsify import SparseKernelLogisticRegression

        with _cluster():
            return _lib(lambda: SparseKernelLogisticRegression(3, max_iter=2).fit(
                da.from_array(X, chunks=20), da.from_array(y, chunks=20)))
    if kind == "many_classes":
        with _cluster():
            return _lib(lambda: SparseSVC(3, max_iter=2).fit(
                da.from_array(X, chunks=20), da.from_array(np.arange(60), chunks=20)))
    if kind == "ridge_works":
        with _cluster():
            return _lib(lambda: SparseKernelRidge(3, max_iter=2).fit(
                da.from_array(X, chunks=20), da.from_array(np.sin(X[:, 0]), chunks=20)))
    # the reported case: 300 000-row blocks, 200 XVs, 1 GB workers
    rng = np.random.default_rng(0)
    big = rng.normal(size=(600_000, 2))
    with _cluster(processes=True, n_workers=2, memory_limit="1GB"):
        return _lib(lambda: SparseSVC(200, max_iter=2, random_state=0).fit(
            da.from_array(big, chunks=300_000),
            da.from_array((big[:, 0] > 0).astype(int), chunks=300_000)))


def dask_cases() -> list[Case]:
    from sklearn.base import BaseEstimator

    import sparsify

    names = [n for n in sparsify.__all__ if isinstance(getattr(sparsify, n), type)
             and issubclass(getattr(sparsify, n), BaseEstimator)
             and n not in ("SparseKernelClassifier", "SparseKernelRegressor",
                           "SparseKernelTransformer", "SparseOutlierDetector")]
    cases = [Case(f"dask/no_client/{n}", "dask", f"{n}.fit on dask arrays, no Client",
                  lambda d, n=n: _dask_no_client(n), "refuse", ("dask",)) for n in names]
    for kind, expect, needles in (("nan_labels", "refuse", ("NaN",)),
                                  ("text_column", "refuse", ("name",)),
                                  ("klr_on_cluster", "refuse", ("dask collections",)),
                                  ("many_classes", "refuse", ("60 classes",)),
                                  ("ridge_works", "work", ()),
                                  ("worker_memory", "refuse", ("worker", "Nz=200"))):
        cases.append(Case(f"dask/cluster/{kind}", "dask", f"on a LocalCluster: {kind}",
                          lambda d, k=kind: _dask_with_client(k), expect, needles))
    return cases


# --------------------------------------------------------------------------- data files


def _data_case(directory: Path, kind: str, command: str) -> Obs:
    import numpy as np

    X, y = _moons(40)
    good = _csv(directory / "good.csv", X, y)
    path = directory / "bad.csv"
    head = "x0,x1,label\n"  # the model's column names: the defect is the case's own
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "field_limit":
        path.write_text(head + '1,"2,3\n' + "x" * 200_000 + "\n")
    elif kind == "directory":
        path.mkdir()
    elif kind == "missing":
        pass
    elif kind == "empty":
        path.write_text("")
    elif kind == "binary":
        path.write_bytes(bytes(range(256)) * 10)
    elif kind == "utf16":
        path.write_text(good.read_text(), encoding="utf-16")
    elif kind == "nan_cell":
        path.write_text(good.read_text().replace("\n", "\nnan,1,0\n", 1))
    elif kind == "inf_cell":
        path.write_text(good.read_text().replace("\n", "\n1e400,1,0\n", 1))
    elif kind == "ragged":
        path.write_text(good.read_text() + "1,2\n")
    elif kind == "only_header":
        path.write_text(head)
    elif kind == "dev_null":
        path = Path("/dev/null")
    elif kind == "pickle_npz":
        path = directory / "bad.npz"
        np.save(directory / "X.npy", np.array([object()], dtype=object), allow_pickle=True)
        import zipfile

        with zipfile.ZipFile(path, "w") as zf:
            zf.write(directory / "X.npy", "X.npy")
            zf.write(directory / "X.npy", "y.npy")
    elif kind == "text_npz":
        path = directory / "bad.npz"
        path.write_text("not a zip")
    elif kind == "libsvm_negative_index":
        path = directory / "bad.libsvm"
        path.write_text("1 -3:1\n-1 2:1\n")
    elif kind == "libsvm_text_value":
        path = directory / "bad.libsvm"
        path.write_text("1 1:abc\n-1 2:1\n")
    if command == "fit":
        return _cli("fit", "--data", path, *QUICK)
    if command == "check-gradient":
        return _cli("check-gradient", "--formulation", "svm", "--data", path)
    model = directory / "m.spm"
    assert _cli("fit", "--data", good, *QUICK, "--out", model).outcome == "ok"
    return _cli("predict", "--model", model, "--data", path)


DATA = {"fifo": ("FIFO",), "field_limit": ("longer than",), "directory": ("directory",),
        "missing": ("No data file",), "empty": ("empty",), "binary": ("bad.csv",),
        "utf16": ("bad.csv",), "nan_cell": ("bad.csv", "line 2"),
        "inf_cell": ("bad.csv",), "ragged": ("bad.csv", "cells"),
        "only_header": ("no data rows",), "dev_null": ("/dev/null",),
        "pickle_npz": ("bad.npz",), "text_npz": ("bad.npz",),
        "libsvm_negative_index": ("bad.libsvm",), "libsvm_text_value": ("bad.libsvm",)}


def data_cases() -> list[Case]:
    return [Case(f"data/{kind}/{command}", "data", f"{kind} given to {command}",
                 lambda d, k=kind, c=command: _data_case(d, k, c), "refuse", needles)
            for kind, needles in DATA.items() for command in ("fit", "predict",
                                                              "check-gradient")]


# --------------------------------------------------------------------------- estimator API


def estimator_cases() -> list[Case]:
    import numpy as np

    import sparsify

    X, y = _moons()
    real = np.sin(X[:, 0])

    def fit(name: str, target: Any = y, weight: Any = None, **params: Any) -> Callable[..., Obs]:
        def run(directory: Path) -> Obs:
            est = getattr(sparsify, name)(**params)
            kwargs = {} if weight is None else {"sample_weight": weight}
            return _lib(lambda: est.fit(X, target, **kwargs))
        return run

    cases = []
    classifiers = ("SparseSVC", "SparseKFD", "SparseKernelLogisticRegression", "ReducedSVC",
                   "ReducedSetSVC", "ImportVectorMachine", "RVMClassifier")
    for name in classifiers:
        for label, values in (("int_str_none", np.array([1, "a", None] * 20, dtype=object)),
                              ("int_str", np.array([1, "a"] * 30, dtype=object)),
                              ("str_float", np.array(["a", 1.5] * 30, dtype=object))):
            cases.append(Case(f"api/labels/{name}/{label}", "estimator_api",
                              f"{name} with labels mixing {label}", fit(name, values),
                              "refuse", ("mixed types",)))
        cases.append(Case(f"api/classes/{name}", "estimator_api",
                          f"{name} with 60 classes in 60 samples",
                          fit(name, np.arange(60)), "refuse", ("classes",)))
    for name in ("SparseSVC", "SparseKFD", "SparseKernelLogisticRegression",
                 "SparseKernelRidge", "SparseSVR", "SparseOneClassSVM"):
        target = real if name in ("SparseKernelRidge", "SparseSVR") else (
            None if name == "SparseOneClassSVM" else y)
        for param, value, needle in (("n_expansion", True, "n_expansion"),
                                     ("n_expansion", False, "n_expansion"),
                                     ("n_jobs", 0, "n_jobs"), ("n_init", 10**6, "n_init"),
                                     ("max_iter", True, "max_iter"), ("gamma", 1e308, "gamma"),
                                     ("degree", True, "degree")):
            params = {param: value}
            if param == "degree":
                params["kernel"] = "poly"
            if param != "n_expansion":
                params.setdefault("n_expansion", 4)
            cases.append(Case(f"api/params/{name}/{param}={value!r}", "estimator_api",
                              f"{name}({param}={value!r})", fit(name, target, **params),
                              "refuse", (needle,)))
    for name, target in (("SparseSVC", y), ("SparseSVR", real)):
        for w in (1e300, 1e20):
            cases.append(Case(f"api/weights/{name}/{w:g}", "estimator_api",
                              f"{name} with sample_weight {w:g}",
                              fit(name, target, np.full(60, w), n_expansion=4), "refuse",
                              ("sample_weight",)))
    for name in ("SparseKernelRidge", "SparseSVR"):
        for factor in (1e200, 1e150):
            cases.append(Case(f"api/targets/{name}/{factor:g}", "estimator_api",
                              f"{name} with targets × {factor:g}",
                              fit(name, real * factor + 1.0, n_expansion=4), "refuse",
                              ("targets",)))
    return cases


# --------------------------------------------------------------------------- gradient checks


def gradient_cases() -> list[Case]:
    from sparsify.core.gradcheck import check_gradient

    cases = []
    for formulation in ("svm", "klr", "kernel_ridge", "oneclass"):
        for gamma in ("1e300", "1e-300", "1e100"):
            cases.append(Case(f"gradcheck/{formulation}/gamma={gamma}", "gradient_check",
                              f"check-gradient --formulation {formulation} --gamma {gamma}",
                              lambda d, f=formulation, g=gamma: _cli(
                                  "check-gradient", "--formulation", f, "--gamma", g),
                              "either", ("does not change with the XVs",)))
    for name, value in (("eps", 0.0), ("eps", float("nan")), ("eps", -1e-3), ("eps", 2.0),
                        ("eps", float("inf")), ("target", 0.0), ("tol", float("nan"))):
        cases.append(Case(f"gradcheck/{name}={value}", "gradient_check",
                          f"check_gradient({name}={value})",
                          lambda d, n=name, v=value: _lib(lambda: check_gradient(
                              "svm", **{n: v})), "refuse", (f"'{name}'",)))
    return cases


# --------------------------------------------------------------------------- command line


CLI: list[tuple[str, list[str], str, tuple[str, ...]]] = [
    ("--n-expansion 0", ["fit", "--n-expansion", "0"], "refuse", ("--n-expansion",)),
    ("--n-expansion 100000", ["fit", "--n-expansion", "100000"], "refuse", ("--n-expansion",)),
    ("--C 1e300", ["fit", "--C", "1e300"], "refuse", ("C=",)),
    ("--C nan", ["fit", "--C", "nan"], "refuse", ("--C",)),
    ("--gamma -1", ["fit", "--gamma", "-1"], "refuse", ("--gamma",)),
    ("--gamma 1e308", ["fit", *QUICK, "--gamma", "1e308"], "refuse", ("gamma",)),
    ("--kernel unknown", ["fit", *QUICK, "--kernel", "rbff"], "refuse", ("rbff",)),
    ("--solver unknown", ["fit", *QUICK, "--solver", "gurobi"], "refuse", ("gurobi",)),
    ("--formulation unknown", ["fit", "--formulation", "svmm"], "refuse", ("svmm",)),
    ("--max-iter -1", ["fit", "--max-iter", "-1"], "refuse", ("--max-iter",)),
    ("--threshold 0", ["check-gradient", "--formulation", "svm", "--threshold", "0"],
     "refuse", ("--threshold",)),
    ("--param =1", ["fit", "--param", "=1"], "refuse", ("NAME=VALUE",)),
    ("--expansion-ratio 2", ["fit", "--expansion-ratio", "2"], "refuse",
     ("--expansion-ratio",)),
    ("--data missing", ["fit", "--data", "nope.csv"], "refuse", ("nope.csv",)),
    ("predict --model missing", ["predict", "--model", "nope.spm", "--data", "nope.csv"],
     "refuse", ("nope",)),
]


def cli_cases() -> list[Case]:
    return [Case(f"cli/{i:02d}", "cli", what, lambda d, a=args: _cli(*a), expect, needles)
            for i, (what, args, expect, needles) in enumerate(CLI)]


BUILDERS: dict[str, Callable[[], list[Case]]] = {
    "plugins": plugin_cases, "nonfinite": nonfinite_cases, "declarations": declaration_cases,
    "outputs": output_cases, "costs": cost_cases, "float32": float32_cases,
    "scales": scale_cases, "options": option_cases, "dask": dask_cases, "data": data_cases,
    "estimator_api": estimator_cases, "gradient_check": gradient_cases, "cli": cli_cases,
}


def all_cases(families: tuple[str, ...] = FAMILIES) -> list[Case]:
    return [case for family in families for case in BUILDERS[family]()]


# --------------------------------------------------------------------------- child and parent


def child(ids: list[str], results: Path) -> None:
    """Run the cases ``ids`` in turn, appending a line to ``results`` before and after each."""
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    families = tuple(dict.fromkeys(i.split("/")[0] for i in ids))
    aliases = {"api": "estimator_api", "gradcheck": "gradient_check"}
    cases = {c.id: c for c in all_cases(tuple(aliases.get(f, f) for f in families))}
    with open(results, "a") as fh:
        for case_id in ids:
            fh.write(json.dumps({"id": case_id, "started": time.time()}) + "\n")
            fh.flush()
            with tempfile.TemporaryDirectory(prefix="probe-") as tmp:
                cwd = os.getcwd()
                os.chdir(tmp)
                try:
                    obs = cases[case_id].run(Path(tmp))
                except Exception as exc:  # the probe's own set-up failed: say so
                    obs = Obs("escape", f"probe error {type(exc).__name__}: {exc} "
                                        f"{traceback.format_exc(limit=2)}"[:600])
                finally:
                    os.chdir(cwd)
            fh.write(json.dumps({"id": case_id, "obs": obs.__dict__}) + "\n")
            fh.flush()


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def run_cases(cases: list[Case], timeout: float) -> dict[str, Obs]:
    """Run every case in child processes; a dead or stuck child costs only its case."""
    pending = [c.id for c in cases]
    done: dict[str, Obs] = {}
    with tempfile.TemporaryDirectory(prefix="probe-results-") as tmp:
        while pending:
            results = Path(tmp) / f"r{len(done)}.jsonl"
            proc = subprocess.Popen([sys.executable, __file__, "--child", ",".join(pending),
                                     "--results", str(results)], stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL, preexec_fn=_limit_memory)
            current, started = None, time.time()
            seen = 0
            while True:
                finished = proc.poll() is not None
                lines = results.read_text().splitlines() if results.exists() else []
                for line in lines[seen:]:
                    entry = json.loads(line)
                    if "started" in entry:
                        current, started = entry["id"], entry["started"]
                    else:
                        done[entry["id"]] = Obs(**entry["obs"])
                        current = None
                        print(f"  {entry['id']}: {done[entry['id']].outcome}", flush=True)
                seen = len(lines)
                if finished:
                    break
                if current is not None and time.time() - started > timeout:
                    proc.kill()
                    proc.wait()
                    done[current] = Obs("timeout", f"ran past {timeout:g} s")
                    current = None
                    break
                time.sleep(0.2)
            if current is not None:  # the child ended inside a case: nothing reported
                done[current] = Obs("died", f"the process ended (status {proc.returncode}) "
                                            "with no report")
            pending = [i for i in pending if i not in done]
    return done


def report(cases: list[Case], observed: dict[str, Obs], args: argparse.Namespace,
           seconds: float) -> tuple[str, list[dict[str, Any]]]:
    rows = []
    for case in cases:
        obs = observed[case.id]
        verdict, why = judge(case, obs)
        rows.append({"id": case.id, "family": case.family, "input": case.what,
                     "expect": case.expect, "outcome": obs.outcome, "verdict": verdict,
                     "why": why, "message": obs.message or " | ".join(obs.warnings)})
    counts = {v: sum(r["verdict"] == v for r in rows) for v in VERDICTS}
    before = _read_before(args.before, {r["id"] for r in rows})
    body = ["## Counts", "",
            f"{len(rows)} inputs: **{counts[VERDICTS[0]]} handled clearly, "
            f"{counts[VERDICTS[1]]} unhelpful, {counts[VERDICTS[2]]} unsafe or silent.**"]
    if before:
        old = {v: sum(verdict == v for verdict in before.values()) for v in VERDICTS}
        body += ["", f"The same inputs {args.before_label}: {old[VERDICTS[0]]} handled clearly, "
                     f"{old[VERDICTS[1]]} unhelpful, {old[VERDICTS[2]]} unsafe or silent "
                     "(columns \"before\")."]
    extra = " | before: clear / unhelpful / unsafe" if before else ""
    body += ["", f"| family | inputs | handled clearly | unhelpful | unsafe or silent{extra} |",
             "|---|---:|---:|---:|---:|" + ("---:|" if before else "")]
    for family in dict.fromkeys(r["family"] for r in rows):
        mine = [r for r in rows if r["family"] == family]
        cells = [str(sum(r["verdict"] == v for r in mine)) for v in VERDICTS]
        if before:
            cells.append(" / ".join(str(sum(before.get(r["id"]) == v for r in mine))
                                    for v in VERDICTS))
        body.append(f"| {family} | {len(mine)} | " + " | ".join(cells) + " |")
    for verdict in VERDICTS[2:0:-1]:
        listed = [r for r in rows if r["verdict"] == verdict]
        body += ["", f"## {verdict.capitalize()} ({len(listed)})", ""]
        if not listed:
            body.append("None.")
            continue
        body += ["| input | why | message |", "|---|---|---|"]
        body += [f"| {r['input']} | {r['why']} | {_cell(r['message'])} |" for r in listed]
    body += ["", "## How each input is judged", "",
             "\n\n".join(part.strip() for part in __doc__.split("\n\n")[1:4]), "",
             "A case lists the words its message must hold (the culprit: the plugin, the file, "
             "the parameter), and a clear message also says what to change (one of the "
             "imperatives in `HINTS`) and holds none of a library's raw phrases (`RAW`). "
             "Every case, with its outcome and message, is in probe.csv."]
    command = "python benchmarks/probe.py " + " ".join(shlex.quote(a) for a in args.argv)
    provenance = [f"Run of {time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC on "
                  f"{harness.cpu_name()} ({os.cpu_count()} CPUs), Python "
                  f"{platform.python_version()}, "
                  f"{seconds / 60:.1f} min of wall time with `--timeout {args.timeout:g}`, "
                  f"each child under an address-space limit of {MEMORY_LIMIT / 2**30:.0f} GiB; "
                  f"load average before and after: {args.load_before} / "
                  f"{'/'.join(f'{x:.2f}' for x in os.getloadavg())}."]
    page = harness.result_page(
        "The probe of bad input (issue 49)",
        "What sparsify does with several hundred hostile or careless inputs, family by family: "
        "how many it handles clearly, how many get an unhelpful message, and how many pass "
        "unsafely or silently, with every case that is not handled clearly listed with its "
        "message.", command, body, provenance)
    return page, rows


def _read_before(path: Path | None, ids: set[str]) -> dict[str, str]:
    """Each case's verdict in an earlier run's probe.csv (the same inputs, other code)."""
    if path is None:
        return {}
    with open(path, newline="") as fh:
        return {row["id"]: row["verdict"] for row in csv.DictReader(fh) if row["id"] in ids}


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")[:400]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("docs/results"))
    parser.add_argument("--families", nargs="+", choices=FAMILIES, default=list(FAMILIES))
    parser.add_argument("--timeout", type=float, default=120.0,
                        help="seconds a case may run before it is killed and counted unsafe")
    parser.add_argument("--before", type=Path, default=None, metavar="CSV",
                        help="an earlier run's probe.csv (other code, the same inputs), shown "
                             "beside this run's counts")
    parser.add_argument("--before-label", default="on the code before",
                        help="how the page names the --before run")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--results", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.timeout <= 0:
        parser.error("--timeout must be > 0")
    args.argv = list(sys.argv[1:] if argv is None else argv)
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.child is not None:
        child(args.child.split(","), args.results)
        return 0
    args.load_before = "/".join(f"{x:.2f}" for x in os.getloadavg())
    start = time.time()
    cases = all_cases(tuple(args.families))
    print(f"probe: {len(cases)} inputs in {len(args.families)} families", flush=True)
    observed = run_cases(cases, args.timeout)
    page, rows = report(cases, observed, args, time.time() - start)
    args.out.mkdir(parents=True, exist_ok=True)
    harness.write_atomic(args.out / "probe.md", page)
    table = io.StringIO()
    writer = csv.DictWriter(table, fieldnames=list(rows[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    harness.write_atomic(args.out / "probe.csv", table.getvalue())
    counts = {v: sum(r["verdict"] == v for r in rows) for v in VERDICTS}
    print(f"probe: {counts}; wrote {args.out / 'probe.md'}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
