"""SLMC at scale beside its peers: a9a, ringnorm and checkerboard up to a million points, moons.

Peers side by side in one run, with the same (C, γ) and the same budget M = Nz where
they have one: the full `SVC` (where it finishes within ``--svc-timeout``), `Nystroem(M)` +
`LinearSVC` (LIBLINEAR's primal solver, squared hinge, scikit-learn's defaults) at M and
5 M, and, with ``--gp-python``, a sparse variational GP with M learned inducing points
trained by minibatch (benchmarks/svgp_peer.py, run in that separate environment).

Parts (``--parts``):

- ``a9a``: the full training set of ../shared/data/a9a (32 561 × 123), C = 8, γ = 2⁻⁵
  (docs/results/a9a.md's cross-validated values), Nz = M = 100;
- ``timing``: `sparsify.datasets.make_ringnorm` (20-D) and `make_checkerboard` (2-D, 4 × 4,
  no label noise) at N = 10⁴ … 10⁶, Nz = 100, 200 and 500 (``--nz``): fit time, peak
  memory, test error on ``--test-n`` (10⁵) fresh points, beside Nystroem at M and 5 M and the Bayes
  error; the slope of log fit time against log N from N = 10⁵ on;
- ``value``: N = 10⁵ and 10⁶ (``--value-sizes``) at the small budgets M = 16 and 32
  (``--value-budgets``),
  where the XVs are put matters most; besides the peers, SLMC from k-means centres and
  SLMC's own problem on fixed random XVs at M and 5 M (Nystroem's landmarks with the hinge
  loss, solved exactly: the squared hinge of LinearSVC is another loss, whose test error
  on the noiseless checkerboard is lower than the hinge's at equal XVs), and the full SVC
  once per N (where it finishes within ``--svc-timeout``: what the hinge loss reaches with
  every training point a candidate SV), on ``--test-n`` fresh points;
- ``moons``: make_moons(5000, noise = 0.3), Nz = 10 … 500, 5 seeds: does every fit succeed.

Each fit of ``timing`` and ``value`` records which test points it misclassifies
(``OUT/wrong/``), so that two fits on the same test set are compared paired
(McNemar's test, `_z`): near the Bayes error both err mostly on the same points, and the
paired difference is resolved by a far smaller test set than two independent ones.

(C, γ) of ringnorm and checkerboard: 3-fold cross-validation of the full SVC on 3000 points,
once per set, over C ∈ {1, 10, 100, 1000} and γ ∈ {1/3, 1, 3} × 1/(d · Var X). Every fit of
``a9a``, ``timing`` and ``value`` runs in a fresh process (peak memory = Linux VmHWM above
what the data took), with a timeout. Usage::

    OPENBLAS_NUM_THREADS=1 python benchmarks/scale.py --data-dir ../shared/data \\
        --out docs/results --gp-python /path/to/gp-env/bin/python

writes ``scale.md`` and ``scale.csv`` under ``--out`` at the end of the run; ``--quick``
runs tiny sizes (the smoke test).
"""

from __future__ import annotations

import argparse
import csv
import functools
import io
import json
import os
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.datasets import make_moons
from sklearn.kernel_approximation import Nystroem
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.svm import SVC, LinearSVC
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).resolve().parent))
import harness

from sparsify import SparseSVC
from sparsify.datasets import (
    make_checkerboard,
    make_ringnorm,
    ringnorm_bayes_error,
    ringnorm_bayes_rule,
)

PARTS = ("a9a", "timing", "value", "moons")
SETS = ("ringnorm", "checkerboard")
SIZES = [10_000, 30_000, 100_000, 300_000, 1_000_000]
#: Nystroem's feature matrix and LinearSVC's copy of it must fit in this
NYSTROEM_LIMIT_BYTES = 8 * 2**30
#: the SparseSVC fits by name: their arguments beyond (Nz, C, γ, seed)
SPARSE: dict[str, dict[str, Any]] = {
    "SLMC": {}, "SLMC k-means": {"init": "kmeans"}, "random XVs": {"max_iter": 0},
    "SLMC squared hinge": {"loss": "squared_hinge"},
    "SLMC squared hinge k-means": {"loss": "squared_hinge", "init": "kmeans"}}
#: the value part's fits, in table order: (method, M as a multiple of the budget, XVs)
VALUE_FITS = (("SLMC", 1, "optimised, from a random subset (the default)"),
              ("SLMC k-means", 1, "optimised, from k-means centres"),
              ("SLMC squared hinge", 1, "optimised, from a random subset (LinearSVC's loss)"),
              ("SLMC squared hinge k-means", 1, "optimised, from k-means centres (LinearSVC's "
               "loss)"),
              ("random XVs", 1, "a random subset, fixed (SLMC's problem)"),
              ("random XVs", 5, "a random subset, fixed (SLMC's problem)"),
              ("Nystroem", 1, "a random subset (LinearSVC, squared hinge)"),
              ("Nystroem", 5, "a random subset (LinearSVC, squared hinge)"),
              ("SVGP", 1, "learned inducing points (variational GP)"))
#: the fits made at the budget M only: their M are the budgets
ONE_BUDGET = {m for m, _, _ in VALUE_FITS} - {m for m, k, _ in VALUE_FITS if k != 1}
#: the value part's full SVM, once per N (its row's M is 0): what SLMC's loss reaches with
#: every training point a candidate SV, where it finishes within ``--svc-timeout``
FULL_SVM = ("SVC", "the full SVM: SLMC's problem with every training point a candidate")


