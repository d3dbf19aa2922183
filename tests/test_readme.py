"""The README stays true: its Python blocks run, its set-up commands are what CI runs."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import types

import numpy as np
import pytest

from tests.conftest import REPO

README = (REPO / "README.md").read_text()
BLOCKS = re.findall(r"```python\n(.*?)```", README, flags=re.DOTALL)


def test_quick_start_runs_and_is_sparse(capsys) -> None:
    namespace: dict = {}
    exec(compile(BLOCKS[0], "README quick start", "exec"), namespace)
    clf = namespace["clf"]
    assert clf.n_expansion_[0] == round(0.1 * clf.full_n_support_[0])
    assert 1 - clf.score(namespace["X_test"], namespace["y_test"]) < 0.125


def test_plugin_recipe_declares_fits_and_checks_a_regressor(capsys, monkeypatch) -> None:
    """The README's plugin module and its Python block, run verbatim."""
    module = types.ModuleType("my_quantile")
    exec(compile(BLOCKS[1], "README plugin", "exec"), module.__dict__)
    monkeypatch.setitem(sys.modules, "my_quantile", module)
    import sparsify

    if "quantile" in sparsify.plugins.registry.get_registry().names("formulation"):
        pytest.skip("a formulation 'quantile' is registered already in this process")
    namespace: dict = {}
    exec(compile(BLOCKS[2], "README plugin use", "exec"), namespace)
    below, passed = capsys.readouterr().out.split()
    assert abs(float(below) - 0.9) < 0.03 and passed == "True"
    reg = namespace["reg"]
    assert reg.expansion_vectors_.shape == (8, 1) and reg.n_iter_[0] > 0


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
