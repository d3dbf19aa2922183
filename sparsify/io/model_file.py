"""The data-only model file: write a fitted kernel machine, read it back, never run code.

A model file is a zip archive (uncompressed members, so ``numpy.load`` opens it
like an ``.npz``) of

- ``header.json``: the format marker and version, the kernel, the decision
  rule, the classes, the list of arrays, metadata (UTF-8 JSON);
- one ``<name>.npy`` per array of the list: float64, little-endian, C order;
- ``checksum.sha256``: the SHA-256 of every other member (`checksum`).

Reading it parses JSON and ``.npy`` headers and copies float64 buffers; it
never unpickles, never imports a name taken from the file, and checks every
field before a prediction can use it. The format, field by field, is
documented in docs/model-format.md.

Examples
--------
>>> import numpy as np
>>> from sklearn.datasets import make_moons
>>> from sparsify import SparseSVC
>>> from sparsify.io import dumps_model, loads_model
>>> X, y = make_moons(60, noise=0.1, random_state=0)
>>> clf = SparseSVC(n_expansion=4, gamma=2.0, max_iter=10, random_state=0).fit(X, y)
>>> data = dumps_model(clf, metadata={"data": "moons"})
>>> machine = loads_model(data, source="moons.spm")
>>> bool(np.array_equal(machine.predict(X), clf.predict(X))), machine.metadata
(True, {'data': 'moons'})
>>> loads_model(data[:-100], source="truncated.spm")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
sparsify.io.model_file.ModelFileError: Cannot load the model file 'truncated.spm': ...
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import os
import re
import struct
import zipfile
import zlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
from numpy.typing import NDArray

from sparsify.io.contents import ModelContents, NonFiniteDecisionError
from sparsify.io.kernel_spec import (
    KernelSpecError,
    build_kernel,
    check_kernel_arrays,
    check_row_cost,
    kernel_array_shapes,
    validate_kernel_spec,
)
from sparsify.io.saveable import (
    DECISION_RULES,
    PROBABILITY_METHODS,
    RULE_FORMAT_VERSIONS,
    RULE_PROBABILITIES,
    RULES_WITHOUT_CLASSES,
    describe_estimator,
    json_value,
)

__all__ = [
    "CHECKSUM_MEMBER",
    "FORMAT",
    "FORMAT_VERSION",
    "HEADER_MEMBER",
    "MAX_FILE_BYTES",
    "ModelFileError",
    "checksum",
    "dumps_model",
    "load_model",
    "loads_model",
    "read_model",
    "read_model_bytes",
    "save_model",
]

#: The format marker of header.json.
FORMAT = "sparsify-model"
#: The newest model format version this sparsify writes (a file gets the lowest version that
#: holds its decision rule: 3 for "multioutput_argmax", 2 for "identity", the regressors, else
#: 1); it reads 1 to this one.
FORMAT_VERSION = 3
HEADER_MEMBER = "header.json"
CHECKSUM_MEMBER = "checksum.sha256"
#: The most array data a model file may hold; writing one takes about three times this memory.
MAX_ARRAY_BYTES = 2**30
#: The largest file `read_model` reads: the arrays and room for the header and zip records.
MAX_FILE_BYTES = MAX_ARRAY_BYTES + 2**26
# String labels may take this many bytes of memory per byte of header.json (at least the slack):
# a file declares the width of its labels, and '<U999999' × 500 would be 2 GB from 10 KB.
_CLASSES_PER_HEADER_BYTE = 64
_CLASSES_SLACK = 2**20

# a fixed timestamp: the same model gives the same bytes (and the same checksum)
_DATE = (1980, 1, 1, 0, 0, 0)
_ARRAY_NAME = re.compile(r"[a-z][a-z0-9_]*(\.[a-z0-9_]+)*")
_CLASS_DTYPE = re.compile(r"[<>|=]?(?:[iu][1248]|f[248]|b1|U[0-9]{1,6})|object")
_HEADER_KEYS = {
    "format", "format_version", "sparsify_version", "estimator", "formulation", "n_features_in",
    "feature_names_in", "kernel", "decision_rule", "probability", "offset", "classes", "arrays",
    "metadata",
}
_ESTIMATOR_KEYS = {"class", "module", "params", "params_not_saved"}

_PICKLE_HINT = (
    "sparsify never unpickles a model file. If you trust the pickle and it holds a fitted "
    "sparsify estimator, load it in Python (pickle or joblib) and write it with "
    "sparsify.io.save_model; otherwise refit the model."
)
_CORRUPT_HINT = ("Save the model again from the fitted estimator (sparsify.io.save_model or "
                 "'sparsify fit --out'), or restore the file from a copy.")
_INVALID_HINT = ("It was not written by sparsify.io.save_model, or it was edited; write model "
                 "files with save_model (the format is described in docs/model-format.md).")


class ModelFileError(ValueError):
    """A file is not a valid sparsify model file; the message names it and says what to do."""


def _fail(source: str, message: str) -> ModelFileError:
    return ModelFileError(f"Cannot load the model file {source!r}: {message}")


def checksum(members: Mapping[str, bytes]) -> str:
    """The SHA-256 (hex) that ``checksum.sha256`` holds for a model file's other members.

    Members in the order of their names (by UTF-8 bytes); each contributes its
    name, a newline, its length in decimal, a newline and its bytes. The
    checksum member itself is left out.

    Examples
    --------
    >>> checksum({"header.json": b"{}"}) == hashlib.sha256(b"header.json\\n2\\n{}").hexdigest()
    True
    """
    digest = hashlib.sha256()
    for name in sorted((n for n in members if n != CHECKSUM_MEMBER), key=lambda n: n.encode()):
        data = members[name]
        digest.update(f"{name}\n{len(data)}\n".encode() + data)
    return digest.hexdigest()


# ----------------------------------------------------------------------------------- writing


def _classes_json(classes: NDArray[Any] | None, est_name: str) -> dict[str, Any] | None:
    """Class labels as JSON values with their numpy dtype, so they load with their type."""
    if classes is None:
        return None
    values = classes.tolist()
    if classes.dtype == object:
        if not all(isinstance(v, str) for v in values):
            kinds = sorted({type(v).__name__ for v in values})
            raise ValueError(f"{est_name}.classes_ is an object array of {', '.join(kinds)}; a "
                             "model file holds labels that are all ints, floats, bools or "
                             "strings. Refit with labels of one of these types.")
        dtype = "object"
    elif classes.dtype.kind in "iubfU" and _CLASS_DTYPE.fullmatch(classes.dtype.str):
        dtype = classes.dtype.str
        if classes.dtype.kind == "f" and not np.isfinite(classes).all():
            raise ValueError(f"{est_name}.classes_ holds NaN or infinity; a model file holds "
                             "finite labels only.")
    else:
        raise ValueError(f"{est_name}.classes_ has dtype {classes.dtype}; a model file holds "
                         "labels of int, unsigned int, float, bool or string dtype.")
    return {"dtype": dtype, "values": values}


def _npy_bytes(array: NDArray[np.float64]) -> bytes:
    buf = io.BytesIO()
    np.lib.format.write_array(buf, np.ascontiguousarray(array, dtype="<f8"), version=(1, 0),
                              allow_pickle=False)
    return buf.getvalue()


def dumps_model(estimator: Any, metadata: Mapping[str, Any] | None = None) -> bytes:
    """A fitted estimator as the bytes of a model file (data only).

    Parameters
    ----------
    estimator : estimator
        A fitted kernel machine the format can hold (see
        docs/model-format.md): an estimator of a task of the fit driver (the
        built-in SparseSVC, SparseKFD, SparseOneClassSVM,
        SparseKernelLogisticRegression, SparseKernelRidge, SparseSVR, and the
        estimators of declared formulations, made from their task or written
        by a plugin), which says its decision rule through
        ``model_file_rule()``; or SemiSupervisedSVC, ReducedSVC,
        ReducedSetSVC, RVMClassifier, ImportVectorMachine,
        KernelMatchingReduction.
    metadata : dict or None, default=None
        JSON values to keep with the model (data source, test error, creation
        time, ...); `SavedKernelMachine.metadata` after loading. numpy scalars
        are converted; NaN and infinity are refused (JSON has none).

    Returns
    -------
    bytes
        The same estimator and metadata always give the same bytes.

    Raises
    ------
    sklearn.exceptions.NotFittedError
        If the estimator is not fitted.
    ValueError
        If the estimator, its kernel, its labels or the metadata cannot be
        written as data; the message says which and what to do.

    Examples
    --------
    >>> from sklearn.datasets import make_moons
    >>> from sparsify import SparseOneClassSVM
    >>> X, _ = make_moons(50, noise=0.1, random_state=0)
    >>> det = SparseOneClassSVM(n_expansion=3, gamma=2.0, max_iter=5, random_state=0).fit(X)
    >>> data = dumps_model(det, metadata={"created": "2024-01-01T00:00:00+00:00"})
    >>> data[:2], data == dumps_model(det, metadata={"created": "2024-01-01T00:00:00+00:00"})
    (b'PK', True)
    >>> dumps_model(det, metadata={"error": float("nan")})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: The 'metadata' parameter of dumps_model must hold JSON values: ... is nan; ...
    """
    if metadata is None:
        metadata = {}
    if not isinstance(metadata, Mapping):
        raise ValueError(f"The 'metadata' parameter of dumps_model must be a dict of JSON values "
                         f"or None. Got {type(metadata).__name__} instead.")
    try:
        meta = json_value(dict(metadata), "metadata")
    except ValueError as exc:
        raise ValueError(f"The 'metadata' parameter of dumps_model must hold JSON values: "
                         f"{exc}") from exc
    import sparsify

    d = describe_estimator(estimator)
    try:  # what read_model would refuse is not written
        check_row_cost(d.kernel, {name: arr.shape for name, arr in d.arrays.items()},
                       d.n_features_in, len(d.arrays["intercept"]))
    except KernelSpecError as exc:
        raise ValueError(f"This {d.estimator_class} cannot be saved as a model file: {exc}.") \
            from exc
    size = sum(arr.nbytes for arr in d.arrays.values())
    if size > MAX_ARRAY_BYTES:
        largest = max(d.arrays, key=lambda name: d.arrays[name].nbytes)
        raise ValueError(
            f"This {d.estimator_class} would make a model file of {size / 2**30:.1f} GiB of "
            f"arrays (the largest, {largest!r}, has shape {d.arrays[largest].shape}); model "
            f"files hold at most {MAX_ARRAY_BYTES / 2**30:.0f} GiB, and writing one takes about "
            "three times that in memory. Fit a sparser model (fewer expansion vectors; for a "
            "manifold kernel, fewer graph points), or keep it as a pickle."
        )
    header = {
        "format": FORMAT,
        "format_version": RULE_FORMAT_VERSIONS.get(d.decision_rule, 1),
        "sparsify_version": sparsify.__version__,
        "estimator": {"class": d.estimator_class, "module": d.estimator_module,
                      "params": d.params, "params_not_saved": d.params_not_saved},
        "formulation": d.formulation,
        "n_features_in": d.n_features_in,
        "feature_names_in": d.feature_names_in,
        "kernel": d.kernel,
        "decision_rule": d.decision_rule,
        "probability": d.probability,
        "offset": d.offset,
        "classes": _classes_json(d.classes, d.estimator_class),
        "arrays": [{"name": name, "dtype": "<f8", "shape": list(arr.shape)}
                   for name, arr in d.arrays.items()],
        "metadata": meta,
    }
    members = {HEADER_MEMBER: json.dumps(header, indent=1, allow_nan=False).encode()}
    members.update({f"{name}.npy": _npy_bytes(arr) for name, arr in d.arrays.items()})
    members[CHECKSUM_MEMBER] = checksum(members).encode("ascii")
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_STORED) as zf:
        for name, data in members.items():
            info = zipfile.ZipInfo(name, date_time=_DATE)
            info.external_attr = 0o644 << 16
            zf.writestr(info, data)
    return buf.getvalue()


def _write_atomically(path: Path, data: bytes) -> None:
    """Write ``data`` to a new file beside ``path``, then rename it over ``path``
    (`sparsify.io.targets.write_atomically`: a replaced file keeps its mode and owner).

    A symbolic link is written through (its target is replaced); a target that
    is not a regular file or is read-only is refused (`sparsify.io.targets`).
    """
    from sparsify.io.targets import output_target, write_atomically

    try:
        path = output_target(path, "the model file")
    except ValueError as exc:
        if path.is_dir():
            raise IsADirectoryError(f"Cannot write the model file '{path}': it is a directory; "
                                    "give a file name.") from exc
        raise
    parent = path.parent
    if not parent.is_dir():
        raise FileNotFoundError(f"Cannot write the model file '{path}': the directory "
                                f"'{parent}' does not exist; create it first.")
    try:
        write_atomically([(path, data)], "the model file")
    except OSError as exc:
        raise OSError(exc.errno, f"Cannot write the model file '{path}': "
                      f"{exc.strerror or exc}; nothing was written.") from exc


def save_model(
    estimator: Any, path: str | os.PathLike[str], *, metadata: Mapping[str, Any] | None = None
) -> Path:
    """Write a fitted estimator to a model file (data only), atomically.

    The file is first written in full beside ``path`` under a temporary name,
    then renamed to ``path``: a crash or a full disk leaves the old file (if
    any) and no half-written one.

    Parameters
    ----------
    estimator : estimator
        A fitted estimator (see `dumps_model` for which ones).
    path : str or path-like
        The model file; an existing regular, writable file is replaced, a
        symbolic link is written through to its target, and a directory, FIFO,
        device node or read-only file is refused.
    metadata : dict or None, default=None
        JSON values to keep with the model.

    Returns
    -------
    Path
        ``path``.

    Raises
    ------
    ValueError
        If the estimator cannot be saved (see `dumps_model`), or ``path`` is
        not a file it may replace; nothing is written.
    OSError
        If the file cannot be written; the message names it.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from sklearn.datasets import make_moons
    >>> from sparsify import SparseSVC
    >>> from sparsify.io import load_model
    >>> X, y = make_moons(60, noise=0.1, random_state=0)
    >>> clf = SparseSVC(n_expansion=4, gamma=2.0, max_iter=10, random_state=0).fit(X, y)
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = save_model(clf, pathlib.Path(tmp) / "moons.spm", metadata={"data": "moons"})
    ...     machine = load_model(path)
    >>> bool((machine.predict(X) == clf.predict(X)).all()), machine.metadata["data"]
    (True, 'moons')
    """
    data = dumps_model(estimator, metadata)  # every check before the disk is touched
    path = Path(path)
    _write_atomically(path, data)
    return path


# ----------------------------------------------------------------------------------- reading

_ZIP_ERRORS = (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, OSError, ValueError,
               NotImplementedError, KeyError, IndexError, struct.error, zlib.error,
               RuntimeError, OverflowError, UnicodeDecodeError)


def _strict_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"the key {key!r} appears twice in one JSON object")
        out[key] = value
    return out


def _no_constant(name: str) -> Any:
    raise ValueError(f"JSON holds {name}, which is not standard JSON")


def _parse_json(data: bytes) -> Any:
    return json.loads(data.decode("utf-8"), object_pairs_hook=_strict_object,
                      parse_constant=_no_constant)


def _refuse_non_zip(head: bytes, source: str) -> ModelFileError:
    """The error for a file that is not a zip archive, judged from its first bytes."""
    pickled = head[:1] == b"\x80"  # the PROTO opcode every pickle since protocol 2 starts with
    what = ("empty" if not head else "a pickle (it starts with a pickle protocol header)"
            if pickled else "not a zip archive")
    hint = f" {_PICKLE_HINT}" if pickled else (
        " Write model files with sparsify.io.save_model or 'sparsify fit --out'.")
    return _fail(source, f"it is {what}, not a sparsify model file (a zip archive with "
                         f"{HEADER_MEMBER}).{hint}")


def _read_members(fh: BinaryIO, size: int, source: str) -> dict[str, bytes]:
    """Every member of the zip archive in ``fh`` (``size`` bytes), checked for what the format
    allows before any member is read."""
    head = fh.read(4)
    fh.seek(0)
    if head != b"PK\x03\x04":
        raise _refuse_non_zip(head, source)
    try:
        with zipfile.ZipFile(fh) as zf:
            infos = zf.infolist()
            names = [info.filename for info in infos]
            if len(set(names)) != len(names):
                raise _fail(source, f"its zip archive lists a member twice. {_INVALID_HINT}")
            if HEADER_MEMBER not in names:
                raise _fail(source, f"it is a zip archive without {HEADER_MEMBER}, so not a "
                                    "sparsify model file (an .npz of numpy.savez?). Write model "
                                    "files with sparsify.io.save_model or 'sparsify fit --out'.")
            total = 0
            for info in infos:
                if info.flag_bits & 0x1:
                    raise _fail(source, f"member {info.filename!r} is encrypted. {_INVALID_HINT}")
                if info.compress_type != zipfile.ZIP_STORED or info.file_size != info.compress_size:
                    raise _fail(source, f"member {info.filename!r} is compressed; model files "
                                        f"store their members uncompressed. {_INVALID_HINT}")
                total += info.file_size
            if total > size:  # sizes come from the file: no member is read beyond it
                raise _fail(source, f"its zip directory is damaged (members larger than the "
                                    f"file). {_CORRUPT_HINT}")
            return {info.filename: zf.read(info) for info in infos}
    except ModelFileError:
        raise
    except _ZIP_ERRORS as exc:
        raise _fail(source, f"its zip archive is damaged ({exc}). {_CORRUPT_HINT}") from exc


def _check_version(members: Mapping[str, bytes], source: str) -> None:
    """Refuse another format or a newer version before the checksum, whose rule may differ."""
    try:
        header = _parse_json(members[HEADER_MEMBER])
    except (ValueError, RecursionError):
        return  # the checksum tells whether it is corrupted
    if not isinstance(header, dict):
        return
    marker, version = header.get("format"), header.get("format_version")
    if marker != FORMAT:
        raise _fail(source, f"{HEADER_MEMBER} has the format marker {marker!r}, not {FORMAT!r}: "
                            f"this is not a sparsify model file. {_INVALID_HINT}")
    if isinstance(version, int) and not isinstance(version, bool) and version > FORMAT_VERSION:
        import sparsify

        raise _fail(source, f"it has model format version {version}, and this sparsify "
                            f"({sparsify.__version__}) reads versions up to {FORMAT_VERSION}. "
                            "Upgrade sparsify (pip install --upgrade sparsify) to load it.")


def _check_checksum(members: Mapping[str, bytes], source: str) -> None:
    stored = members.get(CHECKSUM_MEMBER)
    if stored is None:
        raise _fail(source, f"it has no {CHECKSUM_MEMBER} member. {_INVALID_HINT}")
    computed = checksum(members)
    if stored != computed.encode("ascii"):
        raise _fail(source, f"it is corrupted: its SHA-256 checksum does not match its contents "
                            f"(stored {stored[:64].decode('ascii', 'replace')!r}, computed "
                            f"{computed!r}). {_CORRUPT_HINT}")


def _invalid(source: str, what: str) -> ModelFileError:
    return _fail(source, f"{what.rstrip('.')}. {_INVALID_HINT}")


def _expect(cond: bool, source: str, what: str) -> None:
    if not cond:
        raise _invalid(source, what)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_real(value: Any) -> bool:
    return (isinstance(value, int | float) and not isinstance(value, bool)
            and math.isfinite(value))


def _validate_header(header: Any, source: str) -> dict[str, Any]:
    """Check every header field's type and range (shapes come later, with the arrays)."""
    _expect(isinstance(header, dict), source, f"{HEADER_MEMBER} is not a JSON object")
    keys = set(header)
    _expect(keys == _HEADER_KEYS, source,
            f"{HEADER_MEMBER} must have exactly the keys {sorted(_HEADER_KEYS)}; missing "
            f"{sorted(_HEADER_KEYS - keys)}, unknown {sorted(keys - _HEADER_KEYS)}")
    version = header["format_version"]
    _expect(_is_int(version) and 1 <= version <= FORMAT_VERSION, source,
            f"format_version is {version!r}; this sparsify reads the versions 1 to "
            f"{FORMAT_VERSION}")
    _expect(isinstance(header["sparsify_version"], str), source, "sparsify_version is not a string")
    est = header["estimator"]
    _expect(isinstance(est, dict) and set(est) == _ESTIMATOR_KEYS, source,
            f"estimator must be an object with the keys {sorted(_ESTIMATOR_KEYS)}")
    _expect(isinstance(est["class"], str) and isinstance(est["module"], str)
            and isinstance(est["params"], dict) and isinstance(est["params_not_saved"], list)
            and all(isinstance(n, str) for n in est["params_not_saved"]), source,
            "estimator has a field of the wrong type (class and module: strings, params: "
            "object, params_not_saved: list of strings)")
    _expect(header["formulation"] is None or isinstance(header["formulation"], str), source,
            "formulation must be a string or null")
    n_features = header["n_features_in"]
    _expect(_is_int(n_features) and n_features >= 1, source,
            f"n_features_in is {n_features!r}; it must be an integer >= 1")
    names = header["feature_names_in"]
    _expect(names is None or (isinstance(names, list) and len(names) == n_features
                              and all(isinstance(n, str) for n in names)), source,
            f"feature_names_in must be null or a list of n_features_in ({n_features}) strings")
    rule, prob = header["decision_rule"], header["probability"]
    _expect(isinstance(rule, str) and rule in DECISION_RULES, source,
            f"decision_rule is {rule!r}; it must be one of {sorted(DECISION_RULES)}")
    since = RULE_FORMAT_VERSIONS.get(rule, 1)
    _expect(version >= since, source,
            f"the decision rule {rule!r} needs format_version {since} or later; the file has "
            f"{version}")
    _expect(prob is None or (isinstance(prob, str) and prob in PROBABILITY_METHODS), source,
            f"probability is {prob!r}; it must be null or one of {sorted(PROBABILITY_METHODS)}")
    _expect(prob in RULE_PROBABILITIES[rule], source,
            f"the decision rule {rule!r} cannot come with the probability method {prob!r}")
    offset = header["offset"]
    _expect(offset is None or (_is_real(offset) and rule == "outlier_sign"), source,
            f"offset is {offset!r}; it must be null, or a finite number for the rule "
            "'outlier_sign'")
    _expect(isinstance(header["metadata"], dict), source, "metadata is not a JSON object")
    try:
        kernel_arrays = validate_kernel_spec(header["kernel"])
    except KernelSpecError as exc:
        raise _invalid(source, f"its kernel is invalid: {exc}") from exc
    _expect(len(set(kernel_arrays)) == len(kernel_arrays)
            and all(name.startswith("kernel.") for name in kernel_arrays), source,
            f"the kernel's array names {kernel_arrays} must be distinct and start with 'kernel.'")
    arrays = header["arrays"]
    _expect(isinstance(arrays, list), source, "arrays is not a list")
    for entry in arrays:
        _expect(isinstance(entry, dict) and set(entry) == {"name", "dtype", "shape"}, source,
                "each entry of arrays must be an object with the keys name, dtype, shape")
        name, shape = entry["name"], entry["shape"]
        _expect(isinstance(name, str) and len(name) <= 200 and _ARRAY_NAME.fullmatch(name)
                is not None, source, f"the array name {name!r} is not allowed")
        _expect(entry["dtype"] == "<f8", source,
                f"array {name!r} has dtype {entry['dtype']!r}; model files hold float64 ('<f8') "
                "arrays only")
        _expect(isinstance(shape, list) and 1 <= len(shape) <= 2
                and all(_is_int(n) and n >= 0 for n in shape), source,
                f"array {name!r} has the shape {shape!r}; it must be a list of 1 or 2 "
                "integers >= 0")
    listed = [entry["name"] for entry in arrays]
    _expect(len(set(listed)) == len(listed), source, "arrays lists a name twice")
    return header


