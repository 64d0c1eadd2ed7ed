"""What the emitter knows of the job, and what it records of where data lives."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from crane.codegen.boxes import Box
from crane.codegen.program import Buffer
from crane.cost.workload import Dims
from crane.dialects.graph import WeightOp
from crane.dialects.graph_grad import OptimizerStateOp
from crane.ir.core import BlockArgument, Operation, Value


@dataclass(frozen=True, slots=True)
class Piece:
    """A box of a value held in one SRAM buffer."""

    box: Box
    buffer: Buffer
    phase: int
    held: bool
    """Readable for the rest of its block (a fused layer's output)."""
    block: int
    kept: bool = False
    """Readable by later forward blocks too (the schedule keeps the output in SRAM)."""
    recomputed: bool = False
    """Made by a recomputation for the training ops: readable by them (backward phases)."""
    retained: bool = False
    """A kept piece the training ops may read too (``Fetcher.retain_for_backward``)."""


@dataclass(frozen=True)
class Context:
    """What the emitter knows of the network and its schedule."""

    batch: int
    training: bool
    layer_of: Mapping[Operation, str]
    fused: Mapping[str, bool]
    block_of: Mapping[str, int]
    outputs: Mapping[Value, str]
    """Returned values -> their output names (as the reference interpreter names them)."""
    backward: frozenset[Operation]
    budget: int = 0
    """SRAM bytes one part of an op may read and write before another split is tried."""
    elem_bytes: int = 1
    """The machine's element width (what ``budget`` counts)."""
    chunk_budget: int = 0
    """Bytes above which a dense conv or linear part runs in input-channel chunks."""
    step_budget: int = 0
    """Activation bytes above which a tile runs its part in steps (0: never)."""
    retain_budget: int = 0
    """Bytes of kept forward pieces a tile keeps for the training ops to read (the rest
    they load from DRAM, where they are stored)."""
    copy_budget: int = 0
    """Bytes of fetched operand boxes a tile remembers for reuse (0: no limit)."""
    training_budget: int = 0
    """Bytes one step of a training op may read and write on a tile (0: no steps)."""
    hold_budget: int = 1 << 62
    """Bytes of an op's result box a tile holds whole (``crane.cost.layer.HELD_SHARE`` of the
    SRAM); bigger ones go to DRAM by the step or window."""
    anchors: Mapping[Operation, str] | None = None
    """The op making each layer, split like the cost model does (None: the split rules)."""
    dims: Mapping[str, Dims] | None = None
    kept: frozenset[str] = frozenset()
    """Layers whose output the schedule keeps in SRAM after their block."""
    groups: Mapping[int, int] = field(default_factory=dict)
    """The group of each forward block that runs in one (block index -> group number)."""
    backward_phase: Mapping[Operation, int] = field(default_factory=dict)
    """The phase running each training op (its results stay in SRAM for that phase)."""
    recomputed: frozenset[str] = frozenset()
    """Layers whose block runs again before their training ops (their values read only
    inside the block and by its training ops are not stored)."""
    refreshed: frozenset[str] = frozenset()
    """Layers whose forward ops run again in their first backward phase (their values read
    only by the layer itself are not stored)."""
    ports: tuple[int, ...] = ()
    """Per tile, the DRAM port its loads and stores go through (``Machine.nearest_port``;
    empty: the port the schedule's ``ports`` table gives the column)."""

    def kept_for(self, block: int, reader: int) -> bool:
        """Whether the kept output of forward block ``block`` stays on chip for forward
        block ``reader``: always, unless ``block`` runs in a group and ``reader`` is not in
        that group. A group runs its blocks once per slice of the batch and is left through
        DRAM (``crane.schedule.search``): its memory table keeps one slice in SRAM for the
        group's next block, and a reader after the group would keep every slice alive."""
        group = self.groups.get(block)
        return group is None or self.groups.get(reader) == group


def is_resident(value: Value) -> bool:
    """Network inputs, weights and optimizer state live in DRAM from the start."""
    return isinstance(value, BlockArgument) or isinstance(value.owner_op, WeightOp | OptimizerStateOp)


def is_weight(value: Value) -> bool:
    """Whether ``value`` is a weight of the network."""
    return isinstance(value.owner_op, WeightOp)
