"""Model files that hold only data: save a fitted kernel machine, load it without running code.

A sparse kernel machine is data: a kernel (a name and numbers), the expansion
vectors Z, the coefficients β, the intercepts b, the class labels and a
decision rule. `save_model` writes exactly that to a versioned zip of JSON and
float64 ``.npy`` members with a SHA-256 checksum; `load_model` reads it back
as a `SavedKernelMachine` that predicts what the estimator predicted. Unlike a
pickle, a model file cannot run code when it is loaded, and any language that
reads zip, JSON and ``.npy`` can use it: the format is documented in
docs/model-format.md.

Modules: `sparsify.io.model_file` (the container, reading and writing),
`sparsify.io.kernel_spec` (kernels as data), `sparsify.io.saveable`
(which estimators, which decision rules), `sparsify.io.contents` (what a
file holds, and its predictions with numpy alone: `read_model`, what the
command line uses) and `sparsify.io.machine` (the loaded predictor as a
scikit-learn estimator).

Examples
--------
>>> import numpy as np
>>> from sklearn.datasets import make_blobs
>>> from sparsify import SparseKernelLogisticRegression
>>> from sparsify.io import dumps_model, loads_model
>>> X, y = make_blobs(90, centers=3, random_state=0)
>>> klr = SparseKernelLogisticRegression(5, gamma=0.5, max_iter=5, random_state=0).fit(X, y)
>>> machine = loads_model(dumps_model(klr), source="klr.spm")
>>> machine.decision_rule_, machine.probability_
('softmax_argmax', 'softmax')
>>> bool(np.array_equal(machine.predict_proba(X), klr.predict_proba(X)))
True
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sparsify.io.contents import ModelContents
from sparsify.io.model_file import (
    FORMAT,
    FORMAT_VERSION,
    ModelFileError,
    dumps_model,
    load_model,
    loads_model,
    read_model,
    save_model,
)

__all__ = [
    "FORMAT",
    "FORMAT_VERSION",
    "ModelContents",
    "ModelFileError",
    "SavedKernelMachine",
    "dumps_model",
    "load_model",
    "loads_model",
    "read_model",
    "save_model",
]


def __getattr__(name: str) -> Any:
    # the predictor imports scikit-learn: only on first use (the command line stays fast)
    if name == "SavedKernelMachine":
        from sparsify.io.machine import SavedKernelMachine

        return SavedKernelMachine
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


if TYPE_CHECKING:
    from sparsify.io.machine import SavedKernelMachine