def _expected_shapes(header: Mapping[str, Any], shapes: Mapping[str, tuple[int, ...]],
                     source: str) -> None:
    """Every array the header needs, none more, with consistent shapes (Z vs β vs b ...)."""
    for name in ("expansion_vectors", "expansion_coef", "intercept"):
        _expect(name in shapes, source, f"it has no array {name!r}")
    Z, coef, b = shapes["expansion_vectors"], shapes["expansion_coef"], shapes["intercept"]
    _expect(len(Z) == 2 and Z[1] == header["n_features_in"], source,
            f"expansion_vectors has shape {Z}; expected (Nz, n_features_in="
            f"{header['n_features_in']})")
    n_expansion = Z[0]
    _expect(len(coef) == 2 and coef[1] == n_expansion and coef[0] >= 1, source,
            f"expansion_coef has shape {coef}; expected (n_outputs, Nz={n_expansion})")
    n_outputs = coef[0]
    _expect(b == (n_outputs,), source,
            f"intercept has shape {b}; expected (n_outputs={n_outputs},)")
    wanted: dict[str, tuple[Any, ...]] = {"expansion_vectors": Z, "expansion_coef": coef,
                                          "intercept": b}
    if header["probability"] == "platt":
        wanted.update(prob_a=(n_outputs,), prob_b=(n_outputs,))
    wanted.update(kernel_array_shapes(header["kernel"], n_expansion, header["n_features_in"]))
    _expect(set(shapes) == set(wanted), source,
            f"arrays must be exactly {sorted(wanted)}; got {sorted(shapes)}")
    try:  # before any array is read or any value computed
        check_row_cost(header["kernel"], shapes, header["n_features_in"], n_outputs)
    except KernelSpecError as exc:
        raise _fail(source, str(exc).rstrip(".") + ".") from exc
    for name, want in wanted.items():
        have = shapes[name]
        # an entry naming another array means that array's first length (graph points)
        want = tuple(shapes[w][0] if isinstance(w, str) else w for w in want)
        _expect(len(have) == len(want) and all(w is None or h == w
                                               for h, w in zip(have, want, strict=True)),
                source, f"array {name!r} has shape {have}; expected {want} (None: any)")
    rule, classes = header["decision_rule"], header["classes"]
    if rule in RULES_WITHOUT_CLASSES:
        _expect(classes is None and n_outputs == 1, source,
                f"an {rule!r} model has one output and classes null")
    else:
        _expect(isinstance(classes, dict), source, f"the rule {rule!r} needs classes")
        n_classes = len(classes.get("values", [])) if isinstance(classes.get("values"), list) \
            else -1
        if rule == "binary_sign":
            _expect(n_classes == 2 and n_outputs == 1, source,
                    f"the rule 'binary_sign' needs 2 classes and 1 output; the file has "
                    f"{n_classes} classes and {n_outputs} output(s)")
        else:
            _expect(n_classes >= 2 and n_outputs == n_classes, source,
                    f"the rule {rule!r} needs one output per class (at least 2); the file has "
                    f"{n_classes} classes and {n_outputs} output(s)")


