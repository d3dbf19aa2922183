"""One SLMC problem across a Dask cluster beside the same problem in memory.

Ringnorm (`sparsify.datasets.make_ringnorm`, 20-D) of N points, generated block by block
on the workers (block k from seed ``seed + k``), so the rows never pass through the
driver; the in-memory run generates the same blocks in one process. Both minimise the
SVM formulation's W(Z) (with ``--loss``, the hinge or the squared hinge) by L-BFGS
(`minimize_marginal`) from the same initial XVs (`initial_rows`, drawn on the workers)
for the same number of iterations:

- on a `LocalCluster` of ``--workers`` single-threaded worker processes,
  `DistributedSVMMarginal` (`DistributedSquaredHingeMarginal`) over the blocks;
- in a fresh process, the in-memory fast path `SVMDualMarginal`
  (`SquaredHingeMarginal`).

Per evaluation: seconds, and for the cluster the payload bytes sent to and gathered
from the blocks (Z, the whitening T, u, the polish's working rows or the Newton
systems' sums, and the parts of W and ∇W; `DistributedSVMMarginal.sent_bytes`), and
the solver's steps: CoCoA+ rounds and rows polished on the driver (hinge), Newton
iterations and line-search steps (squared hinge). Peak memory: Linux VmHWM of the
in-memory process above the data, of the driver and of each worker. Test error on
``--test-n`` fresh points. Usage::

    OPENBLAS_NUM_THREADS=1 python benchmarks/dask_scaling.py --out docs/results

writes ``dask_scaling.md`` and ``dask_scaling.csv`` under ``--out`` at the end of the
run. ``--quick`` runs tiny sizes (the smoke test).
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import harness

from sparsify import RBF
from sparsify.core.marginal import Marginal
from sparsify.core.optimize import minimize_marginal
from sparsify.datasets import make_ringnorm

#: ringnorm's C and γ: γ = 1 / (d · Var X) (Var X ≈ 2.5), scikit-learn's "scale"
C, GAMMA = 1.0, 1.0 / 50
#: the distributed solvers' counters, per evaluation
COUNTERS = ("sent_bytes", "received_bytes", "n_rounds", "n_polish_rows", "n_newton",
            "n_line_steps")
#: the table's two solver-step columns for each loss: (counter, heading)
STEPS = {"hinge": (("n_rounds", "CoCoA+ rounds"), ("n_polish_rows", "polished rows")),
         "squared_hinge": (("n_newton", "Newton iterations"),
                           ("n_line_steps", "line-search steps"))}


def _chunk(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    return make_ringnorm(n, random_state=seed)


def _sizes(n: int, n_blocks: int) -> list[int]:
    return [n // n_blocks + (k < n % n_blocks) for k in range(n_blocks)]


def _timed(marginal: Marginal, log: list[dict[str, Any]]) -> Marginal:
    """``marginal`` whose every evaluation appends its seconds (and counters) to ``log``."""
    evaluate = marginal.evaluate

    def _timed(Z: np.ndarray, grad: bool = True) -> Any:
        start = time.perf_counter()
        result = evaluate(Z, grad)
        log.append({"seconds": time.perf_counter() - start,
                    **{k: getattr(marginal, k) for k in COUNTERS if hasattr(marginal, k)}})
        return result

    marginal.evaluate = _timed  # type: ignore[method-assign]
    return marginal


def _summary(path: str, log: list[dict[str, Any]], res: Any, seconds: float,
             test: tuple[np.ndarray, np.ndarray], kernel: RBF) -> dict[str, Any]:
    Xt, yt = test
    f = kernel(Xt, res.Z) @ res.evaluation.coef + res.evaluation.intercept
    later = log[1:] or log
    row = {"path": path, "fit_s": seconds, "n_iter": res.n_iter, "n_evaluations": len(log),
           "first_eval_s": log[0]["seconds"],
           "eval_s": float(np.median([e["seconds"] for e in later])),
           "W": res.evaluation.value, "test_error": float(np.mean(np.sign(f) != yt))}
    for key in COUNTERS:
        if key in log[0]:
            row[key] = float(np.median([e[key] for e in later]))
    return row


def _in_memory(n: int, n_blocks: int, nz: int, Z0: np.ndarray, max_iter: int, seed: int,
               test: tuple[np.ndarray, np.ndarray], loss: str) -> dict[str, Any]:
    """The in-memory fast path on the same blocks, in this (fresh) process."""
    from threadpoolctl import threadpool_limits

    from sparsify.algorithms.svm.formulation import SVM
    from sparsify.algorithms.svm.squared_hinge import SquaredHingeMarginal
    from sparsify.svm_dual import SVMDualMarginal

    parts = [_chunk(m, seed + k) for k, m in enumerate(_sizes(n, n_blocks))]
    X, y = np.vstack([p[0] for p in parts]), np.concatenate([p[1] for p in parts])
    del parts
    kernel = RBF(GAMMA)
    base = harness.reset_peak_rss()
    log: list[dict[str, Any]] = []
    with threadpool_limits(1):
        start = time.perf_counter()
        marginal = _timed(SVMDualMarginal(C, X, y, kernel, nz, formulation=SVM(C))
                          if loss == "hinge" else
                          SquaredHingeMarginal(C, X, y, kernel, nz,
                                               formulation=SVM(C, loss=loss)), log)
        res = minimize_marginal(marginal, Z0, max_iter=max_iter)
        seconds = time.perf_counter() - start
    return {**_summary("in memory", log, res, seconds, test, kernel),
            "peak_mb": (harness.peak_rss() - base) / 1024}


def _on_cluster(n: int, n_blocks: int, nz: int, workers: int, max_iter: int, seed: int,
                test: tuple[np.ndarray, np.ndarray], loss: str
                ) -> tuple[dict[str, Any], np.ndarray]:
    import dask.array as da
    from dask import delayed
    from distributed import Client, LocalCluster

    from sparsify.algorithms.svm.distributed import (
        DistributedSVMMarginal,
        _diagonal_sum,
        initial_rows,
        make_blocks,
    )
    from sparsify.algorithms.svm.distributed_squared_hinge import (
        DistributedSquaredHingeMarginal,
    )

    kernel = RBF(GAMMA)
    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                      dashboard_address=":0", silence_logs=logging.ERROR) as cluster, \
            Client(cluster) as client:
        chunks = [delayed(_chunk)(m, seed + k) for k, m in enumerate(_sizes(n, n_blocks))]
        sizes = _sizes(n, n_blocks)
        X = da.concatenate([da.from_delayed(c[0], (m, 20), float)
                            for c, m in zip(chunks, sizes, strict=True)])
        y = da.concatenate([da.from_delayed(c[1], (m,), int)
                            for c, m in zip(chunks, sizes, strict=True)])
        base = harness.reset_peak_rss()
        start = time.perf_counter()
        blocks = make_blocks(client, X, y, 1, C)
        ready = time.perf_counter() - start
        diagonal = sum(client.gather([client.submit(_diagonal_sum, b, kernel)
                                      for b in blocks])) / n
        Z0 = initial_rows(client, blocks, nz, None, seed)
        log: list[dict[str, Any]] = []
        start = time.perf_counter()
        solver = DistributedSVMMarginal if loss == "hinge" else DistributedSquaredHingeMarginal
        marginal = _timed(solver(client, blocks, kernel, nz, diagonal=diagonal), log)
        res = minimize_marginal(marginal, Z0, max_iter=max_iter)
        seconds = time.perf_counter() - start
        row = {**_summary(f"Dask, {workers} worker{'s' * (workers > 1)}", log, res, seconds,
                          test, kernel),
               "blocks_s": ready, "peak_mb": (harness.peak_rss() - base) / 1024,
               "worker_peak_mb": harness.workers_peak_mb(client)}
    return row, Z0


def report(rows: list[dict[str, Any]], args: argparse.Namespace, wall: float) -> str:
    """The page."""
    lines = [f"Ringnorm, N = {args.n}, in {args.blocks} row blocks generated on the workers; "
             f"Nz = {args.nz}, C = {C:g}, γ = {GAMMA:g}, loss {args.loss}; {args.max_iter} "
             "L-BFGS iterations "
             "from the same initial XVs; test error on "
             f"{args.test_n} fresh points (Bayes error ≈ 1.3 %). eval = median seconds of the "
             "evaluations after the first; sent / received = median payload per evaluation "
             "(Dask's own messages not counted); peak = VmHWM above the data for the "
             "in-memory process, above the start for the driver, and the largest worker's "
             "whole process.", "",
             "| path | fit s | iterations | evaluations | first eval s | eval s | sent KB | "
             "received KB | " + " | ".join(head for _, head in STEPS[args.loss])
             + " | W | test error | peak MB | worker peak MB |", "|" + "---|" * 14]
    for r in rows:
        kb = [r[k] / 1024 if k in r else None for k in ("sent_bytes", "received_bytes")]
        lines.append("| " + " | ".join(harness.fmt(v, 4) for v in (
            r["path"], r["fit_s"], r["n_iter"], r["n_evaluations"], r["first_eval_s"],
            r["eval_s"], *kb, *(r.get(key) for key, _ in STEPS[args.loss]), r["W"],
            r["test_error"], r["peak_mb"], r.get("worker_peak_mb"))) + " |")
    local = next(r for r in rows if r["path"] == "in memory")
    lines.append("")
    for r in rows:
        if r is local:
            continue
        lines.append(f"{r['path']}: {r['eval_s'] / local['eval_s']:.2f}× the in-memory time "
                     f"per evaluation; {r['sent_bytes'] / 1024:.0f} KB sent and "
                     f"{r['received_bytes'] / 1024:.0f} KB received per evaluation, against "
                     f"{8 * args.n * 20 / 2**20:.0f} MB of rows held on the workers; |ΔW| / W = "
                     f"{abs(r['W'] - local['W']) / abs(local['W']):.1e}.")
    shows = (f"One SVM problem (loss {args.loss}) fitted with its rows spread over a Dask "
             "cluster beside the same fit in memory: fit time, time and payload per "
             "evaluation, peak memory of the driver and the workers, and the agreement of W "
             "and the test error.")
    title = "One problem across a Dask cluster" + (
        "" if args.loss == "hinge" else f": {args.loss.replace('_', ' ')}")
    return harness.result_page(title, shows, "OPENBLAS_NUM_THREADS=1 " + harness.command(__file__),
                               lines, [harness.provenance(wall, "one BLAS thread per process")])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("benchmark-results"))
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--nz", type=int, default=100)
    parser.add_argument("--blocks", type=int, default=8)
    parser.add_argument("--workers", type=int, nargs="+", default=[2])
    parser.add_argument("--max-iter", type=int, default=20)
    parser.add_argument("--test-n", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--loss", choices=sorted(STEPS), default="hinge")
    parser.add_argument("--quick", action="store_true", help="tiny sizes (the smoke test)")
    args = parser.parse_args(argv)
    if args.quick:
        args.n, args.nz, args.blocks, args.workers, args.max_iter, args.test_n = (
            2000, 5, 4, [2], 3, 500)
    args.out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    test = make_ringnorm(args.test_n, random_state=10_000 + args.seed)
    rows, Z0 = [], None
    for workers in args.workers:
        row, Z0 = _on_cluster(args.n, args.blocks, args.nz, workers, args.max_iter, args.seed,
                              test, args.loss)
        rows.append(row)
        print(f"[dask_scaling] {row}", flush=True)
    # a fresh process, so its peak memory is its own
    with ProcessPoolExecutor(1, mp_context=get_context("spawn")) as pool:
        rows.insert(0, pool.submit(_in_memory, args.n, args.blocks, args.nz, Z0, args.max_iter,
                                   args.seed, test, args.loss).result())
    print(f"[dask_scaling] {rows[0]}", flush=True)
    harness.write_results(args.out, "dask_scaling",
                          report(rows, args, time.perf_counter() - start), rows, ("path",))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
