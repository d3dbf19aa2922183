"""Run the code of a documentation page as a reader would: its blocks in order, in a fresh process.

``python -m tests.doc_blocks PAGE --workdir DIR`` runs every Python and shell block of a
Markdown page (README.md, docs/*.md) in the order of the page, in one new process whose working
directory is ``DIR``, and compares what a block prints with the output the page shows after it.
`tests/test_docs_code.py` runs it for every page. The page is read by Sybil
(https://sybil.readthedocs.io; why Sybil: docs/installation.md, "Documentation tests"): its
Markdown lexer finds the fenced blocks, its skip directive skips one, its doctest evaluator runs
``>>>`` examples; this module adds what a page of sparsify needs beyond plain Python blocks.

The conventions, for writers of the pages:

- A ```` ```python ```` block runs in the namespace of the page, a fresh ``__main__`` module, as
  a script's top level would; the working directory is on ``sys.path``.
- A ```` ```python ```` block that starts with ``>>>`` is a doctest (ellipsis and whitespace
  normalised).
- A ```` ```python ```` or ```` ```toml ```` block whose first line is a comment naming a file
  (``# my_l2svm.py``, ``# pyproject.toml``) is that file of the example: it is written to the
  working directory, not run.
- A ```` ```python ```` block with an ``if __name__ == "__main__":`` guard is a script (Dask's
  worker processes need one): it is saved as a file and run with ``python`` in a new process.
- A ```` ```bash ```` block runs with ``bash -e -o pipefail`` in the working directory, with the
  test environment's ``python``, ``pip`` and ``sparsify`` first on the ``PATH``; ``.venv`` there
  is a link to the test environment, so ``.venv/bin/sparsify`` runs as the pages write it.
  ``pip install`` installs into the working directory (``PIP_TARGET``, on ``PYTHONPATH``),
  without network or dependencies, so a page may install the package it builds.
- A ```` ```text ```` block right after a Python or shell block is what that block prints: the
  words must match exactly (runs of spaces are layout); integers exactly; other numbers within
  what another processor's round-off moves them (2 %, or 0.003); times, L-BFGS iteration
  counts, byte counts and numbers in scientific notation (finite-difference noise) are not
  compared. A line ``...`` stands for any number of lines.
- ``<!-- skip: next "why" -->`` before a block skips it, saying why (Sybil's skip directive).
"""

from __future__ import annotations

import argparse
import builtins
import contextlib
import doctest
import importlib
import io
import json
import math
import os
import re
import subprocess
import sys
import time
import traceback
import types
import unittest
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sybil import Document, Example, Region
from sybil.evaluators.doctest import DocTestEvaluator
from sybil.parsers.abstract.doctest import DocTestStringParser
from sybil.parsers.markdown import SkipParser
from sybil.parsers.markdown.lexers import RawFencedCodeBlockLexer

REPO = Path(__file__).resolve().parents[1]

_FENCE = RawFencedCodeBlockLexer(
    info_pattern=re.compile(r"(?P<language>[\w+-]*)[^\n]*$\n", re.MULTILINE),
    mapping={"language": "language", "source": "source"})
_FILE = re.compile(r"#\s*(?P<name>[\w.-]+\.(?:py|toml|cfg|txt))\s*\n")
_SCRIPT = re.compile(r"^if __name__ == [\"']__main__[\"']:", re.MULTILINE)
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:e[+-]?\d+)?")
# numbers a machine decides: times, iteration counts, finite differences' noise and errors,
# and the size of a file that records the onnx library's version
_UNCHECKED = re.compile(r"(fit |)\d+\.\d+ s\b|\[?\d+\]? L-BFGS iterations|\d\.\d+e[+-]\d+"
                        r"|\(\d+ bytes\)")
#: Seconds one shell block or script may take.
TIMEOUT = 900


@dataclass(frozen=True)
class Block:
    """One fenced block of a page: what to do with it and the output it should print."""

    kind: str  # "python", "script", "bash" or "file"
    source: str
    expected: str | None = None
    name: str | None = None  # the file a "file" block is, the script a "script" block is saved as


def same_output(printed: str, documented: str) -> str | None:
    """None if ``printed`` is what ``documented`` shows (the rules above), else the difference.

    Examples
    --------
    >>> same_output("Nz = 8, error 0.1141, fit 0.07 s\\n", "Nz = 8, error 0.1140, fit 1.2 s\\n")
    >>> same_output("Nz = 9, error 0.1141\\n", "Nz = 8, error 0.1141\\n")
    "line 1: 'Nz = 9, error 0.1141' is not 'Nz = 8, error 0.1141' (9 != 8)"
    >>> same_output("a\\nb\\nc\\n", "a\\n...\\n")
    """
    got, want = printed.splitlines(), documented.splitlines()
    return _match(got, 0, want, 0)