def _read_array(raw: bytes, name: str, shape: tuple[int, ...], source: str) -> NDArray[Any]:
    """A float64 array from ``.npy`` bytes: header checked before any data is read."""
    fp = io.BytesIO(raw)
    try:
        version = np.lib.format.read_magic(fp)
        if version == (1, 0):
            npy_shape, fortran, dtype = np.lib.format.read_array_header_1_0(fp)
        elif version == (2, 0):
            npy_shape, fortran, dtype = np.lib.format.read_array_header_2_0(fp)
        else:
            raise ValueError(f".npy version {version} (model files use 1.0 or 2.0)")
    except Exception as exc:  # numpy's header parser raises SyntaxError, TokenError, ...
        raise _invalid(source, f"member {name}.npy is not a valid .npy array "
                               f"({type(exc).__name__}: {exc})") from exc
    _expect(dtype == np.dtype("<f8"), source,
            f"array {name!r} has dtype {dtype}; model files hold float64 arrays only "
            "(object arrays are never read)")
    _expect(not fortran, source, f"array {name!r} is in Fortran order; model files use C order")
    _expect(tuple(npy_shape) == shape, source,
            f"array {name!r} has shape {tuple(npy_shape)} but {HEADER_MEMBER} lists {shape}")
    count = math.prod(shape)
    _expect(len(raw) - fp.tell() == 8 * count, source,
            f"member {name}.npy holds {len(raw) - fp.tell()} data bytes for shape {shape} "
            f"({8 * count} expected)")
    out = np.frombuffer(raw, dtype="<f8", count=count, offset=fp.tell()).reshape(shape)
    _expect(bool(np.isfinite(out).all()), source,
            f"array {name!r} holds NaN or infinite values")
    return out.astype(np.float64, copy=True)  # native byte order, writable, owns its memory


