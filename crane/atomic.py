"""Writing output files so that no reader ever sees half of one, and no crash leaves junk.

:func:`write_atomically` writes beside the target and renames the result over it, so a
failure (or an interrupt) leaves either the old file or nothing, never a partial file. The
new file gets the permissions an ordinary ``open`` would give it (``0o666`` less the umask;
a bare temporary file would be private). A target that exists and is not a regular file
(``/dev/null``, ``/dev/stdout``, a FIFO) is written in place: renaming over it would
replace the device itself.

Where the file system allows it (Linux's ``O_TMPFILE``), the data is written to a file with
no name at all and linked into place only when complete, so even ``SIGKILL`` leaves
nothing behind. Elsewhere the temporary file is named ``.NAME.<pid>.<random>.tmp``; a kill
leaves it, and the next write of the same target removes every such file whose process is
gone.

    write_atomically("out.mlir", text)
    write_atomically("chart.png", png_bytes)
    with atomic_output("w.npz", binary=True) as handle:
        numpy.savez(handle, **arrays)
"""

from __future__ import annotations

import errno
import os
import re
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import IO, Any

_UNNAMED = getattr(os, "O_TMPFILE", 0)
"""Linux's flag for an unnamed file in a directory (0 where the platform has none)."""


def _special(path: Path) -> bool:
    """Whether ``path`` exists and is not a regular file (a device, a FIFO, a socket)."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return not stat.S_ISREG(mode)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextmanager
def atomic_output(path: str | Path, binary: bool = False) -> Iterator[IO[Any]]:
    """A handle whose contents replace ``path`` when the block ends without an error.

    Raises ``OSError`` when the directory cannot take a temporary file."""
    target = Path(path)
    mode = "wb" if binary else "w"
    encoding = None if binary else "utf-8"
    if _special(target):
        with open(target, mode, encoding=encoding) as handle:
            yield handle
        return
    folder = target.resolve().parent
    remove_stale(folder, target.name)
    fd = _unnamed_file(folder)
    if fd is not None:
        with os.fdopen(fd, mode, encoding=encoding) as handle:
            yield handle
            handle.flush()
            _link_into_place(handle.fileno(), folder, target)
        return
    fd, temp = tempfile.mkstemp(dir=folder, prefix=f".{target.name}.{os.getpid()}.", suffix=".tmp")
    try:
        with os.fdopen(fd, mode, encoding=encoding) as handle:
            yield handle
        os.chmod(temp, 0o666 & ~_umask())
        os.replace(temp, target)
    except BaseException:
        if os.path.exists(temp):
            os.unlink(temp)
        raise


def write_atomically(path: str | Path, data: str | bytes) -> None:
    """Replace ``path`` by ``data`` (text or bytes) in one step (see the module docstring)."""
    with atomic_output(path, binary=isinstance(data, bytes)) as handle:
        handle.write(data)


def remove_stale(folder: Path, name: str) -> list[Path]:
    """Remove the temporary files of ``name`` in ``folder`` left by processes that are gone
    (killed while writing); the paths removed."""
    pattern = re.compile(rf"\.{re.escape(name)}\.(\d+)\.[^.]+\.tmp")
    removed = []
    for entry in _entries(folder):
        match = pattern.fullmatch(entry)
        if match is None or _alive(int(match.group(1))):
            continue
        with suppress(FileNotFoundError):
            os.unlink(folder / entry)
            removed.append(folder / entry)
    return removed


def _entries(folder: Path) -> list[str]:
    try:
        return os.listdir(folder)
    except OSError:
        return []


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process: alive, not ours to judge
        return True
    return True


def _unnamed_file(folder: Path) -> int | None:
    """A descriptor of a new file without a name in ``folder``, or None if unsupported."""
    if not _UNNAMED or not os.path.isdir("/proc/self/fd"):
        return None
    try:
        return os.open(folder, _UNNAMED | os.O_WRONLY, 0o666 & ~_umask())
    except OSError as problem:
        if problem.errno in (errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL, errno.ENOENT):
            return None  # the file system has no unnamed files: use a named one
        raise


def _link_into_place(fd: int, folder: Path, target: Path) -> None:
    """Give the complete unnamed file ``fd`` a temporary name, then rename it over ``target``
    (a link cannot replace a file). Only between the two steps does a name exist."""
    temp = folder / f".{target.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp"
    directory = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        # With a directory descriptor CPython calls linkat(AT_SYMLINK_FOLLOW), which links the
        # file /proc/self/fd/N stands for; plain link() would try to link the symlink itself.
        os.link(f"/proc/self/fd/{fd}", temp.name, dst_dir_fd=directory, follow_symlinks=True)
    finally:
        os.close(directory)
    try:
        os.replace(temp, target)
    except BaseException:
        with suppress(FileNotFoundError):
            os.unlink(temp)
        raise
