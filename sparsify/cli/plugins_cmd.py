"""``sparsify plugins``: list the registered formulations, kernels and solvers.

Each entry shows the plugin and the distribution it came from; a formulation
its estimator class, a solver backend whether it is installed.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from sparsify.cli.output import _print_json

_KINDS = ("formulation", "kernel", "solver")


def _describe(entry: Any) -> dict[str, Any]:
    obj = entry.obj
    info: dict[str, Any] = {
        "name": entry.name,
        "plugin": entry.plugin,
        "distribution": entry.distribution,
        "object": f"{getattr(obj, '__module__', type(obj).__module__)}."
                  f"{getattr(obj, '__qualname__', type(obj).__qualname__)}",
    }
    if entry.kind == "formulation":
        from sparsify.core.estimator import estimator_for

        try:
            info["estimator"] = estimator_for(obj)[0].__name__
        except ValueError:  # no estimator registered and no task to make one from
            info["estimator"] = None
    if entry.kind == "solver":
        available: Callable[[], bool] | None = getattr(obj, "available", None)
        info["available"] = bool(available()) if callable(available) else None
    return info


def _cmd_plugins(args: argparse.Namespace) -> int:
    from sparsify.plugins.registry import get_registry

    registry = get_registry()
    listing = {
        f"{kind}s": [_describe(registry.entries[kind][name]) for name in registry.names(kind)]
        for kind in _KINDS
    }
    if args.json:
        _print_json(listing)
        return 0
    print(_table(listing), end="")
    return 0


def _table(listing: dict[str, list[dict[str, Any]]]) -> str:
    """The listing as aligned columns, as wide as the longest entry of each (every kind alike).

    Examples
    --------
    >>> rows = [{"name": "svm", "plugin": "svm", "distribution": "sparsify",
    ...          "estimator": "SparseSVC"},
    ...         {"name": "a_long_name", "plugin": "p", "distribution": "other-dist"}]
    >>> print(_table({"formulations": rows, "kernels": [], "solvers": []}), end="")
    formulations:
      svm          plugin svm  distribution sparsify    estimator SparseSVC
      a_long_name  plugin p    distribution other-dist
    kernels:
      (none)
    solvers:
      (none)
    """
    every = [row for rows in listing.values() for row in rows]
    width = {key: max((len(str(row[key])) for row in every), default=0)
             for key in ("name", "plugin", "distribution")}
    lines = []
    for kind in _KINDS:
        rows = listing[f"{kind}s"]
        lines.append(f"{kind}s:")
        if not rows:
            lines.append("  (none)")
        for row in rows:
            extra = ""
            if row.get("estimator"):
                extra = f"estimator {row['estimator']}"
            if row.get("available") is False:
                extra = "(not installed)"
            line = (f"  {row['name']:<{width['name']}}  plugin {row['plugin']:<{width['plugin']}}"
                    f"  distribution {row['distribution']:<{width['distribution']}}  {extra}")
            lines.append(line.rstrip())
    return "\n".join(lines) + "\n"
