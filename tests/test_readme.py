"""The README stays true: its Python blocks run, its set-up commands are what CI runs."""

from __future__ import annotations

import re
import types

import numpy as np

from tests.conftest import REPO

README = (REPO / "README.md").read_text()
BLOCKS = re.findall(r"```python\n(.*?)```", README, flags=re.DOTALL)


def test_quick_start_runs_and_is_sparse(capsys) -> None:
    namespace: dict = {}
    exec(compile(BLOCKS[0], "README quick start", "exec"), namespace)
    clf = namespace["clf"]
    assert clf.n_expansion_[0] == round(0.1 * clf.full_n_support_[0])
    assert 1 - clf.score(namespace["X_test"], namespace["y_test"]) < 0.125


def test_plugin_example_registers_fits_and_has_exact_gradients() -> None:
    import sparsify
    from sparsify.core.gradcheck import check_gradient

    module = types.ModuleType("readme_l2svm")
    exec(compile(BLOCKS[1], "README plugin", "exec"), module.__dict__)
    if "l2svm" not in sparsify.core.registry.get_registry().names("formulation"):
        sparsify.register_plugin(module)
    assert check_gradient("l2svm", "rbf", C=1.0).passed(1e-6)
    X, y = np.random.default_rng(0).normal(size=(60, 2)), None
    y = np.where(X[:, 0] * X[:, 1] > 0, 1, -1)
    clf = module.SparseL2SVC(n_expansion=6, C=10.0, random_state=0).fit(X, y)
    assert clf.expansion_vectors_.shape == (6, 2) and clf.score(X, y) > 0.85


def test_ci_runs_the_readme_test_command() -> None:
    commands = re.findall(r"```bash\n(.*?)\n```", README, flags=re.DOTALL)
    assert len(commands) == 2 and "sparsify fit" in commands[0]
    assert commands[1] in (REPO / ".ci" / "run").read_text()
