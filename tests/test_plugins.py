"""Plugin discovery: built-ins come through entry points; broken plugins warn, not crash."""

from __future__ import annotations

import inspect
from importlib.metadata import EntryPoint

import pytest

from sparsify.plugins import hookspecs
from sparsify.plugins import registry as registry_module
from sparsify.plugins.registry import PluginError, PluginWarning, Registry, get_registry


def test_builtins_are_registered_with_their_source() -> None:
    reg = get_registry()
    assert reg.names("formulation")[:1] and "svm" in reg.names("formulation")
    assert reg.names("kernel") == ["linear", "poly", "rbf", "taylor_rbf"]
    assert reg.names("solver") == ["clarabel", "ecos", "osqp", "scs", "structured"]
    svm = reg.entries["formulation"]["svm"]
    assert (svm.plugin, svm.distribution, svm.builtin) == ("svm", "sparsify", True)
    assert reg.entries["kernel"]["rbf"].plugin == "sparsify.kernels"
    assert reg.entries["kernel"]["rbf"].builtin


def test_core_never_imports_the_builtin_formulations() -> None:
    import pathlib
    import re

    import sparsify

    core = pathlib.Path(sparsify.__file__).parent
    pattern = re.compile(r"^\s*(from|import)\s+sparsify_plugins", re.MULTILINE)
    for path in core.rglob("*.py"):
        assert not pattern.search(path.read_text()), path


def test_every_hook_is_documented_with_its_signature() -> None:
    for name in ("register_formulations", "register_kernels", "register_solvers"):
        spec = getattr(hookspecs, name)
        assert list(inspect.signature(spec).parameters) == ["register"]
        assert spec.__doc__ and "register(" in spec.__doc__


def _fake_entry_points(extra: list[EntryPoint], first: bool = False):
    """The installed entry points plus ``extra``, after them or (``first``) before them."""
    from importlib.metadata import entry_points as real  # not registry_module.entry_points: patched

    def fake(group: str):
        return [*extra, *real(group=group)] if first else [*real(group=group), *extra]

    return fake


def _load(monkeypatch, extra: list[EntryPoint], first: bool = False) -> Registry:
    monkeypatch.setattr(registry_module, "entry_points", _fake_entry_points(extra, first))
    reg = Registry()
    reg._load()
    return reg


BUILTIN_FORMULATIONS = {"svm", "kfd", "skfd", "oneclass", "klr", "s3vm", "kernel_ridge", "svr",
                        "kernel_pca"}


def _dist(name: str):
    import types

    return types.SimpleNamespace(name=name)


def _named(name: str):
    """A stand-in for a registered class or backend: only its name matters to the registry."""
    import types

    return types.SimpleNamespace(name=name)


def _impostor(monkeypatch, module: str, dist: str, kind: str, obj, tryfirst: bool = False):
    """An entry point from ``dist`` whose hook registers ``obj`` as a ``kind``."""
    import sys
    import types

    from sparsify import hookimpl

    plugin = types.ModuleType(module)

    def hook(register):
        register(obj)

    setattr(plugin, registry_module._KINDS[kind], hookimpl(tryfirst=tryfirst)(hook))
    monkeypatch.setitem(sys.modules, module, plugin)
    return EntryPoint(module, module, "sparsify")._for(_dist(dist))  # type: ignore[arg-type]


def test_broken_plugin_warns_and_the_rest_works(monkeypatch) -> None:
    broken = EntryPoint("broken", "sparsify_no_such_module", "sparsify")
    with pytest.warns(PluginWarning, match="plugin 'broken' .* failed to load"):
        reg = _load(monkeypatch, [broken])
    assert "svm" in reg.names("formulation")


@pytest.mark.parametrize(("body", "shown"), [
    ("raise SystemExit(0)", "SystemExit(0)"),
    ("raise SystemExit('goodbye')", "SystemExit('goodbye')"),
    ("raise KeyboardInterrupt", "KeyboardInterrupt()"),
    ("raise GeneratorExit", "GeneratorExit()"),
    ("import sparsify_no_such_dependency", "ModuleNotFoundError"),
    # os._exit ends a process without an exception: while a plugin loads it raises one
    ("import os\nos._exit(3)", "os._exit(3)"),
], ids=["exit0", "exit_message", "keyboard_interrupt", "generator_exit", "import_error",
        "os_exit"])
