"""The engine's compiled solvers: the active-set moves and dual coordinate descent, in C.

Each step of either is a few loops over at most N rows, which numpy would spend
in call overhead; they are compiled at install (``_active_set.c``,
``_dual_cd.c``, sharing ``_buffers.h``) and release the GIL. This module is
their one import site, so that a checkout used without building them fails
with a message that says what to do.

- ``active_set(B, y, K, K_inv, L, C, alpha, upper, free, beta, tol, max_iter, v0,
  cy0, targets)``: the primal active-set moves of
  `sparsify.svm_dual.solvers.warm_active_set`; returns (settled, b, the moves the
  kept Cholesky factor solved) and updates ``alpha``, ``upper``, ``free`` and
  ``beta``.
- ``dual_cd(B, y, C, alpha, u, b, rho, eps, max_epochs, seed, targets)``: dual
  coordinate descent with the free bias by proximal steps and shrinking (the
  LIBLINEAR method); returns (converged, b, passes, steps).
- ``local_cd``: the same passes on one row block, for the distributed SVM.
"""

from __future__ import annotations

try:
    from sparsify.svm_dual._active_set import active_set
    from sparsify.svm_dual._dual_cd import dual_cd, local_cd
except ImportError as error:  # a source tree used without installing it
    raise ImportError(
        "The SVM dual engine's compiled part, sparsify.svm_dual._active_set or _dual_cd, is "
        "missing: install sparsify from its checkout with `pip install .` (or `pip install "
        "-e .`), which builds it with the C compiler.") from error

__all__ = ["active_set", "dual_cd", "local_cd"]
