"""Semi-supervised SVMs (issue 6): S3VM, Lp-MKL-S3VM and its sparse version.

Usage::

    python benchmarks/s3vm.py --data-dir /work/shared/data --out docs/results

Data (as §5 of the paper "Lp-norm constrained multiple kernel semi-supervised SVM"
defines them; generators in :mod:`sparsify.datasets`):

* ``two_moons`` — 200 points, noise 0.1, r = 0.5;
* ``g241c`` — 1500 points in 241-D, two unit-variance Gaussians 2.5 apart, r = 0.5;
* ``g241d`` — 1500 points, misleading clusters (each class two Gaussians 6 apart), r = 0.5;
* ``uspst`` — 1500 USPS images (150 per digit, drawn from ``<data-dir>/usps/usps.npz``), digits
  2 and 5 positive, r = 0.2; the 256 raw pixels (Chapelle's USPST blurs them and keeps 241
  random columns: this is the "USPST-like" task). Skipped with a message without the data.

Test sets for the inductive error: ``--n-test`` fresh points of the same distribution (the same
random directions for g241c/d), and for USPS ``--n-test`` other images (the same number per digit,
disjoint from the training images). Every data set is scaled by one factor so that the mean
squared distance of the training inputs to their centroid is 1 (pairwise squared distances
average 2); the paper's Gaussian widths σ (Table 2, k(a, b) = exp(−‖a − b‖² / 2σ²)) are read on
that scale — on the raw 241-D data every one of them would give K ≈ I.

Per data set and labeled ratio (``--labeled``), ``--splits`` random labeled subsets
(:func:`sparsify.datasets.labeled_split`, at least one point per class) of the same training set;
every method sees the same subsets. Methods:

* ``svm`` — scikit-learn ``SVC`` on the labeled points only;
* ``ls`` — ``sklearn.semi_supervised.LabelSpreading``;
* ``s3vm`` — :class:`sparsify.algorithms.s3vm.estimator.SemiSupervisedSVC`, one Gaussian kernel;
* ``s3vm-qn`` — the same σ and C, optimised by ``optimizer="smooth-qn"`` (L-BFGS on a smoothed
  objective, the issue's optional comparison with a direct quasi-Newton method);
* ``s3vm-base`` — the same with each of the paper's three widths (default on ``uspst`` only, for
  the target "Lp-MKL-S3VM at least as good as the best single kernel");
* ``mkl1``, ``mkl2``, ``mkl5`` — Lp-MKL-S3VM with p = 1, 2, 5 over the paper's six kernels: the
  three Gaussians and the three manifold kernels built on them (kNN graph, k = 5), each scaled
  to mean diagonal 1 on the training points (``--kernel-norm``);
* ``mkl5-raw`` — p = 5 without that scaling, the paper's literal setting (default on ``uspst``
  only);
* ``sparse`` — the sparse Lp-MKL-S3VM, p = 5 (the paper's final choice), Nz = ``--nz`` of N.

Hyperparameters are chosen on the labeled points of the first split only, then kept for every
split (see ``--select``): never on unlabeled or test labels. The class ratio r of the balance
constraint is the paper's Table 1 value (``--balance seed``) or estimated from the labeled points
(``--balance labeled``).

Writes ``<out>/<name>.md`` (tables, command, targets, notes) and ``<out>/<name>.csv`` (one row per
fit, the selection fits included, ``stage`` = select/eval), both atomically and after every block
so that an interrupted run leaves its finished part.
"""

from __future__ import annotations

import argparse
import csv
import io
import os
import sys
import time
import traceback
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import harness
import numpy as np
from numpy.typing import NDArray
from sklearn.model_selection import StratifiedKFold
from sklearn.semi_supervised import LabelSpreading
from sklearn.svm import SVC
from threadpoolctl import threadpool_limits

from sparsify.datasets import labeled_split, make_g241c, make_g241d, make_two_moons

Array = NDArray[np.float64]

DATASETS = ("two_moons", "g241c", "g241d", "uspst")
LABEL = {"two_moons": "two moons", "g241c": "g241c", "g241d": "g241d", "uspst": "USPST-like"}
N_TRAIN = {"two_moons": 200, "g241c": 1500, "g241d": 1500, "uspst": 1500}
SIGMAS = {  # the paper's Table 2: the three Gaussian widths per data set
    "two_moons": (0.1, 0.5, 1.0), "g241c": (0.5, 1.0, 2.0), "g241d": (0.5, 1.0, 2.0),
    "uspst": (0.1, 0.5, 2.0),
}
R_SEED = {"two_moons": 0.5, "g241c": 0.5, "g241d": 0.5, "uspst": 0.2}  # the paper's Table 1
#: widths for any other binary set of --data-dir (its inputs scaled as every task's, below)
OTHER_SIGMAS = (0.25, 0.5, 1.0)


def sigmas_of(name: str) -> tuple[float, ...]:
    """The three Gaussian widths of a task: the paper's Table 2, or OTHER_SIGMAS."""
    return SIGMAS.get(name, OTHER_SIGMAS)


def label_of(name: str) -> str:
    return LABEL.get(name, name)
C_GRID = (10.0, 100.0, 500.0)  # the paper's §5.1 grid [0 10 100 500]; C = 0 would ignore the labels
MOONS_NOISE = 0.1
N_TRAIN_OTHER = 1500  # at most this many training points of a --data-dir set
N_NEIGHBORS = 5  # the paper's §5.1: kNN graph of the manifold kernels (50 only for TEXT)
LS_KNN = (5, 10)  # LabelSpreading's kNN graphs, besides its RBF kernels at the paper's widths
GAMMA_RATIOS = (1.0, 100.0, 1e4)  # γ_I/γ_A of the manifold kernels: the grid of the CV
LAPLACIAN_POWERS = (1, 2)  # and the power of the Laplacian in M = (γ_I/γ_A) L^power
RAW_NAME = "Lp-MKL-S3VM p=5, kernels not normalised"
POSITIVE_DIGITS = (2, 5)
METHODS = ("svm", "ls", "s3vm", "s3vm-qn", "s3vm-base", "mkl1", "mkl2", "mkl5", "mkl5-raw",
           "sparse")
QN_NAME = "S3VM, smoothed quasi-Newton"
USPST_ONLY = ("s3vm-base", "mkl5-raw")  # by default run on uspst only (its target)
SPARSE_P = 5.0


# --------------------------------------------------------------------------- data


@dataclass
class Task:
    name: str
    X: Array  # training inputs: labeled and unlabeled
    y: NDArray[np.int64]  # their true labels, -1/+1
    X_test: Array
    y_test: NDArray[np.int64]
    scale: float
    note: str = ""
    kernels: dict[tuple[Any, ...], list[Any]] = field(default_factory=dict)  # bound MKL kernels


