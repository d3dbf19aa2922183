"""Decision-boundary plots of a fitted sparse classifier on 2-D data.

matplotlib is an optional dependency (``pip install "sparsify[plot]"``): it is
imported only inside the functions here, with the non-interactive "Agg"
backend, so importing `sparsify` never needs it and plots work on a
machine without a display.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["plot_decision_boundary", "require_matplotlib"]

_INSTALL_HINT = 'matplotlib is needed for plots; install it with: pip install "sparsify[plot]"'


def require_matplotlib() -> Any:
    """Import matplotlib with the "Agg" backend and return `matplotlib.pyplot`.

    Returns
    -------
    module
        ``matplotlib.pyplot``.

    Raises
    ------
    ImportError
        If matplotlib is not installed; the message says how to install it.
    """
    try:
        import matplotlib
    except ImportError as exc:
        raise ImportError(_INSTALL_HINT) from exc
    # Agg renders to files only: no display needed, and it is safe in tests and servers.
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_decision_boundary(
    clf: Any,
    X: ArrayLike,
    y: ArrayLike,
    *,
    X_test: ArrayLike | None = None,
    y_test: ArrayLike | None = None,
    resolution: int = 200,
    title: str | None = None,
) -> Figure:
    """Plot the decision regions, training points and expansion vectors of a 2-D classifier.

    Parameters
    ----------
    clf : fitted classifier
        A fitted `sparsify.SparseSVC` (or any classifier with
        ``decision_function``, ``classes_`` and, optionally,
        ``expansion_vectors_``) trained on 2 features.
    X : array-like of shape (n_samples, 2)
        Training inputs, drawn as filled markers.
    y : array-like of shape (n_samples,)
        Their labels.
    X_test, y_test : array-like, optional
        Test points, drawn small and faint behind the training points.
    resolution : int, default=200
        Grid points per axis for the decision function.
    title : str, optional
        Figure title.

    Returns
    -------
    matplotlib.figure.Figure
        The figure (not saved; call ``fig.savefig``).

    Raises
    ------
    ValueError
        If the data do not have exactly 2 features.
    ImportError
        If matplotlib is not installed.

    Examples
    --------
    >>> from sparsify import SparseSVC
    >>> from sparsify.datasets import load_banana
    >>> X, y, _, _ = load_banana()
    >>> clf = SparseSVC(n_expansion=4, max_iter=3, random_state=0).fit(X, y)
    >>> fig = plot_decision_boundary(clf, X, y)  # doctest: +SKIP
    >>> fig.savefig("banana.png")  # doctest: +SKIP
    """
    X = np.asarray(X, dtype=float)
    y = np.asarray(y)
    if X.ndim != 2 or X.shape[1] != 2:
        n_features = X.shape[1] if X.ndim == 2 else X.ndim
        raise ValueError(
            f"A decision-boundary plot needs data with 2 features; got {n_features}."
        )
    if resolution < 2:
        raise ValueError(f"resolution must be at least 2; got {resolution}.")
    plt = require_matplotlib()

    shown = [X] if X_test is None else [X, np.asarray(X_test, dtype=float)]
    xvs = getattr(clf, "expansion_vectors_", None)
    if xvs is not None:
        shown.append(np.asarray(xvs, dtype=float))
    everything = np.vstack(shown)
    lo, hi = everything.min(0), everything.max(0)
    pad = 0.05 * np.where(hi > lo, hi - lo, 1.0)
    g0 = np.linspace(lo[0] - pad[0], hi[0] + pad[0], resolution)
    g1 = np.linspace(lo[1] - pad[1], hi[1] + pad[1], resolution)
    G0, G1 = np.meshgrid(g0, g1)
    grid = np.column_stack([G0.ravel(), G1.ravel()])

    fig, ax = plt.subplots(figsize=(6.4, 5.6))
    classes = np.asarray(clf.classes_)
    scores = clf.decision_function(grid)
    if scores.ndim == 1:
        S = scores.reshape(G0.shape)
        ax.contourf(G0, G1, S, levels=[-np.inf, 0.0, np.inf], colors=["#cfe0f5", "#f7d6cf"])
        # The margin lines ±1 of an SVM-like classifier, and the boundary at 0.
        ax.contour(G0, G1, S, levels=[-1.0, 0.0, 1.0], colors="k",
                   linestyles=["--", "-", "--"], linewidths=[0.8, 1.5, 0.8])
    else:
        regions = scores.argmax(1).reshape(G0.shape)
        ax.contourf(G0, G1, regions, levels=np.arange(len(classes) + 1) - 0.5,
                    cmap="Pastel1", alpha=0.8)
        ax.contour(G0, G1, regions, levels=np.arange(len(classes)) + 0.5, colors="k",
                   linewidths=1.0)

    colors = plt.get_cmap("tab10")
    for k, label in enumerate(classes):
        if X_test is not None and y_test is not None:
            Xt, yt = np.asarray(X_test, dtype=float), np.asarray(y_test)
            ax.scatter(*Xt[yt == label].T, s=4, color=colors(k % 10), alpha=0.15,
                       linewidths=0)
        ax.scatter(*X[y == label].T, s=14, color=colors(k % 10), edgecolors="k",
                   linewidths=0.3, label=f"class {label}")
    if xvs is not None:
        ax.scatter(*np.asarray(xvs).T, s=160, marker="*", color="gold", edgecolors="k",
                   linewidths=0.8, label=f"expansion vectors ({len(xvs)})", zorder=5)
    ax.set_xlim(g0[0], g0[-1])
    ax.set_ylim(g1[0], g1[-1])
    ax.set_xlabel("feature 1")
    ax.set_ylabel("feature 2")
    ax.legend(loc="best", fontsize="small", framealpha=0.85)
    if title:
        ax.set_title(title)
    fig.tight_layout()
    return fig