def _read_classes(spec: Any, source: str, header_bytes: int) -> NDArray[Any]:
    _expect(isinstance(spec, dict) and set(spec) == {"dtype", "values"}, source,
            "classes must be null or an object with the keys dtype and values")
    dtype, values = spec["dtype"], spec["values"]
    _expect(isinstance(dtype, str) and _CLASS_DTYPE.fullmatch(dtype) is not None, source,
            f"classes has the dtype {dtype!r}; allowed: int, unsigned int, float, bool or "
            "string dtypes ('<i8', '<f8', '|b1', '<U5', ...) or 'object' (strings)")
    _expect(isinstance(values, list), source, "classes.values is not a list")
    kind = "O" if dtype == "object" else np.dtype(dtype).kind
    if kind == "U":  # the width is declared by the file: bound what it makes numpy allocate
        need = len(values) * np.dtype(dtype).itemsize
        _expect(need <= max(_CLASSES_SLACK, _CLASSES_PER_HEADER_BYTE * header_bytes), source,
                f"classes declares the dtype {dtype!r} for {len(values)} labels, "
                f"{need / 2**20:.0f} MiB of labels from a header of {header_bytes} bytes; a "
                "label's width must fit its values")
    ok = {"i": _is_int, "u": _is_int, "f": _is_real, "b": lambda v: isinstance(v, bool),
          "U": lambda v: isinstance(v, str), "O": lambda v: isinstance(v, str)}[kind]
    _expect(all(ok(v) for v in values), source,
            f"classes.values holds a value that is not of the dtype {dtype!r}")
    try:
        if kind == "O":
            classes = np.empty(len(values), dtype=object)
            classes[:] = values
        else:
            classes = np.array(values, dtype=np.dtype(dtype))
    except (OverflowError, ValueError) as exc:
        raise _invalid(source, f"classes.values do not fit the dtype {dtype!r} ({exc})") from exc
    _expect(classes.tolist() == values, source,
            f"classes.values change when stored as {dtype!r}")
    _expect(len(set(values)) == len(values), source, "classes.values holds a label twice")
    return classes


