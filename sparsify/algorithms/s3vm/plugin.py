"""The plugin of the semi-supervised SVM: its formulation and its
estimator, registered with sparsify.

The entry point names this module rather than the formulation's, so that the
formulation need not import its estimator (which names the formulation's class).
"""

from __future__ import annotations

from collections.abc import Callable

from sparsify.algorithms.s3vm.estimator import SemiSupervisedSVC
from sparsify.algorithms.s3vm.formulation import S3VM
from sparsify.core.formulation import Formulation
from sparsify.plugins.hookspecs import hookimpl


@hookimpl
def register_formulations(register: Callable[[type[Formulation]], None]) -> None:
    register(S3VM)


@hookimpl
def register_estimators(register: Callable[..., None]) -> None:
    register(SemiSupervisedSVC, formulation="s3vm", params={"unlabeled": 0})
