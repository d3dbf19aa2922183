"""sparsify: sparse kernel machines by design.

The direct sparse method of Wu, Schölkopf & Bakır (JMLR 2006) for any convex
kernel learning algorithm declared as a cvxpy problem: fix the number of
expansion vectors (XVs) Nz, and optimise their places with L-BFGS using the
gradient of the marginal function W(Z) from the dual solution (Lemma 1).
"""

from sparsify.discriminant import SparseKFD
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
from sparsify.solvers import SolverError
from sparsify.taylor import TaylorGaussianFeatures, TaylorRBF

__version__ = "0.1.0"

__all__ = [
    "RBF",
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
