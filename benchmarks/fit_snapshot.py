"""Fits bit for bit: every fitted array of a fixed set of fits, saved to compare across a refactor.

A refactor that should not change any fit (a new module layout, one driver in place of
several) is checked by fitting the same 21 configurations before and after it: every
built-in estimator, the SVM's options (ratio Nz, probability, class weights with several
starts, squared hinge, one-vs-rest, the generic path's backends), the semi-supervised SVM
with and without multiple kernels, and two fits over Dask row blocks. Every fitted array
attribute and every prediction method's output on held-out rows is saved; ``--compare``
reports the arrays that differ (exact equality, NaN equal to NaN).

Usage::

    OPENBLAS_NUM_THREADS=1 python benchmarks/fit_snapshot.py before.npz   # at the old commit
    OPENBLAS_NUM_THREADS=1 python benchmarks/fit_snapshot.py after.npz    # at the new one
    python benchmarks/fit_snapshot.py --compare before.npz after.npz

About 20 s on one core; the Dask fits start a LocalCluster of two threads in this process.
"""
from __future__ import annotations

import argparse
import io
import warnings
from pathlib import Path
from typing import Any

import harness
import numpy as np


def configs() -> list[tuple[str, Any, np.ndarray, np.ndarray | None, np.ndarray]]:
    """(name, unfitted estimator, X, y or None, held-out X) of every fit compared."""
    from sparsify import (
        SemiSupervisedSVC,
        SparseKernelLogisticRegression,
        SparseKernelPCA,
        SparseKernelRidge,
        SparseKFD,
        SparseOneClassSVM,
        SparseSVC,
        SparseSVR,
    )
    from sparsify.datasets import load_banana

    X, y, Xt, _ = load_banana()
    X, y, Xt = X[:400], y[:400], Xt[:200]
    rng = np.random.RandomState(0)
    X3 = rng.randn(300, 4)
    y3 = np.argmax(X3[:, :3] + 0.3 * rng.randn(300, 3), axis=1)
    Xr = rng.uniform(-3, 3, (300, 2))
    yr = np.sin(Xr[:, 0]) + 0.5 * Xr[:, 1] + 0.1 * rng.randn(300)
    y_semi = np.where(np.arange(len(y)) < 40, y, 0)  # 0 = unlabelled below
    out = [
        ("svc_default", SparseSVC(10, C=10, random_state=0), X, y, Xt),
        ("svc_ratio_prob", SparseSVC(0.1, C=10, probability=True, random_state=0), X, y, Xt),
        ("svc_balanced_ninit", SparseSVC(8, C=10, class_weight="balanced", n_init=2,
                                         random_state=1), X, y, Xt),
        ("svc_sqhinge", SparseSVC(8, C=10, loss="squared_hinge", random_state=0), X, y, Xt),
        ("svc_3class", SparseSVC(6, C=10, random_state=0), X3, y3, X3[:50]),
        ("svc_3class_prob", SparseSVC(6, C=10, probability=True, random_state=0), X3, y3, X3[:50]),
        ("svc_clarabel", SparseSVC(5, C=10, solver="clarabel", max_iter=15, random_state=0),
         X[:150], y[:150], Xt),
        ("svc_structured", SparseSVC(5, C=10, solver="structured", max_iter=15, random_state=0),
         X[:150], y[:150], Xt),
        ("svc_poly", SparseSVC(6, C=1, kernel="poly", degree=2, random_state=0), X, y, Xt),
        ("svr", SparseSVR(10, C=10, random_state=0), Xr, yr, Xr[:50]),
        ("krr", SparseKernelRidge(10, alpha=0.1, random_state=0), Xr, yr, Xr[:50]),
        ("krr_ninit", SparseKernelRidge(8, alpha=0.1, n_init=2, random_state=3), Xr, yr, Xr[:50]),
        ("oneclass", SparseOneClassSVM(8, nu=0.2, random_state=0), X, None, Xt),
        ("kfd_convex", SparseKFD(8, method="convex", random_state=0), X, y, Xt),
        ("kfd_rayleigh", SparseKFD(8, method="rayleigh", random_state=0), X, y, Xt),
        ("klr", SparseKernelLogisticRegression(8, random_state=0), X, y, Xt),
        ("kpca", SparseKernelPCA(8, n_components=2, random_state=0), X, None, Xt),
        ("s3vm", SemiSupervisedSVC(C=10, n_expansion=8, unlabeled=0, random_state=0,
                                   max_iter=20), X, y_semi, Xt),
        ("s3vm_mkl", SemiSupervisedSVC(C=10, n_expansion=8, unlabeled=0, random_state=0,
                                       kernels=["rbf", "linear"], max_iter=10), X, y_semi, Xt),
    ]
    return out


