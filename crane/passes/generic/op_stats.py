"""``print-op-stats``: count ops by name, plus any counts the ops report about themselves."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass

from crane.ir.core import Operation
from crane.passes.context import PassContext
from crane.passes.pass_base import Pass


def collect_op_stats(root: Operation) -> dict[str, dict[str, int]]:
    """Op name -> {"count": n, and summed per-op figures}.

    An op class may define ``accounting(self) -> Mapping[str, int]`` (MACs, parameter
    bytes...); those figures are summed per op name.
    """
    table: dict[str, dict[str, int]] = {}
    for op in root.walk():
        row = table.setdefault(op.name, {"count": 0})
        row["count"] += 1
        accounting = getattr(op, "accounting", None)
        if accounting is None:
            continue
        figures: Mapping[str, int] = accounting()
        for key, value in figures.items():
            row[key] = row.get(key, 0) + value
    return table


def format_op_stats(table: Mapping[str, Mapping[str, int]]) -> str:
    """A readable table, one row per op name, a column per figure, and a total row."""
    columns = ["count"] + sorted({k for row in table.values() for k in row} - {"count"})
    totals = {c: sum(row.get(c, 0) for row in table.values()) for c in columns}
    rows = [[name] + [f"{row.get(c, 0):,}" for c in columns] for name, row in sorted(table.items())]
    rows.append(["total"] + [f"{totals[c]:,}" for c in columns])
    header = ["operation", *columns]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(h.ljust(w) if i == 0 else h.rjust(w) for i, (h, w) in enumerate(zip(header, widths, strict=True)))]
    lines.append("  ".join("-" * w for w in widths))
    for r in rows:
        lines.append("  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True))))
    return "\n".join(lines)


@dataclass(frozen=True)
class PrintOpStats(Pass):
    """Print a table of op counts (and per-op figures such as MACs) to stderr.

    The IR is left unchanged, so the pass can sit anywhere in a pipeline.
    """

    name = "print-op-stats"
    summary = "print a table of op counts and per-op figures to stderr"

    def run(self, op: Operation, ctx: PassContext) -> None:
        print(format_op_stats(collect_op_stats(op)), file=sys.stderr)
