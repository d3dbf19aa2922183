"""What every benchmark here shares, so that each script states its experiment and nothing else.

- timing: `timed` (one call), `in_fresh_process` and `fresh_row` (a call in a fresh
  spawned process, under a time limit: its peak memory is its own);
- peak memory: `reset_peak_rss` / `peak_rss` (the process's resident peak, Linux;
  `status_kb` reads the others; `reset_workers_peak` / `workers_peak_mb` on a Dask
  cluster's workers) and `traced` (what Python and numpy allocated in one call);
- the machine: `cpu_name`, `load_average`, `machine_info` (versions, for a page's
  provenance) and `machine_line` (the same in one sentence);
- data sets in the ../shared/data format (``<dir>/<name>/<name>.npz`` with X, y and
  optional ``train_idx``/``test_idx``): `benchmark_parser`, `check_data_dir`,
  `check_datasets`, `load_set`, `split`, ``--params`` (`parse_params`, `check_params`);
- results: `result_page` (what it shows, the command, the tables, the provenance
  last), `command`, `ready`, `provenance`, `write_results` (the page and its CSV),
  `write_atomic`, `write_csv`, `write_figure` (whole files or none); tables (`table`,
  `row`, `by_set`), the numbers' formats (`fmt`, `mean_std`, `plus_minus`, `pm`) and
  hyperparameter grids (`log_grid`).

Every script imports it as a neighbour (``sys.path`` holds benchmarks/ when a script runs,
and the smoke tests put it there).
"""

from __future__ import annotations

import argparse
import csv
import importlib.metadata
import io
import os
import platform
import shlex
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import numpy as np

#: The packages whose versions a page's provenance names.
PACKAGES = ("sparsify", "numpy", "scipy", "scikit-learn", "cvxpy", "clarabel")


# -- timing ---------------------------------------------------------------------------------


def timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    """``fn()`` and its wall-clock seconds."""
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def fit_alone(estimator: Any, *fit_args: Any) -> tuple[float, float]:
    """``estimator.fit(*fit_args)`` with one BLAS thread and its warnings silenced: (seconds,
    peak MB above the memory held before it)."""
    import warnings

    from threadpoolctl import threadpool_limits

    base = reset_peak_rss()
    with threadpool_limits(1), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _, seconds = timed(lambda: estimator.fit(*fit_args))
    return seconds, (peak_rss() - base) / 1024


def in_fresh_process(timeout: float, fn: Callable[..., Any], *args: Any, **kwargs: Any
                     ) -> Any:
    """``fn(*args, **kwargs)`` in a fresh spawned process, or why it gave no result.

    A timeout kills the process and returns "over T s"; an exception returns its
    type and message (a failure is a finding: recorded, not hidden).
    """
    with ProcessPoolExecutor(1, mp_context=get_context("spawn")) as pool:
        job = pool.submit(fn, *args, **kwargs)
        try:
            return job.result(timeout=timeout)
        except FutureTimeout:
            for proc in pool._processes.values():  # stop the stuck solve
                proc.kill()
            return f"over {timeout:.0f} s"
        except Exception as exc:
            return f"{type(exc).__name__}: {exc}"


def fresh_row(timeout: float, fn: Callable[..., dict[str, Any]], *args: Any, **kwargs: Any
              ) -> dict[str, Any]:
    """`in_fresh_process` of a function that returns a table row: a timeout or an error
    is the row's note."""
    out = in_fresh_process(timeout, fn, *args, **kwargs)
    return out if isinstance(out, dict) else {"note": out[:300]}


# -- peak memory ----------------------------------------------------------------------------


def status_kb(field: str) -> int:
    """A memory field of /proc/self/status (VmRSS, VmHWM), kB (Linux)."""
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith(field + ":"))


def reset_peak_rss() -> int:
    """Reset the process's peak resident memory (Linux) and return the current one, in kB.

    Loading the data makes the peak; without the reset the solve's own peak
    would hide below it.
    """
    with open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")
    return status_kb("VmRSS")


