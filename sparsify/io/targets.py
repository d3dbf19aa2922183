"""Which paths an output file may be written to, and through which path.

Outputs are written atomically: a temporary file beside the target, then a
rename over it. A rename replaces whatever the path names, so it is allowed
only where that is what the user asked for: a path that does not exist yet, or
an existing regular file that is writable. A symbolic link is followed, and
its target is the file written (the link stays). A FIFO, a device node, a
socket or a directory is refused, and so is a read-only file (no write
permission bit: a root user is not stopped by permissions, so the bits are
read, not `os.access`).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

__all__ = ["output_target"]


def output_target(path: str | os.PathLike[str], what: str) -> Path:
    """The file an output named ``path`` is written to; ValueError when it must not be.

    Parameters
    ----------
    path : str or path-like
        The output the user named.
    what : str
        How the message names it ("--out", "the model file").

    Returns
    -------
    Path
        ``path`` itself, or the file a symbolic link at ``path`` points to.

    Raises
    ------
    ValueError
        If the path (or the link's target) is a directory, a FIFO, a device node or a
        socket, or an existing file without write permission.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> output_target(d / "new.spm", "--out") == d / "new.spm"
    True
    >>> output_target(d, "--out")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: --out ... is a directory; give a file name.
    """
    path = Path(path)
    target = Path(os.path.realpath(path)) if path.is_symlink() else path
    try:
        mode = os.stat(target).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return target  # a new file (or a dangling link's target); its directory is checked next
    except OSError as exc:
        raise ValueError(f"Cannot write {what} {path}: {exc.strerror or exc}.") from exc
    via = f" (the target of the link {path})" if target != path else ""
    if stat.S_ISDIR(mode):
        raise ValueError(f"{what} {target}{via} is a directory; give a file name.")
    if not stat.S_ISREG(mode):
        kind = ("a FIFO (named pipe)" if stat.S_ISFIFO(mode) else "a device node"
                if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "a socket"
                if stat.S_ISSOCK(mode) else "not a regular file")
        raise ValueError(f"{what} {target}{via} is {kind}, not a regular file; sparsify writes "
                         "its outputs to regular files only, by replacing them. Give a file "
                         "name.")
    if not mode & 0o222:
        raise ValueError(f"{what} {target}{via} is read-only; sparsify does not replace a "
                         "read-only file. Give another file name, or make it writable first "
                         "(chmod u+w).")
    return target
