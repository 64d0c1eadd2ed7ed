"""Writing output files so that no reader ever sees half of one.

:func:`write_atomically` writes beside the target and renames the result over it, so a
failure (or an interrupt) leaves either the old file or nothing, never a partial file. The
new file gets the permissions an ordinary ``open`` would give it (``0o666`` less the umask;
a bare temporary file would be private). A target that exists and is not a regular file
(``/dev/null``, ``/dev/stdout``, a FIFO) is written in place: renaming over it would
replace the device itself.

    write_atomically("out.mlir", text)
    write_atomically("chart.png", png_bytes)
    with atomic_output("w.npz", binary=True) as handle:
        numpy.savez(handle, **arrays)
"""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any


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
    fd, temp = tempfile.mkstemp(dir=target.resolve().parent, prefix=f".{target.name}.",
                                suffix=".tmp")
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
