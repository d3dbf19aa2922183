"""The label search of the semi-supervised SVM: the Lp-MKL-S3VM paper's Algorithms 1 and 2.

`search_labels` runs Algorithm 2 on a solver engine (`sparsify.algorithms.s3vm.engines`):
uniform kernel weights θ, a supervised (MKL) SVM on the labeled points
(`supervised_start`), temporary labels for the unlabeled points by ranking its
decision values with the balance ratio r, then f-steps at fixed θ alternated
with the closed-form Lp-norm θ-step (`sparsify.algorithms.s3vm.mkl.alternate`).
An f-step is Algorithm 1 (`switching_f_step`): C* annealed from 10⁻⁵·C* to
C* ×10 per stage (`annealing_stages`), each stage a convex solve followed by
rounds of pairwise label switching (`switch_labels`) and re-solves; or, with
``optimizer="smooth-qn"``, the smooth quasi-Newton stages
(`sparsify.algorithms.s3vm.smooth.smooth_f_step`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from sparsify.algorithms.s3vm.engines import _Dense, _Progress, _Sparse, _State
from sparsify.algorithms.s3vm.labels import ranked_labels, switch_labels
from sparsify.algorithms.s3vm.mkl import alternate, combined_kernel, uniform_weights
from sparsify.algorithms.s3vm.smooth import smooth_f_step
from sparsify.core.formulation import Formulation
from sparsify.kernels import Kernel

__all__ = ["Search", "SearchSettings", "annealing_stages", "search_labels", "supervised_start",
           "switching_f_step"]

Array = NDArray[np.float64]


def annealing_stages(c_final: float, annealed: bool = True) -> list[float]:
    """The C* of each stage: 10⁻⁵·C* to C*, ×10 per stage; only C* when not ``annealed``.

    Examples
    --------
    >>> [f"{c:.0e}" for c in annealing_stages(1.0)]
    ['1e-05', '1e-04', '1e-03', '1e-02', '1e-01', '1e+00']
    """
    return [c_final * 10.0 ** (k - 5) for k in range(6)] if annealed else [c_final]


@dataclass(frozen=True)
class SearchSettings:
    """What the label search needs of the estimator: C, the convex stage's formulation, the
    switching and MKL limits, and the smooth stages' L-BFGS budget."""

    C: float
    formulation: Callable[[float, NDArray[np.bool_]], Formulation]
    solver_tol: float
    p: float
    mkl_max_iter: int
    mkl_tol: float
    max_switch_rounds: int
    max_iter: int


@dataclass
class Search:
    """The outcome of `search_labels`: θ, the final convex solve, all labels, θ-steps taken."""

    theta: Array
    state: _State
    labels: Array
    n_mkl_iter: int


def supervised_start(
    settings: SearchSettings, kernels: list[Kernel], X: Array, lab_idx: NDArray[np.intp],
    unl_idx: NDArray[np.intp], y_lab: Array, theta: Array,
) -> tuple[Array, Array]:
    """θ and decision values on the unlabeled points of a (MKL) SVM on the labeled points."""
    XL = X[lab_idx]
    grams = [k(XL, XL) for k in kernels]
    form = settings.formulation(settings.C, np.ones(len(lab_idx), dtype=bool))
    sol: list[Any] = []

    def step(th: Array, iteration: int) -> Array:
        K = sum(t * G for t, G in zip(th, grams, strict=True))
        sol[:] = [form.solve_precomputed(K, y_lab, settings.solver_tol)]
        beta = sol[0].coef
        return np.array([t * t * float(beta @ G @ beta)
                         for t, G in zip(th, grams, strict=True)])

    if len(kernels) > 1 and settings.mkl_max_iter > 0:
        theta = alternate(step, len(kernels), settings.p, theta0=theta,
                          max_iter=settings.mkl_max_iter, tol=settings.mkl_tol).theta
    else:
        step(theta, 0)
    beta, b = sol[0].coef, sol[0].intercept
    sv = np.flatnonzero(beta)
    kernel = combined_kernel(kernels, theta)
    scores = (kernel(X[unl_idx], XL[sv]) @ beta[sv] + b) if len(sv) else np.full(
        len(unl_idx), b)
    return theta, scores


