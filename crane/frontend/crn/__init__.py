"""The `.crn` language: parse a model file into an elaborated, shape-checked Network.

    >>> from crane.frontend.crn import parse_crn
    >>> net = parse_crn("network n { input x: f32[1, 8]; y = linear(x, out=4); }", "n.crn")
    >>> net.layers[0].out_shape
    (1, 4)

Errors are raised as :class:`CrnErrors`, whose ``render()`` shows each one with its
source line and a caret. The language is described in ``docs/crn-language.md``.
"""

from __future__ import annotations

from pathlib import Path

# Imported under another name so that `crane.frontend.crn.elaborate` stays the submodule.
from crane.frontend.crn.elaborate import elaborate as _elaborate
from crane.frontend.crn.elaborate import elaborate_machines
from crane.frontend.errors import CrnError, CrnErrors
from crane.frontend.model import Network, SourceLoc
from crane.hardware.machine import Machine
from crane.limits.files import describe, read_text


def parse_crn(text: str, filename: str = "<input>", network: str | None = None) -> Network:
    """Elaborate `.crn` source text; imports are resolved relative to ``filename``."""
    return _elaborate(text, filename, network)


def load_crn(path: str | Path, network: str | None = None) -> Network:
    """Read and elaborate a `.crn` file."""
    path = Path(path)
    try:
        text = read_text(path)
    except (OSError, UnicodeDecodeError) as problem:
        raise CrnErrors([CrnError(SourceLoc(str(path), 1, 1), f"cannot read {path}: {describe(problem)}")]) from None
    return _elaborate(text, str(path), network)


def load_machines(path: str | Path) -> dict[str, Machine]:
    """The machines a `.crn` file defines (imports included), by name."""
    path = Path(path)
    try:
        text = read_text(path)
    except (OSError, UnicodeDecodeError) as problem:
        raise CrnErrors([CrnError(SourceLoc(str(path), 1, 1), f"cannot read {path}: {describe(problem)}")]) from None
    return elaborate_machines(text, str(path))


__all__ = ["CrnError", "CrnErrors", "elaborate_machines", "load_crn", "load_machines", "parse_crn"]