def loads_model(data: bytes, source: str) -> Any:
    """Read a model file from bytes; return a fitted `SavedKernelMachine`.

    Nothing in the file can run code: it is parsed as a zip archive of JSON
    and float64 ``.npy`` arrays, with every field checked.

    Parameters
    ----------
    data : bytes
        The file's contents.
    source : str
        Where the bytes come from (a path, a URL), named in every error.

    Returns
    -------
    SavedKernelMachine

    Raises
    ------
    ModelFileError
        A `ValueError` naming ``source`` and saying what to do, when the data
        is not a zip archive (a pickle, for example), is a zip without
        ``header.json``, has another format marker or a newer format version,
        fails its checksum, or holds a field of the wrong type, dtype or shape
        (object arrays included), inconsistent shapes or non-finite values.

    Examples
    --------
    >>> import pickle
    >>> loads_model(pickle.dumps({"estimator": None}), source="model.pkl")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    sparsify.io.model_file.ModelFileError: Cannot load the model file 'model.pkl': it is a ...
    """
    return _machine(read_model_bytes(data, source))


def read_model_bytes(data: bytes, source: str) -> ModelContents:
    """`read_model` from bytes: the checked contents, which predict with numpy alone.

    Examples
    --------
    >>> read_model_bytes(b"", source="empty.spm")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    sparsify.io.model_file.ModelFileError: Cannot load the model file 'empty.spm': it is empty, ...
    """
    if not isinstance(data, bytes | bytearray | memoryview):
        raise TypeError(f"loads_model needs the file's bytes; got {type(data).__name__}.")
    return _contents(io.BytesIO(bytes(data)), len(data), str(source))


