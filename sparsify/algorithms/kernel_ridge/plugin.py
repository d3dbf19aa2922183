"""The plugin of sparse kernel ridge regression: its formulation and its
estimator, registered with sparsify.

The entry point names this module rather than the formulation's, so that the
formulation need not import its estimator (which names the formulation's class).
"""

from __future__ import annotations

from collections.abc import Callable

from sparsify.algorithms.kernel_ridge.estimator import SparseKernelRidge
from sparsify.algorithms.kernel_ridge.formulation import KernelRidge
from sparsify.core.formulation import Formulation
from sparsify.plugins.hookspecs import hookimpl


@hookimpl
def register_formulations(register: Callable[[type[Formulation]], None]) -> None:
    register(KernelRidge)


@hookimpl
def register_estimators(register: Callable[..., None]) -> None:
    register(SparseKernelRidge, formulation="kernel_ridge")
