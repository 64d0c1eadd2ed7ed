"""The ``hw`` dialect: the tiled machine a module is compiled for, as IR.

One ``hw.machine`` op per machine, at module level, with every field of
:class:`crane.hardware.Machine` as an attribute in the machine's base units (bytes, bytes
per second, hertz, picojoules); the module names the one it targets with its
``crane.machine`` attribute. Passes call :func:`machine_of` to get a plain Machine back.

    builtin.module @resnet50 attributes {crane.machine = @edge} {
      hw.machine {sym_name = "edge", rows = 4, cols = 4, macs_per_cycle = 1024, ...}
      ...
    }
"""

from __future__ import annotations

from crane.hardware.machine import DramPort, Machine
from crane.ir.attributes import (
    Attribute,
    DenseIntsAttr,
    FloatAttr,
    IntAttr,
    StringAttr,
    SymbolRefAttr,
)
from crane.ir.context import Dialect
from crane.ir.core import Operation, VerifyError
from crane.ir.location import UNKNOWN, Location
from crane.ir.opspec import Attr, OpSpec
from crane.ir.traits import Symbol
from crane.limits import MACHINE as MACHINE_LIMITS

MACHINE_ATTR = "crane.machine"
"""Module attribute naming (by symbol) the ``hw.machine`` the module targets."""

_FIELDS = tuple(f for f in Machine.described_by() if f.name not in ("name", "dram_ports"))
_INT_FIELDS = frozenset(f.name for f in _FIELDS if f.type in ("int", "int | None"))
_LIMITS_DOC = "the limits are in docs/crn-language.md"
_OPTIONAL = frozenset(f.name for f in _FIELDS if "None" in str(f.type))


def _attr_kind(name: str) -> type[Attribute]:
    return IntAttr if name in _INT_FIELDS else FloatAttr


class MachineOp(Operation):
    """``hw.machine``: a tiled machine with all cost-model constants in base units."""

    __slots__ = ()
    spec = OpSpec(
        "hw.machine",
        attributes=(
            Attr("sym_name", StringAttr, doc="the machine's name"),
            *(Attr(f.name, _attr_kind(f.name), optional=f.name in _OPTIONAL) for f in _FIELDS),
            Attr("dram_ports", DenseIntsAttr, doc="row, col pairs of the DRAM controllers"),
        ),
        summary="a tiled machine: mesh, tile compute and SRAM, NoC, DRAM and energies",
    )
    traits = (Symbol(),)

    @classmethod
    def build(cls, machine: Machine, location: Location = UNKNOWN) -> MachineOp:
        """The op describing ``machine``."""
        attrs: dict[str, Attribute] = {"sym_name": StringAttr(machine.name)}
        for f in _FIELDS:
            value = getattr(machine, f.name)
            if value is None:
                continue
            attrs[f.name] = IntAttr(value) if f.name in _INT_FIELDS else FloatAttr(float(value))
        ports = tuple(n for port in machine.dram_ports for n in (port.row, port.col))
        attrs["dram_ports"] = DenseIntsAttr(ports)
        op = cls.create(None, (), (), attrs, (), location)
        assert isinstance(op, MachineOp)
        return op

    @property
    def complete(self) -> bool:
        """Whether every attribute a Machine needs is present with its kind (IR from a file
        may lack one: the op's verification reports it, passes see no machine)."""
        needed = [("sym_name", StringAttr), ("dram_ports", DenseIntsAttr)]
        needed += [(f.name, _attr_kind(f.name)) for f in _FIELDS if f.name not in _OPTIONAL]
        return all(isinstance(self.attributes.get(name), kind) for name, kind in needed)

    @property
    def machine(self) -> Machine:
        """The plain Machine this op describes."""
        values: dict[str, object] = {}
        for f in _FIELDS:
            attr = self.attributes.get(f.name)
            if isinstance(attr, IntAttr | FloatAttr):
                values[f.name] = attr.value
        name = self.attributes["sym_name"]
        ports = self.attributes["dram_ports"]
        assert isinstance(name, StringAttr) and isinstance(ports, DenseIntsAttr)
        flat = tuple(ports)
        dram_ports = tuple(DramPort(flat[i], flat[i + 1]) for i in range(0, len(flat) - 1, 2))
        return Machine(name=name.value, dram_ports=dram_ports, **values)  # type: ignore[arg-type]

    def verify_op(self) -> None:
        for f in _FIELDS:
            attr = self.attributes.get(f.name)
            problem = MACHINE_LIMITS[f.name].check(f"'{f.name}'", attr.value) \
                if isinstance(attr, IntAttr | FloatAttr) else None
            if problem is not None:
                raise VerifyError(f"{problem} ({_LIMITS_DOC})")
        ports = self.attributes.get("dram_ports")
        flat = tuple(ports) if isinstance(ports, DenseIntsAttr) else ()
        if len(flat) % 2:
            raise VerifyError("'dram_ports' must hold (row, col) pairs")
        rows, cols = self.attributes.get("rows"), self.attributes.get("cols")
        if not isinstance(rows, IntAttr) or not isinstance(cols, IntAttr):
            return
        for i in range(0, len(flat), 2):
            if not (0 <= flat[i] < rows.value and 0 <= flat[i + 1] < cols.value):
                raise VerifyError(f"DRAM port [{flat[i]}, {flat[i + 1]}] is outside the "
                                  f"{rows.value} x {cols.value} mesh")


def machine_of(module: Operation) -> Machine | None:
    """The machine a module targets (its ``crane.machine``), or None if it names none."""
    target = module.attributes.get(MACHINE_ATTR)
    if not isinstance(target, SymbolRefAttr):
        return None
    for op in module.regions[0].blocks[0].ops if module.regions and module.regions[0].blocks else ():
        name = op.attributes.get("sym_name")
        if isinstance(op, MachineOp) and isinstance(name, StringAttr) and name.value == target.root:
            return op.machine if op.complete else None  # the op's own verification names what is missing
    return None


def retarget(module: Operation, machine: Machine) -> None:
    """Make ``module`` target ``machine``: its ``hw.machine`` ops are replaced by one
    describing ``machine`` (first in the module) and ``crane.machine`` names it."""
    body = module.regions[0].blocks[0]
    for op in [op for op in body.ops if isinstance(op, MachineOp)]:
        op.erase()
    first = next(iter(body.ops), None)
    made = MachineOp.build(machine, module.location)
    if first is None:
        body.append(made)
    else:
        body.insert_before(first, made)
    module.attributes[MACHINE_ATTR] = SymbolRefAttr(machine.name)


HW = Dialect("hw", (MachineOp,), summary="tiled machines: mesh, tiles, NoC and DRAM")
