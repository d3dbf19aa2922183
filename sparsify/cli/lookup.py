"""Names given on the command line, looked up in the registry: formulations, estimators, solvers.

Every lookup fails with the registry's message before any expensive work.
"""

from __future__ import annotations

from typing import Any

from sparsify.core.errors import SolverError


def _formulation_class(name: str) -> type:
    from sparsify.plugins.registry import get_registry

    return get_registry().get("formulation", name)  # type: ignore[no-any-return]


def _estimator_class(formulation: str) -> tuple[type, type, dict[str, Any]]:
    """The estimator class that ``sparsify fit --formulation NAME`` fits.

    The one the registry maps the formulation to (``register_estimators``), or
    the one its ``Formulation.task`` makes (`sparsify.core.estimator.estimator_for`).

    Parameters
    ----------
    formulation : str
        The registered name given to ``--formulation``.

    Returns
    -------
    form_cls : type
        The formulation class.
    est_cls : type
        The estimator class that fits it.
    params : dict
        Parameters that make ``est_cls`` fit this formulation.

    Raises
    ------
    ValueError
        If the formulation has no estimator (an unknown name fails in the
        registry first).
    """
    from sparsify.core.estimator import estimator_for

    form_cls = _formulation_class(formulation)
    try:
        est_cls, params = estimator_for(form_cls)
    except ValueError as exc:
        raise ValueError(f"{exc} The command line cannot fit it otherwise.") from None
    return form_cls, est_cls, params


def _check_solver(name: str) -> None:
    """Refuse an unknown or uninstalled solver before any work is done."""
    if name == "auto":
        return
    from sparsify.plugins.registry import get_registry

    backend = get_registry().get("solver", name)
    available = getattr(backend, "available", None)
    if callable(available) and not available():
        raise SolverError(f"The solver {name!r} is registered but cvxpy cannot find it "
                          "installed; install it or choose another --solver.")


def _warn_unused_kernel_options(kernel: str, given: dict[str, bool]) -> None:
    """Warn for each kernel option given (``{"degree": True}``) that no kernel of ``kernel``
    (a registered name, or names joined by '+') takes: it would be ignored."""
    import warnings
    from dataclasses import fields, is_dataclass

    from sparsify.core.registry import get_registry

    registry = get_registry()
    try:
        classes = [registry.get("kernel", name.strip()) for name in kernel.split("+")]
    except ValueError:
        return  # an unknown name fails where the kernel is made, with the registry's message
    taken = {f.name for cls in classes if is_dataclass(cls) for f in fields(cls)}
    for name, on in given.items():
        if on and name not in taken:
            warnings.warn(f"--{name} is ignored: the kernel {kernel!r} has no parameter {name!r} "
                          "(gamma: rbf, poly, taylor_rbf; degree and coef0: poly).", UserWarning,
                          stacklevel=2)
