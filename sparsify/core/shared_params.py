"""The parameters every sparse kernel estimator shares: one table, and the source made from it.

`SHARED` names each shared parameter with its type, default and documentation.
A plugin's estimator gets its ``__init__`` made from it at class creation
(`sparsify.core.estimator.SparseKernelEstimator`). The built-in estimators keep an
explicit ``__init__`` and docstring in their source, because the reference pages
are built from the source without importing it (mkdocstrings reads the text), and
because ``help()``, `inspect.signature` and scikit-learn's ``get_params``/``clone``
then see an ordinary constructor; their shared parts are written from this table by
`write_source` (``python -m sparsify.core.shared_params``), and
``tests/test_shared_params.py`` fails where a file differs from what it writes. So
the table is the one place to change a shared parameter; the files are its output.
"""

from __future__ import annotations

import inspect
import re
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["SHARED", "SHARED_PARAMS", "SharedParameter", "parameter_docs", "write_source"]


@dataclass(frozen=True)
class SharedParameter:
    """One shared parameter: its annotation (as written in source), default, numpydoc type and
    description (``{ratio}`` is filled with the estimator's `ratio_meaning`)."""

    annotation: str
    default: Any
    type: str
    doc: str


SHARED: dict[str, SharedParameter] = {
    "n_expansion": SharedParameter(
        "int | float", 10, "int or float",
        "Number of expansion vectors Nz: an int is a count; a float in (0, 1] is\n"
        "{ratio}."),
    "kernel": SharedParameter(
        "str | Kernel", "rbf", "str or Kernel",
        '"rbf", "poly", "linear", a plugin\'s kernel, names joined by "+" for a\n'
        "sum, or a `sparsify.Kernel` instance."),
    "gamma": SharedParameter(
        "float | str", "scale", '{"scale", "auto"} or float',
        'Kernel coefficient for "rbf" and "poly": "scale" is 1 / (d · Var(X)),\n'
        "with Var weighted by ``sample_weight`` where `fit` takes one; \"auto\" is\n"
        "1 / d."),
    "degree": SharedParameter("int", 3, "int", 'Degree of "poly".'),
    "coef0": SharedParameter("float", 0.0, "float", 'Constant of "poly".'),
    "init": SharedParameter(
        "str", "random", '{"random", "kmeans"}',
        "Initial XVs: a random subset of the distinct training points, or\n"
        "k-means centres."),
    "n_init": SharedParameter(
        "int", 1, "int",
        "Number of starts per problem (different initial XVs, in parallel with\n"
        "``n_jobs``); the one with the lowest W(Z), the training objective, is\n"
        "kept. W is not convex in Z, so a few starts avoid poor local minima, as\n"
        "in k-means. At most 1000: each start is a whole fit."),
    "warm_start": SharedParameter(
        "bool", False, "bool",
        "When True, `fit` starts from the last fit's XVs and solution, as\n"
        "scikit-learn's ``warm_start``: at a larger Nz the new XVs go where the\n"
        "last model's loss is largest, at a smaller one the XVs of largest |β|\n"
        "stay; one start (`sparsify.core.warm`). A search over\n"
        "C, γ or Nz refits this way (`sparsify.SparseSearchCV`). Where the last\n"
        "fit had another number of problems or features, the start is cold."),
    "solver": SharedParameter(
        "str", "auto", "str",
        '"auto": the formulation\'s own solver if it has one, else the generic\n'
        "path's backends in turn (the structured interior point, Clarabel, OSQP,\n"
        'ECOS); or a backend name ("structured", "clarabel", "ecos", "osqp", "scs").'),
    "max_iter": SharedParameter(
        "int", 200, "int",
        "Maximum L-BFGS iterations per problem (0 keeps the initial XVs)."),
    "tol": SharedParameter(
        "float", 1e-6, "float",
        "Stop when an iteration lowers W by less than this relative amount."),
    "n_iter_no_change": SharedParameter(
        "int | str | None", "auto", 'int, "auto" or None',
        "Also stop when the last ``n_iter_no_change`` iterations together\n"
        "lowered W by less than 1/√N of it, W's own sampling error: W has\n"
        "levelled off (`sparsify.core.optimize.sampling_plateau`). \"auto\" is 3\n"
        "iterations from N = 5000 points on and no such test below; None never."),
    "continuation": SharedParameter(
        "float | None", None, "float in (0, 1) or None",
        "Continuation over the data: fit first on a random sample of this\n"
        "fraction of the training points (stratified by class, each weight\n"
        "times 1 / continuation where the formulation weighs its points) until\n"
        "W levels off on it, then on all points from its XVs and solution\n"
        "(`sparsify.core.continuation`). It pays where a fit takes many costly\n"
        "iterations: a declared formulation at 10⁵ points. ``max_iter`` bounds\n"
        "each phase, ``n_iter_`` counts both. None: all points from the start;\n"
        "a warm start skips the sample."),
    "solver_tol": SharedParameter("float", 1e-8, "float", "Accuracy of each convex solve."),
    "random_state": SharedParameter(
        "int | np.random.RandomState | None", None, "int, RandomState instance or None",
        "Seed of the initial XVs."),
    "n_jobs": SharedParameter(
        "int | None", None, "int or None",
        "Parallel jobs over the problems (one-vs-rest) and starts (joblib)."),
    "verbose": SharedParameter(
        "int", 0, "int",
        "1: one line per finished problem (its name, iterations, W, seconds);\n"
        "2: also one line per L-BFGS iteration, naming its problem. Problems that\n"
        "``max_iter`` stops give one `sklearn.exceptions.ConvergenceWarning`."),
    "callback": SharedParameter(
        "Callable[..., Any] | None", None, "callable or None",
        "Called with a `sparsify.core.optimize.IterationInfo` after each\n"
        "iteration; returning True stops that problem's optimisation."),
}

