"""float32 kernel blocks in the SVM fast path: what single precision costs W(Z) and ∇W(Z).

The fast path whitens the kernel rows, Φ = K_XZ T with T = V Λ^(-½) from
K_ZZ + jitter·I = V Λ Vᵀ, so an error δ in an entry of K_XZ reaches Φ as up to
δ / √λ_min. Single precision rounds each kernel value by up to 2⁻²⁴ ≈ 6·10⁻⁸
relative; whether W(Z) and ∇W(Z) keep the 10⁻⁶ the fast path is held to
depends on λ_min, which this script measures beside the errors.

For each set and each Nz of ``--nz``, at the initial XVs (random training
points) and at the XVs after ``--fit-iter`` L-BFGS iterations, W and ∇W by
`SVMDualMarginal` (exact, tol 1e-9) with

- ``float64``: the kernel values as computed (the reference);
- ``K_XZ stored in float32``: K_XZ computed in double precision and rounded to
  single (what storing the N × Nz block in float32 would do), K_ZZ exact;
- ``every block in float32``: X and Z cast to float32 and every kernel block
  (K_XZ and K_ZZ) evaluated in single precision;

and the relative errors |ΔW| / W and ‖Δ∇W‖ / ‖∇W‖, the smallest eigenvalue of
K_ZZ + jitter·I relative to its largest, and the time of one K_XZ (N × Nz)
in each precision. The reference's own noise, W at the same XVs from another
warm start, is listed as the floor.

Sets (``--sets``): ``ringnorm`` and ``checkerboard`` (`sparsify.datasets`, N
points, (C, γ) chosen as benchmarks/scale.py chooses them) and any classification set in
``--data-dir`` (the training part of its first split, the first class against
the rest, C = 1 and γ = 1 / (d · Var X) unless ``--params`` names them). Usage::

    OPENBLAS_NUM_THREADS=1 python benchmarks/kernel_precision.py --data-dir ../shared/data \\
        --sets ringnorm checkerboard banana --out docs/results

writes ``kernel_precision.md`` and ``kernel_precision.csv`` under ``--out`` at the end.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).resolve().parent))
import harness
from scale import choose_params, make

from sparsify import SparseSVC
from sparsify.algorithms.svm.formulation import SVM
from sparsify.core.kernel_blocks import diagonal_scale
from sparsify.core.optimize import initial_expansion_vectors
from sparsify.kernels import RBF, Kernel
from sparsify.svm_dual import SVMDualMarginal

Array = NDArray[np.float64]
#: the generated sets, with scale.py's generators and (C, γ) selection
SYNTHETIC = ("ringnorm", "checkerboard")
VARIANTS = ("K_XZ stored in float32", "every block in float32")


@dataclass(frozen=True)
class SinglePrecision(Kernel):
    """``base`` with its values in single precision: K_XZ only (``every_block`` False,
    rounded from double) or every block (evaluated on float32 inputs)."""

    base: Kernel
    every_block: bool
    name = "single-precision"

    def __call__(self, A: Array, B: Array) -> Array:
        if self.every_block:
            return self.base(A.astype(np.float32), B.astype(np.float32)).astype(np.float64)
        K = self.base(A, B)
        # kernel_blocks asks for K_ZZ as kernel(Z, Z): that one stays exact
        return K if A is B else K.astype(np.float32).astype(np.float64)

    def diag(self, A: Array) -> Array:
        return self.base.diag(A)

    def vjp_z(self, X: Array, Z: Array, G: Array, K: Array | None = None) -> Array:
        return self.base.vjp_z(X, Z, G, K)


def load_problem(name: str, data_dir: Path | None, n: int, seed: int,
             params: dict[str, tuple[float, float]]) -> tuple[Array, Array, float, float]:
    """X, y in {-1, +1}, C and γ of a generated set or of a set in ``data_dir``."""
    if name in SYNTHETIC:
        X, y = make(name, n, seed)
        # --params where it names the set, else benchmarks/scale.py's cross-validation, on
        # fewer points for a small n (the pages of runs before its grid was widened used
        # C = 1, γ = 0.05807 on ringnorm and C = 1000, γ = 1.124 on checkerboard)
        C, gamma = params.get(name) or choose_params(name, seed, min(n, 3000))[:2]
    else:
        d = harness.load_set(data_dir, name)  # type: ignore[arg-type]
        train = d["train_idx"][0] if "train_idx" in d else np.arange(len(d["y"]))
        X, y = d["X"][train].astype(float), d["y"][train]
        C, gamma = 1.0, 1.0 / (X.shape[1] * X.var())
    C, gamma = params.get(name, (C, gamma))
    labels = np.asarray(y)
    return X, np.where(labels == np.unique(labels)[0], 1.0, -1.0), C, gamma


class BrokeDown(Exception):
    """The fast path could not solve a single-precision problem."""


class NoFallback:
    """The fast path's fallback here: instead of the generic path answering (and being
    measured in the fast path's place, slowly at large N), the variant is recorded as
    breaking the fast path down."""

    def evaluate(self, Z: Array, grad: bool = True) -> Any:
        raise BrokeDown


def measure(name: str, X: Array, y: Array, C: float, gamma: float, nz: int, where: str,
            Z: Array) -> list[dict[str, Any]]:
    """The reference and both single-precision variants at XVs Z."""
    kernel = RBF(gamma)
    ref = SVMDualMarginal(C, X, y, kernel, nz, formulation=SVM(C)).evaluate(Z)
    # the reference's noise: the same XVs solved again from another evaluation's solution
    other = SVMDualMarginal(C, X, y, kernel, nz, formulation=SVM(C))
    other.evaluate(Z + 1e-3 * np.std(X, axis=0))
    floor = other.evaluate(Z)
    jitter = 1e-10 * diagonal_scale(kernel, X)
    lam = np.linalg.eigvalsh(kernel(Z, Z) + jitter * np.eye(nz))
    base = {"set": name, "N": len(X), "Nz": nz, "XVs": where, "C": C, "gamma": gamma,
            "lambda_ratio": lam[0] / lam[-1], "W": ref.value}
    rows = [{**base, "variant": "float64, another warm start",
             "W_error": abs(floor.value - ref.value) / abs(ref.value),
             "grad_error": np.linalg.norm(floor.grad - ref.grad) / np.linalg.norm(ref.grad)}]
    for variant in VARIANTS:
        single = SinglePrecision(kernel, variant.startswith("every"))
        try:
            ev = SVMDualMarginal(C, X, y, single, nz, fallback=NoFallback(),
                                 formulation=SVM(C)).evaluate(Z)
        except BrokeDown:
            rows.append({**base, "variant": variant, "W_error": np.inf, "grad_error": np.inf})
            continue
        rows.append({**base, "variant": variant,
                     "W_error": abs(ev.value - ref.value) / abs(ref.value),
                     "grad_error": np.linalg.norm(ev.grad - ref.grad) / np.linalg.norm(ref.grad)})
    return rows


def block_seconds(X: Array, Z: Array, gamma: float, repeats: int = 5) -> dict[str, float]:
    """Median seconds of one K_XZ in double and in single precision."""
    out = {}
    for dtype in (np.float64, np.float32):
        A, B, times = X.astype(dtype), Z.astype(dtype), []
        for _ in range(repeats):
            start = time.perf_counter()
            RBF(gamma)(A, B)
            times.append(time.perf_counter() - start)
        out[np.dtype(dtype).name] = float(np.median(times))
    return out


def report(rows: list[dict[str, Any]], timing: list[dict[str, Any]], command: str,
           wall: float) -> str:
    lines = ["Relative errors against the double-precision evaluation (`SVMDualMarginal`, "
             "tol 1e-9); the first line of each group is the reference's own noise (the same "
             "XVs solved from another warm start). λ_min / λ_max: of K_ZZ + jitter·I; a "
             "rounding of K_XZ by 2⁻²⁴ reaches the whitened rows as up to 2⁻²⁴ / √λ_min "
             "(column *bound*, for λ_max ≈ Nz).", "",
             "| set | N | Nz | XVs | λ_min / λ_max | bound | variant | W rel. error | "
             "∇W rel. error |", "|---" * 9 + "|"]
    for r in rows:
        bound = 2.0**-24 / np.sqrt(r["lambda_ratio"] * r["Nz"])
        lines.append(f"| {r['set']} | {r['N']} | {r['Nz']} | {r['XVs']} | "
                     f"{r['lambda_ratio']:.1e} | {bound:.0e} | {r['variant']} | "
                     + (f"{r['W_error']:.1e} | {r['grad_error']:.1e} |"
                        if np.isfinite(r["W_error"]) else "broke down | broke down |"))
    by_variant = {v: [r for r in rows if r["variant"] == v] for v in VARIANTS}
    solved = {v: [r for r in rs if np.isfinite(r["W_error"])] for v, rs in by_variant.items()}
    worst = {v: max((r["grad_error"] for r in rs), default=np.nan) for v, rs in solved.items()}
    worst_w = {v: max((r["W_error"] for r in rs), default=np.nan) for v, rs in solved.items()}
    broke = {v: len(by_variant[v]) - len(solved[v]) for v in VARIANTS}
    lines += ["", "*broke down*: the fast path's solvers failed on the rounded problem (the "
              "generic path would have answered; it is not run here).", "",
              "Largest errors where the fast path solved: " + "; ".join(
                  f"{v}: W {worst_w[v]:.1e}, ∇W {worst[v]:.1e}"
                  + (f" (broke down at {broke[v]})" if broke[v] else "") for v in VARIANTS)
        + f" (the fast path's tests hold W and ∇W to 1e-6 of the generic path's: "
        f"{'within' if max(worst.values()) <= 1e-6 and not any(broke.values()) else 'beyond'}"
        " it).", "",
        "## Time of one K_XZ (median of 5), and peak memory", "",
        "Peak: Linux VmHWM above what the data took, over the fit, the evaluations and the "
        "timing of one Nz.", "",
        "| set | N | Nz | float64 ms | float32 ms | ratio | peak MB |",
        "|---|---|---|---|---|---|---|"]
    for t in timing:
        lines.append(f"| {t['set']} | {t['N']} | {t['Nz']} | {1e3 * t['float64']:.2f} | "
                     f"{1e3 * t['float32']:.2f} | {t['float64'] / t['float32']:.2f} | "
                     f"{t['peak_mb']:.0f} |")
    sets = " and ".join(dict.fromkeys(r["set"] for r in rows))
    shows = ("How far the SVM fast path's W(Z) and ∇W(Z) move when the kernel blocks are "
             f"stored in single precision, on {sets} at the initial and at fitted XVs, "
             "against the double-precision evaluation's own noise; and what float32 saves "
             "in the time of one K_XZ.")
    return harness.result_page(
        "float32 kernel blocks in the SVM fast path", shows, command, lines,
        ["Produced by `benchmarks/kernel_precision.py`. " + harness.provenance(wall)])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, default=None,
                        help="folder in the ../shared/data format (for sets not generated)")
    parser.add_argument("--out", type=Path, default=Path("docs/results"))
    parser.add_argument("--sets", nargs="+", default=["ringnorm", "checkerboard"],
                        help="ringnorm, checkerboard or classification sets in --data-dir")
    parser.add_argument("--params", nargs="*", type=harness.parse_params, default=[],
                        metavar="SET=C:GAMMA")
    parser.add_argument("--n", type=int, default=10_000, help="points of a generated set")
    parser.add_argument("--nz", type=int, nargs="+", default=[50, 100, 200])
    parser.add_argument("--fit-iter", type=int, default=30)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    files = [s for s in args.sets if s not in SYNTHETIC]
    if files:
        if args.data_dir is None:
            parser.error(f"--sets {' '.join(files)} need --data-dir (only ringnorm and "
                         "checkerboard are generated).")
        harness.check_datasets(parser, args.data_dir, files)
    params = harness.check_params(parser, args.params, args.sets)
    command = "OPENBLAS_NUM_THREADS=1 python " + " ".join(
        [sys.argv[0], *(argv if argv is not None else sys.argv[1:])])
    start = time.perf_counter()
    rows: list[dict[str, Any]] = []
    timing: list[dict[str, Any]] = []
    with threadpool_limits(1), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in args.sets:
            X, y, C, gamma = load_problem(name, args.data_dir, args.n, args.seed, params)
            for nz in args.nz:
                if nz >= len(np.unique(X, axis=0)):
                    continue
                base = harness.reset_peak_rss()  # the data are in memory: what the Nz adds
                Z0 = initial_expansion_vectors(X, nz, "random", args.seed)
                fitted = SparseSVC(nz, C=C, gamma=gamma, max_iter=args.fit_iter,
                                   n_iter_no_change=None, random_state=args.seed).fit(X, y)
                for where, Z in (("initial", Z0),
                                 (f"after {args.fit_iter} iterations",
                                  fitted.expansion_vectors_)):
                    rows += measure(name, X, y, C, gamma, nz, where, Z)
                timing.append({"set": name, "N": len(X), "Nz": nz,
                               **block_seconds(X, Z0, gamma),
                               "peak_mb": (harness.peak_rss() - base) / 1024})
                print(f"[kernel_precision] {name} Nz={nz} done", flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    harness.write_results(args.out, "kernel_precision",
                          report(rows, timing, command, time.perf_counter() - start), rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
