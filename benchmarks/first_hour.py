"""A user's first hour, timed: BLAS threads on a busy machine, start-up, the test suite.

Three measurements of what a new user meets, each side by side in one run:

* **BLAS threads on a busy machine.** While a CPU hog (a busy loop) runs on every core, the
  README's ``sparsify fit`` (Banana, default settings) is run alternately with sparsify's
  thread sizing (no variable set), with one BLAS thread (``OPENBLAS_NUM_THREADS=1`` and its
  kin) and with one thread per core in every process (``SPARSIFY_BLAS_THREADS`` set to the
  core count: for the Banana fit, the BLAS's own default, what it ran with before
  `sparsify.core.threads`). The same for a one-vs-rest fit with ``n_jobs=2``, whose joblib
  worker processes get their share of the CPUs: there the third setting nests a thread per
  core inside each worker. The figure is each setting's median fit time against one
  thread's.
* **Start-up.** Wall time of ``sparsify --version``, of ``sparsify predict`` on 50 rows from
  a model file (and whether it imported scikit-learn or cvxpy), and of ``sparsify fit`` until
  its first line and until it ends; on the machine as it is, and under the hog.
* **The test suite**: the README's test command, timed once, with the load average before
  and after (run this part on an idle machine).

Usage::

    python benchmarks/first_hour.py --out docs/results [--repeats 7] [--parts startup blas suite]

Writes ``first_hour.md`` (tables, commands, machine) and ``first_hour.csv`` (every run). A
run of some ``--parts`` keeps the other parts' rows of an earlier run in ``--out``, so the
suite can be timed apart, when the machine is idle.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import resource
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import harness

REPO = Path(__file__).resolve().parents[1]
PARTS = ("startup", "blas", "suite")
# one BLAS thread, whatever the BLAS (OpenBLAS, MKL, BLIS, Accelerate) or OpenMP runtime
ONE_THREAD = {name: "1" for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS",
                                     "MKL_NUM_THREADS", "BLIS_NUM_THREADS",
                                     "VECLIB_MAXIMUM_THREADS")}
# the one-vs-rest fit with n_jobs=2 (3 classes, 600 points): prints its fit seconds
OVR_FIT = """
import json, time
import numpy as np
from sklearn.datasets import make_blobs
from sparsify import SparseSVC
X, y = make_blobs(600, centers=3, cluster_std=2.0, random_state=0)
start = time.perf_counter()
SparseSVC(n_expansion=10, gamma=0.5, n_jobs=2, random_state=0).fit(X, y)
print(json.dumps({"fit_seconds": time.perf_counter() - start}))
"""


def _env(extra: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ONE_THREAD and k != "SPARSIFY_BLAS_THREADS"}
    env.update(extra)
    return env


def _settings(cores: int) -> dict[str, dict[str, str]]:
    return {"sized by sparsify (default)": {},
            "one BLAS thread": ONE_THREAD,
            f"{cores} per process (SPARSIFY_BLAS_THREADS={cores})":
                {"SPARSIFY_BLAS_THREADS": str(cores)}}


@contextmanager
def cpu_hog(n: int) -> Any:
    """``n`` busy loops at normal priority, stopped on exit."""
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]
    try:
        time.sleep(1.0)  # let them take their cores
        yield
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait()


def _sparsify(*args: str) -> list[str]:
    return [sys.executable, "-m", "sparsify", *args]


def _timed(cmd: list[str], env: dict[str, str], cwd: Path) -> tuple[float, str]:
    start = time.perf_counter()
    proc = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=600)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"{shlex.join(cmd)} failed:\n{proc.stderr}")
    return wall, proc.stdout


def blas_runs(repeats: int, cores: int, cwd: Path) -> list[dict[str, Any]]:
    """Alternate the settings, ``repeats`` rounds, for the Banana fit and the n_jobs=2 fit."""
    rows = []
    jobs = {"Banana fit (sparsify fit)": _sparsify("fit", "--json"),
            "one-vs-rest fit, n_jobs=2": [sys.executable, "-c", OVR_FIT]}
    for repeat in range(repeats):
        for job, cmd in jobs.items():
            for setting, extra in _settings(cores).items():
                wall, out = _timed(cmd, _env(extra), cwd)
                rows.append({"part": "blas", "job": job, "setting": setting, "wall": wall,
                             "fit_seconds": json.loads(out)["fit_seconds"],
                             "repeat": repeat})
    return rows


def _first_line(cmd: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """Seconds until the first line on stdout, and until the command ends."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    assert proc.stdout is not None
    proc.stdout.readline()
    first = time.perf_counter() - start
    proc.stdout.read()
    if proc.wait() != 0:
        raise RuntimeError(f"{shlex.join(cmd)} failed")
    return first, time.perf_counter() - start


