"""The SVM dual engine: exact, warm-started solvers of SLMC's inner problem, shared.

For fixed XVs the inner problem of the hinge-loss SVM (paper §3.4) is a linear
SVM with a free bias on Nz whitened features; its dual is a box-constrained QP
with one equality constraint and a Hessian of rank Nz. This package solves it
exactly at each W(Z) evaluation, warm-started from the last one, and gives
W(Z) and ∇W(Z) by Lemma 1 (`SVMDualMarginal`). The same dual with a margin
target per row serves other problems, which use the engine through the public
interface below:

- the SVM (`sparsify.algorithms.svm`) creates `SVMDualMarginal`, and its
  squared hinge subclasses it (Keerthi and DeCoste's finite Newton method on
  the same rows);
- the ε-SVR (`sparsify.algorithms.svr`) subclasses it with two rows per point;
- the semi-supervised SVM (`sparsify.algorithms.s3vm`) creates it with
  per-point costs;
- the distributed SVM and the KMRA baseline call its solvers directly
  (`warm_active_set`, `polish_affordable`, and the compiled `active_set`,
  `dual_cd`, `local_cd`).

A package of its own, beside `sparsify.core` rather than under
`sparsify.algorithms`: it is no algorithm (no formulation, no estimator), it
serves three of them and a baseline, and it depends on the core and the
kernels only, so every algorithm can import it without importing another
algorithm. The core, which never knows a formulation's problem, does not
import it.

Modules: `sparsify.svm_dual.marginal` (`SVMDualMarginal`, the stateful
evaluation), `sparsify.svm_dual.solvers` (the active-set polish and the
interior point), `sparsify.svm_dual.smoothed` (the smoothed hinge's Newton
path), `sparsify.svm_dual.compiled` (the solvers in C).
"""

from sparsify.svm_dual.compiled import active_set, dual_cd, local_cd
from sparsify.svm_dual.marginal import WORKING_BAND, SVMDualMarginal
from sparsify.svm_dual.smoothed import hinge_partition, hinge_pieces, smoothed_hinge_path
from sparsify.svm_dual.solvers import Stalled, polish_affordable, warm_active_set

__all__ = [
    "WORKING_BAND",
    "SVMDualMarginal",
    "Stalled",
    "active_set",
    "dual_cd",
    "hinge_partition",
    "hinge_pieces",
    "local_cd",
    "polish_affordable",
    "smoothed_hinge_path",
    "warm_active_set",
]
