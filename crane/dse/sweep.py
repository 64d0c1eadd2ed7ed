"""The sweep file format: workloads x batch sizes x machine parameters x scheduler options.

A sweep file is TOML. Every parameter takes one value or a list of values; the points of
the sweep are the Cartesian product of all lists (workloads outermost, then the keys in
the order the file gives them)::

    workloads = ["../resnet50.crn", "../mobilenet_v2.crn"]   # relative to this file; globs ok
    batch = [1, 4]                          # default: each workload's own batch

    [machine]
    base = "edge"                           # a built-in machine; default: the workload's own
    mesh = ["4x4", "8x8"]                   # or rows = [...] and cols = [...]
    sram = ["512 KiB", "1 MiB"]             # any .crn machine field, with its unit
    noc_bandwidth = "24 GB/s"
    dram_bandwidth = ["16 GB/s", "32 GB/s"]

    [scheduler]
    policy = ["crane", "set"]               # crane, sequential, tangram, set
    objective = "edp"                       # edp, latency, energy or 'L^p E^q'
    time_limit = 0.05                       # seconds per MILP solve
    max_block = 12                          # most layers in one block
    recompute = "crane"                     # training only: crane, keep, full

Machine fields have the names and units of a ``.crn`` machine definition
(``crane.frontend.crn.machines.FIELDS``: ``macs``, ``sram``, ``frequency``,
``noc_bandwidth``, ``dram_bandwidth``, ``dram_capacity``, energies...); a field with a
dimension needs its unit (``"1 MiB"``, ``"24 GB/s"``, ``"0.7 pJ/bit"``). Mistakes are
errors at their place in the file (:mod:`crane.dse.sweep_file`).
"""

from __future__ import annotations

import glob
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from crane import limits
from crane.dialects.layers.values import did_you_mean
from crane.dse.sweep_file import SweepText
from crane.frontend import units
from crane.frontend.crn.machines import FIELDS, FieldSpec
from crane.hardware.machine import builtin_machines
from crane.limits.files import read_text
from crane.schedule.policies import POLICIES
from crane.schedule.training import RECOMPUTE

Change = tuple[tuple[str, Any], ...]
"""What one value of an axis sets: (name, value) pairs (``mesh`` sets rows and cols)."""


@dataclass(frozen=True, slots=True)
class Axis:
    """One parameter of the sweep and the changes each of its values makes."""

    table: str
    """``""`` (top level), ``machine`` or ``scheduler``."""
    key: str
    """The key as the sweep file spells it."""
    values: tuple[Change, ...]


@dataclass(frozen=True, slots=True)
class WorkloadRef:
    """A workload as the sweep file names it, and the file it resolves to."""

    name: str
    path: Path


@dataclass(frozen=True)
class Sweep:
    """A parsed sweep file; :func:`crane.dse.points.expand` turns it into points."""

    source: SweepText
    workloads: tuple[WorkloadRef, ...]
    base: str | None
    """A built-in machine name; None: each workload's own machine."""
    axes: tuple[Axis, ...]

    @property
    def size(self) -> int:
        """Number of points."""
        count = len(self.workloads)
        for axis in self.axes:
            count *= len(axis.values)
        return count


SCHEDULER_KEYS = ("policy", "objective", "time_limit", "max_block", "recompute")
MACHINE_KEYS = ("base", "mesh", "rows", "cols", *FIELDS)
TOP_KEYS = ("workloads", "batch", "machine", "scheduler")
_MESH = re.compile(r"^\s*(\d+)\s*[xX]\s*(\d+)\s*$")
_QUANTITY = re.compile(r"^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*([A-Za-z]+)?"
                       r"(?:\s*/\s*([A-Za-z]+))?\s*$")


class _Invalid(ValueError):
    """A bad value; the caller knows where it is written."""


def read_sweep(path: str | Path) -> Sweep:
    """Parse the sweep file at ``path``.

    Raises OSError when it cannot be read and :class:`crane.ir.diagnostics.DiagnosticError`
    for mistakes in it.
    """
    text = read_text(path)
    return parse_sweep(SweepText(str(path), text), Path(path).resolve().parent)


