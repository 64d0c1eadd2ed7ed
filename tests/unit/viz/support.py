"""Test helpers: small scheduled networks, and checks that PNG, SVG and DOT files are valid.

The checkers parse the files rather than look for a file: PNG by its signature, chunks
(with CRCs) and a decode by matplotlib; SVG with ``xml.etree``; DOT with
:mod:`.dot_check` (a small parser of the DOT grammar Crane writes).
"""

from __future__ import annotations

import io
import re
import struct
import zlib
from functools import cache
from pathlib import Path
from xml.etree import ElementTree

import numpy as np

from crane.dialects import default_context
from crane.dialects.builtin import ModuleOp
from crane.ir.diagnostics import DiagnosticEngine
from crane.ir.printer import print_op
from crane.passes.context import PassContext
from crane.passes.manager import PassManager
from crane.passes.pipeline import build_pipeline
from crane.passes.registry import PassRegistry
from crane.tools.inputs import parse_ir, translate

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "examples"
SVG = "{http://www.w3.org/2000/svg}"


def network_text(training: bool, machine: str = "edge") -> str:
    """``examples/tiny_resnet.crn``, as is (training) or without its train section."""
    text = (EXAMPLES / "tiny_resnet.crn").read_text()
    if not training:
        text = re.sub(r"  train \{.*?\n  \}\n", "", text, flags=re.S)
    if machine != "edge":
        text = f'import "machines/{machine}.crn";\n' + text.replace("machine edge;",
                                                                   f"machine {machine};")
    return text


@cache
def _compiled(pipeline: str, training: bool, machine: str) -> str:
    context = default_context()
    module = translate("crn", network_text(training, machine),
                       str(EXAMPLES / "tiny_resnet.test.crn"), context)
    if pipeline:
        built = build_pipeline(pipeline, PassRegistry.with_in_tree_passes(), context)
        ctx = PassContext(context, DiagnosticEngine())
        assert PassManager(built).run(module, ctx), [d.message for d in ctx.diagnostics.diagnostics]
    return print_op(module)


def compiled(pipeline: str, training: bool = False, machine: str = "edge") -> ModuleOp:
    """A fresh module of the tiny ResNet after ``pipeline`` (compiled once per session)."""
    return parse_ir(_compiled(pipeline, training, machine), "tiny.mlir", default_context())


# ----- PNG


def png_size(data: bytes) -> tuple[int, int]:
    """(width, height) of a PNG, after checking its signature, chunk CRCs and IEND, and
    that matplotlib decodes it to an image of that size."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG signature"
    at, chunks = 8, []
    while at < len(data):
        (length,) = struct.unpack(">I", data[at: at + 4])
        kind = data[at + 4: at + 8]
        body = data[at + 8: at + 8 + length]
        (crc,) = struct.unpack(">I", data[at + 8 + length: at + 12 + length])
        assert zlib.crc32(kind + body) == crc, f"bad CRC in chunk {kind!r}"
        chunks.append((kind, body))
        at += 12 + length
    assert chunks[0][0] == b"IHDR" and len(chunks[0][1]) == 13
    assert chunks[-1][0] == b"IEND"
    width, height = struct.unpack(">II", chunks[0][1][:8])
    pixels = decode_png(data)
    assert pixels.shape[:2] == (height, width)
    return width, height


def decode_png(data: bytes) -> np.ndarray:
    import matplotlib.image

    return np.asarray(matplotlib.image.imread(io.BytesIO(data), format="png"))


def distinct_colours(pixels: np.ndarray) -> int:
    rgb = (pixels[..., :3] * 255).round().astype(np.uint8).reshape(-1, 3)
    return len(np.unique(rgb, axis=0))


# ----- SVG


def svg_root(data: bytes) -> ElementTree.Element:
    root = ElementTree.fromstring(data)
    assert root.tag == f"{SVG}svg", root.tag
    return root


def svg_ids(root: ElementTree.Element, prefix: str) -> dict[str, ElementTree.Element]:
    """Elements whose id starts with ``prefix``, by id."""
    return {e.get("id", ""): e for e in root.iter() if e.get("id", "").startswith(prefix)}


def svg_texts(root: ElementTree.Element) -> list[str]:
    """The text of every ``<text>`` element (labels are kept as text, not paths)."""
    return ["".join(e.itertext()) for e in root.iter(f"{SVG}text")]


def shapes_in(element: ElementTree.Element) -> int:
    """How many drawn shapes (paths, rects, uses) an element holds."""
    return sum(1 for e in element.iter() if e.tag in (f"{SVG}path", f"{SVG}rect", f"{SVG}use"))
