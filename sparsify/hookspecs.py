"""The plugin contract: every hook sparsify calls, with its exact signature.

A plugin is a module (or object) with functions decorated by :data:`hookimpl`,
exposed through the ``sparsify`` entry-point group::

    [project.entry-points.sparsify]
    my_plugin = "my_package.my_module"

Each hook receives a ``register`` callable; call it once per thing the plugin
provides. The built-in formulations (``plugins/`` in the source tree, the
``sparsify_plugins`` package) use exactly this mechanism.
"""

from __future__ import annotations

from typing import Any

import pluggy

__all__ = ["hookimpl", "hookspec"]

hookspec = pluggy.HookspecMarker("sparsify")
hookimpl = pluggy.HookimplMarker("sparsify")


@hookspec
def register_formulations(register: Any) -> None:
    """Register convex kernel learning algorithms.

    Call ``register(cls)`` with a subclass of :class:`sparsify.Formulation`. The
    class attribute ``name`` is the name users pass (``formulation="svm"``).
    """


@hookspec
def register_kernels(register: Any) -> None:
    """Register kernels.

    Call ``register(cls)`` with a subclass of :class:`sparsify.kernels.Kernel`;
    its ``name`` is the name users pass (``kernel="rbf"``). The class must be
    constructible with keyword hyperparameters (``gamma``, ``degree``, ``coef0``)
    or none.
    """


@hookspec
def register_solvers(register: Any) -> None:
    """Register solver backends.

    Call ``register(backend)`` with an instance of
    :class:`sparsify.solvers.SolverBackend`; its ``name`` is the name users pass
    (``solver="clarabel"``).
    """
