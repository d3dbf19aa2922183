"""The command samples of the README and the docs print what the commands print.

Every ```bash block holding one ``sparsify`` command that is followed at once by a ```text
block is run (in a temporary folder, in the order of its page, after the ```python block
that makes its data when there is one) and its output compared with the block line by line:
the words exactly, the numbers within what another processor's round-off can move them (the
L-BFGS path, hence a test error, by a hair; never NSV or Nz), times and iteration counts not
at all.
"""

from __future__ import annotations

import math
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from sparsify.cli import main
from sparsify.datasets import load_banana
from tests.conftest import REPO

PAGES = ["docs/cli.md", "docs/quickstart.md"]
SAMPLE = re.compile(r"(?:```python\n(?P<python>.*?)```\n\n)?```bash\n(?P<command>sparsify [^\n]*)\n"
                    r"```\n\n```text\n(?P<text>.*?)```", re.DOTALL)
NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:e[+-]?\d+)?")
# numbers a machine decides: times, iteration counts, finite differences' noise and errors,
# and the size of a file that records the onnx library's version
UNCHECKED = re.compile(r"(fit |)\d+\.\d+ s\b|\(\d+ L-BFGS iterations\)|\d\.\d+e[+-]\d+"
                       r"|\(\d+ bytes\)")


def _samples() -> list[tuple[str, int, str, str | None, str]]:
    found = []
    for page in PAGES:
        text = (REPO / page).read_text()
        for k, m in enumerate(SAMPLE.finditer(text)):
            found.append((page, k, m["command"], m["python"], m["text"]))
    return found


def _banana_test_csv(path: Path) -> None:
    """The predict sample's test.csv: Banana's first 50 test rows, a header x0,x1,label."""
    _, _, X_test, y_test = load_banana()
    np.savetxt(path, np.column_stack([X_test[:50], y_test[:50]]), delimiter=",",
               header="x0,x1,label", comments="")


def _same(printed: str, documented: str) -> None:
    """Line by line: words exactly; numbers within round-off; unchecked numbers skipped."""
    got, want = printed.splitlines(), documented.splitlines()
    assert len(got) == len(want), (printed, documented)
    for line, doc in zip(got, want, strict=True):
        line, doc = UNCHECKED.sub("#", line), UNCHECKED.sub("#", doc)
        assert NUMBER.sub("0", line) == NUMBER.sub("0", doc), (line, doc)
        for a, b in zip(NUMBER.findall(line), NUMBER.findall(doc), strict=True):
            if "." in a or "." in b:  # an error rate, RMSE, gamma: a hair of round-off
                assert math.isclose(float(a), float(b), rel_tol=0.02, abs_tol=0.003), (line, doc)
            else:  # counts: Nz, NSV, points, features
                assert a == b, (line, doc)


def _run(command: str, capsys: pytest.CaptureFixture[str]) -> str:
    args = shlex.split(command)[1:]
    if args[0] == "plugins":  # a fresh process without third-party plugins: the built-ins only
        proc = subprocess.run([sys.executable, "-m", "sparsify", *args], capture_output=True,
                              text=True, env={**os.environ, "SPARSIFY_PLUGINS": ""},
                              timeout=300, check=True)
        return proc.stdout
    capsys.readouterr()
    assert main(args) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("page", PAGES)
def test_the_samples_of_a_page_print_what_they_show(page: str, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    samples = [s for s in _samples() if s[0] == page]
    assert samples, f"{page} has no command sample"
    for _, _, command, python, text in samples:
        if python is not None:
            exec(compile(python, f"{page} data", "exec"), {})
        if " predict " in f" {command} " and "test.csv" in command:
            _banana_test_csv(tmp_path / "test.csv")
        _same(_run(command, capsys), text)


def test_the_readme_shows_what_its_first_command_prints(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]
                                                         ) -> None:
    readme = (REPO / "README.md").read_text()
    command = re.search(r"```bash\n.*?&& \.venv/bin/(sparsify [^\n]*)\n```", readme)[1]
    text = re.search(r"```text\n(.*?)```", readme, re.DOTALL)[1]
    monkeypatch.chdir(tmp_path)
    _same(_run(command, capsys), text)


def test_the_solver_lists_name_every_backend(capsys: pytest.CaptureFixture[str]) -> None:
    from sparsify.plugins.registry import get_registry

    backends = [n for n, e in get_registry().entries["solver"].items() if e.builtin]
    # the lines that list the backends (name three of them)
    lists = [line for page in ("docs/cli.md", "docs/estimators.md")
             for line in (REPO / page).read_text().splitlines()
             if sum(f"`{b}`" in line or f'`"{b}"`' in line
                    for b in ("clarabel", "ecos", "osqp")) == 3]
    assert lists
    for line in lists:
        assert all(f"`{b}`" in line or f'`"{b}"`' in line for b in backends), (line, backends)
    assert main(["fit", "--help"]) == 0
    help_text = " ".join(capsys.readouterr().out.split())
    assert all(b in help_text for b in backends), backends
