"""Which paths an output file may be written to, and through which path.

Outputs are written atomically (`write_atomically`): a temporary file beside
the target, then a rename over it. A rename replaces whatever the path names,
so it is allowed only where that is what the user asked for: a path that does
not exist yet, or an existing regular file that is writable (`output_target`).
A symbolic link is followed, and its target is the file written (the link
stays). A FIFO, a device node, a socket or a directory is refused, and so is a
read-only file (no write permission bit: a root user is not stopped by
permissions, so the bits are read, not `os.access`). A replaced file keeps its
permission bits, and its owner and group where the process may set them: a
model saved over a private (0600) file stays private.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from collections.abc import Sequence
from pathlib import Path

__all__ = ["output_target", "write_atomically"]


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


def write_atomically(outputs: Sequence[tuple[str | os.PathLike[str], bytes]],
                     what: str = "the output") -> list[Path]:
    """Write every file to a temporary sibling, then move them all into place.

    A file that replaces another takes its permission bits (setuid and setgid
    aside) and, where permitted, its owner and group; a new file gets the
    usual ``0o666`` less the umask. If any write fails, the temporaries are
    removed and no target that was not yet moved is touched.

    Parameters
    ----------
    outputs : sequence of (path, bytes)
        The files and their contents; each path is checked again with
        `output_target` (it may have changed since the command started).
    what : str, default="the output"
        How `output_target`'s refusals name the files.

    Returns
    -------
    list of Path
        The files written (link targets for symbolic links).

    Raises
    ------
    OSError
        A write or rename that failed: ``filename`` is the target, ``strerror``
        the reason, and ``written`` the targets already moved into place.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "private.txt"
    >>> _ = path.write_text("old"); path.chmod(0o600)
    >>> write_atomically([(path, b"new")]) == [path]
    True
    >>> path.read_text(), oct(path.stat().st_mode & 0o777)
    ('new', '0o600')
    """
    mask = os.umask(0)
    os.umask(mask)
    temps: list[tuple[Path, Path]] = []
    moved: list[Path] = []
    target: Path | None = None
    try:
        for name, content in outputs:
            target = output_target(name, what)
            parent = target.parent if str(target.parent) else Path(".")
            tmp = parent / f".{target.name}.{secrets.token_hex(6)}.tmp"
            # O_EXCL: never reuse a file; the mode is set below, once the old file is read
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0),
                         0o600)
            temps.append((tmp, target))
            with os.fdopen(fd, "wb") as fh:
                fh.write(content)
                fh.flush()
                os.fsync(fh.fileno())
            _copy_ownership(tmp, target, 0o666 & ~mask)
        for tmp, target in temps:
            os.replace(tmp, target)
            moved.append(target)
    except BaseException as exc:
        for tmp, _ in temps:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
        if isinstance(exc, OSError) and target is not None:
            error = OSError(exc.errno, exc.strerror or str(exc), str(target))
            error.written = list(moved)  # type: ignore[attr-defined]
            raise error from exc
        raise
    return moved


def _copy_ownership(tmp: Path, target: Path, new_mode: int) -> None:
    """Give ``tmp`` the permission bits (and owner, group where allowed) of the file it replaces."""
    try:
        old = os.stat(target)
    except FileNotFoundError:
        os.chmod(tmp, new_mode)
        return
    with contextlib.suppress(PermissionError):  # only root may give a file away
        os.chown(tmp, old.st_uid, old.st_gid)
    # after chown, which clears setuid and setgid; those are not carried over to new contents
    os.chmod(tmp, stat.S_IMODE(old.st_mode) & 0o1777)
