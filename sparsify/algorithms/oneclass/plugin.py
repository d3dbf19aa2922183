"""The plugin of the sparse one-class SVM: its formulation and its
estimator, registered with sparsify.

The entry point names this module rather than the formulation's, so that the
formulation need not import its estimator (which names the formulation's class).
"""

from __future__ import annotations

from collections.abc import Callable

from sparsify.algorithms.oneclass.estimator import SparseOneClassSVM
from sparsify.algorithms.oneclass.formulation import OneClass
from sparsify.core.formulation import Formulation
from sparsify.plugins.hookspecs import hookimpl


@hookimpl
def register_formulations(register: Callable[[type[Formulation]], None]) -> None:
    register(OneClass)


@hookimpl
def register_estimators(register: Callable[..., None]) -> None:
    register(SparseOneClassSVM, formulation="oneclass")