def switching_f_step(settings: SearchSettings, engine: _Dense | _Sparse, theta: Array, y: Array,
                     unl_idx: NDArray[np.intp], stages: list[float], progress: _Progress,
                     move: bool = True) -> _State:
    """Algorithm 1 at fixed θ: per stage, a convex solve and label switching.

    ``y`` holds all labels (the temporary ones switched in place);
    ``move=False`` keeps the sparse version's XVs where they are.
    """
    state = None
    for s, c_star in enumerate(stages):
        last = s == len(stages) - 1
        # sparse: in the last stage move the XVs again after switching, until
        # no label switches (three passes at most)
        passes = 3 if (last and move and isinstance(engine, _Sparse)) else 1
        for _ in range(passes):
            state = progress.solved(engine.solve(theta, y, c_star, move=move))
            switched = 0
            for _ in range(settings.max_switch_rounds if len(unl_idx) else 0):
                k = switch_labels(y, state.outputs, unl_idx)
                if not k:
                    break
                switched += k
                state = progress.solved(engine.solve(theta, y, c_star, move=False))
            progress.n_switches += switched
            progress.log(f"C* = {c_star:.3g}: objective {state.value:.6g}, {switched} pairs "
                         "switched")
            if not switched:
                break
    assert state is not None
    return state


def search_labels(settings: SearchSettings, engine: _Dense | _Sparse, kernels: list[Kernel],
                  X: Array, labeled: NDArray[np.bool_], y_lab: Array, r: float,
                  c_final: float, smooth: bool, progress: _Progress) -> Search:
    """Algorithm 2: the temporary labels, the annealed f-steps and the Lp-norm θ-steps.

    ``smooth`` runs `smooth_f_step` instead of `switching_f_step`; its labels
    are then the signs of the final outputs.
    """
    M, p = len(kernels), float(settings.p)
    lab_idx, unl_idx = np.flatnonzero(labeled), np.flatnonzero(~labeled)
    # steps 1-4: uniform θ, a supervised (MKL) SVM on the labeled points,
    # temporary labels by ranking its decision values with ratio r
    theta = uniform_weights(M, p) if M > 1 else np.ones(1)
    y_all = np.zeros(len(X))
    y_all[lab_idx] = y_lab
    if len(unl_idx):
        theta, scores = supervised_start(settings, kernels, X, lab_idx, unl_idx, y_lab, theta)
        n_pos = round(r * len(unl_idx))
        y_all[unl_idx] = ranked_labels(scores, n_pos)
        progress.log(f"{len(lab_idx)} labeled, {len(unl_idx)} unlabeled points, r = {r:.3f}, "
                     f"{n_pos} temporary positives")

    stages = annealing_stages(c_final, annealed=len(unl_idx) > 0)
    state: list[_State] = []

    def f_step(th: Array, iteration: int) -> Array:
        todo = stages if iteration == 0 else stages[-1:]
        if smooth:
            assert isinstance(engine, _Dense)
            state[:] = [smooth_f_step(engine, th, y_all, labeled, float(settings.C), r, todo,
                                      state[0].coef if state else None, settings.max_iter,
                                      progress)]
        else:
            # sparse: the XVs move in the first f-step and in the final one below;
            # the f-steps between θ-steps keep them (libsvm re-solves, no L-BFGS)
            state[:] = [switching_f_step(settings, engine, th, y_all, unl_idx, todo, progress,
                                         move=iteration == 0)]
        return engine.norms2(th, state[0])

    n_mkl_iter = 0
    if M > 1 and settings.mkl_max_iter > 0:
        res = alternate(f_step, M, p, theta0=theta, max_iter=settings.mkl_max_iter,
                        tol=settings.mkl_tol)
        theta, n_mkl_iter = res.theta, res.n_iter
        if isinstance(engine, _Sparse) and res.n_iter > 0:
            state[:] = [switching_f_step(settings, engine, theta, y_all, unl_idx, stages[-1:],
                                         progress)]
    else:
        f_step(theta, 0)
    final = state[0]
    if smooth:
        y_all[unl_idx] = np.where(final.outputs[unl_idx] > 0, 1.0, -1.0)
    return Search(theta, final, y_all, n_mkl_iter)
