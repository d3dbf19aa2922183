"""The output files of the commands: checked before the work, written atomically after it.

`_check_paths` refuses, before anything expensive runs, an output that would
overwrite an input or another output, or that could not be written (a
directory, a FIFO or device node, a read-only file: `sparsify.io.targets`);
`_write_atomically` writes all outputs at the end, each to a temporary file in
its directory that is then renamed (`os.replace`), so a failure leaves no
target touched. An output that is a symbolic link is written to the link's
target.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from sparsify.cli.errors import _one_line
from sparsify.io.targets import output_target, write_atomically


def _check_paths(inputs: dict[str, Path | None], outputs: dict[str, Path | None]) -> None:
    """Refuse, before any work, outputs that would destroy an input or each other, or that
    could not be written at the end.

    Files are compared by path after resolving symlinks and ``..``, and by device and
    inode, so a hard link, a symlink or ``./x`` against ``x`` count as the same file.
    """
    given_out = [(opt, path) for opt, path in outputs.items() if path is not None]
    given_in = [(opt, path) for opt, path in inputs.items() if path is not None]
    for i, (opt, path) in enumerate(given_out):
        for in_opt, in_path in given_in:
            if _same_file(path, in_path):
                raise ValueError(f"{opt} {path} is the same file as {in_opt} {in_path}; writing "
                                 f"it would destroy the input. Give {opt} another file name.")
        for other_opt, other in given_out[:i]:
            if _same_file(path, other):
                raise ValueError(f"{other_opt} {other} and {opt} {path} name the same file; "
                                 "give two names.")
        _check_writable(path, opt)


def _same_file(a: Path, b: Path) -> bool:
    try:
        if os.path.samefile(a, b):  # hard links too
            return True
    except OSError:  # one of them does not exist yet
        pass
    return os.path.realpath(a) == os.path.realpath(b)


def _check_writable(path: Path, option: str) -> None:
    """Fail early when an output file could not be written at the end."""
    path = output_target(path, option)
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.exists():
        raise FileNotFoundError(f"The directory of {option} {path} does not exist; create it "
                                "first.")
    if not parent.is_dir():
        raise ValueError(f"Cannot write {option} {path}: {parent} is not a directory.")
    # The file is written as a temporary in this directory, then renamed: both need
    # write and search permission on the directory (not on an existing file).
    if not os.access(parent, os.W_OK | os.X_OK):
        raise ValueError(f"Cannot write {option} {path}: the directory {parent} is not "
                         "writable; choose another directory or change its permissions.")


def _write_atomically(outputs: Sequence[tuple[Path, bytes]]) -> None:
    """Write every file to a temporary sibling, then move them all into place
    (`sparsify.io.targets.write_atomically`: a replaced file keeps its mode and owner).

    If any write fails, the temporaries are removed and no target is touched;
    the ValueError names the target, not the temporary.
    """
    try:
        write_atomically(outputs, "the output")
    except OSError as exc:
        moved = getattr(exc, "written", [])
        done = ("nothing was written" if not moved else
                f"{', '.join(map(str, moved))} had already been written")
        raise ValueError(f"Could not write {exc.filename}: {exc.strerror or _one_line(exc)}; "
                         f"{done}.") from exc
