"""sparsify: sparse kernel machines by design.

The direct sparse method of Wu, Schölkopf & Bakır (JMLR 2006) for any convex
kernel learning algorithm declared as a cvxpy problem: fix the number of
expansion vectors (XVs) Nz, and optimise their places with L-BFGS using the
gradient of the marginal function W(Z) from the dual solution (Lemma 1).

The public names below are imported on first use (PEP 562), so ``import
sparsify`` and ``sparsify --version`` do not pay for cvxpy,
scikit-learn or matplotlib; ``from sparsify import SparseSVC`` works as usual.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# Public name -> the module that defines it.
_LAZY = {
    "SparseKFD": "sparsify.discriminant",
    "SparseSVC": "sparsify.estimators",
    "expansion_coefficients": "sparsify.expansion",
    "Declaration": "sparsify.formulation",
    "Formulation": "sparsify.formulation",
    "Outputs": "sparsify.formulation",
    "hookimpl": "sparsify.hookspecs",
    "ImportVectorMachine": "sparsify.ivm",
    "RBF": "sparsify.kernels",
    "Kernel": "sparsify.kernels",
    "Linear": "sparsify.kernels",
    "Polynomial": "sparsify.kernels",
    "SumKernel": "sparsify.kernels",
    "KernelMatchingReduction": "sparsify.kmra",
    "SparseKernelLogisticRegression": "sparsify.logistic",
    "ManifoldKernel": "sparsify.manifold",
    "ConicMarginal": "sparsify.conic",
    "CvxpyMarginal": "sparsify.marginal",
    "Evaluation": "sparsify.marginal",
    "Marginal": "sparsify.marginal",
    "NonDifferentiableWarning": "sparsify.marginal",
    "SparseOneClassSVM": "sparsify.outlier",
    "register_plugin": "sparsify.plugins",
    "ReducedSetSVC": "sparsify.reduced_set",
    "ReducedSVC": "sparsify.rsvm",
    "RVMClassifier": "sparsify.rvm",
    "SemiSupervisedSVC": "sparsify.semi_supervised",
    "SolverError": "sparsify.errors",
    "TaylorGaussianFeatures": "sparsify.taylor",
    "TaylorRBF": "sparsify.taylor",
}

__all__ = [
    "RBF",
    "ConicMarginal",
    "CvxpyMarginal",
    "Declaration",
    "Evaluation",
    "Formulation",
    "ImportVectorMachine",
    "Kernel",
    "KernelMatchingReduction",
    "Linear",
    "ManifoldKernel",
    "Marginal",
    "NonDifferentiableWarning",
    "Outputs",
    "Polynomial",
    "RVMClassifier",
    "ReducedSVC",
    "ReducedSetSVC",
    "SemiSupervisedSVC",
    "SolverError",
    "SparseKFD",
    "SparseKernelLogisticRegression",
    "SparseOneClassSVM",
    "SparseSVC",
    "SumKernel",
    "TaylorGaussianFeatures",
    "TaylorRBF",
    "__version__",
    "expansion_coefficients",
    "hookimpl",
    "register_plugin",
]


def __getattr__(name: str) -> Any:
    """Import a public name, or a submodule (``sparsify.plugins``), on first access."""
    module = _LAZY.get(name)
    if module is not None:
        value = getattr(importlib.import_module(module), name)
        globals()[name] = value  # later look-ups skip this function
        return value
    if not name.startswith("_"):
        # `import sparsify; sparsify.plugins.get_registry()` worked when every submodule
        # was imported eagerly; keep it working.
        try:
            return importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"{__name__}.{name}":  # the submodule exists but an import in it failed
                raise
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


if TYPE_CHECKING:  # static analysers and IDEs see the eager imports
    from sparsify.conic import ConicMarginal
    from sparsify.discriminant import SparseKFD
    from sparsify.errors import SolverError
    from sparsify.estimators import SparseSVC
    from sparsify.expansion import expansion_coefficients
    from sparsify.formulation import Declaration, Formulation, Outputs
    from sparsify.hookspecs import hookimpl
    from sparsify.ivm import ImportVectorMachine
    from sparsify.kernels import RBF, Kernel, Linear, Polynomial, SumKernel
    from sparsify.kmra import KernelMatchingReduction
    from sparsify.logistic import SparseKernelLogisticRegression
    from sparsify.manifold import ManifoldKernel
    from sparsify.marginal import CvxpyMarginal, Evaluation, Marginal, NonDifferentiableWarning
    from sparsify.outlier import SparseOneClassSVM
    from sparsify.plugins import register_plugin
    from sparsify.reduced_set import ReducedSetSVC
    from sparsify.rsvm import ReducedSVC
    from sparsify.rvm import RVMClassifier
    from sparsify.semi_supervised import SemiSupervisedSVC
    from sparsify.taylor import TaylorGaussianFeatures, TaylorRBF
