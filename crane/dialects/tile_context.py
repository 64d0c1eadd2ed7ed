"""What every ``tile`` instruction shares: its base class, buffer operands, attribute
readers, and the module around it (its DRAM tensors and the mesh of its machine).

Verifiers of tile instructions look up the ``tile.dram`` a load names and the
``hw.machine`` the module targets (``crane.machine``). Both are read from the live ops on
every call; the DRAM table of a module body is cached and re-read whenever the body
changed size or a cached entry no longer matches, so a lookup never sees stale IR.
"""

from __future__ import annotations

from crane.ir.attributes import DenseIntsAttr, IntAttr, StringAttr, SymbolRefAttr
from crane.ir.core import Block, Operation, Value, VerifyError
from crane.ir.opspec import Operand, TypeConstraint
from crane.ir.traits import HasParent
from crane.ir.types import BufferType
from crane.ir.verifier import verification_memo

_HOLDERS = ("tile.program", "tile.dram")

SRAM = TypeConstraint("an sram buffer", lambda t: isinstance(t, BufferType) and t.space == "sram")
"""Operands and results of tile instructions are SRAM buffers."""
BUFFER = Operand("buffer", SRAM)


def ints_attr(op: Operation, name: str) -> tuple[int, ...]:
    attr = op.attributes.get(name)
    return tuple(attr) if isinstance(attr, DenseIntsAttr) else ()


def int_attr(op: Operation, name: str, default: int = 0) -> int:
    attr = op.attributes.get(name)
    return attr.value if isinstance(attr, IntAttr) else default


def str_attr(op: Operation, name: str) -> str:
    attr = op.attributes.get(name)
    return attr.value if isinstance(attr, StringAttr) else ""


def buffer_type(value: Value) -> BufferType:
    """The type of a buffer operand (after the spec has checked it)."""
    assert isinstance(value.type, BufferType)
    return value.type


class TileInstruction(Operation):
    """Base of the ops allowed in a ``tile.program``."""

    __slots__ = ()
    traits = (HasParent(("tile.program",)),)

    @property
    def own_tile(self) -> int:
        """The tile of the enclosing program (-1 outside one)."""
        program = self.parent_op
        return int_attr(program, "tile", -1) if program is not None and program.name == "tile.program" else -1


class Mesh:
    """What the verifiers need of the targeted ``hw.machine`` (read live from its op)."""

    __slots__ = ("rows", "cols", "sram_bytes", "ports")
    READS = ("rows", "cols", "sram_bytes", "dram_ports")
    """The machine's attributes a mesh is read from."""

    def __init__(self, machine: Operation) -> None:
        self.rows, self.cols = int_attr(machine, "rows"), int_attr(machine, "cols")
        self.sram_bytes = int_attr(machine, "sram_bytes")
        ports = machine.attributes.get("dram_ports")
        self.ports = len(ports) // 2 if isinstance(ports, DenseIntsAttr) else 0

    @property
    def tiles(self) -> int:
        return self.rows * self.cols

    def check_tile(self, tile: int, what: str) -> None:
        if not 0 <= tile < self.tiles:
            raise VerifyError(f"{what} {tile} is outside the {self.rows} x {self.cols} mesh "
                              f"(tiles 0..{self.tiles - 1})")


_TABLES: dict[int, tuple[Block, int, dict[str, Operation]]] = {}
"""Module body -> its ``tile.dram`` ops by name (see :func:`dram_named`)."""


def enclosing_module(op: Operation) -> Operation | None:
    """The op holding the ``tile.program`` (or ``tile.dram``) that ``op`` belongs to."""
    current: Operation | None = op
    while current is not None and current.name not in _HOLDERS:
        current = current.parent_op
    return current.parent_op if current is not None else None


def module_body(module: Operation) -> Block | None:
    """The single block of a module, if it has one."""
    return module.regions[0].blocks[0] if module.regions and module.regions[0].blocks else None


def dram_named(op: Operation, name: str) -> Operation | None:
    """The ``tile.dram`` called ``name`` in the module of ``op``."""
    module = enclosing_module(op)
    body = module_body(module) if module is not None else None
    if body is None:
        return None
    cached = _TABLES.get(id(body))
    found = cached[2].get(name) if cached is not None and cached[0] is body else None
    if found is not None and cached is not None and cached[1] == len(body) \
            and found.parent is body and str_attr(found, "name") == name:
        return found
    table = {str_attr(d, "name"): d for d in body.ops if d.name == "tile.dram"}
    if len(_TABLES) > 8:
        _TABLES.clear()
    _TABLES[id(body)] = (body, len(body), table)
    return table.get(name)


_MESHES: dict[int, tuple[Operation, tuple[object, ...], Mesh]] = {}
"""``hw.machine`` op -> the attributes its mesh was read from and the mesh (see
:func:`mesh_of`: a verifier asks once per instruction, a program has a million)."""


def mesh_of(op: Operation) -> Mesh | None:
    """The mesh of the machine the module of ``op`` targets (``crane.machine``), if any."""
    memo, holder = verification_memo("tile.mesh"), op.parent_op
    if memo is None or holder is None:
        return _targeted_mesh(op)
    if holder not in memo:
        memo[holder] = _targeted_mesh(op)
    return memo[holder]  # type: ignore[return-value]


def _targeted_mesh(op: Operation) -> Mesh | None:
    module = enclosing_module(op)
    target = module.attributes.get("crane.machine") if module is not None else None
    body = module_body(module) if module is not None else None
    if not isinstance(target, SymbolRefAttr) or body is None:
        return None
    machine = _machine_named(body, target.root)
    return _mesh(machine) if machine is not None else None


def _machine_named(body: Block, name: str) -> Operation | None:
    """The ``hw.machine`` called ``name`` in ``body``."""
    for candidate in body.ops:
        if candidate.name == "hw.machine" and str_attr(candidate, "sym_name") == name:
            return candidate
    return None


def _mesh(machine: Operation) -> Mesh:
    """``Mesh(machine)``, reused while the op and the attributes it reads are the same."""
    read = tuple(map(machine.attributes.get, Mesh.READS))
    cached = _MESHES.get(id(machine))
    if cached is not None and cached[0] is machine and cached[1] == read:
        return cached[2]
    if len(_MESHES) > 8:
        _MESHES.clear()
    mesh = Mesh(machine)
    _MESHES[id(machine)] = (machine, read, mesh)
    return mesh