def _match(got: list[str], i: int, want: list[str], j: int) -> str | None:
    while j < len(want):
        if want[j].strip() == "...":
            if j + 1 == len(want):
                return None
            for k in range(i, len(got) + 1):
                if _match(got, k, want, j + 1) is None:
                    return None
            return f"no printed line after line {i} matches {want[j + 1]!r}"
        if i >= len(got):
            return f"printed {len(got)} lines; the page shows more: {want[j]!r}"
        problem = _same_line(got[i], want[j])
        if problem is not None:
            return f"line {i + 1}: {got[i]!r} is not {want[j]!r} ({problem})"
        i, j = i + 1, j + 1
    if i < len(got):
        return f"printed more lines than the page shows, from {got[i]!r}"
    return None


def _same_line(line: str, doc: str) -> str | None:
    # runs of spaces are layout (numpy pads its columns to the widest number)
    line, doc = (" ".join(_UNCHECKED.sub("#", text).split()) for text in (line, doc))
    if _NUMBER.sub("0", line) != _NUMBER.sub("0", doc):
        return "the words differ"
    for a, b in zip(_NUMBER.findall(line), _NUMBER.findall(doc), strict=True):
        if "." in a or "." in b or "e" in a or "e" in b:  # an error rate, RMSE, gamma: round-off
            if not math.isclose(float(a), float(b), rel_tol=0.02, abs_tol=0.003):
                return f"{a} != {b}"
        elif a != b:  # counts: Nz, NSV, points, features
            return f"{a} != {b}"
    return None


# ----------------------------------------------------------------------------- parsing


def _blocks(document: Document) -> Iterable[Region]:
    """Sybil regions for the page's Python, shell and file blocks (a doctest's examples each)."""
    fenced = sorted(_FENCE(document), key=lambda region: region.start)
    doctests = DocTestStringParser(DocTestEvaluator(doctest.ELLIPSIS
                                                    | doctest.NORMALIZE_WHITESPACE))
    for k, region in enumerate(fenced):
        language, source = region.lexemes["language"], region.lexemes["source"]
        named = _FILE.match(source)
        if language == "python" and source.lstrip().startswith(">>>"):
            for example in doctests(source, document.path):
                example.adjust(region, source)
                yield example
            continue
        if named is not None and language in ("python", "toml"):
            yield Region(region.start, region.end,
                         Block("file", str(source), name=named["name"]), _evaluate)
            continue
        if language not in ("python", "bash"):
            continue
        end, expected = region.end, None
        following = fenced[k + 1] if k + 1 < len(fenced) else None
        if (following is not None and following.lexemes["language"] == "text"
                and not document.text[region.end:following.start].strip()):
            end, expected = following.end, str(following.lexemes["source"])
        kind = "bash" if language == "bash" else "script" if _SCRIPT.search(source) else "python"
        line = document.text.count("\n", 0, region.start) + 1
        yield Region(region.start, end,
                     Block(kind, str(source), expected, name=f"block_line{line}.py"), _evaluate)


def parse(page: Path) -> Document:
    """The page as a Sybil document: its skip directives and its blocks."""
    return Document.parse(str(page), SkipParser(), _blocks)


# ----------------------------------------------------------------------------- running


class _Tee(io.TextIOBase):
    """Writes to the real stream and keeps a copy (what a block printed)."""

    def __init__(self, stream: Any) -> None:
        self.stream, self.copy = stream, io.StringIO()

    def write(self, text: str) -> int:
        self.stream.write(text)
        self.copy.write(text)
        return len(text)

    def flush(self) -> None:
        self.stream.flush()


@contextlib.contextmanager
def _captured() -> Iterator[_Tee]:
    tee = _Tee(sys.stdout)
    with contextlib.redirect_stdout(tee):
        yield tee


def _check_output(block: Block, printed: str) -> None:
    if block.expected is None:
        return
    problem = same_output(printed, block.expected)
    if problem is not None:
        raise AssertionError(f"the block printed what the page does not show: {problem}\n"
                             f"--- printed\n{printed}--- the page\n{block.expected}")


def _run(command: list[str]) -> str:
    proc = subprocess.run(command, cwd=Path.cwd(), capture_output=True, text=True,
                          timeout=TIMEOUT, check=False)
    sys.stdout.write(proc.stdout)
    sys.stderr.write(proc.stderr)
    if proc.returncode != 0:
        raise AssertionError(f"exit status {proc.returncode}\n--- stderr\n{proc.stderr}")
    return proc.stdout


DRY_RUN = False


