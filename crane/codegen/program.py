"""Tile programs as plain records, before they become ``tile`` dialect ops.

Codegen builds one :class:`Program` per mesh tile as a list of instruction records; the
``tile`` dialect ops (``crane.codegen.to_ir``), the flat listings and the JSON
(``crane.codegen.listing``) are all printed from these records, so the three forms agree.
Buffers are numbered per module (``%b12``); each is allocated once on one tile and holds
one box of one graph value (``value`` names it, for listings and debugging). A view names
a box of an allocated buffer without a copy; it exists only here, and every instruction
reading one reads its buffer through a window (``crane.codegen.chip``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from crane.ir.attributes import Attribute


@dataclass(frozen=True, slots=True)
class Buffer:
    """An SRAM buffer of one tile."""

    id: int
    tile: int
    shape: tuple[int, ...]
    dtype: str
    value: str = ""
    base: Buffer | None = None
    """A view: the box of ``shape`` at ``at`` of this allocated buffer, read in place (the
    ``tile.compute`` reading it gets an input window; other instructions windows of their
    own, or a copy where they take none)."""
    at: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class Alloc:
    buffer: Buffer


@dataclass(frozen=True, slots=True)
class Load:
    """DMA of DRAM ``tensor[offsets : offsets + shape(buffer)]`` into ``buffer``."""

    buffer: Buffer
    tensor: str
    offsets: tuple[int, ...]
    port: int


@dataclass(frozen=True, slots=True)
class Store:
    buffer: Buffer
    tensor: str
    offsets: tuple[int, ...]
    port: int
    accumulate: bool = False


Window = tuple[tuple[int, ...], tuple[int, ...]]
"""(offsets, shape) of a box inside a buffer."""


@dataclass(frozen=True, slots=True)
class Send:
    buffer: Buffer
    peer: int
    tag: int
    window: Window | None = None
    """The box of ``buffer`` sent (None: all of it)."""


@dataclass(frozen=True, slots=True)
class Recv:
    buffer: Buffer
    peer: int
    tag: int
    window: Window | None = None
    """The box of ``buffer`` written (None: all of it)."""


@dataclass(frozen=True, slots=True)
class Copy:
    """The box ``shape`` at ``src_offsets`` of ``src`` into ``dst`` at ``dst_offsets``."""

    dst: Buffer
    src: Buffer
    src_offsets: tuple[int, ...]
    dst_offsets: tuple[int, ...]
    shape: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Compute:
    """``outs = op(ins)`` with graph-op attributes at tile level."""

    op: str
    outs: tuple[Buffer, ...]
    ins: tuple[Buffer, ...]
    attrs: Mapping[str, Attribute] = field(default_factory=dict)
    window: Window | None = None
    """The box of the single output the result fills (None: all of it)."""
    in_windows: tuple[Window | None, ...] = ()
    """Per input, the box of it the op reads (None or empty: all of it)."""


@dataclass(frozen=True, slots=True)
class Barrier:
    id: int
    tiles: tuple[int, ...]
    label: str = ""
    """The phase the barrier ends (``<block>:state<i>``), for traces and reports."""


Instruction = Alloc | Load | Store | Send | Recv | Copy | Compute | Barrier


@dataclass(frozen=True, slots=True)
class DramTensor:
    """One tensor in DRAM: a network input, weight, optimizer state, output or spill."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    role: str


@dataclass
class Program:
    """The straight-line instruction stream of one mesh tile."""

    tile: int
    row: int
    col: int
    body: list[Instruction] = field(default_factory=list)


@dataclass
class TileModule:
    """Everything codegen produced for one ``graph.func``."""

    func: str
    programs: list[Program]
    tensors: list[DramTensor]

    @property
    def instructions(self) -> int:
        return sum(len(p.body) for p in self.programs)
