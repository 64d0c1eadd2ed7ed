"""Elaborating ``machine`` definitions into :class:`crane.hardware.Machine`.

Every value field has a dimension; a value with the wrong unit (``16 GB`` for a
bandwidth) or none at all is an error that names what was wanted. A machine may
``extend`` another (built-in or defined earlier) and change only some fields.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction

from crane import limits
from crane.dialects.layers.values import did_you_mean
from crane.frontend import units
from crane.frontend.crn import ast
from crane.frontend.crn.context import Ctx, Frame
from crane.frontend.crn.evaluate import eval_int, eval_number
from crane.hardware.machine import DramPort, Machine


@dataclass(frozen=True, slots=True)
class FieldSpec:
    """A machine field of the language: the Machine attribute it sets and its dimension."""

    attr: str
    dim: units.Dim
    integral: bool
    doc: str


FIELDS: Mapping[str, FieldSpec] = {
    "macs": FieldSpec("macs_per_cycle", units.COUNT, True, "MACs per cycle of one tile"),
    "sram": FieldSpec("sram_bytes", units.BYTES, True, "SRAM of one tile"),
    "frequency": FieldSpec("frequency_hz", units.FREQUENCY, False, "clock frequency"),
    "data_width": FieldSpec("data_bytes", units.BYTES, True, "width of one tensor element"),
    "noc_bandwidth": FieldSpec("noc_bandwidth", units.BANDWIDTH, False, "one NoC link, each direction"),
    "noc_hop_energy": FieldSpec("noc_hop_pj_per_byte", units.ENERGY_PER_BYTE, False, "NoC energy per hop"),
    "dram_bandwidth": FieldSpec("dram_bandwidth", units.BANDWIDTH, False, "aggregate DRAM bandwidth"),
    "dram_capacity": FieldSpec("dram_capacity_bytes", units.BYTES, True, "DRAM capacity"),
    "dram_energy": FieldSpec("dram_pj_per_byte", units.ENERGY_PER_BYTE, False, "DRAM access energy"),
    "mac_energy": FieldSpec("mac_pj", units.ENERGY, False, "energy of one MAC"),
    "sram_read_energy": FieldSpec("sram_read_pj_per_byte", units.ENERGY_PER_BYTE, False, "SRAM read energy"),
    "sram_write_energy": FieldSpec("sram_write_pj_per_byte", units.ENERGY_PER_BYTE, False, "SRAM write energy"),
    "vector_lanes": FieldSpec("vector_lanes", units.COUNT, True, "vector operations per cycle of one tile"),
    "vector_energy": FieldSpec("vector_op_pj", units.ENERGY, False, "energy of one vector operation"),
}
"""The value fields (besides ``mesh`` and ``dram_ports``)."""

ALL_FIELDS = ("mesh", "dram_ports", *FIELDS)
REQUIRED = ("mesh", "macs", "sram", "frequency")
"""Fields a machine without ``extends`` must set."""

def build_machine(ctx: Ctx, frame: Frame, defn: ast.MachineDef, known: Mapping[str, Machine]) -> Machine:
    """The Machine a definition describes; raises the first error found."""
    base = _base(ctx, frame, defn, known)
    values: dict[str, object] = {}
    seen: dict[str, ast.Pos] = {}
    ports: ast.PortsField | None = None
    for field in defn.fields:
        key = "mesh" if isinstance(field, ast.MeshField) else (
            "dram_ports" if isinstance(field, ast.PortsField) else field.name)
        _check_field(ctx, frame, key, field.pos, seen)
        if isinstance(field, ast.MeshField):
            values["rows"] = _mesh_side(ctx, frame, field.rows, "rows")
            values["cols"] = _mesh_side(ctx, frame, field.cols, "cols")
        elif isinstance(field, ast.PortsField):
            ports = field
        else:
            spec = FIELDS[key]
            values[spec.attr] = _value(ctx, frame, field, spec)
    missing = [name for name in REQUIRED if base is None and name not in seen]
    if missing:
        raise ctx.error(frame.file, defn.pos, f"machine '{defn.name}' needs {', '.join(missing)} "
                        "(or `extends <machine>` to start from another machine)")
    values["dram_ports"] = _ports(ctx, frame, ports, values, base)
    if base is None:
        return Machine(name=defn.name, **values)  # type: ignore[arg-type]
    return base.with_changes(name=defn.name, **values)


def _base(ctx: Ctx, frame: Frame, defn: ast.MachineDef, known: Mapping[str, Machine]) -> Machine | None:
    if defn.base is None:
        return None
    if defn.base.id in known:
        return known[defn.base.id]
    raise ctx.error(frame.file, defn.base.pos, f"unknown machine '{defn.base.id}'"
                    f"{did_you_mean(defn.base.id, known)} (known: {', '.join(sorted(known))})")


def _check_field(ctx: Ctx, frame: Frame, key: str, pos: ast.Pos, seen: dict[str, ast.Pos]) -> None:
    if key not in ALL_FIELDS:
        raise ctx.error(frame.file, pos, f"unknown machine field '{key}'{did_you_mean(key, ALL_FIELDS)} "
                        f"(fields: {', '.join(ALL_FIELDS)})")
    if key in seen:
        note = ctx.note(frame.file, seen[key], f"'{key}' was first set here")
        raise ctx.error(frame.file, pos, f"machine field '{key}' is set twice", [note])
    seen[key] = pos


def _mesh_side(ctx: Ctx, frame: Frame, expr: ast.Expr, attr: str) -> int:
    what = "mesh rows" if attr == "rows" else "mesh columns"
    value = eval_int(ctx, frame, expr, what)
    problem = limits.MACHINE[attr].check(what, value)
    if problem is not None:
        raise ctx.error(frame.file, expr.pos, f"{problem} (the largest mesh is "
                        f"{limits.MAX_MESH_SIDE} x {limits.MAX_MESH_SIDE})")
    return value


def _value(ctx: Ctx, frame: Frame, field: ast.ValueField, spec: FieldSpec) -> int | float:
    number = eval_number(ctx, frame, field.value)
    try:
        unit = None if field.unit is None else units.unit_def(field.unit.num, field.unit.den)
        shown = f"{number} {field.unit}" if field.unit is not None else str(number)
        exact = units.convert(number, unit, spec.dim, field.name, shown)
    except units.UnitError as problem:
        pos = field.unit.pos if problem.on_unit and field.unit is not None else field.value.pos
        raise ctx.error(frame.file, pos, problem.message) from None
    out_of_range = limits.MACHINE[spec.attr].check(field.name, exact)
    if out_of_range is not None:
        raise ctx.error(frame.file, field.value.pos, out_of_range)
    return _integral(ctx, frame, field, exact) if spec.integral else float(exact)


def _integral(ctx: Ctx, frame: Frame, field: ast.ValueField, exact: Fraction) -> int:
    if exact.denominator != 1:
        raise ctx.error(frame.file, field.value.pos, f"{field.name} must be a whole number of its "
                        f"base unit, got {float(exact)}")
    return int(exact)


def _ports(ctx: Ctx, frame: Frame, field: ast.PortsField | None, values: Mapping[str, object],
           base: Machine | None) -> tuple[DramPort, ...]:
    rows = int(values.get("rows", base.rows if base else 1))  # type: ignore[call-overload]
    cols = int(values.get("cols", base.cols if base else 1))  # type: ignore[call-overload]
    if field is None:
        keep = base is not None and base.dram_ports != Machine.edge_ports(base.rows, base.cols)
        return base.dram_ports if keep and base is not None else Machine.edge_ports(rows, cols)
    if field.named is not None:
        return _named_ports(ctx, frame, field.named, rows, cols)
    return tuple(_port(ctx, frame, row, col, rows, cols) for row, col in field.ports)


def _named_ports(ctx: Ctx, frame: Frame, named: ast.Name, rows: int, cols: int) -> tuple[DramPort, ...]:
    if named.id == "edges":
        return Machine.edge_ports(rows, cols)
    if named.id == "none":
        return ()
    raise ctx.error(frame.file, named.pos, f"unknown port placement '{named.id}'"
                    f"{did_you_mean(named.id, ['edges', 'none'])}; use edges, none, or a list "
                    "of [row, col] positions")


def _port(ctx: Ctx, frame: Frame, row: ast.Expr, col: ast.Expr, rows: int, cols: int) -> DramPort:
    r = eval_int(ctx, frame, row, "a port row")
    c = eval_int(ctx, frame, col, "a port column")
    if 0 <= r < rows and 0 <= c < cols:
        return DramPort(r, c)
    raise ctx.error(frame.file, row.pos, f"DRAM port [{r}, {c}] is outside the {rows} x {cols} mesh")