def peak_rss() -> int:
    """The process's peak resident memory since the last `reset_peak_rss`, kB (Linux)."""
    return status_kb("VmHWM")


def reset_workers_peak(client: Any) -> dict[str, int]:
    """`reset_peak_rss` on every worker of a Dask ``client``; their resident memory, kB."""
    return dict(client.run(reset_peak_rss))


def workers_peak_mb(client: Any, base: dict[str, int] | None = None) -> float:
    """The largest peak resident memory of a Dask ``client``'s workers, MB (Linux), above
    ``base`` (`reset_workers_peak`'s answer) where given."""
    peaks = client.run(peak_rss)
    return max(peaks[w] - (base or {}).get(w, 0) for w in peaks) / 1024


def traced(fn: Callable[[], Any]) -> tuple[Any, float]:
    """``fn()`` and the peak of the memory Python and numpy allocated in it, MB."""
    tracemalloc.start()
    try:
        out = fn()
        return out, tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


# -- the machine ----------------------------------------------------------------------------


def cpu_name() -> str:
    """The processor's model name (Linux), else the machine type."""
    try:
        with open("/proc/cpuinfo") as fh:
            return next((line.split(":", 1)[1].strip() for line in fh
                         if line.startswith("model name")), platform.machine())
    except OSError:
        return platform.machine()


def load_average() -> str:
    """The 1, 5 and 15 minute load averages, or 'n/a'."""
    try:
        return " / ".join(f"{v:.2f}" for v in os.getloadavg())
    except (OSError, AttributeError):
        return "n/a"


def versions(packages: Sequence[str] = PACKAGES) -> dict[str, str]:
    """The installed version of each package ("not installed" where it is not)."""
    out = {}
    for name in packages:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


def machine_info(packages: Sequence[str] = PACKAGES) -> dict[str, Any]:
    """CPU count, platform, processor, Python, package versions and the load now."""
    return {"cpu_count": os.cpu_count(), "platform": platform.platform(),
            "processor": cpu_name(), "python": platform.python_version(),
            "versions": versions(packages), "load_average_at_start": load_average()}


def machine_line(packages: Sequence[str] = ("numpy", "cvxpy", "scikit-learn")) -> str:
    """One sentence on the machine: CPUs and their model, the memory available, Python and
    ``packages``' versions."""
    found = ", ".join(f"{name} {version}" for name, version in versions(packages).items())
    try:
        with open("/proc/meminfo") as fh:
            kb = next(int(line.split()[1]) for line in fh if line.startswith("MemAvailable:"))
        memory = f"{kb / 2**20:.0f} GiB available, "
    except (OSError, StopIteration):
        memory = ""
    return (f"{os.cpu_count()} CPUs ({cpu_name()}), {memory}Python "
            f"{platform.python_version()}" + (f", {found}" if found else ""))


# -- data sets ------------------------------------------------------------------------------


def benchmark_parser(doc: str | None, data_help: str = "folder in the ../shared/data format",
                     data_required: bool = True, out: str = "docs/results",
                     show_defaults: bool = False) -> argparse.ArgumentParser:
    """The options every benchmark here takes: ``--data-dir`` and ``--out`` (``show_defaults``:
    every option's help shows its default)."""
    parser = argparse.ArgumentParser(
        description=(doc or "").split("\n\n")[0],
        formatter_class=(argparse.ArgumentDefaultsHelpFormatter if show_defaults
                         else argparse.HelpFormatter))
    parser.add_argument("--data-dir", type=Path, required=data_required, help=data_help)
    parser.add_argument("--out", type=Path, default=Path(out))
    return parser


def available_datasets(data_dir: Path) -> list[str]:
    """Names of the sets in ``data_dir``: its folders ``<name>`` holding ``<name>.npz``."""
    if not data_dir.is_dir():
        return []
    return sorted(d.name for d in data_dir.iterdir() if (d / f"{d.name}.npz").is_file())


