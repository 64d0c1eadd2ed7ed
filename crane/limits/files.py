"""Reading the files a user names: only regular files (or standard input), never too many bytes.

A `.crn` ``import``, a tool's input, a sweep file or a ``--machine`` file may name anything:
``/dev/zero`` never ends, a directory or a FIFO cannot be read as a model, a 5 GB log file
would be read into memory before anything noticed it is not IR. Every such read goes
through :func:`read_text` / :func:`read_bytes`, which refuse what is not a regular file and
stop after :data:`crane.limits.MAX_FILE_BYTES`, with an ``OSError`` whose message says why::

    try:
        text = read_text(path)
    except OSError as problem:          # FileNotFoundError, NotRegularFile, TooLarge...
        report(f"cannot read {path}: {describe(problem)}")
"""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

from crane.limits import MAX_FILE_BYTES, show_quantity

STDIN = "-"


class NotRegularFile(OSError):
    """The path names a directory, a device, a FIFO or a socket."""


class TooLarge(OSError):
    """The file holds more than the limit."""


class NotAFileName(OSError):
    """The path holds a NUL byte, which no file name can (a path read from a file may)."""


def read_bytes(path: str | Path, limit: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of the regular file ``path`` (``-``: standard input), at most ``limit``."""
    if str(path) == STDIN:
        return _capped(_stdin_bytes(limit + 1), limit)
    _check_regular(_mode(path))  # before opening: opening a FIFO would block
    with open(path, "rb") as handle:
        return _capped(handle.read(limit + 1), limit)


def read_text(path: str | Path, limit: int = MAX_FILE_BYTES) -> str:
    """The UTF-8 text of ``path`` (``-``: standard input); UnicodeDecodeError if it is not text."""
    return read_bytes(path, limit).decode("utf-8")


def describe(problem: OSError | UnicodeDecodeError) -> str:
    """Why a read failed, in a few words (``no such file``, ``not a regular file (a directory)``)."""
    if isinstance(problem, UnicodeDecodeError):
        return f"not UTF-8 text (byte {problem.start})"
    if isinstance(problem, NotRegularFile | TooLarge | NotAFileName):
        return str(problem)
    if isinstance(problem, FileNotFoundError):
        return "no such file"
    if isinstance(problem, IsADirectoryError):
        return "not a regular file (a directory)"
    return problem.strerror or str(problem)


def check_regular(path: str | Path) -> None:
    """NotRegularFile (or FileNotFoundError...) unless ``path`` is a regular file (for readers
    such as ``numpy.load`` that open the file themselves)."""
    _check_regular(_mode(path))


def _mode(path: str | Path) -> int:
    if "\0" in str(path):
        raise NotAFileName("not a file name (it holds a NUL byte)")
    return os.stat(path).st_mode


def _check_regular(mode: int) -> None:
    if stat.S_ISREG(mode):
        return
    kind = ("a directory" if stat.S_ISDIR(mode) else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
            else "a FIFO" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode) else "not a file")
    raise NotRegularFile(f"not a regular file ({kind})")


def _stdin_bytes(count: int) -> bytes:
    binary = getattr(sys.stdin, "buffer", None)
    if binary is not None:
        return bytes(binary.read(count))
    return sys.stdin.read(count).encode("utf-8")  # a text stream put in its place (tests)


def _capped(data: bytes, limit: int) -> bytes:
    if len(data) <= limit:
        return data
    raise TooLarge(f"larger than {show_quantity(limit, 'bytes')}, the most Crane reads from one file")
