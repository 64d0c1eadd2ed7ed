"""The cost report of a scheduled module: its ``crane.cost`` attribute as JSON or a table.

The ``segment`` pass stores the summed cost of a module's schedules as the module attribute
``crane.cost = {latency_cycles = ..., energy_pj = ..., ...}`` with the keys of
``REPORT_KEYS``. ``cost_report_of`` reads it back as a plain dict, ``format_cost_table``
renders it for people and ``write_cost_report`` writes JSON (or the table to stderr for
the path ``-``), which is what ``crane-opt --cost-report=FILE|-`` does.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from pathlib import Path

from crane.atomic import write_atomically
from crane.ir.attributes import Attribute, DictAttr, FloatAttr, IntAttr
from crane.ir.core import Operation

COST_ATTR = "crane.cost"
"""Module attribute holding the cost summary."""

REPORT_KEYS: Mapping[str, str] = {
    "latency_cycles": "cycles",
    "energy_pj": "pJ",
    "edp": "cycles x pJ",
    "dram_bytes": "bytes",
    "noc_byte_hops": "byte-hops",
    "peak_sram_bytes": "bytes per tile",
    "peak_dram_bytes": "bytes",
    "latency_lower_bound_cycles": "cycles",
    "energy_lower_bound_pj": "pJ",
    "schedule_seconds": "s",
}
"""Every key of a report, in display order, with its unit."""

_INT_KEYS = frozenset({"dram_bytes", "noc_byte_hops", "peak_sram_bytes", "peak_dram_bytes"})


def cost_attribute(summary: Mapping[str, float]) -> DictAttr:
    """The ``crane.cost`` attribute of a summary (byte counts as integers); keys the summary
    lacks (``schedule_seconds`` unless asked for) are left out."""
    entries: dict[str, Attribute] = {}
    for key in REPORT_KEYS:
        if key not in summary:
            continue
        value = float(summary.get(key, 0.0))
        entries[key] = IntAttr(round(value)) if key in _INT_KEYS else FloatAttr(value)
    return DictAttr.of(entries)


def cost_report_of(module: Operation) -> dict[str, float | int] | None:
    """The module's cost summary as plain numbers, or None if it has not been costed."""
    attr = module.attributes.get(COST_ATTR)
    if not isinstance(attr, DictAttr):
        return None
    report: dict[str, float | int] = {}
    for key, value in attr.entries:
        if isinstance(value, IntAttr | FloatAttr):
            report[key] = value.value
    return report


def _number(value: float) -> str:
    """Integers with thousands separators, large floats in scientific notation."""
    if isinstance(value, int):
        return f"{value:,}"
    return f"{value:.4e}" if abs(value) >= 1e6 else f"{value:,.3f}"


def format_cost_table(report: Mapping[str, float | int]) -> str:
    """A readable two-column table, with the ratios to the lower bounds when present."""
    rows = [(key, _number(report[key]), REPORT_KEYS.get(key, "")) for key in report]
    latency, bound_l = report.get("latency_cycles"), report.get("latency_lower_bound_cycles")
    energy, bound_e = report.get("energy_pj"), report.get("energy_lower_bound_pj")
    if latency and bound_l:
        rows.append(("latency / lower bound", f"{latency / bound_l:.2f}", "x"))
    if energy and bound_e:
        rows.append(("energy / lower bound", f"{energy / bound_e:.2f}", "x"))
    width = max(len(key) for key, _, _ in rows)
    digits = max(len(value) for _, value, _ in rows)
    lines = [f"{'cost':<{width}}  {'value':>{digits}}  unit",
             f"{'-' * width}  {'-' * digits}  ----"]
    lines += [f"{key:<{width}}  {value:>{digits}}  {unit}".rstrip() for key, value, unit in rows]
    return "\n".join(lines)


def write_cost_report(module: Operation, path: str | Path) -> bool:
    """Write the module's report as JSON to ``path`` (``-``: a table on stderr).

    Returns False, writing nothing, when the module carries no cost summary.
    """
    report = cost_report_of(module)
    if report is None:
        return False
    if str(path) == "-":
        print(format_cost_table(report), file=sys.stderr)
        return True
    write_atomically(path, json.dumps(report, indent=2) + "\n")
    return True
