"""SLMC beside its modern peer: a variational GP classifier with M = Nz learned inducing points.

Both methods predict with a fixed, small number of kernel evaluations per point
and both move their basis points through input space by gradient: SLMC
(``SparseSVC``, the exact fast path) moves its Nz expansion vectors with L-BFGS
on the marginal function W(Z); the sparse variational GP (Titsias 2009;
Hensman, Matthews & Ghahramani 2015, in GPyTorch) moves its M = Nz inducing
points with Adam on the ELBO. The full SVM (scikit-learn ``SVC``) is the
reference. Two data sets, side by side in one run:

- Banana split 1, (C, γ) = the cross-validated values of docs/results/banana.md
  (``BANANA_C``, ``BANANA_GAMMA`` of benchmarks/performance.py),
  Nz = round(0.1 × NSV of that SVC on the training part);
- USPS digits 3 against 8 (X scaled 2X − 1 by ``load_usps``), the paper's
  C = 10, γ = 1/128, Nz = round(0.1 × NSV of the binary SVC).

For every seed of ``--repeats``: ``SparseSVC(Nz, C, gamma, random_state=seed)``
and the GP started from the same Nz training points as that SLMC start (a
random subset of the distinct training points, drawn as ``SparseSVC`` draws
it), trained twice: with the inducing points learned and with them kept at
their initial places (what moving them buys). The GP: ``ApproximateGP`` with
``VariationalStrategy(learn_inducing_locations=...)``,
``CholeskyVariationalDistribution``, ``ConstantMean``, ``ScaleKernel(RBFKernel())``
with the lengthscale initialised to 1/sqrt(2γ) so that it starts as SLMC's
kernel exp(−γ‖x − x'‖²) (lengthscale, outputscale and mean are then learned
with the rest), ``BernoulliLikelihood`` (probit), labels mapped to {0, 1};
full-batch Adam (``--gp-lr``, ``--gp-iters`` iterations, no early stop), float64,
one torch thread, BLAS limited to one thread. The ELBO (per training point) is
recorded at every iteration; its change over the last 10 % of the iterations
says whether the fixed budget converged.

Measured per method: kernel evaluations per prediction (Nz, M or NSV), fit
seconds (median over seeds), prediction seconds on the whole test set (median
of ``--predict-repeats`` calls after one warm-up call, median over seeds) and
test error (mean ± std over seeds).

Needs torch and gpytorch (``pip install torch gpytorch``), kept out of the
project's own dependencies. Usage, from the repository root::

    python benchmarks/gp_peer.py --data-dir ../shared/data --out docs/results --repeats 5

writes ``gp_peer.md`` (command, machine, versions, tables, reading) and
``gp_peer.csv`` (one row per fit), each atomically at the end of the run.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray
from sklearn.svm import SVC
from threadpoolctl import threadpool_limits

import sparsify
from sparsify import SparseSVC
from sparsify.core.optimize import initial_expansion_vectors

sys.path.insert(0, str(Path(__file__).resolve().parent))
import harness
from performance import BANANA_C, BANANA_GAMMA, USPS_C, USPS_GAMMA, load_usps

Array = NDArray[np.float64]
RATIO = 0.1  # Nz = round(RATIO × NSV of the full SVM)
USPS_DIGITS = (3, 8)
SLMC_MAX_ITER = SparseSVC().max_iter
METHODS = ("SVC (full)", "SLMC", "GP, inducing points learned", "GP, inducing points fixed")


@dataclass
class DataSet:
    name: str
    X: Array
    y: NDArray[Any]
    Xt: Array
    yt: NDArray[Any]
    C: float
    gamma: float
    params: str


def _require_gp() -> tuple[Any, Any]:
    """Import torch and gpytorch, or stop with the command that installs them."""
    try:
        import gpytorch
        import torch
    except ImportError as exc:
        raise SystemExit(
            f"benchmarks/gp_peer.py needs torch and gpytorch ({exc}); install them into the "
            "environment that runs it: pip install torch gpytorch"
        ) from None
    return torch, gpytorch


def load_data(data_dir: Path) -> list[DataSet]:
    d = harness.load_set(data_dir, "banana")
    tr, te = d["train_idx"][0], d["test_idx"][0]
    banana = DataSet("Banana split 1", d["X"][tr].astype(float), d["y"][tr],
                     d["X"][te].astype(float), d["y"][te], BANANA_C, BANANA_GAMMA,
                     "C = γ = 10^0.5 (cross-validated, docs/results/banana.md)")
    X, y, Xt, yt = load_usps(data_dir)
    keep, keep_t = np.isin(y, USPS_DIGITS), np.isin(yt, USPS_DIGITS)
    usps = DataSet("USPS 3 vs 8", X[keep], y[keep], Xt[keep_t], yt[keep_t], USPS_C, USPS_GAMMA,
                   "C = 10, γ = 1/128 (the paper's §5.1), X scaled 2X − 1")
    return [banana, usps]


def _predict_seconds(fn: Callable[[], Any], repeats: int) -> tuple[Any, float, float]:
    """Output of one warm-up call, its seconds, and the median seconds of ``repeats`` more."""
    out, first = harness.timed(fn)
    return out, first, float(np.median([harness.timed(fn)[1] for _ in range(repeats)]))


def slmc_start(X: Array, nz: int, seed: int) -> Array:
    """The initial XVs of ``SparseSVC(nz, random_state=seed)`` on a binary problem.

    ``SparseSVC`` draws one seed per (problem, start) from ``random_state`` and
    passes it to ``initial_expansion_vectors``; ``run`` checks the result
    against a ``max_iter=0`` fit.
    """
    start_seed = np.random.RandomState(seed).randint(np.iinfo(np.int32).max, size=(1, 1))[0, 0]
    return initial_expansion_vectors(X, nz, "random", int(start_seed))


def fit_gp(torch: Any, gpytorch: Any, data: DataSet, Z0: Array, learn: bool, iters: int,
           lr: float, seed: int, predict_repeats: int, check: int) -> dict[str, Any]:
    """Train the variational GP classifier from inducing points ``Z0``; time fit and prediction.

    The test error is also taken after ``check`` iterations (when ``0 < check < iters``),
    outside the fit time, to show whether the last iterations still change it.
    """
    classes = np.unique(data.y)
    X = torch.from_numpy(np.ascontiguousarray(data.X, dtype=np.float64))
    Xt = torch.from_numpy(np.ascontiguousarray(data.Xt, dtype=np.float64))
    t = torch.from_numpy((data.y == classes[1]).astype(np.float64))

    class GPClassifier(gpytorch.models.ApproximateGP):  # type: ignore[misc]
        def __init__(self, inducing: Any) -> None:
            dist = gpytorch.variational.CholeskyVariationalDistribution(inducing.size(0))
            strategy = gpytorch.variational.VariationalStrategy(
                self, inducing, dist, learn_inducing_locations=learn)
            super().__init__(strategy)
            self.mean_module = gpytorch.means.ConstantMean()
            self.covar_module = gpytorch.kernels.ScaleKernel(gpytorch.kernels.RBFKernel())

        def forward(self, x: Any) -> Any:
            return gpytorch.distributions.MultivariateNormal(self.mean_module(x),
                                                             self.covar_module(x))

    def predict_with(model: Any, likelihood: Any) -> NDArray[Any]:
        model.eval()
        likelihood.eval()
        with torch.no_grad():
            prob = likelihood(model(Xt)).mean.numpy()
        return np.where(prob > 0.5, classes[1], classes[0])

    checked: dict[str, float] = {}

    def train() -> tuple[Any, Any, list[float]]:
        torch.manual_seed(seed)
        model = GPClassifier(torch.from_numpy(Z0.copy())).double()
        model.covar_module.base_kernel.lengthscale = 1.0 / np.sqrt(2.0 * data.gamma)
        likelihood = gpytorch.likelihoods.BernoulliLikelihood().double()
        model.train()
        likelihood.train()
        optimizer = torch.optim.Adam(
            [*model.parameters(), *likelihood.parameters()], lr=lr)
        mll = gpytorch.mlls.VariationalELBO(likelihood, model, num_data=len(t))
        elbo = []
        for _ in range(iters):
            optimizer.zero_grad()
            loss = -mll(model(X), t)
            loss.backward()
            optimizer.step()
            elbo.append(-float(loss.item()))
            if len(elbo) == check < iters:
                t0 = time.perf_counter()
                checked["error"] = float(np.mean(predict_with(model, likelihood) != data.yt))
                model.train()
                likelihood.train()
                checked["seconds"] = time.perf_counter() - t0
        return model, likelihood, elbo

    (model, likelihood, elbo), seconds = harness.timed(train)
    pred, first, predict_s = _predict_seconds(lambda: predict_with(model, likelihood),
                                              predict_repeats)
    tail = max(1, iters // 10)
    Z = model.variational_strategy.inducing_points.detach().numpy()
    return {
        "seconds": seconds - checked.get("seconds", 0.0), "predict_s": predict_s,
        "predict_first_s": first, "error": float(np.mean(pred != data.yt)), "n_iter": iters,
        "check_iter": check if "error" in checked else "",
        "error_at_check": checked.get("error", ""),
        "elbo": elbo[-1], "elbo_change_last10pct": elbo[-1] - elbo[-1 - tail],
        "elbo_change_last_step": elbo[-1] - elbo[-2],
        "lengthscale": float(model.covar_module.base_kernel.lengthscale.item()),
        "outputscale": float(model.covar_module.outputscale.item()),
        "inducing_moved": float(np.sqrt(np.mean(np.sum((Z - Z0) ** 2, axis=1)))),
    }


def run(data: DataSet, args: argparse.Namespace, torch: Any, gpytorch: Any) -> list[dict[str, Any]]:
    base = {"data": data.name, "N": len(data.X), "N_test": len(data.Xt), "C": data.C,
            "gamma": data.gamma}
    svc, t_svc = harness.timed(lambda: SVC(C=data.C, gamma=data.gamma).fit(data.X, data.y))
    nsv = int(svc.n_support_.sum())
    nz = max(1, round(RATIO * nsv))
    pred, first, predict_s = _predict_seconds(lambda: svc.predict(data.Xt), args.predict_repeats)
    rows = [{**base, "method": METHODS[0], "seed": "", "kernel_evals": nsv, "seconds": t_svc,
             "predict_s": predict_s, "predict_first_s": first,
             "error": float(np.mean(pred != data.yt))}]
    # The fast path's first fit in a process pays one-off loads (its C extension, numpy's and
    # scipy's first calls): a 1-iteration fit does that outside the timings.
    SparseSVC(nz, C=data.C, gamma=data.gamma, max_iter=1, random_state=0).fit(data.X, data.y)
    for seed in range(args.repeats):
        Z0 = slmc_start(data.X, nz, seed)
        check = SparseSVC(nz, C=data.C, gamma=data.gamma, max_iter=0, random_state=seed)
        same_start = bool(np.array_equal(check.fit(data.X, data.y).expansion_vectors_, Z0))
        clf = SparseSVC(nz, C=data.C, gamma=data.gamma, random_state=seed)
        _, seconds = harness.timed(lambda clf=clf: clf.fit(data.X, data.y))
        pred, first, predict_s = _predict_seconds(lambda clf=clf: clf.predict(data.Xt),
                                                  args.predict_repeats)
        rows.append({**base, "method": METHODS[1], "seed": seed, "kernel_evals": nz,
                     "seconds": seconds, "predict_s": predict_s, "predict_first_s": first,
                     "error": float(np.mean(pred != data.yt)), "n_iter": int(clf.n_iter_[0]),
                     "objective": float(clf.objective_[0]),
                     "inducing_moved": float(np.sqrt(np.mean(np.sum(
                         (clf.expansion_vectors_ - Z0) ** 2, axis=1))))})
        for method, learn in ((METHODS[2], True), (METHODS[3], False)):
            res = fit_gp(torch, gpytorch, data, Z0, learn, args.gp_iters, args.gp_lr, seed,
                         args.predict_repeats, args.gp_check)
            rows.append({**base, "method": method, "seed": seed, "kernel_evals": nz,
                         "same_start_as_slmc": same_start, **res})
        print(f"[gp_peer] {data.name} seed {seed}: " + ", ".join(
            f"{r['method']} {100 * r['error']:.2f} % in {r['seconds']:.2f} s"
            for r in rows[-3:]), flush=True)
    return rows


def _stats(rows: list[dict[str, Any]], key: str) -> tuple[float, float, float]:
    v = np.array([r[key] for r in rows], dtype=float)
    return float(np.median(v)), float(np.mean(v)), float(np.std(v))


def report(rows: list[dict[str, Any]], data_sets: list[DataSet], args: argparse.Namespace,
           wall: float, torch: Any, gpytorch: Any) -> str:
    machine = (f"Produced by `benchmarks/gp_peer.py`, sparsify {sparsify.__version__} "
               f"(imported from `{Path(sparsify.__file__).parent}`), torch {torch.__version__}, "
               f"gpytorch {gpytorch.__version__}. "
               + harness.provenance(wall, "one torch thread, BLAS limited to 1 thread"))
    lines = [
        f"Nz = M = round({RATIO} × NSV of the full SVM). SLMC: `SparseSVC(Nz, C, gamma, "
        "random_state=seed)`, the exact fast path, L-BFGS to its own stopping rule (a "
        "1-iteration fit first, untimed, loads its compiled parts). GP: "
        "`ApproximateGP`, `VariationalStrategy` (whitened), `CholeskyVariationalDistribution`, "
        "`ConstantMean`, `ScaleKernel(RBFKernel())` with the lengthscale started at 1/sqrt(2γ) "
        "(then learned, as are the outputscale and the mean), `BernoulliLikelihood` (probit), "
        f"full-batch Adam, lr {args.gp_lr}, exactly {args.gp_iters} iterations, float64; its M "
        "inducing points start at the same training points as that seed's SLMC XVs. Fit and "
        f"predict seconds are medians over {args.repeats} seeds (predict: the whole test set, "
        f"median of {args.predict_repeats} calls after a warm-up call); error is mean ± std "
        "over the seeds. ELBO per training point; Δ ELBO = its change over the last 10 % of "
        "the iterations (median over seeds); the GP's test error is also taken after "
        f"{args.gp_check} iterations (outside the fit time) to show what the last ones change.",
        "",
    ]
    check = (f"iteration {args.gp_check}" if 0 < args.gp_check < args.gp_iters
             else "an earlier iteration")
    for data in data_sets:
        sel = [r for r in rows if r["data"] == data.name]
        lines += [f"## {data.name}", "",
                  f"N = {sel[0]['N']} training, {sel[0]['N_test']} test points; {data.params}.",
                  "",
                  "| method | kernel evaluations per prediction | fit s | predict s | "
                  f"test error | iterations | final ELBO | Δ ELBO | test error at {check} |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for method in METHODS:
            mr = [r for r in sel if r["method"] == method]
            fit, predict = _stats(mr, "seconds")[0], _stats(mr, "predict_s")[0]
            _, err, err_sd = _stats(mr, "error")
            iters = (f"{np.median([r['n_iter'] for r in mr]):.0f}" if "n_iter" in mr[0]
                     else "—")
            elbo = (f"{_stats(mr, 'elbo')[0]:.4f}" if "elbo" in mr[0] else "—")
            delta = (f"{_stats(mr, 'elbo_change_last10pct')[0]:+.1e}" if "elbo" in mr[0]
                     else "—")
            error = (f"{100 * err:.2f} %" if method == METHODS[0]
                     else f"{100 * err:.2f} ± {100 * err_sd:.2f} %")
            early = "—"
            if mr[0].get("error_at_check", "") != "":
                _, e, sd = _stats(mr, "error_at_check")
                early = f"{100 * e:.2f} ± {100 * sd:.2f} %"
            lines.append(f"| {method} | {mr[0]['kernel_evals']} | {fit:.3f} | {predict:.4f} | "
                         f"{error} | {iters} | {elbo} | {delta} | {early} |")
        gp = [r for r in sel if r["method"] == METHODS[2]]
        slmc = [r for r in sel if r["method"] == METHODS[1]]
        lines += ["",
                  f"GP (learned): lengthscale {_stats(gp, 'lengthscale')[0]:.3g} (started at "
                  f"{1 / np.sqrt(2 * data.gamma):.3g}), outputscale "
                  f"{_stats(gp, 'outputscale')[0]:.3g}; RMS distance moved by a basis point: "
                  f"GP {_stats(gp, 'inducing_moved')[0]:.3g}, SLMC "
                  f"{_stats(slmc, 'inducing_moved')[0]:.3g} (medians). Starts identical to "
                  f"SLMC's: {all(r['same_start_as_slmc'] for r in gp)}. SLMC stopped at its "
                  f"iteration limit ({SLMC_MAX_ITER}) on "
                  f"{sum(r['n_iter'] >= SLMC_MAX_ITER for r in slmc)} of {len(slmc)} seeds.",
                  ""]
    shows = ("SLMC beside a sparse variational GP classifier (GPyTorch) with as many inducing "
             "points, learned or fixed, as SLMC has XVs, and the full SVC, on "
             + " and ".join(d.name for d in data_sets)
             + ": test error, fit and prediction time at the same number of kernel evaluations "
             "per prediction, and how far the fixed Adam budget has converged.")
    return harness.result_page("SLMC and a sparse variational GP classifier (GPyTorch)", shows,
                               harness.command(__file__),
                               [*lines, *reading(rows, data_sets, args)], [machine])


def reading(rows: list[dict[str, Any]], data_sets: list[DataSet],
            args: argparse.Namespace) -> list[str]:
    """The reading of the tables, its figures filled in from the run."""

    def err(sel: list[dict[str, Any]], key: str = "error") -> str:
        _, mean, sd = _stats(sel, key)
        return f"{100 * mean:.2f} ± {100 * sd:.2f} %"

    acc, moved, cost, conv = [], [], [], []
    for data in data_sets:
        by = {m: [r for r in rows if r["data"] == data.name and r["method"] == m]
              for m in METHODS}
        svc, slmc, gp, fixed = (by[m] for m in METHODS)
        nz = slmc[0]["kernel_evals"]
        gap = 100 * (_stats(slmc, "error")[1] - _stats(gp, "error")[1])
        acc.append(f"{data.name} (Nz = M = {nz}): SLMC {err(slmc)}, GP {err(gp)} "
                   f"(SLMC − GP {gap:+.2f} points), SVC {100 * svc[0]['error']:.2f} % with "
                   f"{svc[0]['kernel_evals']}")
        moved.append(f"{data.name} {err(fixed)} → {err(gp)}, ELBO "
                     f"{_stats(fixed, 'elbo')[0]:.3f} → {_stats(gp, 'elbo')[0]:.3f}")
        fit = _stats(gp, "seconds")[0] / _stats(slmc, "seconds")[0]
        pred = _stats(gp, "predict_s")[0] / _stats(slmc, "predict_s")[0]
        cost.append(f"{data.name}: fit {fit:.1f}×, predict {pred:.1f}×")
        line = (f"{data.name}: Δ ELBO over the last 10 % "
                f"{_stats(gp, 'elbo_change_last10pct')[0]:+.1e} (learned), "
                f"{_stats(fixed, 'elbo_change_last10pct')[0]:+.1e} (fixed)")
        if gp[0].get("error_at_check", "") != "":
            line += (f"; test error after {args.gp_check} iterations {err(gp, 'error_at_check')}"
                     f" against {err(gp)} after {args.gp_iters}")
        conv.append(line)
    usps = next((d for d in data_sets if d.name.startswith("USPS")), None)
    one = f" (USPS 3 vs 8 has {len(usps.Xt)} test points: one error is " \
          f"{100 / len(usps.Xt):.2f} points)" if usps else ""
    return [
        "## Reading", "",
        f"- Same number of kernel evaluations per prediction: {'; '.join(acc)} kernel "
        f"evaluations; mean ± std over seeds{one}.",
        f"- What moving the inducing points buys the GP (fixed → learned, same starts, test "
        f"error and final ELBO): {'; '.join(moved)}.",
        f"- Cost, GP time over SLMC time (medians, same process; > 1: the GP is slower): "
        f"{'; '.join(cost)}. Both predict with "
        "the same number of kernel evaluations; the GP's prediction also computes the "
        "predictive variance through GPyTorch's layers, and its fit is a fixed number of "
        "full-batch Adam steps, not a convergence test.",
        f"- Convergence of the fixed Adam budget: {'; '.join(conv)}.",
        "- Not like for like: the GP learns its kernel's lengthscale and outputscale by the "
        "ELBO under a probit likelihood, while SLMC keeps the SVM's (C, γ) and hinge loss; "
        "the GP also gives class probabilities, which SLMC does not.", "",
    ]


def main(argv: list[str] | None = None) -> int:
    parser = harness.benchmark_parser(__doc__,
                                      "folder in the ../shared/data format (banana/, usps/)")
    parser.add_argument("--repeats", type=int, default=5, help="seeds per method and data set")
    parser.add_argument("--gp-iters", type=int, default=1000,
                        help="full-batch Adam iterations of each GP fit (fixed, no early stop)")
    parser.add_argument("--gp-lr", type=float, default=0.05, help="Adam learning rate")
    parser.add_argument("--gp-check", type=int, default=300,
                        help="also take the GP's test error after this many iterations "
                             "(0: don't)")
    parser.add_argument("--predict-repeats", type=int, default=5,
                        help="timed prediction calls per model (after one warm-up call)")
    args = parser.parse_args(argv)
    if args.repeats < 1 or args.gp_iters < 2 or args.predict_repeats < 1:
        parser.error("--repeats and --predict-repeats must be ≥ 1, --gp-iters ≥ 2")
    torch, gpytorch = _require_gp()
    harness.check_data_dir(parser, args.data_dir, ["banana", "usps"])
    args.out.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(1)
    start = time.perf_counter()
    data_sets = load_data(args.data_dir)
    rows: list[dict[str, Any]] = []
    with threadpool_limits(1):
        for data in data_sets:
            rows += run(data, args, torch, gpytorch)
    text = report(rows, data_sets, args, time.perf_counter() - start, torch, gpytorch)
    harness.write_results(args.out, "gp_peer", text, rows, ("data", "method", "seed"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