def make(kind: str, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    if kind == "ringnorm":
        return make_ringnorm(n, random_state=seed)
    return make_checkerboard(n, random_state=seed)


def _load_a9a(data_dir: Path) -> tuple[np.ndarray, ...]:
    with np.load(data_dir / "a9a" / "a9a.npz", allow_pickle=False) as z:
        X, y, train, test = z["X"], z["y"], z["train_idx"][0], z["test_idx"][0]
    return X[train], y[train], X[test], y[test]


def _data(spec: tuple[Any, ...]) -> tuple[np.ndarray, ...]:
    """(X, y, X_test, y_test) from ("a9a", data_dir) or (kind, n, test_n, seed)."""
    if spec[0] == "a9a":
        return _load_a9a(Path(spec[1]))
    kind, n, test_n, seed = spec
    return (*make(kind, n, seed), *make(kind, test_n, seed + 1))


def _fit(method: str, spec: tuple[Any, ...], m: int, C: float, gamma: float,
         seed: int) -> dict[str, Any]:
    """One fit in this (fresh) process: seconds, test error and peak memory.

    ``method``: "SLMC" (its default start, a random subset), "SLMC k-means" (k-means
    centres as the start), "random XVs" (SLMC's own problem, solved exactly, on a random
    subset of M training points kept fixed: Nystroem's landmarks with SLMC's hinge loss
    and unpenalised bias, so beside SLMC it measures what moving the XVs buys), "SVC", or
    "Nystroem" (+ LinearSVC).
    """
    X, y, X_test, y_test = _data(spec)
    base = harness.reset_peak_rss()
    with threadpool_limits(1), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        start = time.perf_counter()
        if method in SPARSE:
            model: Any = SparseSVC(n_expansion=m, C=C, gamma=gamma, random_state=seed,
                                   **SPARSE[method]).fit(X, y)
            extra = {"n_iter": int(model.n_iter_[0])}
        elif method == "SVC":
            model = SVC(C=C, gamma=gamma).fit(X, y)
            extra = {"n_support": int(model.n_support_.sum())}
        else:
            model = make_pipeline(Nystroem(gamma=gamma, n_components=m, random_state=seed),
                                  LinearSVC(C=C, dual=False)).fit(X, y)
            extra = {}
        seconds = time.perf_counter() - start
    peak = (harness.peak_rss() - base) / 1024
    wrong = np.flatnonzero(model.predict(X_test) != y_test).astype(np.int32)
    return {"method": method, "M": m, "seconds": seconds, "error": len(wrong) / len(y_test),
            "peak_mb": peak, "test_n": len(y_test), "warnings": len(caught), "wrong": wrong,
            **extra}


def _svgp(gp_python: str | None, spec: tuple[Any, ...], m: int, gamma: float, epochs: int,
          seed: int, timeout: float) -> dict[str, Any]:
    """The GP peer in its own environment: its accuracy after each epoch, with the time."""
    if gp_python is None:
        return {"method": "SVGP", "M": m, "note": "not run (no --gp-python)"}
    X, y, X_test, y_test = _data(spec)
    with tempfile.TemporaryDirectory() as tmp:
        data, out = Path(tmp) / "data.npz", Path(tmp) / "out.json"
        np.savez(data, X=X, y=np.where(y > 0, 1, -1), X_test=X_test,
                 y_test=np.where(y_test > 0, 1, -1), M=m, gamma=gamma, epochs=epochs,
                 batch=1024, lr=0.01, seed=seed)
        env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
        try:
            done = subprocess.run([gp_python, str(Path(__file__).parent / "svgp_peer.py"),
                                   str(data), str(out)], capture_output=True, text=True,
                                  timeout=timeout, env=env)
        except subprocess.TimeoutExpired:
            return {"method": "SVGP", "M": m, "note": f"over {timeout:.0f} s"}
        if done.returncode != 0:
            return {"method": "SVGP", "M": m, "note": done.stderr.strip()[-300:]}
        trace = json.loads(out.read_text())
        wrong = np.load(out.with_suffix(".wrong.npy"))
    last = trace[-1]
    return {"method": "SVGP", "M": m, "seconds": last["seconds"], "error": 1 - last["accuracy"],
            "test_n": len(y_test), "epochs": len(trace), "trace": json.dumps(trace),
            "wrong": wrong}


def _time_to(trace_json: str, error: float) -> str:
    """When a peer's per-epoch trace first reached ``error`` (or did not)."""
    for point in json.loads(trace_json):
        if 1 - point["accuracy"] <= error:
            return f"after {point['seconds']:.1f} s (epoch {point['epoch']})"
    return "never (within its epochs)"


#: The grid of `choose_params` (γ in units of 1/(d·Var X)). The runs of docs/results/scale.md
#: searched C ∈ {1, 10, 100, 1000} × γ ∈ {1/3, 1, 3}, and both sets' choices lay on its edges
#: (ringnorm C = 1 and γ = 3, checkerboard C = 1000); their rows have no "cv" field.
CV_CS = [0.01, 0.1, 1.0, 10.0, 100.0, 1000.0, 10_000.0]
CV_GAMMAS = {"1/27": 1 / 27, "1/9": 1 / 9, "1/3": 1 / 3, "1": 1.0, "3": 3.0, "9": 9.0}
#: How the rows without a "cv" field chose (C, γ)
EARLIER_CV = ("3-fold CV of the full SVC on 3000 points over C ∈ {1, 10, 100, 1000} × "
              "γ ∈ {1/3, 1, 3}/(d·Var X); C and γ on the grid's edges")


def choose_params(kind: str, seed: int, n: int = 3000, cs: list[float] | None = None
                  ) -> tuple[float, float, str]:
    """(C, γ) by 3-fold CV of the full SVC on ``n`` fresh points over ``cs`` (default
    `CV_CS`) × `CV_GAMMAS`, and how (edges named)."""
    cs = CV_CS if cs is None else sorted(cs)
    X, y = make(kind, n, seed + 100)
    scale = 1.0 / (X.shape[1] * X.var())
    grid = {"C": cs, "gamma": [f * scale for f in CV_GAMMAS.values()]}
    search = GridSearchCV(SVC(), grid, cv=3).fit(X, y)
    C, gamma = float(search.best_params_["C"]), float(search.best_params_["gamma"])
    edges = [f"{name} on the grid's {'lower' if v == values[0] else 'upper'} edge"
             for name, v, values in (("C", C, grid["C"]), ("γ", gamma, grid["gamma"]))
             if v in (values[0], values[-1])]
    how = (f"3-fold CV of the full SVC on {n} points over C ∈ "
           f"{{{', '.join(f'{c:g}' for c in cs)}}} × γ ∈ {{{', '.join(CV_GAMMAS)}}}"
           "/(d·Var X)")
    return C, gamma, "; ".join([how, *edges])


def keep_wrong(out: Path, row: dict[str, Any]) -> dict[str, Any]:
    """``row`` with its misclassified test points (an index array under "wrong") saved as
    ``out``/wrong/NAME.npy and replaced by that file's path; a row without them as it is."""
    wrong = row.get("wrong")
    if not isinstance(wrong, np.ndarray):
        return row
    name = "-".join(str(row.get(k, "")) for k in ("set", "N", "method", "M", "test_n", "seed"))
    path = out / "wrong" / (name.replace(" ", "_") + ".npy")
    buffer = io.BytesIO()
    np.save(buffer, wrong)
    harness.write_atomic(path, buffer.getvalue())
    return {**row, "wrong": str(path.resolve())}


def _copy_wrong(out: Path, row: dict[str, Any]) -> dict[str, Any]:
    """A merged row with its recorded test points copied under ``out``/wrong/."""
    if "wrong" not in row or not Path(row["wrong"]).is_file():
        return {k: v for k, v in row.items() if k != "wrong"}
    return keep_wrong(out, {**row, "wrong": np.load(row["wrong"])})


def save_csv(out: Path, rows: list[dict[str, Any]]) -> None:
    """Every row so far as ``out``/scale.csv (after each fit: a run stopped part-way keeps
    what it measured)."""
    fields = sorted({k for r in rows for k in r}, key=lambda k: (k != "part", k != "set", k))
    # the recorded test points by their name under out/wrong/, which `read_csv` resolves
    harness.write_csv(out / "scale.csv", [{**r, "wrong": "wrong/" + Path(r["wrong"]).name}
                                          if "wrong" in r else r for r in rows], fields)


def read_csv(path: Path) -> list[dict[str, Any]]:
    """The rows of a scale.csv as `save_csv` wrote them (empty cells left out)."""
    text_keys = {"part", "set", "method", "note", "trace", "wrong", "cv"}

    def value(key: str, text: str) -> Any:
        if key in text_keys:
            return text
        number = float(text)
        return int(number) if number.is_integer() and key not in ("C", "gamma") else number

    with open(path, newline="") as fh:
        rows = [{k: value(k, v) for k, v in row.items() if v != ""}
                for row in csv.DictReader(fh)]
    return [{**r, "wrong": str((path.parent / r["wrong"]).resolve())} if "wrong" in r else r
            for r in rows]


def run_a9a(args: argparse.Namespace, rows: list[dict[str, Any]]) -> None:
    spec, C, gamma = ("a9a", str(args.data_dir)), 8.0, 2.0**-5
    for method, m, timeout in (("SLMC", 100, args.timeout), ("Nystroem", 100, args.timeout),
                               ("Nystroem", 500, args.timeout), ("SVC", 0, args.svc_timeout)):
        rows.append(keep_wrong(args.out, {
            "part": "a9a", "set": "a9a", "N": 32561, "C": C, "gamma": gamma,
            **harness.fresh_row(timeout, _fit, method, spec, m, C, gamma, args.seed)}))
        rows[-1].setdefault("method", method)
        print(f"[scale] {rows[-1]}", flush=True)
        save_csv(args.out, rows)
    rows.append(keep_wrong(args.out, {
        "part": "a9a", "set": "a9a", "N": 32561, "C": C, "gamma": gamma,
        **_svgp(args.gp_python, spec, 100, gamma, args.gp_epochs, args.seed, args.timeout)}))
    save_csv(args.out, rows)


def run_synthetic(args: argparse.Namespace, part: str,
                  params: dict[str, tuple[float, float, str]],
                  ns: list[int], ms: list[int], svgp: bool, rows: list[dict[str, Any]]
                  ) -> None:
    """SLMC and its peers on ringnorm and checkerboard; the value part adds SLMC from k-means
    centres, with the squared hinge, and SLMC's problem on fixed random XVs (at M and 5 M),
    each of its fits only where ``args.value_fits`` names it."""
    def wanted(method: str) -> bool:
        return part != "value" or method in args.value_fits

    extra = ([(method, k) for method, k, _ in VALUE_FITS if method in SPARSE and
              method != "SLMC" and wanted(method)] if part == "value" else [])
    svc_over: dict[str, bool] = {}  # per set: the full SVM ran over its timeout at some N
    for kind in args.sets:
        C, gamma, how = params[kind]
        for m in ms:
            timed_out = None  # the N at which SLMC ran over the timeout: larger N would too
            for n in ns:
                spec = (kind, n, args.test_n, args.seed)
                base = {"part": part, "set": kind, "N": n, "C": C, "gamma": gamma,
                        "cv": how, "seed": args.seed}
                first = len(rows)
                limit = args.limit.get(kind) if part == "timing" else None
                if wanted("SLMC"):
                    if limit is not None and n > limit:
                        slmc = {"note": f"not run: above --limit {kind}={limit}"}
                    elif timed_out is None:
                        slmc = harness.fresh_row(args.timeout, _fit, "SLMC", spec, m, C, gamma,
                                                 args.seed)
                        if str(slmc.get("note", "")).startswith("over"):
                            timed_out = n
                    else:
                        slmc = {"note": f"not run: over {args.timeout:.0f} s at N = {timed_out}"}
                    rows.append({**base, "method": "SLMC", "M": m, **slmc})
                for method, factor in extra:
                    rows.append({**base, "method": method, "M": factor * m,
                                 **harness.fresh_row(args.timeout, _fit, method, spec,
                                                     factor * m, C, gamma, args.seed)})
                for mm in (m, 5 * m) if wanted("Nystroem") else ():
                    need = 3 * 8 * n * mm
                    if need > NYSTROEM_LIMIT_BYTES:
                        rows.append({**base, "method": "Nystroem", "M": mm,
                                     "note": f"not run: needs about {need / 2**30:.0f} GiB"})
                        continue
                    rows.append({**base, **harness.fresh_row(args.timeout, _fit, "Nystroem", spec,
                                                             mm, C, gamma, args.seed)})
                    rows[-1].setdefault("method", "Nystroem")
                    rows[-1].setdefault("M", mm)
                if svgp and wanted("SVGP"):
                    rows.append({**base, **_svgp(args.gp_python, spec, m, gamma,
                                                 args.gp_epochs, args.seed, args.timeout)})
                if part == "value" and wanted(FULL_SVM[0]) and m == ms[0]:
                    svc = ({"note": f"not run: over {args.svc_timeout:.0f} s at a smaller N"}
                           if svc_over.get(kind) else
                           harness.fresh_row(args.svc_timeout, _fit, "SVC", spec, 0, C, gamma,
                                             args.seed))
                    svc_over[kind] = str(svc.get("note", "")).startswith(("over", "not run"))
                    rows.append({**base, "method": "SVC", "M": 0, **svc})
                rows[first:] = [keep_wrong(args.out, row) for row in rows[first:]]
                for row in rows[first:]:
                    print(f"[scale] {row}", flush=True)
                save_csv(args.out, rows)


def run_moons(args: argparse.Namespace, rows: list[dict[str, Any]]) -> None:
    X, y = make_moons(5000, noise=0.3, random_state=0)
    X_test, y_test = make_moons(20000, noise=0.3, random_state=1)
    for m in args.moons_nz:
        for seed in range(args.moons_seeds):
            row: dict[str, Any] = {"part": "moons", "set": "moons", "N": 5000, "method": "SLMC",
                                   "M": m, "seed": seed}
            start = time.perf_counter()
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    clf = SparseSVC(n_expansion=m, random_state=seed).fit(X, y)
                row.update(seconds=time.perf_counter() - start, n_iter=int(clf.n_iter_[0]),
                           error=float(np.mean(clf.predict(X_test) != y_test)))
            except Exception as exc:  # the finding this part looks for
                row["note"] = f"{type(exc).__name__}: {exc}"[:300]
            rows.append(row)
    save_csv(args.out, rows)


def _slope(points: list[tuple[float, float]]) -> float | None:
    """Slope of log y against log N over (N, y) points; None under two points."""
    if len(points) < 2:
        return None
    n, t = np.log(np.array(points, dtype=float)).T
    return float(np.polyfit(n, t, 1)[0])


def _pct(r: dict[str, Any]) -> str:
    """A fit's test error in percent, to the digits its test set resolves (a third decimal
    from 10⁶ test points on)."""
    return f"{100 * r['error']:.{3 if r.get('test_n', 0) >= 10**6 else 2}f} %"


def _cell(r: dict[str, Any]) -> str:
    """Three table cells: test error | fit seconds | peak memory (a note and two dashes)."""
    if "note" in r:
        return f"{r['note']} | — | —"
    return (f"{_pct(r)} | {r['seconds']:.1f} | "
            + (f"{r['peak_mb']:.0f}" if "peak_mb" in r else "—"))


def _get(rows: list[dict[str, Any]], kind: str, n: int, method: str, m: int
         ) -> dict[str, Any] | None:
    hit = [r for r in rows if r["set"] == kind and r["N"] == n and r["method"] == method
           and r.get("M") == m]
    return hit[0] if hit else None


def _find(rows: list[dict[str, Any]], kind: str, n: int, method: str, m: int) -> str:
    hit = _get(rows, kind, n, method, m)
    return _cell(hit) if hit else "— | — | —"


def _paired(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Whether two fits' misclassified test points are recorded, on the same test set."""
    return (all(Path(str(r.get("wrong", ""))).is_file() for r in (a, b))
            and all(a.get(k) == b.get(k) for k in ("set", "test_n", "seed")))


def _z(a: dict[str, Any], b: dict[str, Any]) -> float | None:
    """The difference of two test errors in units of its standard error: a difference
    within about 2 is not resolved by the test set.

    Paired (McNemar's test) where both fits' misclassified points on the same test set are
    recorded: (n_a − n_b) / √(n_a + n_b), n_a and n_b the points only a, only b gets wrong;
    otherwise the two errors taken as independent binomials."""
    if "test_n" not in a or "test_n" not in b:
        return None
    if _paired(a, b):
        wa, wb = np.load(a["wrong"]), np.load(b["wrong"])
        only_a = len(np.setdiff1d(wa, wb, assume_unique=True))
        only_b = len(np.setdiff1d(wb, wa, assume_unique=True))
        return (only_a - only_b) / np.sqrt(only_a + only_b) if only_a + only_b else 0.0
    se = np.sqrt(a["error"] * (1 - a["error"]) / a["test_n"]
                 + b["error"] * (1 - b["error"]) / b["test_n"])
    return float((a["error"] - b["error"]) / se) if se > 0 else None


def _versus(a: dict[str, Any], b: dict[str, Any]) -> str:
    z = _z(a, b)
    return "" if z is None else f"; SLMC {z:+.1f} SE"


def _verdict(fit: dict[str, Any], peers: list[tuple[str, dict[str, Any]]]) -> str:
    """"met" or "not met" for ``fit`` below every peer, saying where the test set cannot
    tell a met one from its peer (within 2 SE)."""
    if not all(fit["error"] < r["error"] for _, r in peers):
        return "not met"
    close = [name for name, r in peers if (z := _z(fit, r)) is not None and abs(z) < 2]
    return "met" + (f", but within 2 SE of {' and '.join(close)}: a difference the test set "
                    "does not resolve" if close else "")


def _prose(r: dict[str, Any]) -> str:
    if "note" in r:
        return r["note"]
    peak = f", {r['peak_mb']:.0f} MB" if "peak_mb" in r else ""
    return f"{100 * r['error']:.2f} %, {r['seconds']:.1f} s{peak}"


def _timing_table(sel: list[dict[str, Any]], kind: str, ns: list[int], ms: list[int]
                  ) -> list[str]:
    heads = ("SLMC (Nz = M)", "Nystroem M", "Nystroem 5 M")
    lines = ["| N | M | " + " | ".join(f"{h}: error | s | MB" for h in heads) + " |",
             "|---|---|" + "---|" * 3 * len(heads)]
    for n in ns:
        for m in ms:
            cells = [_find(sel, kind, n, method, mm) for method, mm in
                     (("SLMC", m), ("Nystroem", m), ("Nystroem", 5 * m))]
            lines.append(f"| {n} | {m} | " + " | ".join(cells) + " |")
    return lines


def _slope_line(sel: list[dict[str, Any]], kind: str, m: int) -> list[str]:
    fits = sorted((r for r in sel if r["set"] == kind and r["method"] == "SLMC"
                   and r["M"] == m and r["N"] >= 100_000), key=lambda r: r["N"])
    done = [r for r in fits if "seconds" in r]
    slope = _slope([(r["N"], r["seconds"]) for r in done])
    if slope is None:
        return []
    head = f"\nSlope of log fit time against log N from N = 10⁵ on, Nz = {m}: {slope:.2f}"
    # an N whose fit did not finish leaves the slope unmeasured there
    unfinished = [r for r in fits if "seconds" not in r]
    if unfinished:
        return [head + " over the N that finished; "
                + "; ".join(f"N = {r['N']}: {r.get('note', 'not run')}" for r in unfinished)
                + " (target ≤ 1.15: not measured)."]
    counted = [r for r in done if r.get("n_iter")]
    per = _slope([(r["N"], r["seconds"] / r["n_iter"]) for r in counted])
    return [head + f" (target ≤ 1.15: {'met' if slope <= 1.15 else 'not met'})"
            + (f"; per L-BFGS iteration {per:.2f}, iterations "
               + " → ".join(str(r["n_iter"]) for r in counted) if per is not None else "")
            + "."]


def _value_table(sel: list[dict[str, Any]], kind: str, n: int, ms: list[int]) -> list[str]:
    r0 = next(r for r in sel if r["set"] == kind and r["N"] == n)
    lines = ["", f"N = {n} (C = {r0['C']:g}, γ = {r0['gamma']:.4g}):", "",
             "| M | method | XVs | where | test error | fit s | peak MB |",
             "|---|---|---|---|---|---|---|"]
    full = _get(sel, kind, n, FULL_SVM[0], 0)
    if full is not None:
        lines.append(f"| — | {FULL_SVM[0]} | {full.get('n_support', '—')} SVs | {FULL_SVM[1]} "
                     f"| {_cell(full)} |")
    for m in ms:
        for method, factor, where in VALUE_FITS:
            r = _get(sel, kind, n, method, factor * m)
            if r is not None:
                lines.append(f"| {m} | {method} | {factor * m} | {where} | {_cell(r)} |")
    return lines


def _bayes_row(out: Path, like: dict[str, Any]) -> dict[str, Any] | None:
    """The Bayes rule on the test set of the fit ``like`` (ringnorm's exact likelihood ratio),
    its misclassified points recorded under ``out``: the paired reference of the value part."""
    if like["set"] != "ringnorm" or "seed" not in like or "test_n" not in like:
        return None
    wrong = _bayes_wrong(like["test_n"], like["seed"])
    return keep_wrong(out, {"set": "ringnorm", "N": 0, "method": "Bayes rule", "M": 0,
                            "test_n": like["test_n"], "seed": like["seed"],
                            "error": len(wrong) / like["test_n"], "wrong": wrong})


@functools.lru_cache(maxsize=4)
def _bayes_wrong(test_n: int, seed: int) -> np.ndarray:
    """The test points of (``test_n``, ``seed``) that ringnorm's Bayes rule misclassifies:
    once per test set, which every N of the value part shares."""
    X_test, y_test = make("ringnorm", test_n, seed + 1)
    return np.flatnonzero(ringnorm_bayes_rule(X_test) != y_test).astype(np.int32)


def _value_lines(sel: list[dict[str, Any]], kind: str, n: int, m: int,
                 bayes: dict[str, Any] | None = None) -> list[str]:
    """The target (SLMC below Nystroem at 5 M and SVGP at M), then the same-problem view and,
    with ``bayes`` (`_bayes_row`), how far SLMC is from the best possible on the test set."""

    def measured(method: str, k: int) -> dict[str, Any] | None:
        r = _get(sel, kind, n, method, k * m)
        return r if r is not None and "error" in r else None

    def against(fit: dict[str, Any], name: str, r: dict[str, Any]) -> str:
        below = "below" if fit["error"] < r["error"] else "not below"
        return f"{name} {_pct(r)} ({below}{_versus(fit, r)})"

    slmc = measured("SLMC", 1)
    peers = [(name, r) for name, r in (("Nystroem 5 M", measured("Nystroem", 5)),
                                       ("SVGP M", measured("SVGP", 1))) if r is not None]
    if not peers:
        return []
    if slmc is None:  # over the timeout: the other starts and losses still speak
        r = _get(sel, kind, n, "SLMC", m)
        lines = [f"\nN = {n}, M = {m}: SLMC {r.get('note', 'not run') if r else 'not run'}; "
                 "target: not measured."]
    else:
        lines = [f"\nN = {n}, M = {m}: SLMC {_pct(slmc)} against "
                 + ", ".join(against(slmc, name, r) for name, r in peers)
                 + f"; target below both: {_verdict(slmc, peers)}."]
        if bayes is not None and _paired(slmc, bayes):
            lines.append(f"The Bayes rule errs on {_pct(bayes)} of the same test "
                         f"points: SLMC {_z(slmc, bayes):+.1f} SE from the best possible"
                         + "".join(f", {name} {_z(r, bayes):+.1f} SE" for name, r in peers
                                   if _paired(r, bayes)) + ".")
        same = [(name, r) for name, r in (("random XVs at M", measured("random XVs", 1)),
                                          ("random XVs at 5 M", measured("random XVs", 5)))
                if r is not None]
        if same:
            lines.append("The same problem (hinge loss, C, unpenalised bias) on fixed random "
                         "XVs: " + ", ".join(against(slmc, name, r) for name, r in same) + ".")
        full = _get(sel, kind, n, FULL_SVM[0], 0)
        if full is not None and "error" in full:
            lines.append("With every training point a candidate SV (the full SVM): "
                         + against(slmc, "the full SVM", full)
                         + "".join(f"; the full SVM {_z(full, r):+.1f} SE from {name}"
                                   for name, r in peers if _z(full, r) is not None) + ".")
    for label, method in (("From k-means centres", "SLMC k-means"),
                          ("With LinearSVC's loss, the squared hinge", "SLMC squared hinge"),
                          ("With LinearSVC's loss, the squared hinge from k-means centres",
                           "SLMC squared hinge k-means")):
        fit = measured(method, 1)
        if fit is not None:
            lines.append(f"{label}: SLMC {_pct(fit)} against "
                         + ", ".join(against(fit, name, r) for name, r in peers)
                         + f"; below both: {_verdict(fit, peers)}.")
    return lines


def _quoted_argv() -> list[str]:
    """The command line, with a --note (which the page gives in full) shortened to '...'."""
    argv = list(sys.argv)
    if "--note" in argv[:-1]:
        argv[argv.index("--note") + 1] = "..."
    return argv


def _params_lines(rows: list[dict[str, Any]]) -> list[str]:
    """Each set's (C, γ), how they were chosen, and which parts and N use them."""
    used: dict[tuple[Any, ...], dict[str, set[int]]] = {}
    for r in rows:
        if r["part"] in ("timing", "value"):
            key = (r["set"], r["C"], r["gamma"], r.get("cv", EARLIER_CV))
            used.setdefault(key, {}).setdefault(r["part"], set()).add(r["N"])
    lines = []
    for (kind, C, gamma, how), parts in used.items():
        where = "; ".join(f"{part} at N = {', '.join(str(n) for n in sorted(ns))}"
                          for part, ns in parts.items())
        lines.append(f"- {kind}: C = {C:g}, γ = {gamma:.4g} ({how}), for the {where}.")
    return lines


def report(rows: list[dict[str, Any]], args: argparse.Namespace, run: str) -> str:
    """The page; ``run`` says when, how long and under what load the rows were measured."""
    lines = ["Each fit in a fresh process; peak = Linux VmHWM above what the data took. Cells: "
             "test error | fit seconds | peak memory.", "", *_params_lines(rows), ""]
    a9a = [r for r in rows if r["part"] == "a9a"]
    if a9a:
        lines += ["## a9a (32 561 training, 16 281 test points), C = 8, γ = 2⁻⁵", "",
                  "| method | M | test accuracy | fit s | peak MB | note |", "|---" * 6 + "|"]
        for r in a9a:
            acc = f"{100 * (1 - r['error']):.2f} %" if "error" in r else "—"
            sec = f"{r['seconds']:.1f}" if "seconds" in r else "—"
            peak = f"{r['peak_mb']:.0f}" if "peak_mb" in r else "—"
            note = r.get("note", "") or (f"{r.get('n_iter', '')} iterations" if r["method"] ==
                                         "SLMC" else "")
            lines.append(f"| {r['method']} | {r.get('M') or '—'} | {acc} | {sec} | {peak} | "
                         f"{note} |")
        slmc = next((r for r in a9a if r["method"] == "SLMC" and "error" in r), None)
        svc = next((r for r in a9a if r["method"] == "SVC" and "error" in r), None)
        gp = next((r for r in a9a if r["method"] == "SVGP" and "trace" in r), None)
        if slmc:
            fast = f"{slmc['seconds']:.1f} s" + (
                f" against {svc['seconds']:.1f} s for the full SVC" if svc else "")
            ok = slmc["seconds"] <= 60 and (svc is None or slmc["seconds"] < svc["seconds"])
            lines += ["", f"SLMC fit {fast}: target ≤ 60 s and faster than the full SVC: "
                      f"{'met' if ok else 'not met'}; test accuracy "
                      f"{100 * (1 - slmc['error']):.2f} %, target ≥ 85.0 %: "
                      f"{'met' if slmc['error'] <= 0.15 else 'not met'}."]
            if gp:
                lines.append(f"SVGP (M = 100, minibatch) reached SLMC's test accuracy: "
                             f"{_time_to(gp['trace'], slmc['error'])}.")
        lines.append("")
    for part, title in (("timing", "Fit time against N"),
                        ("value", "Small budgets: where the XVs are matters")):
        sel = [r for r in rows if r["part"] == part]
        if not sel:
            continue
        lines += [f"## {title}", ""]
        if part == "value":
            lines += ["The target compares SLMC at Nz = M with Nystroem + LinearSVC at 5 M and "
                      "SVGP at M. The rows *random XVs* solve SLMC's own problem (hinge loss, "
                      "the same C and γ, unpenalised bias) exactly on a fixed random subset of "
                      "training points, as Nystroem picks its landmarks: SLMC at M against them "
                      "at M and 5 M is what moving the XVs buys. LinearSVC minimises the "
                      "squared hinge, another loss: the rows *SLMC squared hinge* fit SLMC "
                      "with that loss (`SparseSVC(loss=\"squared_hinge\")`), the "
                      "like-for-like comparison with Nystroem + LinearSVC. The row *SVC*, once "
                      "per N, is the full SVM, SLMC's problem with every training point a "
                      "candidate SV: where it errs more than Nystroem + LinearSVC, the gap is "
                      "the loss's, not the XVs'. *SE*: the difference "
                      "of two test errors over its standard error on the test set, paired "
                      "(McNemar's test: the points only one of the two gets wrong) where "
                      "both fits' misclassified test points are recorded, else the two "
                      "taken as independent binomials; within about ±2 the test set does "
                      "not tell them apart.",
                      ""]
        for kind in [k for k in SETS if any(r["set"] == k for r in sel)]:
            bayes = (f"Bayes error about {100 * ringnorm_bayes_error(200_000):.2f} %"
                     if kind == "ringnorm" else "Bayes error 0 (no label noise)")
            lines += [f"### {kind} ({bayes})", ""]
            # the budgets M: of the fits made at M only (not also at 5 M)
            ms_here = sorted({r["M"] for r in sel if r["set"] == kind and r["method"] in
                              ONE_BUDGET})
            ns_here = sorted({r["N"] for r in sel if r["set"] == kind})
            if part == "timing":
                lines += _timing_table(sel, kind, ns_here, ms_here)
                for m in ms_here:
                    lines += _slope_line(sel, kind, m)
                big = _get(sel, kind, 1_000_000, "SLMC", 200)
                if big is not None:
                    ok = "seconds" in big and big["seconds"] <= 900 and big["peak_mb"] <= 6144
                    lines.append(f"\nN = 10⁶, Nz = 200: {_prose(big)}; target ≤ 15 min and "
                                 f"≤ 6 GB: {'met' if ok else 'not met'}.")
            else:
                for n in ns_here:
                    lines += _value_table(sel, kind, n, ms_here)
                    like = next((r for r in sel if r["set"] == kind and r["N"] == n
                                 and "wrong" in r), None)
                    bayes = _bayes_row(args.out, like) if like is not None else None
                    for m in ms_here:
                        lines += _value_lines(sel, kind, n, m, bayes)
            lines.append("")
    moons = [r for r in rows if r["part"] == "moons"]
    if moons:
        failed = [r for r in moons if "note" in r]
        lines += ["## moons (N = 5000, noise 0.3), every fit", "",
                  "| Nz | fits | failed | test error (mean) | fit s (median) | iterations "
                  "(median) |", "|---|---|---|---|---|---|"]
        for m in sorted({r["M"] for r in moons}):
            sel = [r for r in moons if r["M"] == m]
            ok = [r for r in sel if "note" not in r]
            err = f"{100 * np.mean([r['error'] for r in ok]):.2f} %" if ok else "—"
            sec = f"{np.median([r['seconds'] for r in ok]):.2f}" if ok else "—"
            its = f"{np.median([r['n_iter'] for r in ok]):.0f}" if ok else "—"
            lines.append(f"| {m} | {len(sel)} | {len(sel) - len(ok)} | {err} | {sec} | {its} |")
        lines += ["", f"Every fit succeeds: {'met' if not failed else 'not met'}."
                  + "".join(f"\n- Nz = {r['M']}, seed {r['seed']}: {r['note']}" for r in failed),
                  ""]
    machine = f"Produced by `benchmarks/scale.py`. {run}"
    return harness.result_page("SLMC at scale", _shows(rows),
                               "OPENBLAS_NUM_THREADS=1 python " + " ".join(_quoted_argv()), lines,
                               [machine])


def _shows(rows: list[dict[str, Any]]) -> str:
    """What the page shows: one clause per part it holds."""
    def sets(part: str) -> str:
        return " and ".join(k for k in SETS if any(r["part"] == part and r["set"] == k
                                                   for r in rows))

    def values(part: str, key: str, method: str | None = None) -> list[int]:
        return sorted({r[key] for r in rows if r["part"] == part and r.get(key)
                       and method in (None, r.get("method"))})

    def listed(numbers: list[int]) -> str:
        return ", ".join(str(n) for n in numbers)

    parts = {r["part"] for r in rows}
    said = []
    if "a9a" in parts:
        said.append("a9a's full training set (test accuracy and fit time)")
    if "timing" in parts:
        ns = values("timing", "N")
        said.append(f"fit time, peak memory and test error against N on {sets('timing')} "
                    f"(N = {ns[0]} to {ns[-1]}, Nz = {listed(values('timing', 'M', 'SLMC'))})")
    if "value" in parts:
        said.append(f"the test error at small budgets on {sets('value')} (N = "
                    f"{listed(values('value', 'N'))}), where the XVs' positions matter most")
    if "moons" in parts:
        said.append("whether every fit on moons succeeds")
    return ("SLMC beside Nystroem + LinearSVC, a sparse variational GP (SVGP) and the full "
            "SVC, with the same (C, γ) and the same budget M = Nz where they have one: "
            + "; ".join(said) + ".")


def _join(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per fit, the files taken in the order given: a fit's first measured row (runs
    share peers: Nystroem at 500 is 5 M of Nz = 100 and M of Nz = 500), which replaces any
    note-only row of it (a fit over the timeout, or not run)."""
    joined: dict[tuple[Any, ...], dict[str, Any]] = {}
    for r in rows:
        key = (r["part"], r["set"], r["N"], r.get("method"), r.get("M"), r.get("seed"))
        if key not in joined or ("error" not in joined[key] and "error" in r):
            joined[key] = r
    return list(joined.values())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, default=None,
                        help="folder in the ../shared/data format (for a9a)")
    parser.add_argument("--out", type=Path, default=Path("docs/results"))
    parser.add_argument("--parts", nargs="+", choices=PARTS, default=list(PARTS))
    parser.add_argument("--gp-python", default=None,
                        help="python of an environment with torch, gpytorch (the SVGP peer)")
    parser.add_argument("--gp-epochs", type=int, default=10)
    parser.add_argument("--timeout", type=float, default=1200.0, help="seconds per fit")
    parser.add_argument("--svc-timeout", type=float, default=1800.0)
    parser.add_argument("--test-n", type=int, default=100_000)
    parser.add_argument("--nz", type=int, nargs="+", default=[100, 200, 500],
                        help="Nz (= M) of the timing part")
    parser.add_argument("--sizes", type=int, nargs="+", default=SIZES,
                        help="N of the timing part")
    parser.add_argument("--value-sizes", type=int, nargs="+", default=[100_000, 1_000_000],
                        help="N of the value part")
    parser.add_argument("--value-budgets", type=int, nargs="+", default=[16, 32],
                        help="the budgets M of the value part")
    parser.add_argument("--sets", nargs="+", choices=SETS, default=list(SETS),
                        help="generated sets of the timing and value parts")
    parser.add_argument("--value-fits", nargs="+", metavar="METHOD",
                        choices=[*dict.fromkeys(m for m, _, _ in VALUE_FITS), FULL_SVM[0]],
                        default=[*dict.fromkeys(m for m, _, _ in VALUE_FITS), FULL_SVM[0]],
                        help="the value part's fits to run (default every one), to add "
                             "fits to an earlier run's CSV with --merge")
    parser.add_argument("--moons-nz", type=int, nargs="+", default=[10, 50, 100, 200, 500])
    parser.add_argument("--moons-seeds", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cv-cs", type=float, nargs="+", default=None, metavar="C",
                        help="the C values of the cross-validation that chooses (C, γ) for the "
                             f"generated sets (default {' '.join(f'{c:g}' for c in CV_CS)}); "
                             "to widen it past an edge")
    parser.add_argument("--limit", nargs="*", default=[], metavar="SET=N",
                        help="largest N of the timing part for a set (e.g. checkerboard=30000)")
    parser.add_argument("--quick", action="store_true", help="tiny sizes (the smoke test)")
    parser.add_argument("--merge", nargs="+", default=None, metavar="CSV[::PARTS]",
                        help="write the page from the scale.csv files of earlier runs (run in "
                             "parallel, say) instead of running anything; PATH::timing,a9a "
                             "takes only those parts of a file; a fit in several files: its "
                             "first measured row")
    parser.add_argument("--note", default="",
                        help="with --merge: what the runs were (commands, dates, load)")
    args = parser.parse_args(argv)
    if args.merge:
        rows = []
        for item in args.merge:
            path, _, parts = item.partition("::")
            wanted = set(parts.split(",")) if parts else set(PARTS)
            if not wanted <= set(PARTS):
                parser.error(f"--merge {item!r}: the parts after '::' must be among {PARTS}.")
            if not Path(path).is_file():
                parser.error(f"--merge {item!r}: no file {path}.")
            rows += [row for row in read_csv(Path(path)) if row["part"] in wanted]
        rows = [_copy_wrong(args.out, r) for r in _join(rows)]
        args.out.mkdir(parents=True, exist_ok=True)
        save_csv(args.out, rows)
        text = report(rows, args, f"Machine: {harness.machine_line()}; one BLAS thread per "
                                  f"process; joined from the CSVs of runs: {args.note}")
        harness.write_atomic(args.out / "scale.md", text)
        print(text)
        return 0
    try:
        args.limit = {k: int(v) for k, v in (item.split("=") for item in args.limit)}
    except ValueError:
        parser.error(f"--limit takes SET=N items, e.g. checkerboard=30000; got {args.limit}")
    if "a9a" in args.parts and (args.data_dir is None
                                or not (args.data_dir / "a9a" / "a9a.npz").is_file()):
        parser.error("the a9a part needs --data-dir with a9a/a9a.npz; leave it out with "
                     "--parts timing value moons")
    args.out.mkdir(parents=True, exist_ok=True)
    if args.quick:
        ns, ms, value_ms, args.test_n = [400], [4], [3], 500
        args.moons_nz, args.moons_seeds = [5], 1
    else:
        ns, ms, value_ms = sorted(args.sizes), args.nz, sorted(args.value_budgets)
    start = time.perf_counter()
    params = ({kind: choose_params(kind, args.seed, 300 if args.quick else 3000, args.cv_cs)
               for kind in args.sets}
              if {"timing", "value"} & set(args.parts) else {})
    rows: list[dict[str, Any]] = []
    if "a9a" in args.parts:
        run_a9a(args, rows)
    if "timing" in args.parts:
        run_synthetic(args, "timing", params, ns, ms, False, rows)
    if "value" in args.parts:
        run_synthetic(args, "value", params, ns if args.quick else sorted(args.value_sizes),
                      value_ms, True, rows)
    if "moons" in args.parts:
        run_moons(args, rows)
    text = report(rows, args, harness.provenance(time.perf_counter() - start,
                                                 "one BLAS thread per process"))
    harness.write_atomic(args.out / "scale.md", text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
