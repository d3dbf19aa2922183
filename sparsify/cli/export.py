"""``sparsify export``: a model file as an ONNX graph, for onnxruntime and other ONNX runtimes.

The model file is loaded (data only: nothing in it runs), turned into a graph by
`sparsify.onnx.to_onnx` (the same graph as exporting the fitted estimator) and
written atomically to ``--onnx``, which may not be the model file itself.
"""

from __future__ import annotations

import argparse
from typing import Any

from sparsify.cli.files import _check_paths, _write_atomically
from sparsify.cli.output import _print_json


def _dims(shape: Any) -> list[int | str]:
    """An ONNX tensor shape as a list: sizes, and "N" for the rows of any count."""
    return [d.dim_value if d.HasField("dim_value") else "N" for d in shape.dim]


def _text(dims: list[int | str]) -> str:
    return "(" + ", ".join(map(str, dims)) + ("," if len(dims) == 1 else "") + ")"


def _cmd_export(args: argparse.Namespace) -> int:
    _check_paths({"MODEL": args.model}, {"--onnx": args.onnx})
    from sparsify.onnx.convert import require_onnx

    try:
        require_onnx("sparsify export --onnx")
    except ImportError as exc:  # a usage problem to fix, reported as one line
        raise ValueError(str(exc)) from None
    from sparsify.io import load_model
    from sparsify.onnx import to_onnx
    from sparsify.onnx.convert import MIN_OPSET, max_opset

    if args.opset is not None and not MIN_OPSET <= args.opset <= max_opset():
        raise ValueError(f"--opset {args.opset} is not an opset this export can target: give one "
                         f"from {MIN_OPSET} to {max_opset()} (the newest the installed onnx and "
                         "skl2onnx know), or leave it out for the default.")
    machine = load_model(args.model)
    model = to_onnx(machine, dtype=args.dtype, target_opset=args.opset)
    data = model.SerializeToString()
    _write_atomically([(args.onnx, data)])

    props = {p.key: p.value for p in model.metadata_props}
    outputs = {o.name: _dims(o.type.tensor_type.shape) for o in model.graph.output}
    opset = next(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))
    obj = {"model": args.model, "onnx": args.onnx, "bytes": len(data),
           "estimator": machine.estimator_class_, "decision_rule": machine.decision_rule_,
           "probability": machine.probability_, "kernel": machine.kernel_spec_["name"],
           "n_expansion": len(machine.expansion_vectors_),
           "n_features": int(machine.n_features_in_), "dtype": props["dtype"], "opset": opset,
           "outputs": outputs}
    if args.json:
        _print_json(obj)
        return 0
    print(f"wrote {args.onnx} ({len(data)} bytes): {obj['estimator']} ({obj['decision_rule']}, "
          f"kernel {obj['kernel']}, Nz = {obj['n_expansion']}) in {obj['dtype']}, opset {opset}")
    print(f"input X (N, {obj['n_features']}); outputs "
          + ", ".join(f"{name} {_text(dims)}" for name, dims in outputs.items()))
    return 0
