"""The README stays true: its first command prints what it shows, its plugin recipe installs, its
set-up commands are what CI runs (its blocks run as written in tests/test_docs_code.py)."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys

import numpy as np
import pytest

from sparsify.cli import main
from tests.conftest import REPO
from tests.doc_blocks import same_output

README = (REPO / "README.md").read_text()
BLOCKS = re.findall(r"```python\n(.*?)```", README, flags=re.DOTALL)


def test_the_readme_shows_what_its_first_command_prints(tmp_path, monkeypatch, capsys) -> None:
    """The set-up block (skipped by the page's run: it installs from PyPI) ends in a
    ``sparsify fit`` whose report the README shows; run that command and compare."""
    command = re.search(r"```bash\n.*?&& \.venv/bin/(sparsify [^\n]*)\n```", README)[1]
    text = re.search(r"```text\n(.*?)```", README, re.DOTALL)[1]
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    assert main(shlex.split(command)[1:]) == 0
    problem = same_output(capsys.readouterr().out, text)
    assert problem is None, problem


@pytest.mark.slow
def test_plugin_recipe_runs_from_the_command_line_once_installed(tmp_path) -> None:
    """``sparsify fit --formulation quantile`` with the module installed under its entry point.

    A ``.dist-info`` folder with the README's entry point stands for ``pip install``:
    importlib.metadata finds it on the path exactly as it finds an installed distribution.
    """
    (tmp_path / "my_quantile.py").write_text(BLOCKS[1])
    info = tmp_path / "my_quantile-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: my-quantile\nVersion: 0.1\n")
    entry = re.search(r"```toml\n(\[project.entry-points.sparsify\]\n.*?)```", README,
                      flags=re.DOTALL).group(1)
    # pyproject.toml's TOML to entry_points.txt's INI: the same table, values unquoted
    (info / "entry_points.txt").write_text(
        entry.replace("project.entry-points.", "").replace('"', ""))
    rng = np.random.default_rng(0)
    X = rng.uniform(-3, 3, size=(300, 1))
    y = np.sin(X[:, 0]) + 0.3 * rng.normal(size=300)
    np.savetxt(tmp_path / "train.csv", np.column_stack([X, y]), delimiter=",")
    path = [str(tmp_path), str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(path),
           "OPENBLAS_NUM_THREADS": "1"}
    env.pop("SPARSIFY_PLUGINS", None)

    def run(*args: str) -> dict:
        proc = subprocess.run([sys.executable, "-m", "sparsify", *args, "--json"],
                              capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout)

    fit = run("fit", "--formulation", "quantile", "--data", "train.csv", "--no-header",
              "--n-expansion", "8", "--gamma", "0.5", "--param", "quantile=0.9", "--seed", "0")
    assert fit["estimator"] == "SparseQuantileRegressor" and fit["n_expansion"] == 8
    assert fit["train_r2"] > 0.3 and fit["train_rmse"] < 0.6, fit
    assert run("check-gradient", "--formulation", "quantile")["passed"] is True


def test_ci_runs_the_readme_test_command() -> None:
    commands = re.findall(r"```bash\n(.*?)\n```", README, flags=re.DOTALL)
    assert len(commands) == 2 and "sparsify fit" in commands[0]
    assert commands[1] in (REPO / ".ci" / "run").read_text()
