"""Export fitted sparse kernel machines to ONNX, for onnxruntime and every other ONNX runtime.

`to_onnx` turns a fitted estimator (or a loaded model file) into an
``onnx.ModelProto`` whose graph computes its predictions with standard
operators; `register_converters` lets skl2onnx convert scikit-learn pipelines
that end in one. ``sparsify export MODEL --onnx OUT.onnx`` does the same from a
model file. onnx and skl2onnx are an optional extra (``pip install
"sparsify[onnx]"`` from a checkout: ``pip install -e ".[onnx]"``); they are
imported only when a function here runs. The graph is described in
docs/onnx.md.

Modules: `sparsify.onnx.machine` (what the graph needs of an estimator),
`sparsify.onnx.graph` (its nodes), `sparsify.onnx.convert` (skl2onnx's
converters, `to_onnx`).
"""

from __future__ import annotations

from sparsify.onnx.convert import DEFAULT_OPSET, register_converters, to_onnx

__all__ = ["DEFAULT_OPSET", "register_converters", "to_onnx"]