def _imports(cmd: list[str], env: dict[str, str], cwd: Path) -> set[str]:
    """Top-level packages a command imports (python -X importtime)."""
    proc = subprocess.run([cmd[0], "-X", "importtime", *cmd[1:]], env=env, cwd=cwd,
                          capture_output=True, text=True, timeout=600)
    return {line.split("|")[-1].strip().split(".")[0] for line in proc.stderr.splitlines()
            if line.startswith("import time:")}


def startup_runs(repeats: int, cwd: Path, load: str) -> list[dict[str, Any]]:
    env = _env({})
    rows = []
    predict = _sparsify("predict", "--model", "banana.model", "--data", "test50.csv")
    for _ in range(repeats):
        rows.append({"part": "startup", "load": load, "job": "sparsify --version",
                     "wall": _timed(_sparsify("--version"), env, cwd)[0]})
        rows.append({"part": "startup", "load": load, "job": "sparsify predict, 50 rows",
                     "wall": _timed(predict, env, cwd)[0]})
        first, total = _first_line(_sparsify("fit"), env, cwd)
        rows.append({"part": "startup", "load": load, "job": "sparsify fit: first line",
                     "wall": first})
        rows.append({"part": "startup", "load": load, "job": "sparsify fit: whole",
                     "wall": total})
    heavy = sorted(_imports(predict, env, cwd) & {"sklearn", "cvxpy", "scipy", "matplotlib"})
    rows.append({"part": "imports", "load": load, "job": "sparsify predict, 50 rows",
                 "heavy_imports": " ".join(heavy) or "none"})
    return rows


def suite_run(cwd: Path) -> dict[str, Any]:
    before = harness.load_average()
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "pytest", "-n", "auto", "-q", "-p",
                           "no:cacheprovider"],
                          cwd=REPO, capture_output=True, text=True, env=_env({}), timeout=3600)
    wall = time.perf_counter() - start
    after = harness.load_average()
    summary = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else "?"
    return {"part": "suite", "job": "python -m pytest -n auto (the README's command)",
            "wall": wall,
            "load_before": before, "load_after": after, "summary": summary,
            "returncode": proc.returncode}


def _prepare(cwd: Path) -> None:
    """A model file and 50 labelled rows of Banana's test part for predict."""
    import numpy as np

    from sparsify.datasets import load_banana

    _timed(_sparsify("fit", "--C", "100", "--gamma", "1", "--n-expansion", "8", "--out",
                     "banana.model"), _env({}), cwd)
    _, _, X_test, y_test = load_banana()
    np.savetxt(cwd / "test50.csv", np.column_stack([X_test[:50], y_test[:50]]), delimiter=",",
               header="x0,x1,label", comments="")


