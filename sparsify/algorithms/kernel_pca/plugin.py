"""The plugin of sparse kernel PCA: its formulation and its estimator, registered with sparsify.

The entry point names this module rather than the formulation's, so that the
formulation need not import its estimator (which names the formulation's class).
"""

from __future__ import annotations

from collections.abc import Callable

from sparsify.algorithms.kernel_pca.estimator import SparseKernelPCA
from sparsify.algorithms.kernel_pca.formulation import KernelPCA
from sparsify.core.formulation import Formulation
from sparsify.plugins.hookspecs import hookimpl


@hookimpl
def register_formulations(register: Callable[[type[Formulation]], None]) -> None:
    register(KernelPCA)


@hookimpl
def register_estimators(register: Callable[..., None]) -> None:
    register(SparseKernelPCA, formulation="kernel_pca")
