"""Prediction speed of an exported sparse kernel machine: onnxruntime beside sparsify and SVC.

USPS, 10 classes, the paper's set-up (X scaled 2X − 1, RBF γ = 1/128, C = 10, as
``performance.py`` and ``reproduce.py``): `sparsify.SparseSVC` with Nz = ``--ratio``
(default 10 %) of each one-vs-rest problem's full-SVM support vectors, and scikit-learn's
full `SVC` (one-vs-one, libsvm) with the same (C, γ). Then, in one process, on the test set:

- sparsify's own ``predict`` (numpy, float64);
- the `sparsify.to_onnx` graph in onnxruntime, float64 and float32;
- scikit-learn's ``SVC.predict``;
- the full SVC converted by skl2onnx (its ``SVMClassifier`` operator) in onnxruntime.

Each is timed predicting the whole test set as one batch (median of ``--repeats``, after one
warm-up) and one row at a time (median over ``--rows`` rows), the methods taking turns so that
a change in the machine's load falls on all of them alike; every runtime uses one thread
(numpy's BLAS through threadpoolctl, onnxruntime's intra- and inter-op pools), so the figures
compare like with like. Beside them: the test error, the labels that differ from sparsify's
own, the largest difference of the decision values from sparsify's float64 ones (relative to
their largest magnitude), and the model sizes. Usage::

    python benchmarks/onnx_export.py --data-dir ../shared/data --out docs/results

writes ``onnx.md`` and ``onnx.csv`` under ``--out`` (``--name`` changes the stem) at the end
of the run (about 2 minutes, the fit included). ``--quick`` subsamples the data and shortens
the fit (the smoke test).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.svm import SVC
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).resolve().parent))
import harness
from performance import USPS_C, USPS_GAMMA, load_usps

from sparsify import SparseSVC, to_onnx
from sparsify.io import dumps_model

FIELDS = ["method", "runtime", "dtype", "kernel_evaluations", "batch_s", "per_second",
          "row_ms", "test_error", "labels_differing", "decision_error", "model_bytes", "note"]
SPARSIFY = "SparseSVC.predict"


def _session(model_bytes: bytes) -> Any:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    return ort.InferenceSession(model_bytes, options, providers=["CPUExecutionProvider"])


def _timings(predictors: list[tuple[Callable[[np.ndarray], Any], np.ndarray]], repeats: int,
             rows: int) -> list[tuple[float, float]]:
    """Per predictor: median seconds for its whole input as one batch, median ms for one row.

    The runs are interleaved (every predictor once, then again), so a change in the
    machine's load falls on all of them alike.
    """
    for predict, X in predictors:
        predict(X)  # warm-up: first-call allocations and caches
    batch: list[list[float]] = [[] for _ in predictors]
    single: list[list[float]] = [[] for _ in predictors]
    for _ in range(repeats):
        for times, (predict, X) in zip(batch, predictors, strict=True):
            start = time.perf_counter()
            predict(X)
            times.append(time.perf_counter() - start)
    for i in range(rows):
        for times, (predict, X) in zip(single, predictors, strict=True):
            row = X[i:i + 1]
            start = time.perf_counter()
            predict(row)
            times.append(time.perf_counter() - start)
    return [(float(np.median(b)), 1e3 * float(np.median(r)))
            for b, r in zip(batch, single, strict=True)]


def _subsample(X: np.ndarray, y: np.ndarray, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    if n <= 0 or n >= len(X):
        return X, y
    keep = np.sort(np.random.default_rng(seed).choice(len(X), n, replace=False))
    return X[keep], y[keep]


def measure(args: argparse.Namespace) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    X, y, X_test, y_test = load_usps(args.data_dir)
    X, y = _subsample(X, y, args.n_train, args.seed)
    X_test, y_test = _subsample(X_test, y_test, args.n_test, args.seed + 1)
    info: dict[str, Any] = {"n_train": len(X), "n_test": len(X_test), "d": X.shape[1],
                            "n_classes": len(np.unique(y))}
    with threadpool_limits(1), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        start = time.perf_counter()
        clf = SparseSVC(args.ratio, C=USPS_C, gamma=USPS_GAMMA, max_iter=args.max_iter,
                        n_jobs=args.n_jobs, random_state=args.seed).fit(X, y)
        info["fit_s"] = time.perf_counter() - start
        start = time.perf_counter()
        svc = SVC(C=USPS_C, gamma=USPS_GAMMA).fit(X, y)
        info["svc_fit_s"] = time.perf_counter() - start
    info["warnings"] = sorted({str(w.message).split(" (")[0] for w in caught})
    info["nz"] = int(clf.n_expansion_.sum())
    info["nsv"] = int(svc.n_support_.sum())
    info["model_file_bytes"] = len(dumps_model(clf))
    print(f"[onnx] fitted: Nz = {info['nz']} ({info['fit_s']:.0f} s), full SVC NSV = "
          f"{info['nsv']}", flush=True)

    decision = clf.decision_function(X_test)
    scale = float(np.abs(decision).max())
    reference = clf.predict(X_test)
    graphs = {dtype: to_onnx(clf, dtype=dtype).SerializeToString()
              for dtype in ("float64", "float32")}
    methods: list[tuple[str, str, str, int, int, Callable[[np.ndarray], Any], np.ndarray]] = [
        (SPARSIFY, "numpy", "float64", info["nz"], info["model_file_bytes"],
         lambda A: clf.predict(A), X_test)]
    sessions = {}
    for dtype, data in graphs.items():
        session = sessions[dtype] = _session(data)
        methods.append((f"sparsify.to_onnx graph ({dtype})", "onnxruntime", dtype, info["nz"],
                        len(data), lambda A, s=session: s.run(["label"], {"X": A})[0],
                        X_test.astype(dtype)))
    methods.append(("SVC.predict (full SVM)", "libsvm", "float64", info["nsv"],
                    svc.support_vectors_.nbytes + svc.dual_coef_.nbytes,
                    lambda A: svc.predict(A), X_test))
    try:  # the full SVM in the same runtime: skl2onnx's own converter
        from skl2onnx import to_onnx as skl2onnx_to_onnx

        with warnings.catch_warnings():  # skl2onnx reads SVC's deprecated probA_
            warnings.simplefilter("ignore", FutureWarning)
            svc_graph = skl2onnx_to_onnx(svc, X_test[:1].astype(np.float32),
                                         options={id(svc): {"zipmap": False}}
                                         ).SerializeToString()
        svc_session = _session(svc_graph)
        methods.append(("skl2onnx graph of the full SVC", "onnxruntime", "float32",
                        info["nsv"], len(svc_graph),
                        lambda A: svc_session.run(["label"], {"X": A})[0],
                        X_test.astype(np.float32)))
    except Exception as exc:  # a peer that cannot be measured is reported, not fatal
        info["svc_onnx_note"] = f"{type(exc).__name__}: {exc}"[:200]

    rows = []
    with threadpool_limits(1):
        timings = _timings([(m[5], m[6]) for m in methods], args.repeats,
                           min(args.rows, len(X_test)))
        for (name, runtime, dtype, n_kernel, size, predict, inputs), (batch_s, row_ms) in zip(
                methods, timings, strict=True):
            labels = np.asarray(predict(inputs))
            row = {"method": name, "runtime": runtime, "dtype": dtype,
                   "kernel_evaluations": n_kernel, "batch_s": batch_s,
                   "per_second": len(inputs) / batch_s, "row_ms": row_ms,
                   "test_error": float(np.mean(labels != y_test)),
                   "labels_differing": int(np.sum(labels != reference)),
                   "model_bytes": size, "note": ""}
            if name.startswith("sparsify.to_onnx"):
                scores = sessions[dtype].run(["scores"], {"X": inputs})[0]
                row["decision_error"] = float(np.abs(scores - decision).max()) / scale
            rows.append(row)
            print(f"[onnx] {name}: {row['per_second']:.0f} predictions/s, {row_ms:.3f} ms per "
                  f"row, error {100 * row['test_error']:.2f} %", flush=True)
    info["peak_mb"] = harness.peak_rss() / 1024
    info["decision_scale"] = scale
    return rows, info


def _git_commit() -> str:
    """The checkout's commit, and whether sparsify or the benchmarks had changes beyond it."""
    here = Path(__file__).resolve().parent
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True, check=True, cwd=here).stdout.strip()
        changed = subprocess.run(["git", "status", "--porcelain", "--", "sparsify", "benchmarks"],
                                 capture_output=True, text=True, check=True,
                                 cwd=here.parent).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return commit + (" with uncommitted changes" if changed else "")