def report(rows: list[dict[str, Any]], args: argparse.Namespace, cores: int,
           load_start: str, wall: float) -> str:
    settings = list(_settings(cores))
    one = settings[1]
    shows = (
        "What a new user meets first, each table's rows side by side in one run: fit times "
        "with sparsify's BLAS thread sizing against one thread and a thread per core while a "
        "CPU hog runs on every core (goal: at most 1.5 × one thread), the start-up of "
        "`sparsify --version`, `predict` and `fit` (goals 0.3 s, 1 s for 50 rows, a first "
        "line at once), and the README's test command (goal: 5 minutes on 2 idle cores).")
    setup = (
        "`sparsify.core.threads` gives one BLAS thread per 5·10⁷ multiply-adds of a W(Z) "
        "evaluation, so one for Banana; the third setting of each fit is the BLAS's own "
        "default of one thread per core (what the Banana fit ran with before), which for the "
        "one-vs-rest fit with `n_jobs=2` nests a thread per core inside each worker process. "
        "`sparsify --version` imports nothing but the standard library, `sparsify predict` "
        "reads the model file with numpy alone (neither scikit-learn nor cvxpy), and "
        "`sparsify fit` prints its first line before it imports them. The README's test "
        "command (every test but those marked slow) is timed once, on the machine as idle as "
        "it could be had, with its load before and after. Other times are medians over "
        f"{args.repeats} runs; the settings alternate, so the load is shared alike.")
    # a run of some --parts keeps the others' rows, so every command that made them is shown
    commands = "\n".join(dict.fromkeys(r.get("command", args.command) for r in rows))
    provenance = [
        f"Machine: {harness.machine_line(())}; load average at the start {load_start} (other "
        f"jobs share the machine); total {wall / 60:.1f} min; peak memory of a child process "
        f"{resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024:.0f} MiB."]
    lines = [
        setup,
        "",
        f"## BLAS threads, with a CPU hog on each of the {cores} cores",
        "",
        "The ratio is the median over the rounds of each round's fit time against the same "
        "round's one-thread fit (the settings of a round run back to back, so a change in the "
        "machine's load between rounds does not enter it).",
        "",
        "| fit | BLAS threads | fit s (median) | process s (median) | fit time ÷ one thread's "
        "(median of the rounds) |",
        "|---|---|---|---|---|",
    ]
    blas = [r for r in rows if r["part"] == "blas"]
    for job in dict.fromkeys(r["job"] for r in blas):
        base = {r["repeat"]: r["fit_seconds"] for r in blas if r["job"] == job
                and r["setting"] == one}
        for setting in settings:
            sel = [r for r in blas if r["job"] == job and r["setting"] == setting]
            ratio = statistics.median(r["fit_seconds"] / base[r["repeat"]] for r in sel)
            fit = statistics.median(r["fit_seconds"] for r in sel)
            wall = statistics.median(r["wall"] for r in sel)
            lines.append(f"| {job} | {setting} | {fit:.3f} | {wall:.2f} | {ratio:.2f} |")
    lines += ["", "## Start-up", "",
              "| command | machine | wall s (median) | max s | imports scikit-learn or cvxpy |",
              "|---|---|---|---|---|"]
    imports = {r["load"]: r["heavy_imports"] for r in rows if r["part"] == "imports"}
    for load in dict.fromkeys(r["load"] for r in rows if r["part"] == "startup"):
        for job in dict.fromkeys(r["job"] for r in rows if r["part"] == "startup"):
            sel = [r["wall"] for r in rows if r["part"] == "startup" and r["load"] == load
                   and r["job"] == job]
            heavy = imports.get(load, "") if "predict" in job else ""
            lines.append(f"| `{job}` | {load} | {statistics.median(sel):.2f} | {max(sel):.2f} | "
                         f"{heavy} |")
    suite = [r for r in rows if r["part"] == "suite"]
    if suite:
        s = suite[0]
        lines += ["", "## The README's test command", "",
                  "| command | wall s | load average before | after | result |",
                  "|---|---|---|---|---|",
                  f"| `{s['job']}` | {s['wall']:.0f} ({s['wall'] / 60:.1f} min) | "
                  f"{s['load_before']} | {s['load_after']} | {s['summary']} |"]
    return harness.result_page("A user's first hour: threads, start-up, tests", shows, commands,
                               lines, provenance)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = harness.benchmark_parser(__doc__, data_required=False)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--parts", nargs="+", choices=PARTS, default=list(PARTS),
                    help="what to measure (default: all); the suite takes minutes: run it idle")
    args = ap.parse_args(argv)
    if args.repeats < 1:
        ap.error(f"--repeats must be at least 1; got {args.repeats}")
    return harness.ready(args, __file__, argv)


def _earlier(path: Path, parts: list[str]) -> list[dict[str, Any]]:
    """The rows of an earlier run's CSV whose part this run does not measure."""
    if not path.is_file():
        return []
    with path.open(newline="") as fh:
        rows = [{k: v for k, v in row.items() if v != ""} for row in csv.DictReader(fh)]
    kept = [r for r in rows if (r["part"] if r["part"] != "imports" else "startup") not in parts]
    for r in kept:
        for key in ("wall", "fit_seconds"):
            if key in r:
                r[key] = float(r[key])
        if "repeat" in r:
            r["repeat"] = int(r["repeat"])
    return kept


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    cores = os.cpu_count() or 1
    load_start = harness.load_average()
    start = time.perf_counter()
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        cwd = Path(tmp)
        if "suite" in args.parts:  # first, while nothing of this script loads the machine
            rows.append(suite_run(cwd))
            print(rows[-1], flush=True)
        if "startup" in args.parts or "blas" in args.parts:
            _prepare(cwd)
        if "startup" in args.parts:
            rows += startup_runs(args.repeats, cwd, f"as it is (load {load_start})")
        if "startup" in args.parts or "blas" in args.parts:
            with cpu_hog(cores):
                if "startup" in args.parts:
                    rows += startup_runs(args.repeats, cwd, f"a CPU hog on each of {cores} cores")
                if "blas" in args.parts:
                    rows += blas_runs(args.repeats, cores, cwd)
    for row in rows:
        row["command"] = args.command
    rows += _earlier(args.out / "first_hour.csv", args.parts)
    harness.write_csv(args.out / "first_hour.csv", rows,
                      fields=sorted({key for row in rows for key in row}))
    text = report(rows, args, cores, load_start, time.perf_counter() - start)
    harness.write_atomic(args.out / "first_hour.md", text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
