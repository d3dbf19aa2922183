"""The plugin contract: every hook sparsify calls, with its exact signature.

A plugin is a module (or object) with functions decorated by `hookimpl`,
exposed through the ``sparsify`` entry-point group::

    [project.entry-points.sparsify]
    my_plugin = "my_package.my_module"

Each hook receives a ``register`` callable; call it once per thing the plugin
provides. The built-in algorithms (the packages under `sparsify.algorithms`)
use exactly this mechanism; they load first and
their names are reserved. A hook whose parameters are not these, a hook name
sparsify does not define, a ``register_*`` function without ``@hookimpl``, a
name that is already registered and anything a hook raises (``SystemExit``
included) each give a `PluginWarning` naming the plugin and its distribution,
and the rest of sparsify keeps working (docs/plugins.md is the guide;
`sparsify.testing` checks a formulation).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    from sparsify.core.formulation import Formulation
    from sparsify.core.solvers import SolverBackend
    from sparsify.kernels import Kernel

__all__ = ["HOOKS", "hookimpl", "hookspec"]

hookspec = pluggy.HookspecMarker("sparsify")
hookimpl = pluggy.HookimplMarker("sparsify")


@hookspec
def register_formulations(register: Callable[[type[Formulation]], None]) -> None:
    """Register convex kernel learning algorithms.

    Call ``register(cls)`` with a subclass of `sparsify.Formulation`. The
    class attribute ``name`` is the name users pass (``formulation="svm"``).
    """


@hookspec
def register_kernels(register: Callable[[type[Kernel]], None]) -> None:
    """Register kernels.

    Call ``register(cls)`` with a subclass of `sparsify.kernels.Kernel`;
    its ``name`` is the name users pass (``kernel="rbf"``). The class must be
    constructible with keyword hyperparameters (``gamma``, ``degree``, ``coef0``)
    or none.
    """


@hookspec
def register_solvers(register: Callable[[SolverBackend], None]) -> None:
    """Register solver backends.

    Call ``register(backend)`` with an instance of
    `sparsify.core.solvers.SolverBackend`; its ``name`` is the name users pass
    (``solver="clarabel"``).
    """


@hookspec
def register_estimators(
    register: Callable[..., None],
) -> None:
    """Register the scikit-learn estimators that fit formulations.

    Call ``register(estimator_cls)`` for an estimator whose ``formulation_class``
    names its formulation, or ``register(estimator_cls, formulation="name",
    params={...})`` for one that serves a registered formulation when given
    ``params`` (``SparseKFD`` fits "skfd" with ``method="rayleigh"``). The command
    line's ``--formulation`` and the conformance suite use it; a formulation
    without one gets the estimator of its `Formulation.task`
    (`sparsify.core.estimator.estimator_for`).
    """


#: Every hook sparsify calls, in the order the registry calls them.
HOOKS = ("register_formulations", "register_kernels", "register_solvers", "register_estimators")