def _contents(fh: BinaryIO, size: int, source: str) -> ModelContents:
    """Read and check every member and field of a model file; nothing is built from it yet."""
    members = _read_members(fh, size, source)
    _check_version(members, source)
    _check_checksum(members, source)
    try:
        header = _parse_json(members[HEADER_MEMBER])
    except (ValueError, RecursionError) as exc:
        raise _invalid(source, f"{HEADER_MEMBER} is not valid UTF-8 JSON ({exc})") from exc
    header = _validate_header(header, source)
    shapes = {entry["name"]: tuple(entry["shape"]) for entry in header["arrays"]}
    _expected_shapes(header, shapes, source)
    expected_members = {HEADER_MEMBER, CHECKSUM_MEMBER, *(f"{n}.npy" for n in shapes)}
    _expect(set(members) == expected_members, source,
            f"its members must be exactly {sorted(expected_members)}; got {sorted(members)}")
    arrays = {name: _read_array(members[f"{name}.npy"], name, shape, source)
              for name, shape in shapes.items()}
    try:
        check_kernel_arrays(header["kernel"], arrays)
    except KernelSpecError as exc:
        raise _invalid(source, f"its kernel is invalid: {exc}") from exc
    classes = (None if header["classes"] is None
               else _read_classes(header["classes"], source, len(members[HEADER_MEMBER])))
    other = {name: arrays.pop(name) for name in ("prob_a", "prob_b") if name in arrays}
    contents = ModelContents(
        source=source, header=header, expansion_vectors=arrays.pop("expansion_vectors"),
        expansion_coef=arrays.pop("expansion_coef"), intercept=arrays.pop("intercept"),
        kernel_arrays=arrays, other_arrays=other, classes=classes)
    try:
        contents.check_finite()
    except NonFiniteDecisionError as exc:
        raise _invalid(source, f"its decision values are not finite ({exc})") from exc
    return contents


