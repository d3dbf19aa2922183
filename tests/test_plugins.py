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