def parse_sweep(source: SweepText, directory: Path) -> Sweep:
    """Parse sweep text; workload paths are resolved against ``directory``."""
    doc = source.decode()
    _check_keys(source, "", doc, TOP_KEYS)
    if "workloads" not in doc:
        raise source.file_error("missing 'workloads': the list of networks to schedule "
                                "(.crn or IR files, relative to the sweep file)")
    workloads = _workloads(source, doc["workloads"], directory)
    axes: list[Axis] = []
    if "batch" in doc:
        axes.append(_axis(source, "", "batch", doc["batch"], _batch))
    machine = _table(source, doc, "machine")
    base = _base(source, machine.get("base"))
    axes += _machine_axes(source, machine)
    scheduler = _table(source, doc, "scheduler")
    _check_keys(source, "scheduler", scheduler, SCHEDULER_KEYS)
    axes += [_axis(source, "scheduler", key, value, _SCHEDULER[key])
             for key, value in scheduler.items()]
    return Sweep(source, workloads, base, tuple(axes))


def _table(source: SweepText, doc: Mapping[str, Any], name: str) -> dict[str, Any]:
    table = doc.get(name, {})
    if not isinstance(table, dict):
        raise source.error("", name, f"'{name}' must be a table: write [{name}] and its keys "
                                     "on the lines below")
    return table


def _check_keys(source: SweepText, table: str, values: Mapping[str, Any],
                known: tuple[str, ...]) -> None:
    for key in values:
        if key not in known:
            where = f"[{table}] " if table else ""
            raise source.error(table, key, f"unknown {where}key '{key}'{did_you_mean(key, known)}"
                                           f" (known: {', '.join(known)})")


def _workloads(source: SweepText, value: Any, directory: Path) -> tuple[WorkloadRef, ...]:
    names = value if isinstance(value, list) else [value]
    if not names:
        raise source.error("", "workloads", "'workloads' is empty: name at least one network")
    refs: list[WorkloadRef] = []
    for name in names:
        if not isinstance(name, str):
            raise source.error("", "workloads", f"a workload is a file name in quotes, got {name!r}",
                               name)
        refs += _resolve(source, name, directory)
    seen: set[Path] = set()
    for ref in refs:
        if ref.path in seen:
            raise source.error("", "workloads", f"workload '{ref.name}' is listed twice", ref.name)
        seen.add(ref.path)
    return tuple(refs)


def _resolve(source: SweepText, name: str, directory: Path) -> list[WorkloadRef]:
    """The file(s) ``name`` means: one path, or the sorted matches of a glob pattern."""
    if "\0" in name:
        raise source.error("", "workloads", "a workload path holds a NUL byte, which no file name can", name)
    if any(c in name for c in "*?["):
        matches = sorted(glob.glob(str(directory / name)))
        if not matches:
            raise source.error("", "workloads", f"no file matches '{name}' (relative to "
                                                f"{directory})", name)
        return [WorkloadRef(str(Path(m).relative_to(directory)), Path(m)) for m in matches]
    path = (directory / name).resolve()
    if not path.is_file():
        raise source.error("", "workloads", f"workload '{name}' not found (looked for {path})",
                           name)
    return [WorkloadRef(name, path)]


def _axis(source: SweepText, table: str, key: str, value: Any,
          parse: Callable[[Any], Change]) -> Axis:
    items = value if isinstance(value, list) else [value]
    if not items:
        raise source.error(table, key, f"'{key}' has no values: give one value or a list")
    changes: list[Change] = []
    for item in items:
        try:
            change = parse(item)
        except _Invalid as problem:
            raise source.error(table, key, str(problem), item, keyed=True) from None
        if change in changes:
            raise source.error(table, key, f"value {item!r} is listed twice", item, keyed=True)
        changes.append(change)
    return Axis(table, key, tuple(changes))


def _base(source: SweepText, value: Any) -> str | None:
    if value is None:
        return None
    known = builtin_machines()
    if isinstance(value, str) and value in known:
        return value
    raise source.error("machine", "base", f"unknown base machine {value!r}"
                       f"{did_you_mean(str(value), known)} (built-in machines: "
                       f"{', '.join(known)}; leave 'base' out to use each workload's own machine)",
                       value)


def _machine_axes(source: SweepText, machine: Mapping[str, Any]) -> list[Axis]:
    _check_keys(source, "machine", machine, MACHINE_KEYS)
    if "mesh" in machine and ("rows" in machine or "cols" in machine):
        other = "rows" if "rows" in machine else "cols"
        raise source.error("machine", other, f"'{other}' and 'mesh' both set the mesh size: "
                                             "use either mesh = [\"4x4\", ...] or rows and cols")
    return [_axis(source, "machine", key, value, _machine_parser(key))
            for key, value in machine.items() if key != "base"]


def _machine_parser(key: str) -> Callable[[Any], Change]:
    if key == "mesh":
        return _mesh
    if key in ("rows", "cols"):
        return lambda value: ((key, _in_range(_positive_int(value, f"mesh {key}"), key, f"mesh {key}")),)
    spec = FIELDS[key]
    return lambda value: ((spec.attr, _quantity(value, key, spec)),)