def _machine(contents: ModelContents) -> Any:
    """The `SavedKernelMachine` (a scikit-learn estimator) of checked contents."""
    from sparsify.io.machine import SavedKernelMachine

    header = contents.header
    machine = SavedKernelMachine()
    machine.expansion_vectors_ = contents.expansion_vectors
    machine.expansion_coef_ = contents.expansion_coef
    machine.intercept_ = contents.intercept
    if header["probability"] == "platt":
        machine.prob_a_ = contents.other_arrays["prob_a"]
        machine.prob_b_ = contents.other_arrays["prob_b"]
    machine.kernel_spec_ = header["kernel"]
    machine.kernel_arrays_ = contents.kernel_arrays
    machine.kernel_ = build_kernel(header["kernel"])
    if contents.classes is not None:
        machine.classes_ = contents.classes
    machine.n_features_in_ = header["n_features_in"]
    if header["feature_names_in"] is not None:
        machine.feature_names_in_ = np.asarray(header["feature_names_in"], dtype=object)
    machine.decision_rule_ = header["decision_rule"]
    machine.probability_ = header["probability"]
    if header["offset"] is not None:
        machine.offset_ = float(header["offset"])
    machine.estimator_class_ = header["estimator"]["class"]
    machine.estimator_params_ = header["estimator"]["params"]
    machine.formulation_ = header["formulation"]
    machine.sparsify_version_ = header["sparsify_version"]
    machine.format_version_ = header["format_version"]
    machine.metadata = header["metadata"]
    machine.source_ = contents.source
    return machine