def test_plugin_that_exits_at_import_warns_and_builtins_load(monkeypatch, tmp_path, request,
                                                               body, shown) -> None:
    module = f"sparsify_test_exits_{request.node.callspec.id}"
    (tmp_path / f"{module}.py").write_text(body + "\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    ep = EntryPoint("exiter", module, "sparsify")._for(_dist("exiter-dist"))  # type: ignore
    with pytest.warns(PluginWarning) as record:
        reg = _load(monkeypatch, [ep], first=True)
    [message] = [str(w.message) for w in record]
    assert message.startswith("sparsify plugin 'exiter' from 'exiter-dist' failed to load: "
                              + shown), message
    if "Error" not in shown:  # the exits are reported as ignored, not obeyed
        assert "a plugin cannot exit or interrupt sparsify" in message
    assert BUILTIN_FORMULATIONS <= set(reg.names("formulation"))
    assert "rbf" in reg.names("kernel") and "clarabel" in reg.names("solver")


def test_a_real_ctrl_c_during_plugin_import_still_interrupts(monkeypatch, tmp_path) -> None:
    import signal

    if not callable(signal.getsignal(signal.SIGINT)):
        pytest.skip("SIGINT is not handled by Python in this process")
    before = signal.getsignal(signal.SIGINT)
    # the plugin's import is slow and the user presses Ctrl-C meanwhile (a real SIGINT)
    (tmp_path / "sparsify_test_slow.py").write_text(
        "import signal\nimport time\nsignal.raise_signal(signal.SIGINT)\ntime.sleep(5)\n",
        encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    ep = EntryPoint("slow", "sparsify_test_slow", "sparsify")._for(_dist("slow-dist"))  # type: ignore
    with pytest.raises(KeyboardInterrupt):
        _load(monkeypatch, [ep])
    assert signal.getsignal(signal.SIGINT) == before  # the host's handler is back


def test_loading_leaves_the_sigint_handler_as_it_was(monkeypatch) -> None:
    import signal

    def host_handler(signum, frame):
        raise KeyboardInterrupt

    before = signal.signal(signal.SIGINT, host_handler)
    try:
        _load(monkeypatch, [])
        assert signal.getsignal(signal.SIGINT) is host_handler
    finally:
        signal.signal(signal.SIGINT, before)


def test_os_exit_is_itself_again_after_the_plugins_load(monkeypatch, tmp_path) -> None:
    import os

    real = os._exit
    # status 3, never 0: should the guard ever fail, the test run ends with a failing status
    (tmp_path / "sparsify_test_os_exit.py").write_text("import os\nos._exit(3)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    ep = EntryPoint("exiter", "sparsify_test_os_exit", "sparsify")._for(  # type: ignore
        _dist("exiter-dist"))
    with pytest.warns(PluginWarning, match=r"failed to load: os\._exit\(3\), which was ignored"):
        _load(monkeypatch, [ep])
    assert os._exit is real


@pytest.mark.parametrize("value", ["False", "false", "0", "no", "OFF", ""])
def test_strict_mode_is_off_for_false_values(monkeypatch, value: str) -> None:
    monkeypatch.setenv("SPARSIFY_STRICT_PLUGINS", value)
    broken = EntryPoint("broken", "sparsify_no_such_module", "sparsify")
    with pytest.warns(PluginWarning, match="plugin 'broken' .* failed to load"):
        _load(monkeypatch, [broken])


@pytest.mark.parametrize("value", ["1", "true", "True", "yes", "on"])
def test_strict_mode_is_on_for_true_values(monkeypatch, value: str) -> None:
    monkeypatch.setenv("SPARSIFY_STRICT_PLUGINS", value)
    broken = EntryPoint("broken", "sparsify_no_such_module", "sparsify")
    with pytest.raises(PluginError, match="plugin 'broken'"):
        _load(monkeypatch, [broken])


@pytest.mark.parametrize("name", ["lin+ear", " rbf2", ""])
def test_a_kernel_name_that_breaks_kernel_sums_is_refused(monkeypatch, name: str) -> None:
    from sparsify import hookimpl
    from sparsify.kernels import Linear

    kernel = type("OddKernel", (Linear,), {"name": name})

    @hookimpl
    def register_kernels(register):
        register(kernel)

    ep = _plugin_module(monkeypatch, "sparsify_test_odd_kernel", register_kernels=register_kernels)
    with pytest.warns(PluginWarning, match="sparsify_test_odd_kernel") as record:
        reg = _load(monkeypatch, [ep])
    if name:
        assert "cannot contain '+'" in str(record[0].message)
    assert name not in reg.names("kernel")
    assert reg.names("kernel") == ["linear", "poly", "rbf", "taylor_rbf"]


def test_hook_that_exits_during_registration_warns(monkeypatch) -> None:
    from sparsify import hookimpl

    @hookimpl
    def register_kernels(register):
        raise SystemExit(3)

    ep = _plugin_module(monkeypatch, "sparsify_test_exit_hook", register_kernels=register_kernels)
    with pytest.warns(PluginWarning, match=r"'sparsify_test_exit_hook' from 'sparsify-test' "
                                           r"failed in kernel registration: SystemExit\(3\), "
                                           r"which was ignored"):
        reg = _load(monkeypatch, [ep])
    assert reg.names("kernel") == ["linear", "poly", "rbf", "taylor_rbf"]


@pytest.mark.parametrize(("kind", "name", "builtin_plugin"), [
    ("formulation", "svm", "svm"),
    ("kernel", "rbf", "sparsify.kernels"),
    ("solver", "clarabel", "sparsify.core.backends"),
])
def test_third_party_cannot_replace_a_builtin(monkeypatch, kind, name, builtin_plugin) -> None:
    impostor = _named(name)
    # listed before the built-ins and asking pluggy to run first: neither may let it win
    ep = _impostor(monkeypatch, "sparsify_test_impostor", "impostor-dist", kind, impostor,
                   tryfirst=True)
    with pytest.warns(PluginWarning) as record:
        reg = _load(monkeypatch, [ep], first=True)
    [message] = [str(w.message) for w in record]
    assert message == (
        f"sparsify plugin 'sparsify_test_impostor' from 'impostor-dist' registered {kind} "
        f"{name!r}, the name of a built-in {kind} (plugin {builtin_plugin!r} from 'sparsify'); "
        f"the built-in is kept and this {kind} is refused. Register it under another name.")
    entry = reg.entries[kind][name]
    assert entry.obj is not impostor
    assert (entry.plugin, entry.distribution, entry.builtin) == (builtin_plugin, "sparsify", True)


def test_duplicate_among_third_party_keeps_the_first_and_names_the_second(monkeypatch) -> None:
    first = _named("dup")
    second = _named("dup")
    a = _impostor(monkeypatch, "sparsify_test_a", "aaa-dist", "formulation", first)
    z = _impostor(monkeypatch, "sparsify_test_z", "zzz-dist", "formulation", second,
                  tryfirst=True)
    # z listed first: the order is by distribution name, whatever the file system lists
    with pytest.warns(PluginWarning) as record:
        reg = _load(monkeypatch, [z, a])
    [message] = [str(w.message) for w in record]
    assert message.startswith("sparsify plugin 'sparsify_test_z' from 'zzz-dist' registered "
                              "formulation 'dup', already registered by plugin "
                              "'sparsify_test_a' from 'aaa-dist'; keeping the first"), message
    assert reg.entries["formulation"]["dup"].obj is first
    assert not reg.entries["formulation"]["dup"].builtin


def test_entry_point_named_like_a_builtin_is_refused(monkeypatch, tmp_path) -> None:
    import sys

    # a module that would record its import: it must never run
    ran = tmp_path / "ran"
    (tmp_path / "sparsify_test_svm_name.py").write_text(
        f"open({str(ran)!r}, 'w').close()\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    ep = EntryPoint("svm", "sparsify_test_svm_name", "sparsify")._for(  # type: ignore
        _dist("evil-dist"))
    with pytest.warns(PluginWarning, match=r"^sparsify plugin 'svm' from 'evil-dist' was not "
                                           r"loaded: the plugin name 'svm' is that of a built-in "
                                           r"plugin of 'sparsify'"):
        reg = _load(monkeypatch, [ep], first=True)
    assert not ran.exists() and "sparsify_test_svm_name" not in sys.modules
    assert reg.entries["formulation"]["svm"].distribution == "sparsify"


def test_strict_mode_raises_a_one_line_plugin_error(monkeypatch) -> None:
    monkeypatch.setenv("SPARSIFY_STRICT_PLUGINS", "1")
    broken = EntryPoint("broken", "sparsify_no_such_module", "sparsify")
    with pytest.raises(PluginError, match="plugin 'broken'") as info:
        _load(monkeypatch, [broken])
    assert isinstance(info.value, ValueError)  # the command line prints it as one line
    message = str(info.value)
    assert "\n" not in message
    assert message.endswith("(SPARSIFY_STRICT_PLUGINS is set: unset it to load the other "
                            "plugins and only warn about this one)")


def test_strict_mode_refuses_a_builtin_name(monkeypatch) -> None:
    monkeypatch.setenv("SPARSIFY_STRICT_PLUGINS", "1")
    ep = _impostor(monkeypatch, "sparsify_test_strict_svm", "impostor-dist", "formulation",
                   _named("svm"))
    with pytest.raises(PluginError, match=r"^sparsify plugin 'sparsify_test_strict_svm' from "
                                          r"'impostor-dist' registered formulation 'svm', "
                                          r"the name of a built-in formulation"):
        _load(monkeypatch, [ep])


def test_plugins_variable_filters_third_party_only(monkeypatch) -> None:
    extra = _impostor(monkeypatch, "sparsify_test_extra", "extra-dist", "formulation",
                      _named("extra_formulation"))
    monkeypatch.setenv("SPARSIFY_PLUGINS", "")
    reg = _load(monkeypatch, [extra])
    assert set(reg.names("formulation")) == BUILTIN_FORMULATIONS  # built-ins always load
    assert "rbf" in reg.names("kernel")
    monkeypatch.setenv("SPARSIFY_PLUGINS", " sparsify_test_extra , svm")  # a built-in: no-op
    reg = _load(monkeypatch, [extra])
    assert set(reg.names("formulation")) == BUILTIN_FORMULATIONS | {"extra_formulation"}


def test_unknown_name_in_plugins_variable_warns(monkeypatch) -> None:
    extra = _impostor(monkeypatch, "sparsify_test_known", "extra-dist", "formulation",
                      _named("known_formulation"))
    monkeypatch.setenv("SPARSIFY_PLUGINS", "sparsify_test_known,svdd_typo")
    with pytest.warns(PluginWarning) as record:
        reg = _load(monkeypatch, [extra])
    [message] = [str(w.message) for w in record]
    assert message.startswith("SPARSIFY_PLUGINS names 'svdd_typo', which no installed "
                              "distribution provides in the 'sparsify' entry-point group. The "
                              "third-party entry points are ['sparsify_test_known']"), message
    assert "known_formulation" in reg.names("formulation")
    monkeypatch.setenv("SPARSIFY_STRICT_PLUGINS", "1")
    with pytest.raises(PluginError, match="SPARSIFY_PLUGINS names 'svdd_typo'"):
        _load(monkeypatch, [extra])


def test_register_plugin_cannot_replace_a_builtin(monkeypatch) -> None:
    import types

    from sparsify import hookimpl, register_plugin

    impostor = _named("svm")
    plugin = types.SimpleNamespace(
        register_formulations=hookimpl(lambda register: register(impostor)))
    reg = Registry()
    reg._load()
    monkeypatch.setattr(registry_module, "get_registry", lambda: reg)
    with pytest.warns(PluginWarning, match=r"'runtime_svm' from '\(registered at run time\)' "
                                           r"registered formulation 'svm', the name of a built-in"):
        register_plugin(plugin, "runtime_svm")
    assert reg.entries["formulation"]["svm"].obj is not impostor


def _plugin_module(monkeypatch, name: str, **functions) -> EntryPoint:
    """A plugin module in sys.modules and its entry point, from the distribution 'sparsify-test'."""
    import sys
    import types

    module = types.ModuleType(name)
    for attr, function in functions.items():
        setattr(module, attr, function)
    monkeypatch.setitem(sys.modules, name, module)
    dist = types.SimpleNamespace(name="sparsify-test")
    return EntryPoint(name, name, "sparsify")._for(dist)  # type: ignore[arg-type]


def test_hook_with_a_wrong_signature_warns_with_the_distribution(monkeypatch) -> None:
    from sparsify import hookimpl

    @hookimpl
    def register_formulations(register, options):  # an argument the spec does not have
        raise AssertionError("never called")

    @hookimpl
    def register_kernels(register):
        raise AssertionError("the whole plugin is refused, not only its bad hook")

    ep = _plugin_module(monkeypatch, "sparsify_test_badsig",
                        register_formulations=register_formulations,
                        register_kernels=register_kernels)
    with pytest.warns(PluginWarning, match=r"plugin 'sparsify_test_badsig' from "
                                           r"'sparsify-test' has a hook with a wrong signature"):
        reg = _load(monkeypatch, [ep])
    assert "svm" in reg.names("formulation") and "rbf" in reg.names("kernel")
    assert reg.manager.get_plugin("sparsify_test_badsig") is None


def test_hook_without_its_parameter_warns_when_called(monkeypatch) -> None:
    from sparsify import hookimpl

    @hookimpl
    def register_formulations():  # pluggy accepts a subset of the spec's arguments
        raise AssertionError("never called")

    ep = _plugin_module(monkeypatch, "sparsify_test_noarg",
                        register_formulations=register_formulations)
    with pytest.warns(PluginWarning, match=r"'sparsify_test_noarg' from 'sparsify-test' failed "
                                           r"in formulation registration: TypeError"):
        reg = _load(monkeypatch, [ep])
    assert "svm" in reg.names("formulation")


def test_unknown_hook_and_missing_decorator_warn(monkeypatch) -> None:
    from sparsify import hookimpl
    from sparsify.algorithms.svm.formulation import SVM

    @hookimpl
    def register_formulation(register):  # singular: a typo of the hook's name
        register(SVM)

    def register_kernels(register):  # forgot @hookimpl
        raise AssertionError("never called")

    ep = _plugin_module(monkeypatch, "sparsify_test_typos",
                        register_formulation=register_formulation,
                        register_kernels=register_kernels)
    with pytest.warns(PluginWarning) as record:
        reg = _load(monkeypatch, [ep])
    messages = [str(w.message) for w in record]
    assert any("declares the hook 'register_formulation', which sparsify does not define" in m
               and "'sparsify-test'" in m for m in messages), messages
    assert any("defines register_kernels() without the @sparsify.hookimpl" in m
               for m in messages), messages
    assert "svm" in reg.names("formulation")


def test_strict_mode_refuses_a_wrong_signature(monkeypatch) -> None:
    from sparsify import hookimpl

    @hookimpl
    def register_solvers(register, extra):
        raise AssertionError("never called")

    ep = _plugin_module(monkeypatch, "sparsify_test_strict", register_solvers=register_solvers)
    monkeypatch.setenv("SPARSIFY_STRICT_PLUGINS", "1")
    with pytest.raises(PluginError, match="'sparsify-test' has a hook with a wrong signature"
                       ) as info:
        _load(monkeypatch, [ep])
    assert "\n" not in str(info.value)  # pluggy's own message spans lines


def test_register_plugin_with_a_wrong_signature_warns(monkeypatch) -> None:
    import types

    from sparsify import hookimpl, register_plugin

    plugin = types.SimpleNamespace(register_formulations=hookimpl(lambda register, x: None))
    monkeypatch.setattr(registry_module, "get_registry", lambda: Registry())
    with pytest.warns(PluginWarning, match="'bad_runtime' from '\\(registered at run time\\)' "
                                           "has a hook with a wrong signature"):
        register_plugin(plugin, "bad_runtime")


def _documented_signature(function) -> str:
    """``def name(arg: Annotation) -> Return`` as written in the source (string annotations)."""
    params = ", ".join(f"{p.name}: {p.annotation}"
                       for p in inspect.signature(function).parameters.values())
    return f"def {function.__name__}({params}) -> {inspect.signature(function).return_annotation}"


def test_plugin_guide_documents_every_hook_with_its_exact_signature() -> None:
    import pathlib
    import re

    page = pathlib.Path(__file__).resolve().parents[1] / "docs" / "plugins.md"
    text = page.read_text(encoding="utf-8")
    specs = [name for name in dir(hookspecs)
             if hasattr(getattr(hookspecs, name), "sparsify_spec")]
    assert sorted(specs) == sorted(hookspecs.HOOKS)
    for name in specs:
        assert _documented_signature(getattr(hookspecs, name)) in text, name
    # and nothing documented as a hook that the specification does not have
    documented = set(re.findall(r"^def (register_\w+)\(", text, flags=re.MULTILINE))
    assert documented == set(hookspecs.HOOKS)


def test_plugin_guide_names_the_whole_formulation_contract() -> None:
    import dataclasses
    import pathlib

    from sparsify import Declaration, Formulation, Outputs
    from sparsify.core.marginal import Evaluation, Marginal

    text = (pathlib.Path(__file__).resolve().parents[1] / "docs" / "plugins.md").read_text(
        encoding="utf-8")
    for cls in (Outputs, Declaration, Evaluation):
        for field in dataclasses.fields(cls):
            assert f"`{field.name}`" in text, (cls.__name__, field.name)
    for method in ("declare", "n_outputs", "required_variables", "nondifferentiable",
                   "marginal", "solve_precomputed"):
        params = ", ".join(inspect.signature(getattr(Formulation, method)).parameters)
        assert f"{method}({params})" in text, method
    assert "evaluate(self, Z, grad)" in text and Marginal.evaluate
    for attr in ("name", "task", "register_estimators"):
        assert f"`{attr}`" in text, attr
    for variable in ("SPARSIFY_PLUGINS", "SPARSIFY_STRICT_PLUGINS"):
        assert variable in text


def _broken_distribution(root, body: str = "raise SystemExit(0)\n") -> dict[str, str]:
    """A distribution 'broken-plugin' on a temporary path whose entry point exits at import.

    Returns the environment of a fresh process that sees it (and no plugin variables).
    """
    import os

    site = root / "site"
    info = site / "broken_plugin-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-plugin\nVersion: 1.0\n",
                                   encoding="utf-8")
    (info / "entry_points.txt").write_text("[sparsify]\nbroken = sparsify_test_broken_plugin\n",
                                           encoding="utf-8")
    (site / "sparsify_test_broken_plugin.py").write_text(body, encoding="utf-8")
    path = os.pathsep.join([str(site), *filter(None, [os.environ.get("PYTHONPATH")])])
    env = {**os.environ, "PYTHONPATH": path, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    for name in ("SPARSIFY_PLUGINS", "SPARSIFY_STRICT_PLUGINS", "PYTHONWARNINGS"):
        env.pop(name, None)
    return env


def _sparsify(env: dict[str, str], cwd, *args: str):
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", "sparsify", *args], capture_output=True,
                          text=True, env=env, cwd=cwd, timeout=300)


@pytest.mark.slow
def test_command_line_lists_builtins_despite_a_plugin_that_exits(tmp_path) -> None:
    env = _broken_distribution(tmp_path)
    proc = _sparsify(env, tmp_path, "plugins")
    assert proc.returncode == 0, proc.stderr
    listed = {line.split()[0] for line in proc.stdout.splitlines() if line.startswith("  ")}
    assert BUILTIN_FORMULATIONS | {"rbf", "clarabel"} <= listed, proc.stdout
    assert proc.stderr.splitlines() == [
        "sparsify: warning: sparsify plugin 'broken' from 'broken-plugin' failed to load: "
        "SystemExit(0), which was ignored: a plugin cannot exit or interrupt sparsify "
        "(PluginWarning)"]


@pytest.mark.slow
def test_command_line_strict_mode_is_one_error_line(tmp_path) -> None:
    env = {**_broken_distribution(tmp_path), "SPARSIFY_STRICT_PLUGINS": "1"}
    proc = _sparsify(env, tmp_path, "plugins")
    assert proc.returncode == 2
    assert proc.stdout == ""
    [line] = proc.stderr.splitlines()
    assert line.startswith("sparsify: error: sparsify plugin 'broken' from 'broken-plugin' "
                           "failed to load: SystemExit(0)"), line
    assert line.endswith("(SPARSIFY_STRICT_PLUGINS is set: unset it to load the other plugins "
                         "and only warn about this one)")


def test_registering_a_module_an_entry_point_loaded_is_one_clear_line(monkeypatch) -> None:
    """register_plugin(module) on a module already loaded by its entry point: one line, no dump."""
    import sparsify.algorithms.svm.plugin as svm_module
    from sparsify import register_plugin

    with pytest.warns(PluginWarning) as record:
        register_plugin(svm_module)
    (message,) = [str(w.message) for w in record]
    assert "already loaded as plugin 'svm' from 'sparsify'" in message
    assert "\n" not in message and "_name2plugin" not in message
    assert get_registry().entries["formulation"]["svm"].plugin == "svm"  # the installed one
    monkeypatch.setenv("SPARSIFY_STRICT_PLUGINS", "1")
    with pytest.raises(PluginError, match="already loaded as plugin 'svm'"):
        register_plugin(svm_module)
