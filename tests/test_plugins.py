"""Plugin discovery: built-ins come through entry points; broken plugins warn, not crash."""

from __future__ import annotations

import inspect
from importlib.metadata import EntryPoint

import pytest

from sparsify import hookspecs, plugins
from sparsify.plugins import PluginWarning, Registry, get_registry


def test_builtins_are_registered_with_their_source() -> None:
    reg = get_registry()
    assert reg.names("formulation")[:1] and "svm" in reg.names("formulation")
    assert reg.names("kernel") == ["linear", "poly", "rbf", "taylor_rbf"]
    assert reg.names("solver") == ["clarabel", "ecos", "osqp"]
    svm = reg.entries["formulation"]["svm"]
    assert (svm.plugin, svm.distribution) == ("svm", "sparsify")
    assert reg.entries["kernel"]["rbf"].plugin == "sparsify.kernels"


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


def _fake_entry_points(extra: list[EntryPoint]):
    real = plugins.entry_points

    def fake(group: str):
        return [*real(group=group), *extra]

    return fake


def _load(monkeypatch, extra: list[EntryPoint]) -> Registry:
    monkeypatch.setattr(plugins, "entry_points", _fake_entry_points(extra))
    reg = Registry()
    reg._load()
    return reg


def test_broken_plugin_warns_and_the_rest_works(monkeypatch) -> None:
    broken = EntryPoint("broken", "sparsify_no_such_module", "sparsify")
    with pytest.warns(PluginWarning, match="plugin 'broken' .* failed to load"):
        reg = _load(monkeypatch, [broken])
    assert "svm" in reg.names("formulation")


def test_duplicate_name_warns_and_keeps_the_first(monkeypatch) -> None:
    import sys
    import types

    from sparsify_plugins.svm import SVM

    from sparsify import hookimpl

    module = types.ModuleType("sparsify_test_twin")

    @hookimpl
    def register_formulations(register):
        register(SVM)

    module.register_formulations = register_formulations
    monkeypatch.setitem(sys.modules, "sparsify_test_twin", module)
    twin = EntryPoint("svm_twin", "sparsify_test_twin", "sparsify")
    with pytest.warns(PluginWarning, match="registered formulation 'svm', already registered"):
        reg = _load(monkeypatch, [twin])
    assert reg.entries["formulation"]["svm"].plugin == "svm"


def test_strict_mode_turns_warnings_into_errors(monkeypatch) -> None:
    monkeypatch.setenv("SPARSIFY_STRICT_PLUGINS", "1")
    broken = EntryPoint("broken", "sparsify_no_such_module", "sparsify")
    with pytest.raises(RuntimeError, match="plugin 'broken'"):
        _load(monkeypatch, [broken])


def test_environment_variable_limits_plugins(monkeypatch) -> None:
    monkeypatch.setenv("SPARSIFY_PLUGINS", "")
    reg = _load(monkeypatch, [])
    assert reg.names("formulation") == []
    assert "rbf" in reg.names("kernel")  # the core's own defaults always load


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
    from sparsify_plugins.svm import SVM

    from sparsify import hookimpl

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
    with pytest.raises(RuntimeError, match="'sparsify-test' has a hook with a wrong signature"):
        _load(monkeypatch, [ep])


def test_register_plugin_with_a_wrong_signature_warns(monkeypatch) -> None:
    import types

    from sparsify import hookimpl, register_plugin

    plugin = types.SimpleNamespace(register_formulations=hookimpl(lambda register, x: None))
    monkeypatch.setattr(plugins, "get_registry", lambda: Registry())
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
    from sparsify.marginal import Evaluation, Marginal

    text = (pathlib.Path(__file__).resolve().parents[1] / "docs" / "plugins.md").read_text(
        encoding="utf-8")
    for cls in (Outputs, Declaration, Evaluation):
        for field in dataclasses.fields(cls):
            assert f"`{field.name}`" in text, (cls.__name__, field.name)
    for method in ("declare", "n_outputs", "nondifferentiable", "marginal"):
        params = ", ".join(inspect.signature(getattr(Formulation, method)).parameters)
        assert f"{method}({params})" in text, method
    assert "evaluate(self, Z, grad)" in text and Marginal.evaluate
    for attr in ("name", "estimator", "estimator_params"):
        assert f"`{attr}`" in text, attr
    for variable in ("SPARSIFY_PLUGINS", "SPARSIFY_STRICT_PLUGINS"):
        assert variable in text