def load_model(path: str | os.PathLike[str]) -> Any:
    """Read a model file written by `save_model`; return a fitted `SavedKernelMachine`.

    Parameters
    ----------
    path : str or path-like
        The model file.

    Returns
    -------
    SavedKernelMachine
        Predicts what the saved estimator predicted.

    Raises
    ------
    FileNotFoundError
        If there is no file at ``path``.
    ModelFileError
        A `ValueError` naming the file, if it is not a valid model file (see
        `loads_model`).

    Examples
    --------
    >>> load_model("no/such/model.spm")
    Traceback (most recent call last):
    ...
    FileNotFoundError: No model file at 'no/such/model.spm'; check the path.
    """
    return _machine(read_model(path))


def read_model(path: str | os.PathLike[str]) -> ModelContents:
    """Read and check a model file; return its contents, which predict with numpy alone.

    What `load_model` reads, before any scikit-learn estimator is made of it:
    the command line predicts with it (`ModelContents.predict`) without
    importing scikit-learn. The file's size is checked before it is read: a
    file larger than any model file (`MAX_FILE_BYTES`) or than the memory
    available is refused unread; a file that is not a zip archive is refused
    from its first bytes.

    Parameters
    ----------
    path : str or path-like

    Returns
    -------
    ModelContents

    Raises
    ------
    FileNotFoundError, ModelFileError
        As `load_model`.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from sklearn.datasets import make_moons
    >>> from sparsify import SparseSVC
    >>> X, y = make_moons(60, noise=0.1, random_state=0)
    >>> clf = SparseSVC(n_expansion=4, gamma=2.0, max_iter=10, random_state=0).fit(X, y)
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     contents = read_model(save_model(clf, pathlib.Path(tmp) / "moons.spm"))
    >>> contents.decision_rule, bool((contents.predict(X) == clf.predict(X)).all())
    ('binary_sign', True)
    """
    path = Path(path)
    if not path.is_file():
        if path.is_dir():
            raise IsADirectoryError(f"The model file '{path}' is a directory; give the file.")
        if path.exists():
            raise _fail(str(path), "it is not a regular file (a device, a pipe or a socket); "
                                   "give the model file itself.")
        raise FileNotFoundError(f"No model file at '{path}'; check the path.")
    with path.open("rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        head = fh.read(4)
        if head != b"PK\x03\x04":  # not a zip: refused from its first bytes, unread
            raise _refuse_non_zip(head, str(path))
        if size > MAX_FILE_BYTES:
            raise _fail(str(path), f"it is {size / 2**30:.2f} GiB, larger than any model file "
                                   f"(at most {MAX_ARRAY_BYTES / 2**30:.0f} GiB of arrays and a "
                                   "header); it was not read. Give the model file sparsify "
                                   "wrote.")
        from sparsify.core.memory import available_memory

        available = available_memory()
        if 2 * size > available:  # its members, then its arrays
            raise _fail(str(path), f"reading it ({size / 2**20:.0f} MiB) would need about "
                                   f"{2 * size / 2**20:.0f} MiB, and {available / 2**20:.0f} "
                                   "MiB are available (counting cgroup and ulimit -v "
                                   "limits); it was not read.")
        fh.seek(0)
        return _contents(fh, size, str(path))