def check_data_dir(parser: argparse.ArgumentParser, data_dir: Path, names: list[str]) -> None:
    """Stop with a usage error unless ``data_dir`` holds ``<name>/<name>.npz`` for each name.

    The message lists the sets the folder does hold, so a misspelt name is easy to fix.
    """
    if not data_dir.is_dir():
        parser.error(f"--data-dir {data_dir} is not a folder; point it at a folder in the "
                     "../shared/data format (<dir>/<name>/<name>.npz).")
    missing = [name for name in dict.fromkeys(names)
               if not (data_dir / name / f"{name}.npz").is_file()]
    if missing:
        have = available_datasets(data_dir)
        parser.error(f"--data-dir {data_dir} has no {', '.join(f'{n}/{n}.npz' for n in missing)}; "
                     f"the data sets there are: {', '.join(have) or 'none'}. Name one of them, "
                     "or point --data-dir at a folder in the ../shared/data format.")


def check_datasets(parser: argparse.ArgumentParser, data_dir: Path, names: list[str], *,
                   splits: bool = False, binary: bool = False) -> None:
    """:func:`check_data_dir`, then what a script needs of each set's file, as usage errors.

    Every set must hold class labels (integers; the regression sets hold floats);
    ``splits`` asks for ``train_idx`` and ``test_idx``, ``binary`` for exactly two classes.
    Only ``y`` and the keys are read, so the check is quick even for large sets.
    """
    check_data_dir(parser, data_dir, names)
    for name in dict.fromkeys(names):
        path = data_dir / name / f"{name}.npz"
        try:
            with np.load(path, allow_pickle=False) as z:
                keys = set(z.files)
                y = z["y"] if "y" in keys else None
        except Exception as exc:  # unreadable: name the file and the reason
            parser.error(f"cannot read {path}: {type(exc).__name__}: {exc}")
        if y is None or "X" not in keys:
            parser.error(f"{path} has no X or no y; a set in the ../shared/data format holds both.")
        if y.dtype.kind not in "biu":
            parser.error(f"{path} holds {y.dtype} targets (a regression set); this script needs "
                         "class labels. Choose a classification set.")
        if splits and not {"train_idx", "test_idx"} <= keys:
            parser.error(f"{path} has no train_idx/test_idx; this script needs the benchmark's "
                         "predefined train/test splits. Choose a set with splits.")
        n_classes = len(np.unique(y))
        if binary and n_classes != 2:
            parser.error(f"{path} has {n_classes} classes; this script needs two. Choose a "
                         "binary set.")


def load_set(data_dir: Path, name: str) -> dict[str, np.ndarray]:
    """Every array of ``<data_dir>/<name>/<name>.npz`` (no pickles)."""
    with np.load(data_dir / name / f"{name}.npz", allow_pickle=False) as z:
        return {k: z[k] for k in z.files}


def split(data: dict[str, np.ndarray], k: int) -> tuple[np.ndarray, ...]:
    """(X_train, y_train, X_test, y_test) of the set's k-th predefined split."""
    train, test = data["train_idx"][k], data["test_idx"][k]
    X, y = data["X"], data["y"]
    return X[train], y[train], X[test], y[test]


def parse_params(text: str) -> tuple[str, tuple[float, float]]:
    """``--params`` item: 'NAME=C:GAMMA' → (name, (C, γ)), for any data set name."""
    name, _, pair = text.partition("=")
    try:
        C, gamma = (float(v) for v in pair.split(":"))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(
            f"expected DATASET=C:GAMMA (e.g. banana=316.2:1), got {text!r}") from exc
    if not name or "/" in name:
        raise argparse.ArgumentTypeError(f"expected a data set name before '=' in {text!r}")
    if not (0 < C < float("inf") and 0 < gamma < float("inf")):
        raise argparse.ArgumentTypeError(f"C and gamma must be positive and finite in {text!r}")
    return name, (C, gamma)


