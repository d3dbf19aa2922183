"""The plugin of the sparse large margin classifier (SVM): its formulation and its
estimator, registered with sparsify.

The entry point names this module rather than the formulation's, so that the
formulation need not import its estimator (which names the formulation's class).
"""

from __future__ import annotations

from collections.abc import Callable

from sparsify.algorithms.svm.estimator import SparseSVC
from sparsify.algorithms.svm.formulation import SVM
from sparsify.core.formulation import Formulation
from sparsify.plugins.hookspecs import hookimpl


@hookimpl
def register_formulations(register: Callable[[type[Formulation]], None]) -> None:
    register(SVM)


@hookimpl
def register_estimators(register: Callable[..., None]) -> None:
    register(SparseSVC, formulation="svm")