#: Shared parameters whose type and description each estimator words itself (its own initial
#: XVs and its own solvers); their defaults still come from the table.
OWN_WORDS = ("init", "solver", "n_iter_no_change")

#: The shared parameters' defaults.
SHARED_PARAMS: dict[str, Any] = {name: p.default for name, p in SHARED.items()}


def _literal(value: Any) -> str:
    """``value`` as source text as the package writes it: strings in double quotes, 1e-6.

    Examples
    --------
    >>> _literal("rbf"), _literal(1e-6), _literal(0.1), _literal(None)
    ('"rbf"', '1e-6', '0.1', 'None')
    """
    if isinstance(value, str):
        return '"' + value + '"'
    return re.sub(r"e\+?(-?)0*(\d)", r"e\1\2", repr(value))


def parameter_docs(defaults: dict[str, Any], ratio: str, docs: dict[str, tuple[str, str]],
                   names: list[str]) -> list[str]:
    """The numpydoc entries of the shared parameters ``names`` (4-space indented).

    ``defaults`` and ``docs`` (type and description) are an estimator's own where they differ
    from the table.

    Examples
    --------
    >>> print(parameter_docs({}, "", {}, ["degree"])[0])
        degree : int, default=3
            Degree of "poly".
    """
    entries = []
    for name in names:
        p = SHARED[name]
        kind, text = docs.get(name, (p.type, textwrap.fill(
            " ".join(p.doc.format(ratio=ratio).split()), width=72, break_long_words=False,
            break_on_hyphens=False)))
        body = "\n".join("        " + line for line in text.splitlines())
        entries.append(f"    {name} : {kind}, default={_literal(defaults.get(name, p.default))}"
                       f"\n{body}")
    return entries


def _class_params(cls: type) -> tuple[list[inspect.Parameter], list[str]]:
    """The estimator's own constructor parameters and the shared ones it has, in order."""
    params = list(inspect.signature(cls).parameters.values())
    own = [p for p in params if p.name not in SHARED]
    shared = [p.name for p in params if p.name in SHARED]
    return own, shared


