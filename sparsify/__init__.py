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
    "SparseKFD": "sparsify.algorithms.kfd.estimator",
    "SparseSVC": "sparsify.algorithms.svm.estimator",
    "SparseKernelClassifier": "sparsify.core.classifier",
    "SparseKernelRegressor": "sparsify.core.regressor",
    "SparseKernelRidge": "sparsify.algorithms.kernel_ridge.estimator",
    "SparseSVR": "sparsify.algorithms.svr.estimator",
    "SparseSearchCV": "sparsify.model_selection",
    "SparseKernelPCA": "sparsify.algorithms.kernel_pca.estimator",
    "SparseOutlierDetector": "sparsify.core.outlier",
    "SparseOrdinalRegressor": "sparsify.core.ordinal",
    "SparseKernelRanker": "sparsify.core.ranking",
    "SparseKernelTransformer": "sparsify.core.transformer",
    "expansion_coefficients": "sparsify.core.expansion",
    "Declaration": "sparsify.core.formulation",
    "Formulation": "sparsify.core.formulation",
    "Outputs": "sparsify.core.formulation",
    "hookimpl": "sparsify.plugins.hookspecs",
    "ImportVectorMachine": "sparsify.baselines.ivm",
    "RBF": "sparsify.kernels",
    "Kernel": "sparsify.kernels",
    "Linear": "sparsify.kernels",
    "Polynomial": "sparsify.kernels",
    "SumKernel": "sparsify.kernels",
    "KernelMatchingReduction": "sparsify.baselines.kmra",
    "SparseKernelLogisticRegression": "sparsify.algorithms.klr.estimator",
    "ManifoldKernel": "sparsify.kernels.manifold",
    "ConicMarginal": "sparsify.core.conic",
    "CvxpyMarginal": "sparsify.core.declared",
    "Evaluation": "sparsify.core.marginal",
    "Marginal": "sparsify.core.marginal",
    "NonDifferentiableWarning": "sparsify.core.marginal",
    "SparseOneClassSVM": "sparsify.algorithms.oneclass.estimator",
    "register_plugin": "sparsify.plugins.registry",
    "ReducedSetSVC": "sparsify.baselines.reduced_set",
    "ReducedSVC": "sparsify.baselines.rsvm",
    "RVMClassifier": "sparsify.baselines.rvm",
    "SemiSupervisedSVC": "sparsify.algorithms.s3vm.estimator",
    "SolverError": "sparsify.core.errors",
    "TaylorGaussianFeatures": "sparsify.kernels.taylor",
    "TaylorRBF": "sparsify.kernels.taylor_rbf",
    "to_onnx": "sparsify.onnx.convert",
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
    "SparseKernelClassifier",
    "SparseKernelLogisticRegression",
    "SparseKernelPCA",
    "SparseKernelRanker",
    "SparseKernelRegressor",
    "SparseKernelRidge",
    "SparseKernelTransformer",
    "SparseOneClassSVM",
    "SparseOrdinalRegressor",
    "SparseOutlierDetector",
    "SparseSVC",
    "SparseSVR",
    "SparseSearchCV",
    "SumKernel",
    "TaylorGaussianFeatures",
    "TaylorRBF",
    "__version__",
    "expansion_coefficients",
    "hookimpl",
    "register_plugin",
    "to_onnx",
]


def __getattr__(name: str) -> Any:
    """Import a public name, or a submodule (``sparsify.plugins.registry``), on first access."""
    module = _LAZY.get(name)
    if module is not None:
        value = getattr(importlib.import_module(module), name)
        globals()[name] = value  # later look-ups skip this function
        return value
    if not name.startswith("_"):
        # `import sparsify; sparsify.plugins.registry.get_registry()` works as if every
        # submodule were imported eagerly
        try:
            return importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"{__name__}.{name}":  # the submodule exists but an import in it failed
                raise
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


if TYPE_CHECKING:  # static analysers and IDEs see the eager imports
    from sparsify.algorithms.kernel_pca.estimator import SparseKernelPCA
    from sparsify.algorithms.kernel_ridge.estimator import SparseKernelRidge
    from sparsify.algorithms.kfd.estimator import SparseKFD
    from sparsify.algorithms.klr.estimator import SparseKernelLogisticRegression
    from sparsify.algorithms.oneclass.estimator import SparseOneClassSVM
    from sparsify.algorithms.s3vm.estimator import SemiSupervisedSVC
    from sparsify.algorithms.svm.estimator import SparseSVC
    from sparsify.algorithms.svr.estimator import SparseSVR
    from sparsify.baselines.ivm import ImportVectorMachine
    from sparsify.baselines.kmra import KernelMatchingReduction
    from sparsify.baselines.reduced_set import ReducedSetSVC
    from sparsify.baselines.rsvm import ReducedSVC
    from sparsify.baselines.rvm import RVMClassifier
    from sparsify.core.classifier import SparseKernelClassifier
    from sparsify.core.conic import ConicMarginal
    from sparsify.core.declared import CvxpyMarginal
    from sparsify.core.errors import SolverError
    from sparsify.core.expansion import expansion_coefficients
    from sparsify.core.formulation import Declaration, Formulation, Outputs
    from sparsify.core.marginal import Evaluation, Marginal, NonDifferentiableWarning
    from sparsify.core.ordinal import SparseOrdinalRegressor
    from sparsify.core.outlier import SparseOutlierDetector
    from sparsify.core.ranking import SparseKernelRanker
    from sparsify.core.regressor import SparseKernelRegressor
    from sparsify.core.transformer import SparseKernelTransformer
    from sparsify.kernels import RBF, Kernel, Linear, Polynomial, SumKernel
    from sparsify.kernels.manifold import ManifoldKernel
    from sparsify.kernels.taylor import TaylorGaussianFeatures
    from sparsify.kernels.taylor_rbf import TaylorRBF
    from sparsify.model_selection import SparseSearchCV
    from sparsify.onnx.convert import to_onnx
    from sparsify.plugins.hookspecs import hookimpl
    from sparsify.plugins.registry import register_plugin
