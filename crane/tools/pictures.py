"""``crane-opt --emit=KIND``: write a picture of the final module instead of its IR.

As ``toyc -emit=...`` in MLIR's tutorial, the pipeline runs as usual and ``--emit`` picks
what comes out: ``ir`` (the default), ``gantt``, ``mesh``, ``graph`` or ``segment-graph``
(:mod:`crane.viz.picture`). The format is ``--emit-format``, else the suffix of ``-o``
(``.png``, ``.svg``, ``.dot``), else the picture's default (SVG for charts, DOT for graph
views); the file is written atomically. Without ``-o`` text formats go to stdout, and so
does PNG when stdout is not a terminal.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass

from crane.atomic import write_atomically
from crane.dialects.builtin import ModuleOp
from crane.tools.exit_codes import EXIT_DIAGNOSTICS, EXIT_OK, EXIT_USAGE

EMIT_KINDS = ("ir", "gantt", "mesh", "graph", "segment-graph")


@dataclass(frozen=True)
class PictureRequest:
    kind: str
    fmt: str
    output: str | None
    """None (or ``-``) for stdout."""


def picture_request(args: argparse.Namespace) -> PictureRequest | None:
    """The picture the command line asks for (None for IR); ValueError for a bad mix of
    ``--emit``, ``--emit-format``, ``-o`` and ``--split-input-file``."""
    kind = getattr(args, "emit", "ir") or "ir"
    if kind == "ir":
        if getattr(args, "emit_format", None):
            raise ValueError("--emit-format needs a picture: --emit=gantt, mesh, graph or "
                             "segment-graph")
        return None
    from crane.viz.picture import picture_format

    output = None if args.output in (None, "-") else args.output
    fmt = picture_format(kind, output, args.emit_format)
    if args.split_input_file:
        raise ValueError(f"--emit={kind} draws one module; it cannot be combined with "
                         "--split-input-file")
    if fmt == "png" and output is None and sys.stdout.isatty():
        raise ValueError("PNG output is binary: give -o FILE.png (or redirect stdout)")
    return PictureRequest(kind, fmt, output)


def emit_picture(module: ModuleOp | None, request: PictureRequest) -> int:
    """Render and write the picture; a missing prerequisite is a one-line error (exit 1)."""
    from crane.viz.picture import render_picture
    from crane.viz.source import PictureError

    if module is None:
        return EXIT_DIAGNOSTICS
    try:
        data = render_picture(module, request.kind, request.fmt)
    except PictureError as exc:
        print(f"crane-opt: error: --emit={request.kind}: {exc}", file=sys.stderr)
        return EXIT_DIAGNOSTICS
    if request.output is None:
        return _to_stdout(data, request.fmt)
    try:
        write_atomically(request.output, data)
    except OSError as exc:
        print(f"crane-opt: error: -o: cannot write '{request.output}': {exc.strerror}",
              file=sys.stderr)
        return EXIT_USAGE
    return EXIT_OK


def _to_stdout(data: bytes, fmt: str) -> int:
    sys.stdout.flush()
    binary = getattr(sys.stdout, "buffer", None)
    if binary is not None:
        binary.write(data)
        binary.flush()
    elif fmt != "png":  # a text-only stdout (a test's capture): text formats still work
        sys.stdout.write(data.decode("utf-8"))
    else:
        print("crane-opt: error: PNG output needs -o FILE.png here", file=sys.stderr)
        return EXIT_USAGE
    return EXIT_OK
