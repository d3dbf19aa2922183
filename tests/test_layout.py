"""The package layout by concept holds: no import circles, no private name across packages,
the kernels free of the core (both build on the plugin host, `sparsify.plugins`).

Every import of a sparsify module counts, at module level or inside a function
(a function-level import that closes a circle is a circle that Python merely
postpones), except those under ``if TYPE_CHECKING:``, which never run. A lazy
import of a heavy or optional third-party library (dask, matplotlib, onnx,
scikit-learn in the command line) is no sparsify import and does not count.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import sparsify

PACKAGE = Path(sparsify.__file__).parent


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
#: the C extensions (built from the .c file of the same name): they import no sparsify module
EXTENSIONS = {_module_name(p) for p in PACKAGE.rglob("*.c")}



def _package(module: str) -> str:
    """The package a module belongs to (a package's ``__init__`` belongs to itself)."""
    return module if MODULES[module].name == "__init__.py" else module.rpartition(".")[0]


@dataclass(frozen=True)
class Import:
    """One imported name (or module) of a sparsify module, where it is imported."""

    importer: str
    module: str  # the sparsify module the import runs: a .py module or a package
    name: str | None  # the name taken from it (``from module import name``), else None
    line: int


def _resolve(importer: str, node: ast.ImportFrom) -> str | None:
    if not node.level:
        return node.module
    base = _package(importer).split(".")
    base = base[: len(base) - node.level + 1]
    return ".".join([*base, node.module] if node.module else base)


def _runs(tree: ast.Module) -> Iterator[ast.stmt]:
    """Every import statement that can run: at any depth, but not under TYPE_CHECKING."""
    todo: list[ast.AST] = [tree]
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        elif isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            todo.extend(node.orelse)  # its body never runs
        else:
            todo.extend(ast.iter_child_nodes(node))


def _imports(importer: str, source: str) -> Iterator[Import]:
    for node in _runs(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "sparsify":
                    yield Import(importer, alias.name, None, node.lineno)
            continue
        source = _resolve(importer, node)
        if source is None or source.split(".")[0] != "sparsify":
            continue
        for alias in node.names:
            submodule = f"{source}.{alias.name}"
            if submodule in MODULES or submodule in EXTENSIONS:  # from package import module
                yield Import(importer, submodule, None, node.lineno)
            else:
                yield Import(importer, source, alias.name, node.lineno)


IMPORTS = [i for name, path in MODULES.items()
           for i in _imports(name, path.read_text(encoding="utf-8"))]


def _graph(imports: list[Import]) -> dict[str, dict[str, int]]:
    """importer -> {imported module: first line}, between .py modules."""
    graph: dict[str, dict[str, int]] = {name: {} for name in MODULES}
    for i in imports:
        if i.module in MODULES and i.module != i.importer:
            graph[i.importer].setdefault(i.module, i.line)
    return graph


def strongly_connected(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_cycle_finder_finds_a_cycle_through_a_function_level_import() -> None:
    source = {"a": "import b\n", "b": "def f():\n    import c\n", "c": "from a import x\n",
              "d": "import a\n"}
    graph: dict[str, dict[str, int]] = {name: {} for name in source}
    for name, text in source.items():
        for node in _runs(ast.parse(text)):
            target = node.names[0].name if isinstance(node, ast.Import) else node.module
            graph[name][str(target)] = node.lineno
    assert strongly_connected(graph) == [["a", "b", "c"]]
    del graph["b"]["c"]
    assert strongly_connected(graph) == []


def test_there_are_no_import_cycles_function_level_imports_included() -> None:
    graph = _graph(IMPORTS)
    cycles = strongly_connected(graph)
    message = "\n".join(
        "import cycle among " + ", ".join(c) + ":\n" + "\n".join(
            f"  {m} line {graph[m][d]} imports {d}" for m in c for d in graph[m] if d in c)
        for c in cycles)
    assert not cycles, message


def test_no_private_name_is_imported_across_packages() -> None:
    """A name or module another package needs is public, with a docstring."""
    crossing = set()
    for i in IMPORTS:
        private = [part for part in (*i.module.split("."), i.name or "")
                   if part.startswith("_") and not part.startswith("__")]
        if not private:
            continue
        owner = i.module if i.module in MODULES else i.module.rpartition(".")[0]
        if _package(i.importer) != (_package(owner) if owner in MODULES else owner):
            crossing.add((i.importer, i.module, i.name))
    assert not crossing, sorted(crossing)


def test_the_core_imports_no_algorithm_baseline_or_command_line() -> None:
    outside = ("sparsify.algorithms", "sparsify.baselines", "sparsify.cli", "sparsify.svm_dual")
    bad = [i for i in IMPORTS if i.importer.startswith("sparsify.core")
           and i.module.startswith(outside)]
    assert not bad, bad


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def _from_package(imports: list[Import], importer: str, imported: str) -> list[Import]:
    """The run-time imports by modules of package ``importer`` of modules of ``imported``."""
    return [i for i in imports if _within(i.importer, importer) and _within(i.module, imported)]


def test_the_package_rule_finds_a_planted_import() -> None:
    planted = ("from sparsify.plugins.hookspecs import hookimpl\n"
               "if TYPE_CHECKING:\n    from sparsify.core.solvers import SolverBackend\n"
               "def f():\n    from sparsify.core.formulation import Formulation\n")
    found = _from_package(list(_imports("sparsify.kernels.planted", planted)),
                          "sparsify.kernels", "sparsify.core")
    assert [(i.module, i.line) for i in found] == [("sparsify.core.formulation", 5)]


def test_the_kernels_import_nothing_from_the_core() -> None:
    """The core uses the kernels, never the reverse: both register through the plugin host."""
    assert not _from_package(IMPORTS, "sparsify.kernels", "sparsify.core")


def test_the_plugin_host_imports_no_other_sparsify_package() -> None:
    """Everything may import the host; it loads the default plugins by name only."""
    bad = [i for i in IMPORTS if _within(i.importer, "sparsify.plugins")
           and not _within(i.module, "sparsify.plugins") and i.module != "sparsify"]
    assert not bad, bad


def test_the_host_s_names_still_import_from_the_core_s_old_modules() -> None:
    import sparsify.persistence
    import sparsify.plugins.hookspecs
    import sparsify.plugins.registry
    from sparsify.core import hookspecs, persistence, registry
    for old, new in ((hookspecs, sparsify.plugins.hookspecs), (registry, sparsify.plugins.registry),
                     (persistence, sparsify.persistence)):
        assert old.__all__ and all(getattr(old, n) is getattr(new, n) for n in old.__all__)


def test_the_svm_dual_engine_imports_no_algorithm() -> None:
    """svm, svr and s3vm build on the engine, never the reverse (nor a baseline on it)."""
    outside = ("sparsify.algorithms", "sparsify.baselines", "sparsify.cli")
    bad = [i for i in IMPORTS if i.importer.startswith("sparsify.svm_dual")
           and i.module.startswith(outside)]
    assert not bad, bad


def test_every_algorithm_is_one_package_with_formulation_and_estimator() -> None:
    algorithms = {p.parent.name for p in (PACKAGE / "algorithms").glob("*/__init__.py")}
    assert algorithms == {"svm", "kfd", "oneclass", "klr", "s3vm", "kernel_ridge", "svr",
                          "kernel_pca"}
    for name in algorithms:
        assert {"formulation.py", "estimator.py"} <= {
            p.name for p in (PACKAGE / "algorithms" / name).iterdir()}, name
