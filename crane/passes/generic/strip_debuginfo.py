"""``strip-debuginfo``: replace every location with ``loc(unknown)``."""

from __future__ import annotations

from dataclasses import dataclass

from crane.ir.core import Operation
from crane.ir.location import UNKNOWN
from crane.passes.context import PassContext
from crane.passes.pass_base import Pass


@dataclass(frozen=True)
class StripDebugInfo(Pass):
    """Set the location of every op to unknown (for instance before comparing IR)."""

    name = "strip-debuginfo"
    summary = "replace all locations with loc(unknown)"

    def run(self, op: Operation, ctx: PassContext) -> None:
        for nested in op.walk():
            nested.location = UNKNOWN