# ----- values


def _positive_int(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _Invalid(f"{what} must be a whole number, got {value!r}")
    if value <= 0:
        raise _Invalid(f"{what} must be positive, got {value}")
    return value


def _in_range(value: Any, attr: str, what: str) -> Any:
    """``value`` if the machine field ``attr`` may hold it (``crane.limits``), else _Invalid."""
    problem = limits.MACHINE[attr].check(what, value)
    if problem is not None:
        raise _Invalid(problem)
    return value


def _batch(value: Any) -> Change:
    batch = _positive_int(value, "a batch size")
    problem = limits.BATCH.check("a batch size", batch)
    if problem is not None:
        raise _Invalid(problem)
    return (("batch", batch),)


def _mesh(value: Any) -> Change:
    match = _MESH.match(value) if isinstance(value, str) else None
    if match is None:
        raise _Invalid(f"a mesh is written \"ROWSxCOLS\" (e.g. \"4x4\"), got {value!r}")
    rows, cols = int(match.group(1)), int(match.group(2))
    if rows <= 0 or cols <= 0:
        raise _Invalid(f"a mesh needs at least one row and one column, got {value!r}")
    return (("rows", _in_range(rows, "rows", "mesh rows")), ("cols", _in_range(cols, "cols", "mesh cols")))


def _quantity(value: Any, key: str, spec: FieldSpec) -> int | float:
    """``value`` (a number, or a string with a unit) in the base unit of ``spec``."""
    example = units.DIM_EXAMPLES.get(spec.dim, "1")
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise _Invalid(f"expected a value like \"{example}\", got {value!r}")
    if not isinstance(value, str):
        if spec.dim != units.COUNT:
            raise _Invalid(f"{value!r} needs a unit: {key} is {units.DIM_NAMES[spec.dim]}, "
                           f"e.g. \"{example}\"")
        value = repr(value)
    match = _QUANTITY.match(value)
    if match is None:
        raise _Invalid(f"expected a number and a unit like \"{example}\", got {value!r}")
    number, num, den = match.groups()
    if num is None and spec.dim != units.COUNT:
        raise _Invalid(f"{value!r} needs a unit: {key} is {units.DIM_NAMES[spec.dim]}, "
                       f"e.g. \"{example}\"")
    try:
        unit = None if num is None else units.unit_def(num, den)
        if len(number) > 40:
            raise _Invalid(f"{key}: {number[:20]}... is not a number Crane can represent")
        amount = float(number) if re.search(r"[.eE]", number) else int(number)
        exact = units.convert(amount, unit, spec.dim, key, value.strip())
    except units.UnitError as problem:
        raise _Invalid(problem.message) from None
    if exact <= 0:
        raise _Invalid(f"{key} must be positive, got {value!r}")
    _in_range(exact, spec.attr, key)
    if not spec.integral:
        return float(exact)
    if exact.denominator != 1:
        raise _Invalid(f"{key} must be a whole number of its base unit, got {float(exact)}")
    return int(exact)


def _policy(value: Any) -> Change:
    if value not in POLICIES:
        raise _Invalid(f"unknown policy {value!r}{did_you_mean(str(value), POLICIES)} "
                       f"(policies: {', '.join(POLICIES)})")
    return (("policy", value),)


def _objective(value: Any) -> Change:
    from crane.schedule.objective import Objective

    try:
        if not isinstance(value, str):
            raise ValueError(value)
        Objective.parse(value)
    except (ValueError, TypeError):
        raise _Invalid(f"unknown objective {value!r} (expected edp, latency, energy or "
                       "'L^p E^q')") from None
    return (("objective", value),)


def _time_limit(value: Any) -> Change:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= 3600:
        raise _Invalid(f"time_limit is a positive number of seconds (at most 3600), got {value!r}")
    return (("time_limit", float(value)),)


def _max_block(value: Any) -> Change:
    layers = _positive_int(value, "max_block")
    if layers > 32:
        raise _Invalid(f"max_block must be from 1 to 32 (as the segment pass's max-block), got {layers}")
    return (("max_block", layers),)


def _recompute(value: Any) -> Change:
    if value not in RECOMPUTE:
        raise _Invalid(f"unknown recompute policy {value!r}{did_you_mean(str(value), RECOMPUTE)}"
                       f" (expected {', '.join(RECOMPUTE)})")
    return (("recompute", value),)


_SCHEDULER: Mapping[str, Callable[[Any], Change]] = {
    "policy": _policy, "objective": _objective, "time_limit": _time_limit,
    "max_block": _max_block, "recompute": _recompute,
}
