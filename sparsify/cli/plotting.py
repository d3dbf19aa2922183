"""Plots of a fitted sparse kernel machine: a classifier's decision boundary on 2-D data,
a regressor's prediction on 1-D (a curve) or 2-D (a filled contour) data.

matplotlib is an optional dependency (``pip install matplotlib``): it is
imported only inside the functions here, with the non-interactive "Agg"
backend, so importing `sparsify` never needs it and plots work on a
machine without a display.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

from sparsify.cli.output import _label

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["plot_decision_boundary", "plot_regression", "require_matplotlib"]

_INSTALL_HINT = ("matplotlib is needed for plots; install it with: pip install matplotlib (in "
                 'the sparsify checkout, pip install ".[plot]" does the same)')


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
                   linewidths=0.3, label=f"class {_label(label)}")
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


def _grid_axis(values: list[np.ndarray], column: int, resolution: int) -> np.ndarray:
    """``resolution`` points over every value of one column, padded by 5% on each side."""
    both = np.concatenate([v[:, column] for v in values])
    lo, hi = float(both.min()), float(both.max())
    pad = 0.05 * (hi - lo if hi > lo else 1.0)
    return np.linspace(lo - pad, hi + pad, resolution)


def plot_regression(
    reg: Any,
    X: ArrayLike,
    y: ArrayLike,
    *,
    X_test: ArrayLike | None = None,
    y_test: ArrayLike | None = None,
    resolution: int = 200,
    title: str | None = None,
) -> Figure:
    """Plot a fitted regressor's prediction with its training points and expansion vectors.

    On 1-D inputs: the training points, the fitted curve and the XVs marked on it
    (at their predicted values). On 2-D inputs: a filled contour of the
    prediction, the training points coloured by their targets on the same colour
    scale, and the XVs.

    Parameters
    ----------
    reg : fitted regressor
        A fitted `sparsify.SparseKernelRidge`, or any regressor with ``predict``
        (and, optionally, ``expansion_vectors_``) trained on 1 or 2 features.
    X : array-like of shape (n_samples, 1) or (n_samples, 2)
        Training inputs, drawn as filled markers.
    y : array-like of shape (n_samples,)
        Their real targets.
    X_test, y_test : array-like, optional
        Test points, drawn small and faint behind the training points.
    resolution : int, default=200
        Grid points (per axis) at which the prediction is drawn.
    title : str, optional
        Figure title.

    Returns
    -------
    matplotlib.figure.Figure
        The figure (not saved; call ``fig.savefig``).

    Raises
    ------
    ValueError
        If the data do not have 1 or 2 features.
    ImportError
        If matplotlib is not installed.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsify import SparseKernelRidge
    >>> X = np.linspace(-3, 3, 60)[:, None]
    >>> reg = SparseKernelRidge(n_expansion=5, alpha=0.1, random_state=0).fit(X, np.sin(X[:, 0]))
    >>> fig = plot_regression(reg, X, np.sin(X[:, 0]))  # doctest: +SKIP
    >>> fig.savefig("sine.png")  # doctest: +SKIP
    """
    X = np.asarray(X, dtype=float)
    y = np.asarray(y, dtype=float)
    if X.ndim != 2 or X.shape[1] not in (1, 2):
        n_features = X.shape[1] if X.ndim == 2 else X.ndim
        raise ValueError(f"A regression plot needs data with 1 or 2 features; got {n_features}.")
    if resolution < 2:
        raise ValueError(f"resolution must be at least 2; got {resolution}.")
    plt = require_matplotlib()

    test = None
    if X_test is not None and y_test is not None:
        test = np.asarray(X_test, dtype=float), np.asarray(y_test, dtype=float)
    xvs = getattr(reg, "expansion_vectors_", None)
    xvs = None if xvs is None else np.asarray(xvs, dtype=float)
    shown = [X] + ([] if test is None else [test[0]]) + ([] if xvs is None else [xvs])
    n_xvs = 0 if xvs is None else len(xvs)
    xv_style = dict(s=160, marker="*", color="gold", edgecolors="k", linewidths=0.8,
                    label=f"expansion vectors ({n_xvs})", zorder=5)

    fig, ax = plt.subplots(figsize=(6.4, 5.6))
    if X.shape[1] == 1:
        g = _grid_axis(shown, 0, resolution)
        if test is not None:
            ax.scatter(test[0][:, 0], test[1], s=4, color="tab:gray", alpha=0.3, linewidths=0,
                       label="test points")
        ax.scatter(X[:, 0], y, s=14, color="tab:blue", edgecolors="k", linewidths=0.3,
                   label="training points")
        ax.plot(g, reg.predict(g[:, None]), color="tab:red", linewidth=1.8, label="prediction")
        if xvs is not None and n_xvs:
            ax.scatter(xvs[:, 0], reg.predict(xvs), **xv_style)
        ax.set_xlim(g[0], g[-1])
        ax.set_xlabel("feature 1")
        ax.set_ylabel("target")
    else:
        g0, g1 = _grid_axis(shown, 0, resolution), _grid_axis(shown, 1, resolution)
        G0, G1 = np.meshgrid(g0, g1)
        P = reg.predict(np.column_stack([G0.ravel(), G1.ravel()])).reshape(G0.shape)
        targets = [y] + ([] if test is None else [test[1]])
        lo = min(float(P.min()), *(float(t.min()) for t in targets if len(t)))
        hi = max(float(P.max()), *(float(t.max()) for t in targets if len(t)))
        if hi <= lo:  # a constant prediction and targets: any scale around the value
            lo, hi = lo - 0.5, hi + 0.5
        levels = np.linspace(lo, hi, 21)
        filled = ax.contourf(G0, G1, P, levels=levels, cmap="viridis", alpha=0.85)
        from matplotlib.ticker import MaxNLocator

        fig.colorbar(filled, ax=ax, label="prediction (points: target)", ticks=MaxNLocator(8))
        scale = dict(cmap="viridis", vmin=lo, vmax=hi)
        if test is not None:
            ax.scatter(*test[0].T, c=test[1], s=4, alpha=0.3, linewidths=0, **scale)
        ax.scatter(*X.T, c=y, s=18, edgecolors="k", linewidths=0.4, label="training points",
                   **scale)
        if xvs is not None and n_xvs:
            ax.scatter(*xvs.T, **xv_style)
        ax.set_xlim(g0[0], g0[-1])
        ax.set_ylim(g1[0], g1[-1])
        ax.set_xlabel("feature 1")
        ax.set_ylabel("feature 2")
    ax.legend(loc="best", fontsize="small", framealpha=0.85)
    if title:
        ax.set_title(title)
    fig.tight_layout()
    return fig