def _init_source(cls: type, current: str) -> str:
    """``cls.__init__``'s source: n_expansion (positional), its own parameters, the shared ones.

    ``current`` is the ``__init__`` as written now, whose own parameters' annotations it keeps.
    """
    own, shared = _class_params(cls)
    if shared[:1] != ["n_expansion"] or any(p.kind is not p.KEYWORD_ONLY for p in own):
        raise ValueError(f"{cls.__name__}.__init__ must take n_expansion first and its own "
                         "parameters by keyword.")
    defaults = {**SHARED_PARAMS, **cls.default_params}  # type: ignore[attr-defined]
    written = dict(re.findall(r"^        (\w+): (.+?) = .+,$", current, flags=re.M))
    lines = ["    def __init__(", "        self,",
             f"        n_expansion: {SHARED['n_expansion'].annotation} = "
             f"{_literal(defaults['n_expansion'])},", "        *,"]
    lines += [f"        {p.name}: {written.get(p.name, p.annotation)} = {_literal(p.default)},"
              for p in own]
    lines += [f"        {name}: {SHARED[name].annotation} = {_literal(defaults[name])},"
              for name in shared[1:]]
    lines.append("    ) -> None:")
    lines += [f"        self.{n} = {n}"
              for n in ["n_expansion", *[p.name for p in own], *shared[1:]]]
    return "\n".join(lines) + "\n"


_INIT = re.compile(r"^    def __init__\(\n.*?\) -> None:\n(?:        self\.\w+ = \w+\n)+",
                   flags=re.M | re.S)
_PARAMETERS = re.compile(r"(    Parameters\n    ----------\n)(.*?)(\n\n    \w[\w ]*\n    ---)",
                         flags=re.S)
_ENTRY = re.compile(r"^    (\w+)(?:, \w+)* :", flags=re.M)


def _docstring_parameters(cls: type, section: str) -> str:
    """The Parameters section with the shared entries written from the table: the shared
    entry n_expansion first, the estimator's own entries as they are, the other shared ones."""
    starts = [m.start() for m in _ENTRY.finditer(section)] + [len(section)]
    entries = {m.group(1): section[a:b].rstrip("\n")
               for m, a, b in zip(_ENTRY.finditer(section), starts, starts[1:], strict=False)}
    _, shared = _class_params(cls)
    defaults = {**SHARED_PARAMS, **cls.default_params}  # type: ignore[attr-defined]
    docs = {}
    for name in OWN_WORDS:
        if name in entries:  # the estimator's own type and words, the table's default
            head, _, text = entries[name].partition("\n")
            docs[name] = (head.split(" : ", 1)[1].rsplit(", default=", 1)[0],
                          "\n".join(line[8:] for line in text.splitlines()))
    made = dict(zip(shared, parameter_docs(defaults, cls.ratio_meaning,  # type: ignore[attr-defined]
                                           docs, shared), strict=True))
    order = ([made["n_expansion"]] if "n_expansion" in made else [])
    order += [text for name, text in entries.items() if name not in SHARED]
    order += [text for name, text in made.items() if name != "n_expansion"]
    return "\n".join(order)


def write_source(cls: type, check: bool = False) -> bool:
    """Write the shared parts of a built-in estimator's ``__init__`` and docstring from `SHARED`.

    Returns whether the file was (``check``: would be) changed.
    """
    path = Path(inspect.getfile(cls))
    source = path.read_text(encoding="utf-8")
    body = source[source.index(f"class {cls.__name__}("):]
    init = _INIT.search(body)
    section = _PARAMETERS.search(body)
    if init is None or section is None:
        raise ValueError(f"{cls.__name__}: no explicit __init__ or Parameters section in {path}.")
    new = (body[:section.start(2)] + _docstring_parameters(cls, section.group(2))
           + body[section.end(2):init.start()] + _init_source(cls, init.group(0))
           + body[init.end():])
    new_source = source[:source.index(f"class {cls.__name__}(")] + new
    if new_source != source and not check:
        path.write_text(new_source, encoding="utf-8")
    return new_source != source


def built_in_estimators() -> list[type]:
    """The built-in estimators whose constructors are written from the table."""
    import sparsify

    return [getattr(sparsify, name) for name in (
        "SparseSVC", "SparseKFD", "SparseOneClassSVM", "SparseKernelLogisticRegression",
        "SparseKernelRidge", "SparseSVR", "SparseKernelPCA")]


if __name__ == "__main__":  # pragma: no cover - the maintainers' command
    changed = [cls.__name__ for cls in built_in_estimators() if write_source(cls)]
    print("rewrote", ", ".join(changed) if changed else "nothing")
    sys.exit(0)
