"""The plugin of sparse kernel logistic regression: its formulation and its
estimator, registered with sparsify.

The entry point names this module rather than the formulation's, so that the
formulation need not import its estimator (which names the formulation's class).
"""

from __future__ import annotations

from collections.abc import Callable

from sparsify.algorithms.klr.estimator import SparseKernelLogisticRegression
from sparsify.algorithms.klr.formulation import KLR
from sparsify.core.formulation import Formulation
from sparsify.plugins.hookspecs import hookimpl


@hookimpl
def register_formulations(register: Callable[[type[Formulation]], None]) -> None:
    register(KLR)


@hookimpl
def register_estimators(register: Callable[..., None]) -> None:
    register(SparseKernelLogisticRegression, formulation="klr")
