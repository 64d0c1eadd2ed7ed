"""The top-level guard of every Crane tool, and the argument types their flags share.

Every tool (``crane-opt``, ``crane-run``, ``crane-sim``, ``crane-dse``) ends the same way:
exit 0 on success, 1 for diagnostics (located errors in the input or from the run), 2 for
usage errors (a bad flag or an unreadable file, one line naming it), 3 for an internal
error of Crane itself, reported in one line without a traceback unless ``--debug`` is
given. :func:`guarded` is that ending::

    def main(argv=None) -> int:
        args = parse(argv)               # argparse exits 2 itself on a bad flag
        return guarded("crane-sim", lambda: run(args), debug=args.debug)

A :class:`crane.tools.exit_codes.UsageError` names the flag or the file it is about (``crane-sim: error: --seed
must be a whole number from 0 to 4294967295, got -1``); :func:`check_whole` and
:func:`check_finite` check the numbers flags take.
"""

from __future__ import annotations

import ctypes
import gc
import math
import sys
from collections.abc import Callable

from crane.tools.exit_codes import EXIT_DIAGNOSTICS, EXIT_INTERNAL, EXIT_USAGE, UsageError

MAX_SEED = 2**32 - 1
"""``--seed``: numpy's generators take any non-negative integer; 32 bits are plenty."""
GC_THRESHOLDS = (100_000, 50, 100)
"""Python's cyclic collector while a tool runs. The tools build millions of small,
long-lived objects (IR ops, boxes of tiles' pieces); the default first threshold (700)
scans them so often that it took about a fifth of ``lower-to-tile``'s CPU on a 144-tile
mesh (tiny_resnet on ``cloud``: 31 s of CPU, 25.6 s with these), for about 20% more peak
memory."""

MMAP_THRESHOLD_BYTES = 4 << 20
"""glibc gives blocks of at least this size their own mapping, so that freeing one (a
simulated DRAM tensor after its last access, an interpreter value after its last reader)
returns it to the system. By default glibc raises this threshold after each such free, up
to 32 MiB, and serves later blocks from its heap, where freed tensors fragment: ``crane-sim
--check`` of BERT's training step on ``mesh2x2`` peaked at 3.2 GB while simulating, 2.6 GB
with this, in the same time."""
M_MMAP_THRESHOLD = -3
"""``mallopt``'s parameter number (glibc's ``malloc.h``)."""


def return_large_blocks() -> None:
    """Set :data:`MMAP_THRESHOLD_BYTES` where the C library is glibc (elsewhere: nothing)."""
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return
    mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES)


def guarded(tool: str, body: Callable[[], int], debug: bool,
            interrupted: int = EXIT_INTERNAL, on_crash: Callable[[], None] | None = None) -> int:
    """Run ``body``; an exception that escapes it becomes a one-line report and a status.

    ``UsageError`` exits 2; ``MemoryError`` is the host running out of memory for a legal but large input (exit
    1, said so); Ctrl-C exits ``interrupted``; anything else is a bug (exit 3), shown with
    its traceback when ``debug``; ``on_crash`` runs first (``crane-opt``'s reproducer)."""
    thresholds = gc.get_threshold()
    gc.set_threshold(*GC_THRESHOLDS)
    return_large_blocks()
    try:
        return body()
    except UsageError as problem:
        print(f"{tool}: error: {problem}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print(f"{tool}: interrupted", file=sys.stderr)
        return interrupted
    except BrokenPipeError:
        raise  # the console entry points treat a closed pipe as success
    except MemoryError:
        if debug:
            raise
        print(f"{tool}: error: out of memory: the input is too large to process on this host",
              file=sys.stderr)
        return EXIT_DIAGNOSTICS
    except Exception as exc:
        if debug:
            raise
        if on_crash is not None:
            on_crash()
        print(f"{tool}: internal error: {type(exc).__name__}: {exc} (this is a bug in Crane; "
              "rerun with --debug for a traceback)", file=sys.stderr)
        return EXIT_INTERNAL
    finally:
        gc.set_threshold(*thresholds)


def check_whole(flag: str, value: int | None, low: int, high: int) -> None:
    """UsageError unless ``value`` (of ``flag``; None: not given) is from ``low`` to ``high``."""
    if value is not None and not low <= value <= high:
        raise UsageError(f"{flag} must be a whole number from {low} to {high}, got {value}")


def check_finite(flag: str, value: float | None, low: float, high: float = math.inf,
                 above: bool = False) -> None:
    """UsageError unless ``value`` is finite and within ``low..high`` (``above``: ``low``
    itself excluded)."""
    if value is None:
        return
    inside = (value > low if above else value >= low) and value <= high
    if math.isfinite(value) and inside:
        return
    bound = f"above {low:g}" if above else f"at least {low:g}"
    top = "" if math.isinf(high) else f" and at most {high:g}"
    raise UsageError(f"{flag} must be a finite number {bound}{top}, got {value}")