def report(rows: list[dict[str, Any]], info: dict[str, Any], args: argparse.Namespace,
           wall: float) -> str:
    import onnxruntime as ort

    by = {r["method"]: r for r in rows}
    ours, f64 = by[SPARSIFY], by["sparsify.to_onnx graph (float64)"]
    f32, svc = by["sparsify.to_onnx graph (float32)"], by["SVC.predict (full SVM)"]
    peer = by.get("skl2onnx graph of the full SVC")
    data = (f"USPS, {info['n_train']} training and {info['n_test']} test points"
            + (" (a subsample: --quick or --n-train/--n-test)"
               if args.quick or args.n_train or args.n_test else ""))
    shows = (
        f"A `SparseSVC` fitted on {data} ({info['n_classes']} one-vs-rest problems, Nz = "
        f"{100 * args.ratio:g} % of each problem's full-SVM support vectors: {info['nz']} kernel "
        "evaluations per point) is exported with `sparsify.to_onnx` and run by onnxruntime in "
        "float64 and float32, beside sparsify's own `predict` and scikit-learn's full `SVC` "
        f"({info['nsv']} support vectors), all on one thread. In float64 the exported graph "
        f"predicts the same labels as sparsify ({f64['labels_differing']} differ; decision "
        f"values within {f64['decision_error']:.1e} of their scale) at "
        f"{f64['per_second'] / ours['per_second']:.1f}× sparsify's own speed and "
        f"{f64['per_second'] / svc['per_second']:.0f}× the full SVC's; float32 runs at "
        f"{f32['per_second'] / ours['per_second']:.1f}× sparsify's speed and costs a "
        f"decision-value error of {f32['decision_error']:.1e} of their scale "
        f"({f32['labels_differing']} of {info['n_test']} labels differ).")
    lines = [
        "## Predictions on the test set", "",
        "Whole test set: one batch, median of "
        f"{args.repeats} runs after a warm-up; one row: the median over the first "
        f"{min(args.rows, info['n_test'])} test rows, each predicted alone (the call "
        "overhead included). The methods take turns (each run of every method, then the "
        "next), so the machine's load falls on all of them alike. Labels ≠ sparsify: test "
        "points whose label differs from `SparseSVC.predict`'s. Decision error: the largest "
        "|Δf| against sparsify's float64 `decision_function`, divided by its largest |f| "
        f"({info['decision_scale']:.3g}).", "",
        "| method | runtime | dtype | kernel evaluations per point | predictions/s (batch) | "
        "ms per row, one at a time | test error | labels ≠ sparsify | decision error | "
        "model bytes |", "|---" * 10 + "|"]
    for r in rows:
        error = f"{r['decision_error']:.1e}" if "decision_error" in r else "—"
        lines.append(f"| {r['method']} | {r['runtime']} | {r['dtype']} | "
                     f"{r['kernel_evaluations']} | {r['per_second']:,.0f} | {r['row_ms']:.3f} | "
                     f"{100 * r['test_error']:.2f} % | {r['labels_differing']} | {error} | "
                     f"{r['model_bytes']:,} |")
    lines += [
        "", "Model bytes: the model file (`sparsify.io.save_model`) for sparsify, the ONNX "
        "file for the graphs, the support vectors and dual coefficients for SVC.", ""]
    if peer is None:
        lines += [f"The full SVC could not be converted by skl2onnx: {info['svc_onnx_note']}.",
                  ""]
    lines += [
        "## Findings", "",
        f"- float64: the graph gives sparsify's labels ({f64['labels_differing']} differ) and "
        f"its decision values to {f64['decision_error']:.1e} of their scale (round-off), at "
        f"{f64['per_second']:,.0f} predictions/s against {ours['per_second']:,.0f} for "
        f"`SparseSVC.predict` and {svc['per_second']:,.0f} for the full `SVC` "
        f"({svc['kernel_evaluations'] / info['nz']:.1f}× the kernel evaluations).",
        f"- float32: {f32['per_second']:,.0f} predictions/s; decision values within "
        f"{f32['decision_error']:.1e} of their scale of float64's, {f32['labels_differing']} "
        f"label(s) changed, test error {100 * f32['test_error']:.2f} % against "
        f"{100 * f64['test_error']:.2f} %.",
        f"- One row at a time: {f64['row_ms']:.3f} ms (onnxruntime, float64) against "
        f"{ours['row_ms']:.3f} ms (`SparseSVC.predict`) and {svc['row_ms']:.3f} ms "
        f"(`SVC.predict`). A row alone costs `SparseSVC.predict` "
        f"{ours['row_ms'] / (1e3 * ours['batch_s'] / info['n_test']):.0f}× its share of a batch "
        f"and onnxruntime {f64['row_ms'] / (1e3 * f64['batch_s'] / info['n_test']):.0f}×: the "
        "per-call overhead (input checks in Python, the session's dispatch), not the kernel "
        "evaluations.",
    ]
    if peer is not None:
        lines.append(f"- The full SVC in onnxruntime (skl2onnx's converter, float32): "
                     f"{peer['per_second']:,.0f} predictions/s, test error "
                     f"{100 * peer['test_error']:.2f} %.")
    lines += [
        "", "## Fit", "",
        f"SparseSVC: {info['fit_s']:.0f} s ({args.n_jobs} job(s), at most {args.max_iter} "
        f"L-BFGS iterations per problem, seed {args.seed}); SVC: {info['svc_fit_s']:.1f} s. "
        + (f"Warnings: {'; '.join(info['warnings'])}." if info["warnings"] else
           "No warnings.")]
    machine = (harness.provenance(wall, f"onnxruntime {ort.__version__}, one thread per "
                                        "runtime; other work shares the machine")
               + f" Peak memory of the process {info['peak_mb']:.0f} MB (Linux VmHWM). "
               f"sparsify commit {_git_commit()}.")
    return harness.result_page("ONNX export: prediction speed on USPS", shows,
                               f"python {args.command}", lines, [machine])


