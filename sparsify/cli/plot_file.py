"""The ``--plot`` file of ``sparsify fit``: its image format checked early, the plot rendered.

The figure itself is `sparsify.cli.plotting.plot_decision_boundary` (a
classifier) or `sparsify.cli.plotting.plot_regression` (a regressor); this
module checks before the fit that matplotlib and the image format are
available, and renders the figure to bytes that `sparsify.cli.files` writes
with the other outputs.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sparsify.cli.data import _Data


def _plot_format(path: Path) -> str:
    """Image format of ``path`` by suffix; fails if matplotlib or the format is missing."""
    from sparsify.cli.plotting import require_matplotlib

    try:
        require_matplotlib()
    except ImportError as exc:
        raise ValueError(str(exc)) from exc
    from matplotlib.backend_bases import FigureCanvasBase

    fmt = path.suffix.lower().lstrip(".") or "png"
    supported = FigureCanvasBase.get_supported_filetypes()
    if fmt not in supported:
        raise ValueError(f"--plot {path}: unknown image format {fmt!r}; use one of "
                         f"{sorted(supported)}, e.g. .png.")
    return fmt


def _render_plot(estimator: Any, data: _Data, path: Path, result: dict[str, Any]) -> bytes:
    import matplotlib.pyplot as plt
    from sklearn.base import is_regressor

    from sparsify.cli.plotting import plot_decision_boundary, plot_regression

    title = f"{result['formulation']}, {result['kernel']} kernel: Nz = {result['n_expansion']}"
    if is_regressor(estimator):
        if result.get("test_rmse") is not None:
            title += f", test RMSE {result['test_rmse']:.3g}"
        fig = plot_regression(estimator, data.X, data.y, X_test=data.X_test, y_test=data.y_test,
                              title=title)
    else:
        if result["test_error"] is not None:
            title += f", test error {result['test_error']:.3f}"
        fig = plot_decision_boundary(estimator, data.X, data.y, X_test=data.X_test,
                                     y_test=data.y_test, title=title)
    buf = io.BytesIO()
    try:
        fig.savefig(buf, format=_plot_format(path), dpi=120)
    finally:
        plt.close(fig)
    return buf.getvalue()
