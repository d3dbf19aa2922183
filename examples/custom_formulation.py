"""Declare a new kernel algorithm and get its sparse version: an L2-loss SVM.

The formulation is only its convex problem over the outputs f and ‖w‖²; sparsify adds
w = Σ β_j φ(z_j), derives ∇W(Z) from the duals, and serves it with an estimator. Here it
is registered at run time; a package would expose it through the ``sparsify`` entry-point
group instead (see the README).

    python examples/custom_formulation.py
"""

from __future__ import annotations

import sys

import cvxpy as cp

import sparsify
from sparsify import Declaration, Formulation, SparseKernelClassifier, hookimpl
from sparsify.core.gradcheck import check_gradient
from sparsify.datasets import load_banana


class L2SVM(Formulation):
    """Soft-margin SVM with the squared hinge loss."""

    name = "l2svm"

    def __init__(self, C: float = 1.0) -> None:
        self.C = C

    def declare(self, out):  # type: ignore[no-untyped-def]
        b = cp.Variable()
        loss = cp.sum_squares(cp.pos(1 - cp.multiply(out.y, out.f + b)))
        return Declaration(cp.Minimize(0.5 * out.norm_w2 + self.C * loss), [], intercept=b)


class SparseL2SVC(SparseKernelClassifier):
    """The shared parameters (n_expansion, kernel, ...) and L2SVM's C."""

    formulation_class = L2SVM


@hookimpl
def register_formulations(register):  # type: ignore[no-untyped-def]
    register(L2SVM)


@hookimpl
def register_estimators(register):  # type: ignore[no-untyped-def]
    register(SparseL2SVC)  # what `sparsify fit --formulation l2svm` trains


def main() -> None:
    if "l2svm" not in sparsify.plugins.registry.get_registry().names("formulation"):
        sparsify.register_plugin(sys.modules[__name__], name="l2svm_example")
    check = check_gradient("l2svm", "rbf", C=1.0)
    print(f"gradient check: relative error {check.rel_error:.1e} against central differences")
    X, y, X_test, y_test = load_banana()
    clf = SparseL2SVC(n_expansion=8, C=10.0, gamma=1.0, random_state=0).fit(X, y)
    print(f"sparse L2-SVM with 8 XVs: test error {1 - clf.score(X_test, y_test):.3f}")


if __name__ == "__main__":
    main()
