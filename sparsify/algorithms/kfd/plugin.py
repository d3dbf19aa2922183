"""The plugin of the sparse kernel Fisher discriminants (convex and Rayleigh
quotient): their formulations and their estimator, registered with sparsify.

The entry point names this module rather than the formulation's, so that the
formulation need not import its estimator (which names the formulation's class).
"""

from __future__ import annotations

from collections.abc import Callable

from sparsify.algorithms.kfd.estimator import SparseKFD
from sparsify.algorithms.kfd.formulation import KFD, SKFD
from sparsify.core.formulation import Formulation
from sparsify.plugins.hookspecs import hookimpl


@hookimpl
def register_formulations(register: Callable[[type[Formulation]], None]) -> None:
    register(KFD)
    register(SKFD)


@hookimpl
def register_estimators(register: Callable[..., None]) -> None:
    register(SparseKFD, formulation="kfd", params={"method": "convex"})
    register(SparseKFD, formulation="skfd", params={"method": "rayleigh"})
