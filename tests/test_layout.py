"""The package layout by concept holds: the core imports no algorithm, and no import cycles.

Only the imports a module runs when it is imported count (module level, outside
``if TYPE_CHECKING:``); an import inside a function is a deliberate lazy one.
"""

from __future__ import annotations

import ast
from pathlib import Path

import sparsify

PACKAGE = Path(sparsify.__file__).parent


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in PACKAGE.rglob("*.py")}


def _runtime_imports(path: Path) -> set[str]:
    """The sparsify modules ``path`` imports at import time."""
    found: set[str] = set()

    def visit(nodes: list[ast.stmt]) -> None:
        for node in nodes:
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                visit(node.orelse)
                continue
            if isinstance(node, ast.Import):
                found.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for alias in node.names:
                    sub = f"{node.module}.{alias.name}"
                    found.add(sub if sub in MODULES else node.module)
            elif isinstance(node, ast.If | ast.Try | ast.With):
                for block in ("body", "orelse", "finalbody", "handlers"):
                    for child in getattr(node, block, []):
                        visit(child.body if isinstance(child, ast.ExceptHandler) else [child])

    visit(ast.parse(path.read_text(encoding="utf-8")).body)
    return {m for m in found if m in MODULES}


GRAPH = {name: _runtime_imports(path) for name, path in MODULES.items()}


def test_the_core_imports_no_algorithm_baseline_or_command_line() -> None:
    outside = ("sparsify.algorithms", "sparsify.baselines", "sparsify.cli")
    for name, imports in GRAPH.items():
        if name.startswith("sparsify.core"):
            bad = sorted(m for m in imports if m.startswith(outside))
            assert not bad, f"{name} imports {bad}"
    # nor lazily, inside a function
    for name, path in MODULES.items():
        if name.startswith("sparsify.core"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.ImportFrom) and node.module:
                    assert not node.module.startswith(outside), (name, node.module)
                elif isinstance(node, ast.Import):
                    assert not any(a.name.startswith(outside) for a in node.names), name


def test_there_are_no_import_cycles() -> None:
    state: dict[str, int] = {}  # 1: on the stack, 2: done
    stack: list[str] = []

    def visit(name: str) -> None:
        state[name] = 1
        stack.append(name)
        for dep in sorted(GRAPH[name]):
            if dep == name or (name.startswith(dep + ".") and dep in MODULES):
                continue  # a package's own submodule importing the package: Python's order
            if state.get(dep) == 1:
                cycle = [*stack[stack.index(dep):], dep]
                raise AssertionError("import cycle: " + " -> ".join(cycle))
            if dep not in state:
                visit(dep)
        stack.pop()
        state[name] = 2

    for name in sorted(GRAPH):
        if name not in state:
            visit(name)


def test_every_algorithm_is_one_package_with_formulation_and_estimator() -> None:
    algorithms = {p.parent.name for p in (PACKAGE / "algorithms").glob("*/__init__.py")}
    assert algorithms == {"svm", "kfd", "oneclass", "klr", "s3vm", "kernel_ridge", "svr",
                          "kernel_pca"}
    for name in algorithms:
        assert {"formulation.py", "estimator.py"} <= {
            p.name for p in (PACKAGE / "algorithms" / name).iterdir()}, name
