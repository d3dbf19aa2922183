"""Kernels as data: the JSON description of a model file's kernel, and its evaluation.

A model file never names a Python class to import: its kernel is a JSON object
whose ``"name"`` picks one entry of a fixed table (`KERNEL_NAMES`), with
numeric parameters beside it and, for the kernels bound to the training data,
the names of array members of the file. Evaluating it gives the feature block
K(X, Z) against the file's expansion vectors Z, computed with the same
operations as the fitted estimator, so the decision values agree to the last
bits.

- ``rbf``: exp(−gamma ‖x − z_j‖²)
- ``poly``: (gamma ⟨x, z_j⟩ + coef0) ** degree
- ``linear``: ⟨x, z_j⟩
- ``taylor_rbf``: exp(−gamma (‖x‖² + ‖z_j‖²)) Σ_{k=0..order} (2 gamma ⟨x, z_j⟩)^k / k!
- ``sum``: Σ_m w_m k_m(x, z_j) over ``parts`` (``weights`` null: all w_m = 1)
- ``manifold``: base(x, z_j) − Σ_g base(x_g, x) C[g, j], with x_g the rows of the
  array ``graph_points`` and C the array ``graph_coef`` (N_g, Nz)
- ``gaussian_widths``: exp(−‖x − z_j‖² / (2 σ_j²)), σ the array ``widths`` (Nz,)

``manifold`` stores a `sparsify.ManifoldKernel` (LapSVM deformation) evaluated
against the file's Z: C = (I + M K)⁻¹ M k(X_g, Z) is fixed once Z is, so the
file holds the N_g graph points and C instead of the graph construction.
``gaussian_widths`` is the per-XV Gaussian dictionary of
`sparsify.KernelMatchingReduction`. Both are *bound* to the file's Z: they
give K(X, Z) for that Z only.

Examples
--------
>>> import numpy as np
>>> from sparsify import RBF, Linear
>>> Z = np.array([[0.0, 1.0], [1.0, 0.0]])
>>> spec, arrays = describe_kernel(RBF(0.5) + Linear(), Z)
>>> spec
{'name': 'sum', 'weights': None, 'parts': [{'name': 'rbf', 'gamma': 0.5}, {'name': 'linear'}]}
>>> K = kernel_features(spec, arrays, np.zeros((1, 2)), Z)
>>> bool(np.array_equal(K, (RBF(0.5) + Linear())(np.zeros((1, 2)), Z)))
True
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray

from sparsify.kernels import RBF, Kernel, Linear, Polynomial, SumKernel, gaussian_dictionary
from sparsify.kernels.taylor_rbf import TaylorRBF

__all__ = [
    "KERNEL_NAMES",
    "MAX_ROW_COST",
    "MAX_TAYLOR_ORDER",
    "KernelSpecError",
    "build_kernel",
    "check_kernel_arrays",
    "check_row_cost",
    "describe_kernel",
    "feature_width",
    "kernel_array_shapes",
    "kernel_features",
    "validate_kernel_spec",
]

Array = NDArray[np.float64]

#: Every kernel name a model file may hold (format version 1).
KERNEL_NAMES = ("rbf", "poly", "linear", "taylor_rbf", "sum", "manifold", "gaussian_widths")

#: Deepest nesting of ``sum`` and ``manifold`` a file may hold (a bound on the recursion).
MAX_DEPTH = 16

#: Highest Taylor order a file may hold: each kernel value costs one term per order, and
#: beyond a few dozen terms the series is exp itself to float64 precision wherever the
#: kernel does not overflow.
MAX_TAYLOR_ORDER = 1000

#: The most multiply-adds one row of X may cost a model to predict, whatever its file holds (a
#: larger model must hold at least `ROW_COST_PER_NUMBER` of its numbers per unit above it): a
#: few bytes of JSON ("order": 1000, a sum of 100 parts) must not buy minutes of work.
MAX_ROW_COST = 2**24
#: A model's row cost may exceed `MAX_ROW_COST` by this much per number its arrays hold.
ROW_COST_PER_NUMBER = 16

# the keys each kernel object has, besides "name"
_KEYS: dict[str, set[str]] = {
    "rbf": {"gamma"},
    "poly": {"gamma", "degree", "coef0"},
    "linear": set(),
    "taylor_rbf": {"gamma", "order"},
    "sum": {"weights", "parts"},
    "manifold": {"base", "graph_points", "graph_coef"},
    "gaussian_widths": {"widths"},
}

_SUPPORTED = ("'rbf', 'poly', 'linear', 'taylor_rbf' (TaylorRBF), sums of them (SumKernel) and "
              "manifold kernels (ManifoldKernel) bound to their graph")


class KernelSpecError(ValueError):
    """A kernel cannot be described by data, or a kernel description is invalid."""


def _number(value: Any) -> float:
    """A finite Python float from a kernel parameter (float64 and ints included)."""
    out = float(value)
    if not math.isfinite(out):
        raise KernelSpecError(f"a kernel parameter is {out}; a model file holds finite numbers "
                              "only.")
    return out


def _integer(value: Any) -> int:
    if isinstance(value, bool) or int(value) != value:
        raise KernelSpecError(f"a kernel's integer parameter is {value!r}.")
    return int(value)


def _free(spec: Mapping[str, Any]) -> bool:
    """Whether a description is a kernel of any two points (not bound to the file's Z)."""
    if spec["name"] in ("manifold", "gaussian_widths"):
        return False
    if spec["name"] == "sum":
        return all(_free(part) for part in spec["parts"])
    return True


def describe_kernel(
    kernel: Kernel, Z: Array, *, prefix: str = "kernel", depth: int = 0
) -> tuple[dict[str, Any], dict[str, Array]]:
    """The JSON description of a kernel, and the arrays it refers to.

    Parameters
    ----------
    kernel : Kernel
        A fitted estimator's ``kernel_``.
    Z : ndarray of shape (Nz, d)
        The expansion vectors the machine evaluates the kernel against; a
        manifold kernel is stored bound to them.
    prefix : str, default="kernel"
        Prefix of the array names (their place in the description).

    Returns
    -------
    spec : dict
        JSON values only; array members are referred to by name.
    arrays : dict of str to ndarray
        The arrays named in ``spec`` (float64).

    Raises
    ------
    KernelSpecError
        For a kernel that has no data description (a plugin's kernel, a
        callable), naming it and the kernels that can be saved.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsify import Polynomial
    >>> describe_kernel(Polynomial(gamma=0.5, degree=2, coef0=1.0), np.zeros((1, 2)))
    ({'name': 'poly', 'gamma': 0.5, 'degree': 2, 'coef0': 1.0}, {})
    """
    from sparsify.kernels.manifold import ManifoldKernel

    if depth > MAX_DEPTH:
        raise KernelSpecError(f"the kernel nests sums and manifold kernels more than {MAX_DEPTH} "
                              "deep; a model file holds at most that.")
    kind = type(kernel)
    if kind is RBF:
        return {"name": "rbf", "gamma": _number(kernel.gamma)}, {}
    if kind is Polynomial:
        # the degree keeps its type: x ** 3 and x ** 3.0 need not round alike
        degree = kernel.degree if isinstance(kernel.degree, int) else _number(kernel.degree)
        return {"name": "poly", "gamma": _number(kernel.gamma), "degree": degree,
                "coef0": _number(kernel.coef0)}, {}
    if kind is Linear:
        return {"name": "linear"}, {}
    if kind is TaylorRBF:
        order = _integer(kernel.order)
        if not 0 <= order <= MAX_TAYLOR_ORDER:
            raise KernelSpecError(f"the TaylorRBF order is {order}; a model file holds orders "
                                  f"0 to {MAX_TAYLOR_ORDER}.")
        return {"name": "taylor_rbf", "gamma": _number(kernel.gamma), "order": order}, {}
    if kind is SumKernel:
        parts, arrays = [], {}
        for m, part in enumerate(kernel.kernels):
            spec, more = describe_kernel(part, Z, prefix=f"{prefix}.{m}", depth=depth + 1)
            parts.append(spec)
            arrays.update(more)
        weights = None if kernel.weights is None else [_number(w) for w in kernel.weights]
        return {"name": "sum", "weights": weights, "parts": parts}, arrays
    if kind is ManifoldKernel:
        if kernel.X_graph is None:
            raise KernelSpecError("the ManifoldKernel has no graph (X_graph is None); a fitted "
                                  "estimator's manifold kernel is always bound to its graph.")
        base, arrays = describe_kernel(kernel.base, Z, prefix=f"{prefix}.base", depth=depth + 1)
        if not _free(base):
            raise KernelSpecError("the base of a ManifoldKernel is itself a manifold kernel; a "
                                  "model file holds manifold kernels of a plain base kernel only.")
        points, coef = f"{prefix}.graph_points", f"{prefix}.graph_coef"
        arrays[points] = np.asarray(kernel.X_graph, dtype=np.float64)
        arrays[coef] = kernel.graph_coef(Z)
        return {"name": "manifold", "base": base, "graph_points": points,
                "graph_coef": coef}, arrays
    raise KernelSpecError(
        f"the kernel {kind.__name__} ({kernel!r}) cannot be described by data. A model file can "
        f"hold the kernels {_SUPPORTED}. Refit with one of them, or keep this estimator as a "
        "pickle (joblib.dump) and load only pickles you trust."
    )


def _check_keys(spec: Mapping[str, Any], where: str) -> str:
    if not isinstance(spec, Mapping):
        raise KernelSpecError(f"{where} must be a JSON object; got {type(spec).__name__}.")
    name = spec.get("name")
    if not isinstance(name, str) or name not in _KEYS:
        raise KernelSpecError(f"{where} has the kernel name {name!r}; this sparsify reads "
                              f"{', '.join(map(repr, KERNEL_NAMES))}. Upgrade sparsify, or "
                              "save the model with a supported kernel.")
    extra = set(spec) - _KEYS[name] - {"name"}
    missing = _KEYS[name] - set(spec)
    if extra or missing:
        raise KernelSpecError(f"{where} (kernel {name!r}) must have exactly the keys "
                              f"{sorted(_KEYS[name] | {'name'})}; got {sorted(spec)}.")
    return str(name)


def _check_real(value: Any, where: str, *, positive: bool = False) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise KernelSpecError(f"{where} must be a finite number; got {value!r}.")
    if positive and not value > 0:
        raise KernelSpecError(f"{where} must be > 0; got {value!r}.")


def validate_kernel_spec(spec: Any, *, where: str = "kernel", depth: int = 0) -> list[str]:
    """Check a kernel description read from a file; return the array names it refers to.

    Raises
    ------
    KernelSpecError
        For an unknown kernel name, missing or extra keys, a parameter of the
        wrong type or out of range, or nesting deeper than `MAX_DEPTH`.

    Examples
    --------
    >>> validate_kernel_spec({"name": "rbf", "gamma": 0.5})
    []
    >>> validate_kernel_spec({"name": "rbf", "gamma": -1})
    Traceback (most recent call last):
    ...
    sparsify.io.kernel_spec.KernelSpecError: kernel.gamma must be > 0; got -1.
    """
    if depth > MAX_DEPTH:
        raise KernelSpecError(f"{where}: kernels nest more than {MAX_DEPTH} deep.")
    name = _check_keys(spec, where)
    if name in ("rbf", "poly", "taylor_rbf"):
        _check_real(spec["gamma"], f"{where}.gamma", positive=True)
    if name == "poly":
        _check_real(spec["degree"], f"{where}.degree", positive=True)
        _check_real(spec["coef0"], f"{where}.coef0")
    if name == "taylor_rbf":
        order = spec["order"]
        if (isinstance(order, bool) or not isinstance(order, int)
                or not 0 <= order <= MAX_TAYLOR_ORDER):
            raise KernelSpecError(f"{where}.order must be an integer from 0 to "
                                  f"{MAX_TAYLOR_ORDER}; got {order!r}.")
    if name == "sum":
        parts, weights = spec["parts"], spec["weights"]
        if not isinstance(parts, list) or not parts:
            raise KernelSpecError(f"{where}.parts must be a non-empty list of kernels.")
        if weights is not None:
            if not isinstance(weights, list) or len(weights) != len(parts):
                raise KernelSpecError(f"{where}.weights must be null or a list of one number "
                                      f"per part ({len(parts)}); got {weights!r}.")
            for m, w in enumerate(weights):
                _check_real(w, f"{where}.weights[{m}]")
        names = []
        for m, part in enumerate(parts):
            names += validate_kernel_spec(part, where=f"{where}.parts[{m}]", depth=depth + 1)
        return names
    if name == "manifold":
        names = validate_kernel_spec(spec["base"], where=f"{where}.base", depth=depth + 1)
        if not _free(spec["base"]):
            raise KernelSpecError(f"{where}.base must be a plain kernel (no manifold or "
                                  "gaussian_widths inside).")
        for key in ("graph_points", "graph_coef"):
            if not isinstance(spec[key], str):
                raise KernelSpecError(f"{where}.{key} must name an array member; got "
                                      f"{spec[key]!r}.")
        return [*names, spec["graph_points"], spec["graph_coef"]]
    if name == "gaussian_widths":
        if not isinstance(spec["widths"], str):
            raise KernelSpecError(f"{where}.widths must name an array member; got "
                                  f"{spec['widths']!r}.")
        return [spec["widths"]]
    return []


def kernel_array_shapes(
    spec: Mapping[str, Any], n_expansion: int, n_features: int
) -> dict[str, tuple[int | None, ...]]:
    """The shape each array of a (validated) description must have; None is any length ≥ 1.

    Examples
    --------
    >>> spec = {"name": "manifold", "base": {"name": "linear"}, "graph_points": "p",
    ...         "graph_coef": "c"}
    >>> kernel_array_shapes(spec, n_expansion=3, n_features=2)
    {'p': (None, 2), 'c': ('p', 3)}
    """
    name = spec["name"]
    if name == "sum":
        out: dict[str, tuple[Any, ...]] = {}
        for part in spec["parts"]:
            out.update(kernel_array_shapes(part, n_expansion, n_features))
        return out
    if name == "manifold":
        # graph_coef has one row per graph point: its first length is graph_points' first
        return {spec["graph_points"]: (None, n_features),
                spec["graph_coef"]: (spec["graph_points"], n_expansion)}
    if name == "gaussian_widths":
        return {spec["widths"]: (n_expansion,)}
    return {}


def check_kernel_arrays(spec: Mapping[str, Any], arrays: Mapping[str, Array]) -> None:
    """Check the values of a (validated) description's arrays: Gaussian widths must be > 0.

    Raises
    ------
    KernelSpecError
        If a ``gaussian_widths`` kernel has a width <= 0.

    Examples
    --------
    >>> import numpy as np
    >>> check_kernel_arrays({"name": "gaussian_widths", "widths": "w"}, {"w": np.array([0.0])})
    Traceback (most recent call last):
    ...
    sparsify.io.kernel_spec.KernelSpecError: the Gaussian widths 'w' must be > 0.
    """
    if spec["name"] == "sum":
        for part in spec["parts"]:
            check_kernel_arrays(part, arrays)
    elif spec["name"] == "gaussian_widths" and not (arrays[spec["widths"]] > 0).all():
        raise KernelSpecError(f"the Gaussian widths {spec['widths']!r} must be > 0.")


def build_kernel(spec: Mapping[str, Any]) -> Kernel | None:
    """The sparsify `Kernel` of a plain (validated) description; None for a bound one.

    Examples
    --------
    >>> build_kernel({"name": "sum", "weights": [0.5, 2.0],
    ...               "parts": [{"name": "rbf", "gamma": 1.0}, {"name": "linear"}]})
    SumKernel(kernels=(RBF(gamma=1.0), Linear()), weights=(0.5, 2.0))
    """
    name = spec["name"]
    if not _free(spec):
        return None
    if name == "rbf":
        return RBF(gamma=spec["gamma"])
    if name == "poly":
        return Polynomial(gamma=spec["gamma"], degree=spec["degree"], coef0=spec["coef0"])
    if name == "linear":
        return Linear()
    if name == "taylor_rbf":
        return TaylorRBF(gamma=spec["gamma"], order=spec["order"])
    parts = tuple(build_kernel(part) for part in spec["parts"])
    weights = None if spec["weights"] is None else tuple(spec["weights"])
    return SumKernel(parts, weights)  # type: ignore[arg-type]


def feature_width(spec: Mapping[str, Any], arrays: Mapping[str, Array], n_expansion: int) -> int:
    """Columns of the widest kernel block one row of X costs (Nz, or a graph's N_g).

    Prediction sizes its row blocks by it, so memory stays bounded.
    """
    widths = [n_expansion]
    if spec["name"] == "sum":
        widths += [feature_width(part, arrays, n_expansion) for part in spec["parts"]]
    elif spec["name"] == "manifold":
        widths.append(len(arrays[spec["graph_points"]]))
    return max(widths)


def kernel_features(
    spec: Mapping[str, Any], arrays: Mapping[str, Array], X: Array, Z: Array
) -> Array:
    """K(X, Z) of a (validated) description, shape (len(X), len(Z)).

    The operations are those of the fitted estimator's kernel (same order),
    so the values agree with it to the last bits.

    Examples
    --------
    >>> import numpy as np
    >>> spec = {"name": "gaussian_widths", "widths": "w"}
    >>> kernel_features(spec, {"w": np.array([1.0])}, np.zeros((1, 1)), np.ones((1, 1)))
    array([[0.60653066]])
    """
    name = spec["name"]
    if name == "gaussian_widths":
        return gaussian_dictionary(X, Z, arrays[spec["widths"]])
    if name == "manifold":
        base = build_kernel(spec["base"])
        assert base is not None  # validated: a plain base
        points = arrays[spec["graph_points"]]
        # ManifoldKernel.__call__: k(x, z) − k(X_g, x)ᵀ A k(X_g, z), with A k(X_g, Z) stored
        return base(X, Z) - base(points, X).T @ arrays[spec["graph_coef"]]  # type: ignore[no-any-return]
    if name == "sum" and not _free(spec):
        weights = spec["weights"] if spec["weights"] is not None else [1.0] * len(spec["parts"])
        # SumKernel.__call__'s sum: the same additions in the same order
        return sum(w * kernel_features(part, arrays, X, Z)  # type: ignore[return-value]
                   for w, part in zip(weights, spec["parts"], strict=True))
    kernel = build_kernel(spec)
    assert kernel is not None
    return kernel(X, Z)


def row_cost(spec: Mapping[str, Any], shapes: Mapping[str, tuple[int, ...]], n_expansion: int,
             n_features: int) -> int:
    """Multiply-adds of one kernel row k(x, Z) of a (validated) description, from shapes only.

    ``shapes`` gives the shape of each array the description names (a manifold's
    graph points). Each plain kernel reads the row against every XV (Nz·d), a
    Taylor kernel adds one term per order and XV, a sum adds its parts, and a
    manifold kernel its base kernel against its graph points and their coefficients.

    Examples
    --------
    >>> row_cost({"name": "taylor_rbf", "gamma": 1.0, "order": 10}, {}, 5, 2)
    60
    >>> spec = {"name": "sum", "weights": None, "parts": [{"name": "linear"}] * 3}
    >>> row_cost(spec, {}, 5, 2)
    30
    """
    name = spec["name"]
    if name == "sum":
        return sum(row_cost(part, shapes, n_expansion, n_features) for part in spec["parts"])
    if name == "manifold":
        n_graph = int(shapes[spec["graph_points"]][0])
        base = spec["base"]
        return (row_cost(base, shapes, n_expansion, n_features)
                + row_cost(base, shapes, n_graph, n_features) + n_graph * n_expansion)
    extra = int(spec["order"]) if name == "taylor_rbf" else 0
    return n_expansion * (n_features + extra)


def check_row_cost(spec: Mapping[str, Any], shapes: Mapping[str, tuple[int, ...]],
                   n_features: int, n_outputs: int) -> None:
    """Refuse a model whose prediction of one row costs more than its size can justify.

    The cost of one row (`row_cost`, plus reading the row and the coefficients'
    product) may be at most `MAX_ROW_COST`, or `ROW_COST_PER_NUMBER` times the
    numbers the model's arrays hold where that is more: a model is as costly as
    it is large, never much costlier. ``shapes`` holds every array's shape,
    ``expansion_vectors`` among them.

    Raises
    ------
    KernelSpecError
        Saying what the cost comes from (parts, Taylor order, XVs, features).

    Examples
    --------
    >>> spec = {"name": "sum", "weights": None,
    ...         "parts": [{"name": "taylor_rbf", "gamma": 1.0, "order": 1000}] * 110}
    >>> check_row_cost(spec, {"expansion_vectors": (300, 2)}, 2, 1)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    sparsify.io.kernel_spec.KernelSpecError: predicting one row would take about 3.3e+07 ...
    """
    n_expansion = int(shapes["expansion_vectors"][0])
    cost = max(n_features, row_cost(spec, shapes, n_expansion, n_features)
               + n_outputs * n_expansion)
    numbers = sum(math.prod(shape) for shape in shapes.values())
    limit = max(MAX_ROW_COST, ROW_COST_PER_NUMBER * numbers)
    if cost <= limit:
        return
    parts = _leaves(spec)
    orders = [p["order"] for p in parts if p["name"] == "taylor_rbf"]
    what = [f"{len(parts)} kernel part{'s' if len(parts) > 1 else ''}",
            *([f"Taylor order up to {max(orders)}"] if orders else []),
            f"{n_expansion} XVs", f"{n_features} features"]
    raise KernelSpecError(
        f"predicting one row would take about {cost:.2g} multiply-adds ({', '.join(what)}), "
        f"more than a model of {numbers} numbers may cost: at most {limit:.2g} (2^24, or "
        f"{ROW_COST_PER_NUMBER} per number it holds where that is more); it is refused "
        "before any prediction. Refit with fewer kernels in the sum or a lower Taylor order")


def _leaves(spec: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The plain kernels of a description (the parts of its sums, a manifold's base)."""
    if spec["name"] == "sum":
        return [leaf for part in spec["parts"] for leaf in _leaves(part)]
    if spec["name"] == "manifold":
        return _leaves(spec["base"])
    return [spec]
