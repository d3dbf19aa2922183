"""The built-in solver backends, one module each, registered like any plugin's.

`StructuredBackend` (the default for declared formulations: the linked problem's
structure, O(N·Nz²) per interior-point iteration), `ClarabelBackend`,
`ECOSBackend`, `OSQPBackend` and `SCSBackend` (general solvers, called directly
on the linked conic data). docs/solvers.md says how each was chosen.
"""

from __future__ import annotations

from collections.abc import Callable

from sparsify.core.backends.clarabel import ClarabelBackend
from sparsify.core.backends.ecos import ECOSBackend
from sparsify.core.backends.osqp import OSQPBackend
from sparsify.core.backends.scs import SCSBackend
from sparsify.core.backends.structured import StructuredBackend
from sparsify.core.solvers import SolverBackend
from sparsify.plugins.hookspecs import hookimpl

__all__ = ["ClarabelBackend", "ECOSBackend", "OSQPBackend", "SCSBackend", "StructuredBackend"]


@hookimpl
def register_solvers(register: Callable[[SolverBackend], None]) -> None:
    register(StructuredBackend("structured"))
    register(ClarabelBackend("clarabel"))
    # ECOS's own duals gave gradients off by up to 2e-5 (kernel ridge); refined by SCS from
    # its answer (sparsify.core.backends.scs.refine) within 1e-6 in the table, stated with a
    # margin for what it does not cover (nearly coinciding XVs: 1.0e-6 measured)
    register(ECOSBackend("ecos", gradient_accuracy=3e-6))
    register(OSQPBackend("osqp"))
    # SCS: first-order, so not in the auto chain; for large cone problems where an
    # interior point's factorisation would not fit
    register(SCSBackend("scs", gradient_accuracy=1e-5))