def _evaluate(example: Example) -> None:
    block: Block = example.parsed
    if DRY_RUN:
        return
    importlib.invalidate_caches()  # a shell block may have installed or written modules
    if block.kind == "file":
        assert block.name is not None
        Path(block.name).write_text(block.source, encoding="utf-8")
    elif block.kind == "bash":
        _check_output(block, _run(["bash", "-e", "-o", "pipefail", "-c", block.source]))
    elif block.kind == "script":
        assert block.name is not None
        Path(block.name).write_text(block.source, encoding="utf-8")
        _check_output(block, _run([sys.executable, block.name]))
    else:
        code = compile(_padded(example, block.source), example.path, "exec", dont_inherit=True)
        with _captured() as tee:
            exec(code, example.namespace)
        _check_output(block, tee.copy.getvalue())


def _padded(example: Example, source: str) -> str:
    """The source with blank lines before it, so tracebacks give the page's line numbers."""
    return "\n" * example.line + source


def environment(workdir: Path, third_party_plugins: bool) -> dict[str, str]:
    """The environment a page's blocks run in (shell blocks, scripts and the page's process).

    The test environment's executables first on the PATH; ``pip install`` into
    ``workdir/site`` without network or dependencies (what a page installs stays in it); one
    BLAS thread; no progress bars; a non-interactive matplotlib. Without
    ``third_party_plugins``, sparsify loads only its built-ins (``SPARSIFY_PLUGINS=""``), so the
    page's listings do not depend on what else is installed.
    """
    site = workdir / "site"
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("PIP_", "SPARSIFY_", "PYTEST_"))}
    env.update({
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")]),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(site), env.get("PYTHONPATH", "")])),
        "PIP_TARGET": str(site), "PIP_NO_INDEX": "1", "PIP_NO_DEPS": "1",
        # pip's inverted spelling: this turns build isolation off
        "PIP_NO_BUILD_ISOLATION": "0",
        "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_WARN_SCRIPT_LOCATION": "1", "PIP_QUIET": "1",
        "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
        "TQDM_DISABLE": "1", "MPLBACKEND": "Agg", "PYTHONUNBUFFERED": "1",
    })
    if not third_party_plugins:
        env["SPARSIFY_PLUGINS"] = ""
    return env


def run_page(page: Path, workdir: Path) -> list[dict[str, Any]]:
    """Run the page's blocks in order in this process, from ``workdir``; one result per block.

    Each result: ``line``, ``kind``, ``status`` ("passed", "skipped", "failed" or
    "not run": after a failure, since later blocks build on earlier ones), ``reason`` (a
    skip's) or ``error``, and ``seconds``.
    """
    document = parse(page)
    main = types.ModuleType("__main__")
    main.__dict__["__builtins__"] = builtins
    sys.modules["__main__"] = main
    document.namespace = main.__dict__
    os.chdir(workdir)
    (workdir / "site").mkdir(exist_ok=True)
    if not (workdir / ".venv").exists():  # the pages' ".venv/bin/sparsify": this environment
        (workdir / ".venv").symlink_to(Path(sys.prefix), target_is_directory=True)
    sys.path[:0] = [str(workdir), str(workdir / "site")]
    results: list[dict[str, Any]] = []
    failed = False
    for example in document.examples():
        if isinstance(example.parsed, tuple):  # a skip directive itself
            if not failed:
                example.evaluate()
            continue
        kind = example.parsed.kind if isinstance(example.parsed, Block) else "doctest"
        if DRY_RUN and not isinstance(example.parsed, Block):
            example.region.evaluator = _evaluate  # a doctest: counted, not run
        result: dict[str, Any] = {"line": example.line, "kind": kind}
        results.append(result)
        if failed:
            result["status"] = "not run"
            continue
        began = time.perf_counter()
        try:
            example.evaluate()
            result["status"] = "passed"
        except unittest.SkipTest as exc:
            result.update(status="skipped", reason=str(exc))
        except BaseException:  # a failure of the block, whatever it raised
            result.update(status="failed", error=traceback.format_exc())
            failed = True
        result["seconds"] = round(time.perf_counter() - began, 3)
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("page", type=Path)
    parser.add_argument("--workdir", type=Path, required=True)
    parser.add_argument("--json", type=Path, help="write the results here")
    parser.add_argument("--dry-run", action="store_true",
                        help="evaluate nothing: list the blocks and the skipped ones")
    args = parser.parse_args(argv)
    global DRY_RUN
    DRY_RUN = args.dry_run
    out = None if args.json is None else args.json.resolve()
    results = run_page(args.page.resolve(), args.workdir.resolve())
    if out is not None:
        out.write_text(json.dumps(results, indent=1))
    return int(any(r["status"] == "failed" for r in results))


if __name__ == "__main__":
    sys.exit(main())