def fitted_arrays(name: str, est: Any, X: Any, y: Any, Xt: np.ndarray) -> dict[str, np.ndarray]:
    """Fit ``est`` and return its fitted numeric arrays and its predictions on ``Xt``."""
    est.fit(X) if y is None else est.fit(X, y)
    arrays = {}
    for k, v in sorted(vars(est).items()):
        if k.endswith("_") and not k.startswith("_"):
            items = list(enumerate(v)) if isinstance(v, (list, tuple)) else [(None, v)]
            for i, item in items:
                if isinstance(item, (str, dict)):
                    continue
                try:
                    a = np.asarray(item)
                except ValueError:
                    continue
                if a.dtype != object and a.dtype.kind in "fiub":
                    arrays[f"{name}/{k}" + ("" if i is None else f"[{i}]")] = a
    for meth in ("decision_function", "predict", "predict_proba", "transform", "score_samples"):
        if hasattr(est, meth):
            try:
                arrays[f"{name}/{meth}"] = np.asarray(getattr(est, meth)(Xt))
            except Exception as exc:  # a method this estimator refuses: its refusal is compared
                arrays[f"{name}/{meth}!"] = np.array(type(exc).__name__)
    return arrays


def main(argv: list[str] | None = None) -> int:
    """Save the snapshot to a file, or with ``--compare A B`` report what differs."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("path", nargs="?", type=Path, help="where to save the snapshot (.npz)")
    parser.add_argument("--compare", nargs=2, type=Path, metavar=("A", "B"),
                        help="compare two saved snapshots instead")
    args = parser.parse_args(argv)
    if (args.path is None) == (args.compare is None):
        parser.error("give the snapshot's path, or --compare A B")
    if args.compare:
        a, b = np.load(args.compare[0]), np.load(args.compare[1])
        ka, kb = set(a.files), set(b.files)
        bad = sorted(ka ^ kb)
        for k in sorted(ka & kb):
            x, y = a[k], b[k]
            same = (x.shape == y.shape and x.dtype == y.dtype
                    and np.array_equal(x, y, equal_nan=x.dtype.kind == "f"))
            if not same:
                bad.append(k)
        print(f"{len(ka & kb)} arrays compared, {len(bad)} differ or missing")
        for k in bad:
            print("  ", k)
        return 1 if bad else 0
    warnings.simplefilter("ignore")
    arrays = {}
    for name, est, X, y, Xt in configs():
        arrays.update(fitted_arrays(name, est, X, y, Xt))
        print(name, "ok", flush=True)
    # the Dask fits the distributed path accepts today (hinge and squared hinge)
    import logging

    import dask.array as da
    import distributed

    from sparsify import SparseSVC
    from sparsify.datasets import load_banana
    X, y, Xt, _ = load_banana()
    X, y = X[:1200], y[:1200]
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=":0", silence_logs=logging.ERROR) as cl, \
            distributed.Client(cl):
        for name, est in [("dask_svc", SparseSVC(8, C=10, random_state=0)),
                          ("dask_sqhinge", SparseSVC(8, C=10, loss="squared_hinge",
                                                     random_state=0))]:
            arrays.update(fitted_arrays(name, est, da.from_array(X, chunks=300),
                                        da.from_array(y, chunks=300), Xt[:200]))
            print(name, "ok", flush=True)
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    harness.write_atomic(args.path, buffer.getvalue())
    print(len(arrays), "arrays")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