def check_params(parser: argparse.ArgumentParser, params: list[tuple[str, tuple[float, float]]],
                 datasets: list[str]) -> dict[str, tuple[float, float]]:
    """``--params`` as a dict; a set given twice or not among ``--datasets`` is a usage error."""
    names = [name for name, _ in params]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        parser.error(f"--params gives {', '.join(twice)} more than once; give each set once.")
    unused = [n for n in names if n not in datasets]
    if unused:
        parser.error(f"--params names {', '.join(unused)}, not among --datasets "
                     f"({', '.join(datasets) or 'none'}); add it there or drop it from --params.")
    return dict(params)


# -- results --------------------------------------------------------------------------------


def _default_mode() -> int:
    """Permissions of a new file under the current umask (tempfile's own are 0600)."""
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def write_atomic(path: Path, data: str | bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file beside it and a rename, so that
    an interrupted run never leaves a half-written file behind."""
    path.parent.mkdir(parents=True, exist_ok=True)
    binary = isinstance(data, bytes)
    with tempfile.NamedTemporaryFile("wb" if binary else "w", dir=path.parent, delete=False,
                                     prefix=f".{path.name}.", suffix=".tmp",
                                     **({} if binary else {"encoding": "utf-8"})) as fh:
        fh.write(data)
    os.chmod(fh.name, _default_mode())  # readable like any other output file
    os.replace(fh.name, path)


def write_csv(path: Path, rows: list[dict[str, Any]], fields: list[str] | None = None) -> None:
    """``rows`` as CSV at ``path``, whole or not at all (columns: ``fields`` or the first row's)."""
    table = io.StringIO()
    writer = csv.DictWriter(table, fieldnames=fields or list(rows[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    write_atomic(path, table.getvalue())


def write_figure(fig: Any, path: Path, **savefig: Any) -> None:
    """Save a matplotlib figure as PNG at ``path`` whole or not at all, and close it."""
    import matplotlib.pyplot as plt

    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", **savefig)
    plt.close(fig)
    write_atomic(path, buffer.getvalue())


def split_setup(body: str) -> tuple[str, str]:
    """``body`` split into its tables and the set-up text a script wrote before them.

    The set-up, protocol and verdict paragraphs before the first table's section go to
    the end of the page (`result_page`), so its first screen is what it shows, the
    command and a table; the heading that leads the first table stays with it. The
    set-up's own ``## `` headings become ``### `` there.

    Examples
    --------
    >>> split_setup("Data: 40 points.\\n\\n## Results\\n\\n| a |\\n|---|")
    ('## Results\\n\\n| a |\\n|---|', '### Set-up\\n\\nData: 40 points.')
    """
    lines = body.strip().splitlines()
    first = next((i for i, line in enumerate(lines) if line.startswith("|")), None)
    if first is None:
        return body.strip(), ""
    lead = max((i for i in range(first) if lines[i].startswith("## ")), default=first)
    setup = "\n".join("#" + line if line.startswith("## ") else line
                      for line in lines[:lead]).strip()
    if setup and not setup.startswith("### "):
        setup = "### Set-up\n\n" + setup
    return "\n".join(lines[lead:]).strip(), setup


def result_page(title: str, shows: str, command: str, body: list[str],
                provenance: list[str]) -> str:
    """A result page in the order every page of docs/results follows.

    What the page shows (one paragraph), the command that regenerates it, the tables and
    findings (``body``), and last, under "Provenance", where, when and under what load the
    numbers were measured, then how (the set-up text ``body`` had before its first
    table: `split_setup`).
    """
    tables, setup = split_setup("\n".join(body))
    parts = [f"# {title}", shows, f"```\n{command}\n```", tables, "## Provenance",
             "\n".join(provenance).strip(), setup]
    return "\n\n".join(part for part in parts if part) + "\n"


def command(script: str, argv: Sequence[str] | None = None) -> str:
    """The command that ran ``script`` (a benchmark's ``__file__``) with ``argv`` (default:
    this process's arguments), quoted for a shell, as a page shows it."""
    args = sys.argv[1:] if argv is None else list(argv)
    return " ".join(shlex.quote(a) for a in ["python", f"benchmarks/{Path(script).name}", *args])


def ready(args: argparse.Namespace, script: str, argv: Sequence[str] | None
          ) -> argparse.Namespace:
    """``args`` once checked: the output folder ``args.out`` made and the command recorded
    (``args.command``, `command`)."""
    args.out.mkdir(parents=True, exist_ok=True)
    args.command = command(script, argv)
    return args


def provenance(wall: float, threads: str = "BLAS limited to 1 thread") -> str:
    """The provenance's sentence on where and when: the machine, ``threads``, the date, the
    load at the end and the run's total time (``wall`` seconds)."""
    return (f"Machine: {machine_line()}; {threads}; {time.strftime('%Y-%m-%d')}, load average "
            f"{load_average().split(' / ')[0]} at the end. Total {wall / 60:.1f} min.")


def table(*header: str) -> list[str]:
    """A Markdown table's head: its header row and the rule under it."""
    return [row(*header), "|---" * len(header) + "|"]


def row(*cells: Any) -> str:
    """A Markdown table row."""
    return "| " + " | ".join(str(cell) for cell in cells) + " |"


def by_set(rows: list[dict[str, Any]], names: Sequence[str], key: str = "dataset"
           ) -> list[tuple[str, list[dict[str, Any]]]]:
    """(name, its rows) for each of ``names`` that has rows, in the order of ``names``."""
    grouped = [(name, [r for r in rows if r.get(key) == name]) for name in names]
    return [(name, mine) for name, mine in grouped if mine]


def write_results(out: Path, name: str, page: str, rows: list[dict[str, Any]],
                  first: Sequence[str] | None = None) -> None:
    """The page ``<out>/<name>.md`` and the rows in ``<name>.csv``, each whole or not at all;
    the page is printed. The columns: the first row's, or with ``first`` every row's,
    ``first`` first and the others alphabetically."""
    fields = (None if first is None else
              sorted({k for r in rows for k in r}, key=lambda k: (*(k != f for f in first), k)))
    write_csv(out / f"{name}.csv", rows, fields)
    write_atomic(out / f"{name}.md", page)
    print(page)


def notes_sections(path: Path) -> list[str]:
    """The lines of a notes page from its first "## " heading on: its title, summary and
    command stay on that page when its sections are added to another."""
    lines = path.read_text().splitlines()
    return lines[next((i for i, line in enumerate(lines) if line.startswith("## ")), 0):]


def fmt(value: Any, digits: int = 3) -> str:
    """A table cell: "—" for a missing or NaN value, ``digits`` significant for a float."""
    if value is None or value == "" or (isinstance(value, float) and np.isnan(value)):
        return "—"
    if isinstance(value, float):
        return f"{value:.{digits}g}"
    return str(value)


def mean_std(values: Sequence[float], ddof: int = 0) -> tuple[float, float]:
    """Mean and standard deviation (``ddof=1``: the sample's, 0 for one value); NaN for none."""
    v = np.asarray(values, dtype=float)
    if not len(v):
        return np.nan, np.nan
    return float(v.mean()), float(v.std(ddof=ddof)) if len(v) > ddof else 0.0


def plus_minus(mean_and_std: tuple[float, float], digits: int = 1) -> str:
    """'mean ± std'."""
    return f"{mean_and_std[0]:.{digits}f} ± {mean_and_std[1]:.{digits}f}"


def pm(values: Sequence[float], scale: float = 1.0, digits: int = 1) -> str:
    """'mean ± std' of ``values`` × ``scale`` (a percentage with ``scale=100``)."""
    return plus_minus(mean_std(np.asarray(values, dtype=float) * scale), digits)


def log_grid(lo: float, hi: float, step: float) -> np.ndarray:
    """10^lo … 10^hi in steps of ``step`` decades."""
    return 10.0 ** np.round(np.arange(lo, hi + step / 2, step), 6)