def _around(centers: Array, labels: Sequence[int], n: int, rng: np.random.RandomState
            ) -> tuple[Array, NDArray[np.int64]]:
    """Fresh unit-variance Gaussian points around given centres, equal numbers per centre."""
    sizes = [n // len(centers) + (g < n % len(centers)) for g in range(len(centers))]
    X = np.concatenate([c + rng.standard_normal((m, centers.shape[1]))
                        for c, m in zip(centers, sizes, strict=True)])
    y = np.repeat(np.asarray(labels, dtype=np.int64), sizes)
    order = rng.permutation(len(y))
    return X[order], y[order]


def make_task(name: str, data_dir: Path | None, n_test: int, seed: int) -> Task | str:
    """The training and test data of one task, or a message saying why it is skipped."""
    rng = np.random.RandomState(seed)
    note = ""
    if name == "two_moons":
        X, y = make_two_moons(N_TRAIN[name], noise=MOONS_NOISE, random_state=rng)
        X_test, y_test = make_two_moons(n_test, noise=MOONS_NOISE, random_state=rng)
    elif name == "g241c":
        X, y, centers = make_g241c(N_TRAIN[name], random_state=rng, return_centers=True)
        X_test, y_test = _around(centers, (-1, 1), n_test, rng)
    elif name == "g241d":
        X, y, centers = make_g241d(N_TRAIN[name], random_state=rng, return_centers=True)
        X_test, y_test = _around(centers, (-1, -1, 1, 1), n_test, rng)
    elif name == "uspst":
        path = None if data_dir is None else data_dir / "usps" / "usps.npz"
        if path is None or not path.is_file():
            return (f"skipped: no USPS data (expected {path or '<data-dir>/usps/usps.npz'}; "
                    "pass --data-dir)")
        z = harness.load_set(path.parent.parent, "usps")
        pixels, digits = 2.0 * z["X"].astype(np.float64) - 1.0, z["y"].astype(np.int64)
        per_train, per_test = N_TRAIN[name] // 10, n_test // 10
        tr, te = [], []
        for d in range(10):
            idx = rng.permutation(np.flatnonzero(digits == d))[: per_train + per_test]
            tr.append(idx[:per_train])
            te.append(idx[per_train:])
        tr_idx, te_idx = rng.permutation(np.concatenate(tr)), np.concatenate(te)
        X, X_test = pixels[tr_idx], pixels[te_idx]
        y, y_test = (np.where(np.isin(digits[i], POSITIVE_DIGITS), 1, -1).astype(np.int64)
                     for i in (tr_idx, te_idx))
        note = (f"{per_train} training and {per_test} test images per digit, disjoint, drawn "
                "from the whole USPS set (train and test parts) with the run's seed")
    else:  # any binary set of --data-dir: its first split (or a random one), subsampled
        path = None if data_dir is None else data_dir / name / f"{name}.npz"
        if path is None or not path.is_file():
            return (f"skipped: {name!r} is neither one of {', '.join(DATASETS)} nor a set of "
                    f"--data-dir (expected {path or f'<data-dir>/{name}/{name}.npz'})")
        data = harness.load_set(path.parent.parent, name)
        classes = np.unique(data["y"])
        if len(classes) != 2:
            return f"skipped: {path} has {len(classes)} classes; the S3VM is binary"
        if "train_idx" in data:
            tr_all, te_all = data["train_idx"][0], data["test_idx"][0]
        else:
            order = rng.permutation(len(data["y"]))
            tr_all, te_all = order[: len(order) // 2], order[len(order) // 2:]
        tr_idx = rng.permutation(tr_all)[:N_TRAIN_OTHER]
        te_idx = rng.permutation(te_all)[:n_test]
        X, X_test = data["X"][tr_idx].astype(np.float64), data["X"][te_idx].astype(np.float64)
        y, y_test = (np.where(data["y"][i] == classes[1], 1, -1).astype(np.int64)
                     for i in (tr_idx, te_idx))
        note = (f"{len(tr_idx)} training and {len(te_idx)} test points from the "
                f"{'first split' if 'train_idx' in data else 'a random half'} of {path.name}; "
                f"widths {OTHER_SIGMAS}, r from the labeled points")
    # One factor for all inputs, so that the paper's widths mean the same on every data set.
    scale = 1.0 / np.sqrt(((X - X.mean(0)) ** 2).sum(1).mean())
    return Task(name, X * scale, y, X_test * scale, y_test, float(scale), note)


# --------------------------------------------------------------------------- methods


def gamma_of(sigma: float) -> float:
    """The paper's exp(−‖a − b‖² / 2σ²) as scikit-learn's exp(−γ‖a − b‖²)."""
    return 1.0 / (2.0 * sigma**2)


def mkl_kernels(task: Task, gamma_ratio: float, power: int, norm: str) -> list[Any]:
    """The paper's six kernels: three Gaussians and the three manifold kernels built on them.

    The manifold kernels are bound to the task's training points here (the estimator would
    bind them to the same points), once per setting: every fit of the task reuses them. With
    ``norm="trace"`` each kernel is scaled to mean diagonal 1 on the training points (a no-op
    for the Gaussians), as Lp-MKL practice does (Kloft et al. 2011 normalise every kernel):
    the deformation shrinks a manifold kernel, and the θ-step (eq. 26) would then penalise it
    for its scale rather than for its fit.
    """
    from sparsify.algorithms.s3vm.estimator import SemiSupervisedSVC
    from sparsify.kernels import SumKernel
    from sparsify.kernels.manifold import ManifoldKernel

    key = (gamma_ratio, power, norm)
    if key not in task.kernels:
        kernels = SemiSupervisedSVC.default_mkl_kernels(
            sigmas=list(sigmas_of(task.name)), n_neighbors=N_NEIGHBORS, gamma_ratio=gamma_ratio,
            laplacian_power=int(power))
        kernels = [k.bind(task.X) if isinstance(k, ManifoldKernel) else k for k in kernels]
        if norm == "trace":
            kernels = [SumKernel((k,), (1.0 / float(np.mean(k.diag(task.X))),))
                       for k in kernels]
        task.kernels[key] = kernels
    return task.kernels[key]


def kernel_names(sigmas: Sequence[float]) -> list[str]:
    return [f"rbf σ={s:g}" for s in sigmas] + [f"manifold σ={s:g}" for s in sigmas]


@dataclass
class Config:
    """One method with its hyperparameters."""

    method: str  # display name
    key: str  # one of METHODS
    C: float = 100.0
    sigma: float | None = None
    p: float | None = None
    n_expansion: float | None = None
    gamma_ratio: float | None = None  # γ_I/γ_A of the manifold kernels
    laplacian_power: int = 1  # the power of L in M = (γ_I/γ_A) L^power
    ls_kernel: str = ""  # LabelSpreading: "rbf" or "knn"
    ls_neighbors: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def describe(self) -> str:
        if self.key == "ls":
            return (f"kNN graph, k = {self.ls_neighbors}" if self.ls_kernel == "knn"
                    else f"RBF σ = {self.sigma:g}")
        parts = [f"C = {self.C:g}"]
        if self.sigma is not None:
            parts.insert(0, f"σ = {self.sigma:g}")
        if self.p is not None:
            parts.append(f"p = {self.p:g}")
        if self.gamma_ratio is not None:
            parts.append(f"γ_I/γ_A = {self.gamma_ratio:g}, L^{self.laplacian_power}")
        if self.n_expansion is not None:
            parts.append(f"Nz = {self.n_expansion:g}·N")
        return ", ".join(parts)


@dataclass
class Fit:
    """What one fit gives: decision values and labels on the training and test points."""

    transduction: NDArray[np.int64]  # labels of every training point (labeled ones included)
    score: Array  # decision values of the training points (for tie-breaking in the selection)
    test_pred: NDArray[np.int64] | None
    seconds: float
    theta: Array | None = None
    n_expansion: int | None = None
    objective: float | None = None  # the paper's eq. 1 at the fitted machine


def fit_config(cfg: Config, task: Task, mask: NDArray[np.bool_], balance: float | None,
               seed: int, args: argparse.Namespace, predict_test: bool = True) -> Fit:
    """Fit one method with the labels of ``mask`` only; unlabeled points keep their inputs."""
    X, y = task.X, task.y
    start = time.perf_counter()
    if cfg.key == "svm":
        model = SVC(C=cfg.C, kernel="rbf", gamma=gamma_of(cfg.sigma)).fit(X[mask], y[mask])
        seconds = time.perf_counter() - start
        score = model.decision_function(X)
        trans = np.where(mask, y, model.predict(X))
        test = model.predict(task.X_test) if predict_test else None
        return Fit(trans, score, test, seconds)
    if cfg.key == "ls":
        # LabelSpreading marks unlabeled points by -1, which is a class here: use 0/1 codes.
        codes = np.where(mask, (y == 1).astype(np.int64), -1)
        kw = ({"kernel": "knn", "n_neighbors": cfg.ls_neighbors} if cfg.ls_kernel == "knn"
              else {"kernel": "rbf", "gamma": gamma_of(cfg.sigma)})
        with warnings.catch_warnings():
            # tiny RBF widths give rows of zeros (0/0) before normalisation; that is the method
            warnings.simplefilter("ignore", RuntimeWarning)
            model = LabelSpreading(max_iter=1000, **kw).fit(X, codes)
            seconds = time.perf_counter() - start
            dist = np.nan_to_num(model.label_distributions_, nan=0.5)
            trans = np.where(model.transduction_ == 1, 1, -1).astype(np.int64)
            test = (np.where(model.predict(task.X_test) == 1, 1, -1).astype(np.int64)
                    if predict_test else None)
        return Fit(trans, dist[:, 1] - dist[:, 0], test, seconds)
    from sparsify.algorithms.s3vm.estimator import SemiSupervisedSVC

    # Labels are -1/+1, so the unlabeled marker cannot be the default -1: use 0.
    y_semi = np.where(mask, y, 0)
    kw: dict[str, Any] = {"C": cfg.C, "balance": balance, "unlabeled": 0, "random_state": seed}
    if cfg.key in ("s3vm", "s3vm-base", "s3vm-qn"):
        if cfg.key == "s3vm-qn":
            kw["optimizer"] = "smooth-qn"
        model = SemiSupervisedSVC(kernel="rbf", gamma=gamma_of(cfg.sigma), **kw)
    else:
        if cfg.key == "sparse":
            kw.update(max_iter=args.sparse_max_iter, mkl_max_iter=args.sparse_mkl_max_iter)
        norm = "none" if cfg.key == "mkl5-raw" else args.kernel_norm
        kernels = mkl_kernels(task, cfg.gamma_ratio, cfg.laplacian_power, norm)
        # the estimator scales to unit trace itself by default; the raw row must not
        kw["normalize_kernels"] = norm == "trace"
        model = SemiSupervisedSVC(kernels=kernels, p=cfg.p, n_expansion=cfg.n_expansion, **kw)
    model.fit(X, y_semi)
    seconds = time.perf_counter() - start
    trans = np.asarray(model.transduction_, dtype=np.int64)
    score = np.asarray(model.decision_function(X), dtype=np.float64)
    test = np.asarray(model.predict(task.X_test), dtype=np.int64) if predict_test else None
    theta = getattr(model, "kernel_weights_", None)
    single = cfg.key in ("s3vm", "s3vm-base", "s3vm-qn")
    return Fit(trans, score, test, seconds,
               None if theta is None or single else np.asarray(theta, dtype=float),
               None if getattr(model, "n_expansion_", None) is None
               else int(model.n_expansion_[0]),
               getattr(model, "s3vm_objective_", None))


# --------------------------------------------------------------------------- selection


def cv_score(cfg: Config, task: Task, mask: NDArray[np.bool_], balance: float | None,
             folds: int, seed: int, args: argparse.Namespace,
             log: Callable[[dict[str, Any]], None]) -> tuple[float, float]:
    """CV error and hinge loss of ``cfg`` on the labeled points of ``mask`` only.

    The supervised SVM is cross-validated on the labeled points alone. The
    semi-supervised methods are cross-validated transductively: a fold's labeled
    points are hidden (they join the unlabeled points, inputs still used) and
    scored by the mean of the errors of the method's transductive labels and of
    its prediction for them. No unlabeled or test label is ever read.
    """
    lab = np.flatnonzero(mask)
    skf = StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed)
    errors, hinges = [], []
    for k, (_, held) in enumerate(skf.split(lab, task.y[lab])):
        hidden = lab[held]
        fold_mask = mask.copy()
        fold_mask[hidden] = False
        row: dict[str, Any] = {"fold": k + 1}
        try:
            fit = fit_config(cfg, task, fold_mask, balance, seed, args, predict_test=False)
        except Exception as exc:  # a failed grid point loses, and is recorded
            log({**row, "error": f"{type(exc).__name__}: {exc}"})
            return np.inf, np.inf
        # The transductive labels of the hidden points and the model's own prediction for them,
        # averaged: a model whose decision function collapsed to one class (a too stiff manifold
        # kernel) must not win through its initial ranking, which its transduction_ keeps.
        err = 0.5 * float(np.mean(fit.transduction[hidden] != task.y[hidden])
                          + np.mean(np.where(fit.score[hidden] > 0, 1, -1) != task.y[hidden]))
        hinge = float(np.mean(np.maximum(0.0, 1.0 - task.y[hidden] * fit.score[hidden])))
        errors.append(err)
        hinges.append(hinge)
        log({**row, "cv_error": err, "cv_hinge": hinge, "fit_seconds": fit.seconds})
    return float(np.mean(errors)), float(np.mean(hinges))


def choose(candidates: list[Config], task: Task, mask: NDArray[np.bool_],
           balance: float | None, folds: int, seed: int, args: argparse.Namespace,
           log: Callable[[dict[str, Any]], None]) -> tuple[Config, dict[str, float]]:
    """The candidate with the lowest CV error; ties by the lowest CV hinge loss, then the first."""
    best, best_key, scores = candidates[0], (np.inf, np.inf), {}
    for cfg in candidates:
        err, hinge = cv_score(cfg, task, mask, balance, folds, seed, args,
                              lambda row, cfg=cfg: log({**row, **config_fields(cfg)}))
        scores[cfg.describe()] = err
        if (err, hinge) < best_key:
            best, best_key = cfg, (err, hinge)
    return best, {"cv_error": best_key[0], "cv_hinge": best_key[1]}


def config_fields(cfg: Config) -> dict[str, Any]:
    return {"method": cfg.method, "sigma": cfg.sigma if cfg.key != "ls" or cfg.ls_kernel == "rbf"
            else "", "C": cfg.C if cfg.key != "ls" else "", "p": cfg.p or "",
            "n_expansion": cfg.n_expansion or "", "gamma_ratio": cfg.gamma_ratio or "",
            "laplacian_power": cfg.laplacian_power if cfg.gamma_ratio else "",
            "ls_graph": (f"knn{cfg.ls_neighbors}" if cfg.ls_kernel == "knn" else
                         ("rbf" if cfg.key == "ls" else ""))}


def mkl_name(p: float) -> str:
    return f"Lp-MKL-S3VM p={p:g}"


def sparse_name(nz: float) -> str:
    return f"sparse Lp-MKL-S3VM p={SPARSE_P:g}, Nz={nz:g}·N"


def select(task: Task, ratio: float, mask: NDArray[np.bool_], balance: float | None,
           methods: Sequence[str], args: argparse.Namespace,
           log: Callable[[dict[str, Any]], None]) -> tuple[list[Config], list[dict[str, Any]]]:
    """The configurations to evaluate, chosen on the labeled points of ``mask``."""
    sigmas = sigmas_of(task.name)
    mid = sigmas[1]
    counts = np.bincount((task.y[mask] == 1).astype(int), minlength=2)
    folds = int(min(args.cv_folds, counts.min()))
    mode = args.select if folds >= 2 else "none"
    chosen: list[Config] = []
    notes: list[dict[str, Any]] = []

    def record(cfg: Config, how: str, cv: dict[str, float] | None = None) -> Config:
        chosen.append(cfg)
        notes.append({"method": cfg.method, "chosen": cfg.describe(), "how": how,
                      "cv_error": None if cv is None else cv["cv_error"]})
        return cfg

    def grid_s3vm(sig: Sequence[float], key: str, name: str) -> list[Config]:
        return [Config(name, key, C=C, sigma=s) for s in sig for C in C_GRID]

    cv_how = f"{folds}-fold CV on split 1's labeled points"
    trans_how = f"transductive {folds}-fold CV on split 1's labeled points"
    svm = None
    if mode == "none" and "svm" in methods:
        svm = record(Config("SVM (labeled only)", "svm", C=100.0, sigma=mid), "fixed")
    elif mode == "fast" and ("svm" in methods or "s3vm" in methods):
        grid = grid_s3vm(sigmas, "svm", "SVM (labeled only)")
        best, cv = choose(grid, task, mask, balance, folds, args.seed, args, log)
        svm = record(best, cv_how, cv)
    if "ls" in methods:
        grid = [Config("LabelSpreading", "ls", sigma=s, ls_kernel="rbf") for s in sigmas]
        grid += [Config("LabelSpreading", "ls", ls_kernel="knn", ls_neighbors=k) for k in LS_KNN]
        if mode == "none":
            record(grid[1], "fixed")
        else:
            best, cv = choose(grid, task, mask, balance, folds, args.seed, args, log)
            record(best, trans_how, cv)
    s3vm_scores: dict[float, tuple[Config, float, float]] = {}  # best C per width
    if "s3vm" in methods or "s3vm-base" in methods:
        if mode == "none":
            record(Config("S3VM", "s3vm", C=100.0, sigma=mid), "fixed")
        elif mode == "fast" and svm is not None:
            record(Config("S3VM", "s3vm", C=svm.C, sigma=svm.sigma), "the supervised SVM's")
        else:
            best_key = (np.inf, np.inf)
            best = None
            for cfg in grid_s3vm(sigmas, "s3vm", "S3VM"):
                err, hinge = cv_score(cfg, task, mask, balance, folds, args.seed, args,
                                      lambda row, cfg=cfg: log({**row, **config_fields(cfg)}))
                prev = s3vm_scores.get(cfg.sigma)
                if prev is None or (err, hinge) < (prev[1], prev[2]):
                    s3vm_scores[cfg.sigma] = (cfg, err, hinge)
                if (err, hinge) < best_key:
                    best, best_key = cfg, (err, hinge)
            assert best is not None
            if "s3vm" in methods:
                record(best, trans_how, {"cv_error": best_key[0]})
        if "s3vm-base" in methods:
            for s in sigmas:
                if s in s3vm_scores:
                    cfg, err, _ = s3vm_scores[s]
                    record(Config(f"S3VM σ={s:g}", "s3vm-base", C=cfg.C, sigma=s),
                           f"C by {trans_how} at this σ", {"cv_error": err})
                else:  # no grid was run (--select none or fast): the S3VM row's C
                    c = next((c.C for c in chosen if c.key == "s3vm"), 100.0)
                    record(Config(f"S3VM σ={s:g}", "s3vm-base", C=c, sigma=s),
                           "C of the S3VM row")
    if "s3vm-qn" in methods:
        s3 = next((c for c in chosen if c.key == "s3vm"), None)
        record(Config(QN_NAME, "s3vm-qn", C=s3.C if s3 else 100.0, sigma=s3.sigma if s3 else mid),
               "those of the S3VM row" if s3 else "fixed")
    if mode == "cv" and "svm" in methods:
        # the same kernel as the S3VM row (σ), C by CV on the labeled points
        s3 = next((c for c in chosen if c.key == "s3vm"), None)
        grid = [Config("SVM (labeled only)", "svm", C=C, sigma=s)
                for s in ([s3.sigma] if s3 is not None else sigmas) for C in C_GRID]
        best, cv = choose(grid, task, mask, balance, folds, args.seed, args, log)
        record(best, ("σ of the S3VM row (same kernel), C by " if s3 is not None else "")
               + cv_how, cv)
    mkl_ps = [p for p, k in ((1.0, "mkl1"), (2.0, "mkl2"), (5.0, "mkl5")) if k in methods]
    if mkl_ps or "sparse" in methods or "mkl5-raw" in methods:
        # C as the single-kernel S3VM's; the manifold kernels' γ_I/γ_A and power of L by CV
        # at p = 5, the paper's choice
        C = next((c.C for c in chosen if c.key == "s3vm"), 100.0)
        if mode == "none":
            g_ratio, power, how, cv = GAMMA_RATIOS[0], LAPLACIAN_POWERS[0], "fixed", None
        else:
            grid = [Config(mkl_name(SPARSE_P), "mkl5", C=C, p=SPARSE_P, gamma_ratio=g,
                           laplacian_power=q) for g in GAMMA_RATIOS for q in LAPLACIAN_POWERS]
            best, cv = choose(grid, task, mask, balance, folds, args.seed, args, log)
            g_ratio, power = best.gamma_ratio, best.laplacian_power
            how = (f"C of the S3VM row; γ_I/γ_A and the power of L by {trans_how} at "
                   f"p = {SPARSE_P:g}, used for every p")
        kw = {"C": C, "gamma_ratio": g_ratio, "laplacian_power": power}
        for p in mkl_ps:
            record(Config(mkl_name(p), f"mkl{p:g}", p=p, **kw), how, cv)
        if "mkl5-raw" in methods:
            record(Config(RAW_NAME, "mkl5-raw", p=SPARSE_P, **kw), how + " (normalised)")
        if "sparse" in methods:
            record(Config(sparse_name(args.nz), "sparse", p=SPARSE_P, n_expansion=args.nz, **kw),
                   how, cv)
    # evaluate in METHODS order
    order = {k: i for i, k in enumerate(METHODS)}
    chosen.sort(key=lambda c: (order[c.key], c.sigma or 0.0, c.p or 0.0))
    return chosen, notes


# --------------------------------------------------------------------------- output


FIELDS = [
    "stage", "dataset", "n_train", "n_test", "labeled_ratio", "split", "fold", "n_labeled",
    "n_unlabeled", "method", "sigma", "C", "p", "gamma_ratio", "laplacian_power", "n_expansion",
    "ls_graph",
    "balance",
    "transductive_error", "inductive_error", "cv_error", "cv_hinge", "fit_seconds",
    "s3vm_objective", "theta",
    "n_expansion_fitted", "error",
]


def csv_text(rows: list[dict[str, Any]]) -> str:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=FIELDS, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    for r in rows:
        writer.writerow({k: ("" if r.get(k) is None else r.get(k, "")) for k in FIELDS})
    return buf.getvalue()


def pm(values: Sequence[float], scale: float = 100.0, digits: int = 1) -> str:
    v = np.asarray([x for x in values if np.isfinite(x)], dtype=float) * scale
    if len(v) == 0:
        return "failed"
    if len(v) == 1:
        return f"{v[0]:.{digits}f}"
    return f"{v.mean():.{digits}f} ± {v.std(ddof=1):.{digits}f}"


def mean_of(rows: list[dict[str, Any]], key: str) -> float:
    v = [r[key] for r in rows if isinstance(r.get(key), float) and np.isfinite(r[key])]
    return float(np.mean(v)) if v else np.nan


SUBBFGS_NOTE = """\
**Why the paper's subBFGS is not needed.** The paper minimises its objective in f_m (eq. 12) with
subBFGS, a quasi-Newton method for non-smooth convex functions (§2, eq. 16-19), inside the
annealing of C* (Algorithm 1). The objective is non-convex only through the symmetric loss
max(0, 1 − |g(x)|) of the unlabeled points. Once every unlabeled point carries a temporary label,
as Algorithm 1 itself does (initial labels by ranking the supervised decision values with ratio r,
then pairwise switches by eq. 20), that loss is the ordinary hinge loss of the temporary label, and
each stage is a *convex* SVM with cost C on the labeled and C* on the unlabeled points. A convex
SVM is solved exactly through its dual: libsvm on the precomputed (combined) kernel for the dense
model, the core's `"s3vm"` formulation — the direct sparse method with its Lemma 1 gradient in Z —
for the sparse one. So the stage optimum that subBFGS approaches by bundle-search iterations is
obtained exactly, and a non-smooth optimiser has nothing left to do; the non-convex part (the
temporary labels) is handled by switching and annealing as in the paper, and the θ-step is the
paper's closed form (eq. 26) at the stage optimum. The row "S3VM, smoothed quasi-Newton" is the
issue's optional comparison: L-BFGS directly on a smoothed version of eq. 1 (no temporary labels),
with the same annealing."""


def write_markdown(path: Path, rows: list[dict[str, Any]], notes: list[dict[str, Any]],
                   tasks: dict[str, Task], skipped: dict[str, str], args: argparse.Namespace,
                   command: str, seconds: float, done: bool) -> None:
    ev = [r for r in rows if r["stage"] == "eval"]
    lines = ([] if done else
             ["**Partial results: the run was still going when this page was written.**", ""])
    setup = [
        "## Set-up", "",
        "- **Data** (the paper's §5, generators in `sparsify.datasets`): two moons, 200 points, "
        f"noise {MOONS_NOISE}; g241c, 1500 points in 241-D, two unit-variance isotropic "
        "Gaussians with centres 2.5 apart; g241d, 1500 points, each class two such Gaussians "
        "(375 points each) 6 apart along one random direction, the classes 2.5 apart along "
        "another (misleading clusters); USPST-like, 1500 USPS images (150 per digit), digits 2 and "
        "5 positive, the 256 raw pixels (Chapelle's USPST blurs and keeps 241 random columns). "
        f"Test sets for the inductive error: {args.n_test} fresh points of the same "
        "distribution (same random directions), for USPS other images, the same number per "
        "digit. One seed (`--seed`) draws all data.",
        "- **Scale**: each data set is multiplied by one factor so that the mean squared "
        "distance of the training inputs to their centroid is 1; the paper's Gaussian widths σ "
        "(Table 2; k(a, b) = exp(−‖a − b‖²/2σ²)) are read on that scale. On the raw 241-D data "
        "every one of them would give a kernel matrix ≈ I (‖a − b‖² ≈ 480).",
        f"- **Labeled subsets**: {args.splits} random subsets per labeled ratio "
        "(`labeled_split`, at least one point per class), the same for every method; "
        "transductive error = error on the unlabeled training points, inductive error = error "
        "on the test set; mean ± standard deviation over the subsets, in %.",
        "- **Balance r**: " + ("the paper's Table 1 value (0.5; 0.2 for USPST), the known class "
                               "prior" if args.balance == "seed" else
                               "the fraction of positive labeled points") + ".",
        "- **Kernels of Lp-MKL-S3VM**: the paper's six, the three Gaussians of Table 2 and the "
        "three manifold kernels k̃ = k − k_xᵀ(I + MK)⁻¹M k_z built on them (kNN graph, "
        f"k = {N_NEIGHBORS}, Gaussian weights of the same σ, M = (γ_I/γ_A)·L^q), combined with "
        "weights θ ≥ 0, ‖θ‖_p ≤ 1. "
        + ("Each kernel is scaled to mean diagonal 1 on the training points (a no-op for the "
           "Gaussians; the manifold kernels are shrunk by the deformation, and eq. 26 would "
           "otherwise weigh them down for their scale; Kloft et al. 2011 normalise likewise); "
           f"the row \"{RAW_NAME}\" is the paper's literal setting. "
           if args.kernel_norm == "trace" else "The kernels are not normalised. ")
        + "The sparse "
        f"version uses p = {SPARSE_P:g} (the paper's final choice) and Nz = {args.nz:g}·N free "
        "XVs (the paper has no sparse version; 10 % of N is the issue's suggestion), with at "
        f"most {args.sparse_max_iter} L-BFGS iterations on the XVs per convex stage and "
        f"{args.sparse_mkl_max_iter} θ-steps"
        + (f", on the first {args.sparse_splits} splits only" if args.sparse_splits else "")
        + "; the dense MKL rows use the estimator's defaults (at most 20 θ-steps).",
        f"- **Hyperparameters** ({args.select}): " + {
            "cv": "chosen once per data set and labeled ratio on the labeled points of the first "
                  "split only, then kept for every split. Grid: the paper's three widths σ × C ∈ "
                  "{10, 100, 500} (the paper's §5.1, C* annealed up to C). The supervised SVM by "
                  "stratified k-fold CV on the labeled points; the semi-supervised methods by "
                  "*transductive* k-fold CV: a fold's labeled points are hidden (they join the "
                  "unlabeled points); the CV error is the mean of the error of their transductive "
                  "labels and that of the model's prediction for them (so that a decision function "
                  "collapsed to one class cannot win through the initial ranking its transductive "
                  "labels keep). Ties in CV error go to the lower CV hinge loss. LabelSpreading: "
                  "RBF at the three widths or a "
                  f"kNN graph (k ∈ {{{', '.join(map(str, LS_KNN))}}}); Lp-MKL-S3VM: the "
                  "single-kernel S3VM's C, and γ_I/γ_A ∈ {"
                  + ", ".join(f"{g:g}" for g in GAMMA_RATIOS) + "} × L^q, q ∈ {"
                  + ", ".join(map(str, LAPLACIAN_POWERS)) + "} at p = 5, then the same for "
                  "every p and the sparse version. No unlabeled or test label is read.",
            "fast": "the supervised SVM's (σ, C) by CV on the first split's labeled points, "
                    "reused by the S3VM and its C by the MKL rows; γ_I/γ_A by transductive CV "
                    "as with `--select cv`.",
            "none": "fixed: the middle width of the paper's three, C = 100, γ_I/γ_A = "
                    f"{GAMMA_RATIOS[0]:g}.",
        }[args.select],
        "",
    ]
    for name, why in skipped.items():
        setup += [f"- {LABEL.get(name, name)}: {why}"]
    if skipped:
        setup.append("")

    # results
    lines += ["## Results", "",
              "| data | labeled | method | hyperparameters | transductive error (%) | "
              "inductive error (%) | fit s | splits |",
              "|---|---|---|---|---|---|---|---|"]
    summary: dict[tuple[str, float, str], dict[str, float]] = {}
    for name in tasks:
        for ratio in args.labeled:
            block = [r for r in ev if r["dataset"] == name and r["labeled_ratio"] == ratio]
            methods = list(dict.fromkeys(r["method"] for r in block))
            for m in methods:
                sel = [r for r in block if r["method"] == m]
                ok = [r for r in sel if not r.get("error")]
                hp = next((n["chosen"] for n in notes if n["dataset"] == name
                           and n["labeled_ratio"] == ratio and n["method"] == m), "")
                n_lab = sel[0]["n_labeled"]
                summary[(name, ratio, m)] = {"trans": mean_of(ok, "transductive_error"),
                                            "ind": mean_of(ok, "inductive_error")}
                failed = len(sel) - len(ok)
                lines.append(
                    f"| {label_of(name)} | {ratio:g} ({n_lab}) | {m} | {hp} | "
                    f"{pm([r['transductive_error'] for r in ok])} | "
                    f"{pm([r['inductive_error'] for r in ok])} | "
                    f"{pm([r['fit_seconds'] for r in ok], scale=1.0, digits=2)} | "
                    f"{len(ok)}{f' ({failed} failed)' if failed else ''} |")
    lines.append("")

    # theta
    th = [r for r in ev if r.get("theta") and not r.get("error")]
    if th:
        lines += ["### Kernel weights θ (mean over splits)", ""]
        for name in tasks:
            names = kernel_names(sigmas_of(name))
            sel_name = [r for r in th if r["dataset"] == name]
            if not sel_name:
                continue
            lines += [f"**{label_of(name)}**", "",
                      "| labeled | method | " + " | ".join(names) + " |",
                      "|---|---|" + "---|" * len(names)]
            for ratio in args.labeled:
                for m in dict.fromkeys(r["method"] for r in sel_name
                                       if r["labeled_ratio"] == ratio):
                    vals = np.mean([[float(v) for v in r["theta"].split()] for r in sel_name
                                    if r["labeled_ratio"] == ratio and r["method"] == m], axis=0)
                    lines.append(f"| {ratio:g} | {m} | " + " | ".join(f"{v:.3f}" for v in vals)
                                 + " |")
            lines.append("")

    # the two optimisers of the single-kernel S3VM
    qn = [(n, r) for n in tasks for r in args.labeled
          if any(x["method"] == QN_NAME and x["dataset"] == n and x["labeled_ratio"] == r
                 for x in ev)]
    if qn:
        lines += ["### Algorithm 1 (label switching) against a smoothed quasi-Newton method", "",
                  "Same kernel and C. The objective is the paper's eq. 1 at the fitted machine "
                  "(`s3vm_objective_`; lower is better), mean over splits.", "",
                  "| data | labeled | switching: transductive (%) | smoothed QN: transductive (%)"
                  " | switching: eq. 1 | smoothed QN: eq. 1 | switching lower eq. 1 | "
                  "fit s (switching / QN) |", "|---|---|---|---|---|---|---|---|"]
        for n, r in qn:
            a = {x["split"]: x for x in ev if x["dataset"] == n and x["labeled_ratio"] == r
                 and x["method"] == "S3VM" and not x.get("error")}
            b = {x["split"]: x for x in ev if x["dataset"] == n and x["labeled_ratio"] == r
                 and x["method"] == QN_NAME and not x.get("error")}
            both = sorted(set(a) & set(b))
            if not both:
                continue
            obj = [(a[k].get("s3vm_objective"), b[k].get("s3vm_objective")) for k in both]
            obj = [(u, v) for u, v in obj if u is not None and v is not None]
            lower = sum(u < v for u, v in obj)
            lines.append(
                f"| {label_of(n)} | {r:g} | {pm([a[k]['transductive_error'] for k in both])} | "
                f"{pm([b[k]['transductive_error'] for k in both])} | "
                f"{pm([u for u, _ in obj], scale=1.0)} | {pm([v for _, v in obj], scale=1.0)} | "
                f"{lower} of {len(obj)} | "
                f"{np.mean([a[k]['fit_seconds'] for k in both]):.2f} / "
                f"{np.mean([b[k]['fit_seconds'] for k in both]):.2f} |")
        lines.append("")

    # targets
    lines += ["## Targets (issue 6)", ""]
    lines += targets(summary, ev, tasks, args)
    lines += ["", "## Hyperparameter choice", "",
              "| data | labeled | method | chosen | how | CV error (%) |",
              "|---|---|---|---|---|---|"]
    for n in notes:
        cv = "" if n["cv_error"] is None or not np.isfinite(n["cv_error"]) else \
            f"{100 * n['cv_error']:.1f}"
        lines.append(f"| {label_of(n['dataset'])} | {n['labeled_ratio']:g} | {n['method']} | "
                     f"{n['chosen']} | {n['how']} | {cv} |")
    errs = [r for r in rows if r.get("error")]
    if errs:
        lines += ["", "## Failed fits", "",
                  "| stage | data | labeled | split | method | error |",
                  "|---|---|---|---|---|---|"]
        for r in errs[:40]:
            msg = str(r["error"]).replace("|", "/").replace("\n", " ")[:200]
            lines.append(f"| {r['stage']} | {r['dataset']} | {r['labeled_ratio']} | "
                         f"{r.get('split', '')} | {r['method']} | {msg} |")
        if len(errs) > 40:
            lines.append(f"\n({len(errs) - 40} more in the CSV.)")
    for name, task in tasks.items():
        if task.note:
            lines += ["", f"{label_of(name)}: {task.note}."]
    lines += ["", *setup, "## Notes", "", SUBBFGS_NOTE, "",
              f"Every fit is a row of `{args.name}.csv` (`stage` = select for the "
              "cross-validation fits of the hyperparameter choice, eval for the reported ones).",
              ""]
    shows = ("The paper's semi-supervised SVMs on "
             + ", ".join(label_of(name) for name in tasks)
             + ": the supervised SVM, LabelSpreading, the S3VM, Lp-norm multiple kernel "
             "S3VMs (Lp-MKL-S3VM) and their sparse version with Nz free XVs, at each labeled "
             "ratio: transductive and inductive test errors, fit times, kernel weights, the "
             "targets, and how each method's hyperparameters were chosen; the set-up follows "
             "the tables.")
    machine = (f"Machine: {harness.machine_line()}, one BLAS thread; {time.strftime('%Y-%m-%d')}, "
               f"load average {harness.load_average()} when written; total "
               f"{seconds / 60:.1f} min.")
    harness.write_atomic(path, harness.result_page(
        "Semi-supervised SVMs: S3VM, Lp-MKL-S3VM and its sparse version (the paper "
        "\"Lp-norm constrained multiple kernel semi-supervised SVM\")", shows, command, lines,
        [machine]))


def wins(ev: list[dict[str, Any]], name: str, ratio: float, a: str, b: str) -> str:
    """'k of n splits' where method ``a`` has a lower transductive error than ``b``."""
    err = {(r["method"], r["split"]): r["transductive_error"] for r in ev
           if r["dataset"] == name and r["labeled_ratio"] == ratio and not r.get("error")}
    splits = sorted({s for (m, s) in err if m == a} & {s for (m, s) in err if m == b})
    k = sum(err[(a, s)] < err[(b, s)] for s in splits)
    ties = sum(err[(a, s)] == err[(b, s)] for s in splits)
    return f"lower on {k}, equal on {ties} of {len(splits)} splits"


def targets(summary: dict[tuple[str, float, str], dict[str, float]], ev: list[dict[str, Any]],
            tasks: dict[str, Task], args: argparse.Namespace) -> list[str]:
    out = []
    for name in ("two_moons", "g241c"):
        if name not in tasks:
            continue
        for ratio in args.labeled:
            s = summary.get((name, ratio, "S3VM"))
            b = summary.get((name, ratio, "SVM (labeled only)"))
            if s is None or b is None:
                continue
            ok = s["trans"] < b["trans"]
            out.append(
                f"- S3VM below the supervised SVM, {label_of(name)}, {ratio:g} labeled: "
                f"transductive "
                f"{100 * s['trans']:.1f} % vs {100 * b['trans']:.1f} % "
                f"(inductive {100 * s['ind']:.1f} % vs {100 * b['ind']:.1f} %; "
                f"{wins(ev, name, ratio, 'S3VM', 'SVM (labeled only)')}): "
                f"**{'pass' if ok else 'miss'}**"
                + ("" if ok else f" by {100 * (s['trans'] - b['trans']):.1f} points") + ".")
    if "uspst" in tasks:
        for ratio in args.labeled:
            singles = {m: v for (n, r, m), v in summary.items()
                       if n == "uspst" and r == ratio and m.startswith("S3VM")}
            mkls = {m: v for (n, r, m), v in summary.items()
                    if n == "uspst" and r == ratio and "MKL" in m}
            if not singles or not mkls:
                continue
            best_m = min(singles, key=lambda m: singles[m]["trans"])
            best = singles[best_m]["trans"]
            for m, v in mkls.items():
                ok = v["trans"] <= best
                out.append(
                    f"- {m} at least as good as the best single kernel ({best_m}, "
                    f"{100 * best:.1f} %), USPST-like, {ratio:g} labeled: transductive "
                    f"{100 * v['trans']:.1f} % (inductive {100 * v['ind']:.1f} % vs "
                    f"{100 * singles[best_m]['ind']:.1f} %; {wins(ev, 'uspst', ratio, m, best_m)})"
                    f": **{'pass' if ok else 'miss'}**"
                    + ("" if ok else f" by {100 * (v['trans'] - best):.1f} points") + ".")
    return out or ["- (no target could be judged: a data set or method was not run)"]


# --------------------------------------------------------------------------- main


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    env = os.environ.get("SPARSIFY_DATA_DIR")
    ap.add_argument("--data-dir", type=Path, default=Path(env) if env else None,
                    help="folder in the ../shared/data format; needed for uspst "
                         "(default: $SPARSIFY_DATA_DIR)")
    ap.add_argument("--datasets", nargs="+", default=list(DATASETS), metavar="NAME",
                    help=f"tasks: {', '.join(DATASETS)} (the paper's) or any binary set of "
                         "--data-dir (default: the paper's)")
    ap.add_argument("--labeled", nargs="+", type=float, default=[0.05, 0.1],
                    help="labeled ratios (default: 0.05 0.1)")
    ap.add_argument("--splits", type=int, default=10, help="random labeled subsets (default 10)")
    ap.add_argument("--n-test", type=int, default=1000, help="test points (default 1000)")
    ap.add_argument("--methods", nargs="+", default=None, choices=METHODS,
                    help="default: all; s3vm-base and mkl5-raw on uspst only")
    ap.add_argument("--select", choices=("cv", "fast", "none"), default="cv",
                    help="hyperparameter choice (see the module docstring; default cv)")
    ap.add_argument("--cv-folds", type=int, default=3, help="folds of the selection CV")
    ap.add_argument("--balance", choices=("seed", "labeled"), default="seed",
                    help="r: the paper's Table 1 value or the labeled points' ratio")
    ap.add_argument("--nz", type=float, default=0.1, help="Nz of the sparse version, × N")
    ap.add_argument("--kernel-norm", choices=("trace", "none"), default="trace",
                    help="scale each MKL kernel to mean diagonal 1 on the training points")
    ap.add_argument("--sparse-max-iter", type=int, default=10,
                    help="sparse version: L-BFGS iterations on the XVs per stage (default 10)")
    ap.add_argument("--sparse-mkl-max-iter", type=int, default=5,
                    help="sparse version: most θ-steps of the MKL alternation (default 5)")
    ap.add_argument("--sparse-splits", type=int, default=None,
                    help="run the (slow) sparse version on the first N splits only")
    ap.add_argument("--quick", action="store_true",
                    help="smoke run: --select none and methods svm, ls, s3vm, mkl2")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=Path("docs/results"))
    ap.add_argument("--name", default="s3vm", help="file stem of the outputs (default s3vm)")
    args = ap.parse_args(argv)
    if args.quick:
        args.select = "none"
        args.methods = args.methods or ["svm", "ls", "s3vm", "mkl2"]
    for r in args.labeled:
        if not 0 < r < 1:
            ap.error(f"--labeled takes ratios in (0, 1); got {r}.")
    if args.splits < 1:
        ap.error("--splits must be >= 1.")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    command = harness.command(__file__, argv)
    start = time.perf_counter()
    rows: list[dict[str, Any]] = []
    notes: list[dict[str, Any]] = []
    tasks: dict[str, Task] = {}
    skipped: dict[str, str] = {}
    md, csv_path = args.out / f"{args.name}.md", args.out / f"{args.name}.csv"

    def flush(done: bool) -> None:
        harness.write_atomic(csv_path, csv_text(rows))
        write_markdown(md, rows, notes, tasks, skipped, args, command,
                       time.perf_counter() - start, done)

    for name in args.datasets:
        task = make_task(name, args.data_dir, args.n_test, args.seed)
        if isinstance(task, str):
            print(f"{name}: {task}", flush=True)
            skipped[name] = task
            continue
        tasks[name] = task
        methods = args.methods or [m for m in METHODS if m not in USPST_ONLY or name == "uspst"]
        balance = R_SEED.get(name) if args.balance == "seed" else None
        base = {"dataset": name, "n_train": len(task.y), "n_test": len(task.y_test),
                "balance": balance if balance is not None else "labeled"}
        for i_ratio, ratio in enumerate(args.labeled):
            masks = [labeled_split(task.y, ratio, random_state=args.seed * 100_003
                                   + 1000 * i_ratio + s) for s in range(args.splits)]
            sizes = {"n_labeled": int(masks[0].sum()), "n_unlabeled": int((~masks[0]).sum())}
            t0 = time.perf_counter()

            def log(row: dict[str, Any], ratio: float = ratio, base: dict[str, Any] = base,
                    sizes: dict[str, int] = sizes) -> None:
                rows.append({**base, "stage": "select", "labeled_ratio": ratio, "split": 1,
                             **sizes, **row})

            with threadpool_limits(1):
                configs, chosen = select(task, ratio, masks[0], balance, methods, args, log)
            for n in chosen:
                notes.append({"dataset": name, "labeled_ratio": ratio, **n})
            print(f"{name} {ratio:g}: selection {time.perf_counter() - t0:.1f} s: "
                  + "; ".join(f"{n['method']}: {n['chosen']}" for n in chosen), flush=True)
            for s, mask in enumerate(masks):
                unl = ~mask
                done_fits: dict[str, Fit] = {}  # "S3VM" equals one "S3VM σ=…" row: fit once
                for cfg in configs:
                    if cfg.key == "sparse" and args.sparse_splits is not None \
                            and s >= args.sparse_splits:
                        continue
                    row = {**base, "stage": "eval", "labeled_ratio": ratio, "split": s + 1,
                           "n_labeled": int(mask.sum()), "n_unlabeled": int(unl.sum()),
                           **config_fields(cfg)}
                    same = f"{cfg.key.removesuffix('-base')}: {cfg.describe()}"
                    try:
                        with threadpool_limits(1):
                            fit = done_fits.get(same) or fit_config(
                                cfg, task, mask, balance, args.seed + s, args)
                        done_fits[same] = fit
                    except Exception as exc:
                        row["error"] = f"{type(exc).__name__}: {exc}"
                        print(f"  {cfg.method} split {s + 1} FAILED: {row['error']}",
                              file=sys.stderr, flush=True)
                        traceback.print_exc(limit=3)
                        rows.append(row)
                        continue
                    row.update({
                        "transductive_error": float(np.mean(
                            fit.transduction[unl] != task.y[unl])),
                        "inductive_error": float(np.mean(fit.test_pred != task.y_test)),
                        "fit_seconds": fit.seconds,
                        "s3vm_objective": fit.objective,
                        "theta": "" if fit.theta is None else " ".join(
                            f"{v:.6g}" for v in fit.theta),
                        "n_expansion_fitted": fit.n_expansion if cfg.key == "sparse" else "",
                    })
                    rows.append(row)
                    print(f"  {name} {ratio:g} split {s + 1} {cfg.method}: transductive "
                          f"{100 * row['transductive_error']:.1f} %, inductive "
                          f"{100 * row['inductive_error']:.1f} %, {fit.seconds:.2f} s", flush=True)
            flush(done=False)
    if not tasks:
        print("nothing to run", file=sys.stderr)
        return 1
    flush(done=True)
    print(f"wrote {md} and {csv_path} in {(time.perf_counter() - start) / 60:.1f} min")
    return 0


if __name__ == "__main__":
    sys.exit(main())
