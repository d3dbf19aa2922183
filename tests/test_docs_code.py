"""The code of README.md and docs/*.md runs as written, and prints what the pages show.

Each page runs in a fresh process (`tests.doc_blocks`, built on Sybil): its Python and shell
blocks in order, in a temporary working directory, each output block compared with what its
block printed. A block that cannot run carries Sybil's skip directive with its reason; the
pages that start clusters of worker processes are marked slow.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.doc_blocks import environment, parse, same_output

PAGES = ["README.md", *sorted(p.relative_to(REPO).as_posix() for p in (REPO / "docs").glob("*.md"))]
#: Pages whose blocks take long: they start Dask clusters of worker processes.
SLOW = {"docs/scale-out.md"}
#: Pages whose blocks install a plugin and must see it (the others see the built-ins only).
THIRD_PARTY = {"docs/plugins.md"}


def _failure(page: str, results: list[dict], log: str) -> str:
    failed = next(r for r in results if r["status"] == "failed")
    return (f"{page}, the {failed['kind']} block at line {failed['line']} failed:\n"
            f"{failed['error']}\n--- what the page's process printed (last 4000 characters)\n"
            f"{log[-4000:]}")


@pytest.mark.parametrize("page", [pytest.param(p, marks=pytest.mark.slow) if p in SLOW else p
                                  for p in PAGES])
def test_the_code_of_a_page_runs_as_written(page: str, tmp_path: Path) -> None:
    work, report = tmp_path / "work", tmp_path / "results.json"
    work.mkdir()
    proc = subprocess.run(
        [sys.executable, "-m", "tests.doc_blocks", str(REPO / page), "--workdir", str(work),
         "--json", str(report)],
        cwd=REPO, env=environment(work, page in THIRD_PARTY), capture_output=True, text=True,
        timeout=3600, check=False)
    log = proc.stdout + proc.stderr
    assert report.is_file(), f"{page}: the page's process ended without results:\n{log[-4000:]}"
    results = json.loads(report.read_text())
    if any(r["status"] == "failed" for r in results):
        pytest.fail(_failure(page, results, log), pytrace=False)
    assert proc.returncode == 0, log[-4000:]


def test_every_page_is_run_and_every_skip_says_why() -> None:
    """Each page with code is in PAGES; each skip directive gives a reason in quotes."""
    for page in PAGES:
        document = parse(REPO / page)
        for _, region in document.regions:
            if isinstance(region.parsed, tuple):  # (action, reason) of a skip directive
                action, reason = region.parsed
                assert action == "next" and reason and reason.strip()[0] in "\"'", (
                    f"{page}: a skip directive must be '<!-- skip: next \"why\" -->'; got "
                    f"{region.parsed}")


@pytest.mark.parametrize(("printed", "shown", "problem"), [
    ("Nz = 8, test error 0.1141, fit 0.07 s", "Nz = 8, test error 0.1139, fit 3.50 s", None),
    ("Nz = 9, test error 0.1141", "Nz = 8, test error 0.1141", "9 != 8"),
    ("test error 0.2141", "test error 0.1141", "0.2141 != 0.1141"),
    ("test error 0.1141", "train error 0.1141", "the words differ"),
    ("(50 L-BFGS iterations)", "(71 L-BFGS iterations)", None),
    ("a\nb", "a", "printed more lines"),
    ("a", "a\nb", "the page shows more"),
    ("head\n1\n2\ntail", "head\n...\ntail", None),
    ("head\n1\n2", "head\n...\ntail", "matches 'tail'"),
])
def test_outputs_are_compared_by_words_and_numbers(printed: str, shown: str,
                                                   problem: str | None) -> None:
    found = same_output(printed, shown)
    assert (found is None) if problem is None else (found is not None and problem in found), found