def main(argv: list[str] | None = None) -> int:
    parser = harness.benchmark_parser(__doc__,
                                      "folder in the ../shared/data format (usps/usps.npz)")
    parser.add_argument("--ratio", type=float, default=0.1,
                        help="Nz as a ratio of each problem's full-SVM NSV (default 0.1)")
    parser.add_argument("--max-iter", type=int, default=SparseSVC().max_iter,
                        help="L-BFGS iterations per binary problem")
    parser.add_argument("--n-jobs", type=int, default=1, help="jobs of the SparseSVC fit")
    parser.add_argument("--repeats", type=int, default=50, help="timed runs of each batch")
    parser.add_argument("--rows", type=int, default=200, help="rows timed one at a time")
    parser.add_argument("--n-train", type=int, default=0,
                        help="random subsample of the training points (0: all)")
    parser.add_argument("--n-test", type=int, default=0,
                        help="random subsample of the test points (0: all)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true",
                        help="the smoke test: 600 training and 300 test points, 5 L-BFGS "
                             "iterations, 3 repeats, 20 rows")
    parser.add_argument("--name", default="onnx", help="stem of the output files")
    args = parser.parse_args(argv)
    args.command = harness.command(__file__, argv).removeprefix("python ")
    harness.check_data_dir(parser, args.data_dir, ["usps"])
    if not 0 < args.ratio <= 1:
        parser.error(f"--ratio must be in (0, 1]; got {args.ratio}")
    try:
        import onnxruntime  # noqa: F401
        import skl2onnx  # noqa: F401
    except ImportError as exc:
        parser.error(f"{exc.name} is not installed; this benchmark runs onnxruntime: pip install "
                     "-e '.[benchmarks]' (or pip install onnx skl2onnx onnxruntime)")
    if args.quick:
        args.n_train, args.n_test = args.n_train or 600, args.n_test or 300
        args.max_iter, args.repeats, args.rows = min(args.max_iter, 5), 3, 20
    args.out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    rows, info = measure(args)
    wall = time.perf_counter() - start
    harness.write_csv(args.out / f"{args.name}.csv", rows, FIELDS)
    harness.write_atomic(args.out / f"{args.name}.md", report(rows, info, args, wall))
    print(f"[onnx] wrote {args.out / args.name}.md and .csv ({wall:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
