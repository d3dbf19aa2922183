"""One declared problem over a Dask cluster: the structured interior point over row blocks.

For the declared Huber SVM and ε-SVR (benchmarks/generic_path.py's data and
formulations) at each N, side by side in one run: one evaluation of W(Z) and ∇W(Z)
by the structured backend in memory (`sparsify.ConicMarginal`) and over the row
blocks of a dask array on a LocalCluster of worker processes
(`sparsify.core.declared_blocks`), at the same XVs. Reported: the time of an
evaluation (the second one, at XVs moved a little, as L-BFGS moves them; the set-up
once per problem apart), the interior point's iterations, the payload each block
sends and receives per iteration against its share of the Schur complement
(8·(Nz + e)² bytes, e the few dense unknowns), the agreement of W and ∇W, and peak
resident memory of the driver and of the busiest worker. With ``--fit`` a whole
fit of a declared classifier on the dask arrays at the smallest N.

Usage::

    OPENBLAS_NUM_THREADS=1 python benchmarks/declared_dask.py --out docs/results

writes ``declared_dask.md`` and ``declared_dask.csv``; ``--quick`` runs tiny sizes.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).resolve().parent))
import harness
from generic_path import make_data
from harness import fmt, row, table

from sparsify import RBF, ConicMarginal, SparseKernelClassifier
from sparsify.core.data_source import RowBlocks, RowTarget
from sparsify.core.declared_blocks import DeclaredBlocks
from sparsify.core.optimize import initial_expansion_vectors


def measure(client: Any, name: str, n: int, nz: int, blocks: int, seed: int
            ) -> dict[str, Any]:
    import dask.array as da

    X, y, form = make_data(name, n, seed)
    gamma = 1.0 / X.shape[1]
    kernel = RBF(gamma)
    Z0 = initial_expansion_vectors(X, nz, "random", seed)
    Z1 = Z0 + 0.05 * np.random.default_rng(seed).normal(size=Z0.shape)
    row: dict[str, Any] = {"formulation": name, "N": n, "Nz": nz, "blocks": blocks}

    def in_memory() -> ConicMarginal:
        local = ConicMarginal(form, X, y, kernel, nz, solver="structured")
        local.evaluate(Z0)
        return local

    local, row["memory_peak_mb"] = harness.traced(in_memory)
    start = time.perf_counter()
    ref = local.evaluate(Z1)
    row["memory_s"] = time.perf_counter() - start
    del local
    rows = -(-n // blocks)
    positive = None if name == "svr" else 1.0
    X_blocks = da.from_array(X, chunks=(rows, X.shape[1]))
    y_blocks = da.from_array(y, chunks=rows)
    workers = harness.reset_workers_peak(client)

    def over_blocks() -> tuple[DeclaredBlocks, Any, float]:
        start = time.perf_counter()
        problem = DeclaredBlocks(form, RowBlocks(X_blocks, y_blocks, "benchmark"),
                                 RowTarget(positive), kernel, nz, 1e-9)
        setup = time.perf_counter() - start
        marginal = problem.marginal()
        marginal.evaluate(Z0)
        return problem, marginal, setup

    (problem, marginal, row["setup_s"]), row["driver_peak_mb"] = harness.traced(over_blocks)
    start = time.perf_counter()
    ev = marginal.evaluate(Z1)
    row["dask_s"] = time.perf_counter() - start
    row["worker_peak_mb"] = harness.workers_peak_mb(client, workers)
    row["iterations"] = marginal.iterations
    n_schur = len(problem.master.columns) + len(problem.master.b)
    row["schur_size"] = n_schur
    per = (marginal.sent_bytes + marginal.received_bytes) / blocks / marginal.iterations
    row["bytes_per_iter_block"] = per
    row["schur_bytes"] = 8 * n_schur * n_schur
    row["W_rel"] = abs(ev.value - ref.value) / abs(ref.value)
    row["grad_rel"] = float(np.abs(ev.grad - ref.grad).max() / np.abs(ref.grad).max())
    problem.close()
    return row


def fit_row(client: Any, n: int, nz: int, blocks: int, max_iter: int, seed: int
            ) -> dict[str, Any]:
    import dask.array as da

    X, y, form = make_data("huber_svm", n, seed)
    # the declared Huber SVM as a classifier (examples/declared_formulations.py)
    estimator = type("DeclaredHuber", (SparseKernelClassifier,),
                     {"formulation_class": type(form)})
    params = {"C": 1.0, "h": 0.5, "n_expansion": nz, "gamma": 1.0 / X.shape[1],
              "max_iter": max_iter, "random_state": seed}
    start = time.perf_counter()
    local = estimator(**params).fit(X, y)
    memory_s = time.perf_counter() - start
    rows = -(-n // blocks)
    start = time.perf_counter()
    clf = estimator(**params).fit(da.from_array(X, chunks=(rows, X.shape[1])),
                                  da.from_array(y, chunks=rows))
    seconds = time.perf_counter() - start
    return {"formulation": "huber_svm (fit)", "N": n, "Nz": nz, "blocks": blocks,
            "memory_s": memory_s, "dask_s": seconds, "iterations": int(np.max(clf.n_iter_)),
            "memory_iterations": int(np.max(local.n_iter_)),
            "train_error": float(1 - clf.score(X, y)),
            "memory_train_error": float(1 - local.score(X, y))}


def report(rows: list[dict[str, Any]], command: str, workers: int, wall: float) -> str:
    shows = ("One declared problem solved over the row blocks of a dask array by the structured "
             "interior point, beside the same backend in memory at the same XVs: the time of "
             "an evaluation of W(Z) and ∇W(Z), the bytes each block moves per iteration "
             "against its share of the Schur complement, and the agreement of W and ∇W.")
    evals = [r for r in rows if "fit" not in r["formulation"]]
    lines = table("formulation", "N", "Nz", "blocks", "in memory s", "over blocks s",
                  "set-up s", "iterations", "bytes / iteration / block", "8·(Nz+e)²",
                  "W rel. diff", "∇W rel. diff", "peak MB: in memory / driver / worker")
    lines += [row(r["formulation"], r["N"], r["Nz"], r["blocks"], fmt(r["memory_s"]),
                  fmt(r["dask_s"]), fmt(r["setup_s"]), r["iterations"],
                  f"{r['bytes_per_iter_block']:.0f}", r["schur_bytes"], fmt(r["W_rel"], 2),
                  fmt(r["grad_rel"], 2), f"{r['memory_peak_mb']:.0f} / "
                  f"{r['driver_peak_mb']:.0f} / {r['worker_peak_mb']:.0f}") for r in evals]
    if evals:
        per = [r["bytes_per_iter_block"] for r in evals]
        big = max(evals, key=lambda r: (r["N"], r["formulation"]))
        small = min(evals, key=lambda r: (r["N"], r["formulation"]))
        lines += [
            "",
            f"Per interior-point iteration each block sent and received {min(per):.0f} to "
            f"{max(per):.0f} bytes at every N from {small['N']} to {big['N']}: its share of "
            f"the Schur complement ({big['schur_bytes']} bytes at Nz = {big['Nz']}), vectors "
            "of the Schur unknowns' size, and Z and T once per evaluation; O(Nz²) per block, "
            "independent of the block's rows. W and ∇W equal the in-memory ones to "
            f"{max(r['W_rel'] for r in evals):.1e} and {max(r['grad_rel'] for r in evals):.1e} "
            f"(relative). At N = {big['N']} ({big['formulation']}) an evaluation over the "
            f"blocks took {big['dask_s']:.1f} s against {big['memory_s']:.1f} s in memory, the "
            f"driver holding {big['driver_peak_mb']:.0f} MB (the compiled declaration) "
            f"against {big['memory_peak_mb']:.0f} MB in memory and the busiest worker "
            f"{big['worker_peak_mb']:.0f} MB. At N = {small['N']} the round trips dominate "
            "(five calls to every block per iteration, a few milliseconds each): "
            f"{small['dask_s']:.2f} s against {small['memory_s']:.2f} s; the blocks are for "
            "rows that do not fit one machine."]
    fits = [r for r in rows if "fit" in r["formulation"]]
    if fits:
        lines += ["", "A whole fit (a declared Huber SVM classifier, `SparseKernelClassifier` "
                  "with the example's formulation, `max_iter` L-BFGS iterations from random "
                  "initial rows: drawn in memory, or on the blocks):", "",
                  *table("N", "Nz", "blocks", "in memory s", "over blocks s",
                         "L-BFGS iterations (memory / blocks)",
                         "training error (memory / blocks)")]
        lines += [row(r["N"], r["Nz"], r["blocks"], fmt(r["memory_s"]), fmt(r["dask_s"]),
                      f"{r['memory_iterations']} / {r['iterations']}",
                      f"{fmt(r['memory_train_error'])} / {fmt(r['train_error'])}")
                  for r in fits]
    return harness.result_page(
        "A declared problem over a Dask cluster", shows, "OPENBLAS_NUM_THREADS=1 " + command,
        lines,
        [harness.provenance(wall, f"a LocalCluster of {workers} worker processes with one "
                                  "thread each on the same machine; BLAS limited to 1 thread"),
         "Bytes are the payload of the calls to the blocks (arrays and numbers, in and out, "
         "Z and T once per evaluation included; Dask's own messages not counted). Peak "
         "memory: the peak of what Python and numpy allocated (tracemalloc) for the "
         "in-memory path and for the driver, each from compiling the declaration to the end "
         "of the first evaluation; for the busiest worker (fresh workers for each row), the "
         "rise of its resident set's peak while its blocks were made and evaluated (its "
         "rows, kernel rows, Φ_j and its parts of the problem)."])


def main(argv: list[str] | None = None) -> int:
    from distributed import Client, LocalCluster

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("docs/results"))
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--blocks", type=int, default=8, help="row blocks per problem")
    parser.add_argument("--nz", type=int, default=50)
    parser.add_argument("--sizes", type=int, nargs="+", default=[20_000, 100_000])
    parser.add_argument("--fit", type=int, default=0, metavar="MAX_ITER",
                        help="also a whole fit at the smallest N with this max_iter")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    sizes, nz = ([2000], 8) if args.quick else (args.sizes, args.nz)
    start = time.perf_counter()
    rows: list[dict[str, Any]] = []
    # the rows come from the driver's memory here (da.from_array), which Dask warns about
    warnings.filterwarnings("ignore", "Sending large graph")
    runs = [(name, n) for name in ("huber_svm", "svr") for n in sizes]
    if args.fit:
        runs.append(("fit", min(sizes)))
    with threadpool_limits(1):
        for name, n in runs:
            # fresh workers for each measurement, so that their peak memory is this one's
            with LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                              dashboard_address=":0", silence_logs=logging.ERROR,
                              env={"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
                              ) as cluster, Client(cluster) as client:
                rows.append(fit_row(client, n, nz, args.blocks, args.fit, args.seed)
                            if name == "fit" else
                            measure(client, name, n, nz, args.blocks, args.seed))
            print(f"[declared_dask] {rows[-1]}", flush=True)
    text = report(rows, harness.command(__file__, argv), args.workers, time.perf_counter() - start)
    harness.write_results(args.out, "declared_dask", text, rows, ("formulation",))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
