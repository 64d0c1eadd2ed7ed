"""The ``segment`` dialect: an inter-layer schedule of a network, as IR a user can edit.

A ``segment.schedule`` names the ``graph.func`` it schedules and holds one
``segment.block`` per block of the hierarchy, run one after another. A block covers a
contiguous run of the workload's layers (``crane.schedule.from_graph``) and carries Crane's
tables (``crane.dialects.segment_tables``) flattened row-major, states by columns::

    segment.schedule ({
      segment.block {layers = ["conv1", "conv2"], subbatch = 1, subbatches = 3,
                     shape = array<i64: 3, 2>, workloads = array<i64: 1, 2, 0>,
                     sct = array<i64: 1, 0, 3, 2, 3, 3>, met_dram = array<i64: ...>,
                     met_sram = array<i64: ...>, deps = array<i64: 0, 1>,
                     tiles = array<i64: 16, 0, 8, 8, 0, 16>, fused = array<i64: 1, 0>,
                     latency_cycles = 1.0e4, energy_pj = 2.0e6} : () -> ()
    }) {func = @net, policy = "crane", objective = "edp", batch = 3} : () -> ()

``deps`` lists (producer, consumer) column pairs; ``tiles[i][j]`` is how many tiles column
j gets in state i (the split that runs most of the state's sub-batches; 0 when inactive);
``fused[j]`` is 1 when column j's output stays in SRAM. The verifier re-checks every table
constraint with ``crane.dialects.segment_checks.check_tables`` and names the first violated one
with its block, state and column (0-based).

Training schedules add backward blocks, marked by the optional ``phase`` attribute
(``"forward"`` when absent). Blocks run in the order listed: every forward block, then for
each forward block in reverse order its ``"bw1"`` blocks and its ``"bw2"`` blocks (a phase
of a forward block is one block, or one block per layer when that is cheaper or its
samples are too few to fill the whole block's pipeline; an empty phase has none). Tables,
states, columns, ``deps``, ``tiles`` and ``fused`` mean exactly what they mean forward; a
backward block's ``subbatch * subbatches`` is the samples its phase processes (at most the
batch) rather than the whole batch:

* ``bw1``: back-propagation of the sub-batches whose activations forward kept in DRAM
  (the newest ones: the last ``subbatch * subbatches`` samples of the batch). Its columns
  are the forward block's layers in reverse order, each named ``<layer>.grad``: column c
  computes that layer's input and weight gradients; ``deps`` follow the gradient flow
  (column c feeds the columns back-propagating its producers);
* ``bw2``: first the blocks whose columns carry the plain forward layer names, in forward
  order: the recomputation of the dropped sub-batches (the first samples of the batch)
  from the block's input checkpoint in DRAM; then the blocks of ``<layer>.grad`` columns
  back-propagating those samples, as in ``bw1``.

A *group* is a run of consecutive forward blocks with the same ``group`` number: a
composite block with its own sub-batch size. Each of its blocks processes ``subbatch *
subbatches`` samples (a proper divisor of the batch); the group runs all its blocks on the
first such slice of the batch, then all of them on the next slice, and so on, so a
tensor crossing between its blocks need only hold one slice. ``latency_cycles`` and
``energy_pj`` of a grouped block cover all its runs.

A layer name appears in at most one block per phase.

Blocks the ``segment`` pass makes also record how it costed them (``mix``, ``boundary``,
``state_cycles``, ``regions``, ``partitions``; ``crane.dialects.segment_facts``), so that
``map``, code generation and the pictures read the plan instead of searching for it again.
"""

from __future__ import annotations

from collections.abc import Sequence

from crane.dialects.hw import machine_of
from crane.dialects.segment_checks import Violation, check_tables
from crane.dialects.segment_facts import PlanFacts
from crane.dialects.segment_tables import MeT, ScT, Tables, grid, is_active
from crane.ir.attributes import (
    ArrayAttr,
    Attribute,
    DenseIntsAttr,
    FloatAttr,
    IntAttr,
    StringAttr,
    SymbolRefAttr,
)
from crane.ir.context import Dialect
from crane.ir.core import Block, Operation, Region, VerifyError
from crane.ir.location import UNKNOWN, Location
from crane.ir.opspec import Attr, OpSpec
from crane.ir.traits import HasParent, NoTerminator, SingleBlock
from crane.limits import BATCH

TILES_INACTIVE = "Tiles.inactive_column"
TILES_MISSING = "Tiles.active_column"
TILES_CAPACITY = "Tiles.capacity"

_TABLES = ("workloads", "sct", "met_dram", "met_sram", "tiles")
PHASES = ("forward", "bw1", "bw2")


def _ints(op: Operation, name: str) -> tuple[int, ...]:
    attr = op.attributes.get(name)
    return tuple(attr) if isinstance(attr, DenseIntsAttr) else ()


def _int(op: Operation, name: str) -> int:
    attr = op.attributes.get(name)
    return attr.value if isinstance(attr, IntAttr) else 0


def _float(op: Operation, name: str) -> float:
    attr = op.attributes.get(name)
    return float(attr.value) if isinstance(attr, FloatAttr | IntAttr) else 0.0


def _rows(flat: Sequence[int], columns: int) -> tuple[tuple[int, ...], ...]:
    return grid([flat[k: k + columns] for k in range(0, len(flat), columns)])


class BlockOp(Operation):
    """``segment.block``: one block of the hierarchy with its ScT, MeT and tile split."""

    __slots__ = ()
    spec = OpSpec(
        "segment.block",
        attributes=(
            Attr("layers", ArrayAttr, doc="names of the workload layers, one per column"),
            Attr("subbatch", IntAttr, doc="samples per sub-batch"),
            Attr("subbatches", IntAttr, doc="sub-batches every column processes (Q)"),
            Attr("shape", DenseIntsAttr, doc="states, columns of the tables"),
            Attr("workloads", DenseIntsAttr, doc="sub-batches processed in each state"),
            Attr("sct", DenseIntsAttr, doc="ScT, states x columns, row-major"),
            Attr("met_dram", DenseIntsAttr, doc="MeT DRAM lower bounds, states x columns"),
            Attr("met_sram", DenseIntsAttr, doc="MeT SRAM lower bounds, states x columns"),
            Attr("deps", DenseIntsAttr, doc="(producer, consumer) column pairs"),
            Attr("tiles", DenseIntsAttr, doc="tiles of each column in each state"),
            Attr("fused", DenseIntsAttr, doc="1 where a column's output stays in SRAM"),
            Attr("latency_cycles", FloatAttr, optional=True),
            Attr("energy_pj", FloatAttr, optional=True),
            Attr("phase", StringAttr, optional=True,
                 doc="forward (default), bw1 or bw2: the training phase the block runs in"),
            Attr("placement", ArrayAttr, optional=True,
                 doc="tile ids of each (state, column), states x columns (set by map)"),
            Attr("ports", DenseIntsAttr, optional=True,
                 doc="DRAM port of each (state, column), -1 when not placed (set by map)"),
            Attr("group", IntAttr, optional=True,
                 doc="forward blocks only: consecutive blocks with one group number form "
                     "a group, run once per slice of their samples"),
            Attr("mix", ArrayAttr, optional=True,
                 doc="per state: sub-batches on each tile split considered (set by segment)"),
            Attr("boundary", DenseIntsAttr, optional=True,
                 doc="1 where the input comes from / the output stays in SRAM (set by segment)"),
            Attr("state_cycles", ArrayAttr, optional=True,
                 doc="the cost model's latency of each state (set by segment)"),
            Attr("regions", DenseIntsAttr, optional=True,
                 doc="(first, count) snake runs of tiles per (state, column) (set by segment)"),
            Attr("partitions", DenseIntsAttr, optional=True,
                 doc="(batch, K, H, W) split factors per (state, column) (set by segment)"),
            Attr("dram_in", DenseIntsAttr, optional=True,
                 doc="bytes per sample each column reads from DRAM though its input boundary "
                     "is in SRAM: results of a group left before or of a block that "
                     "stored them (set by segment)"),
            Attr("dram_out", DenseIntsAttr, optional=True,
                 doc="bytes per sample each column writes to DRAM though its output boundary "
                     "is in SRAM: results read after its group is left (set by segment)"),
        ),
        summary="a block of layers scheduled with one ScT/MeT pair",
    )
    traits = (HasParent(("segment.schedule",)),)

    @classmethod
    def build(cls, layers: Sequence[str], subbatch: int, subbatches: int,
              tables: Tables, tiles: Sequence[Sequence[int]], fused: Sequence[bool],
              latency_cycles: float, energy_pj: float,
              location: Location = UNKNOWN, phase: str = "forward",
              group: int | None = None, facts: PlanFacts | None = None) -> BlockOp:
        """A block op holding ``tables`` (row-major) and the per-state tile split;
        ``group`` puts it in that group; ``facts`` records how the plan was costed."""
        def flat(rows: Sequence[Sequence[int]]) -> DenseIntsAttr:
            return DenseIntsAttr(tuple(int(v) for row in rows for v in row))

        attrs: dict[str, Attribute] = {
            "layers": ArrayAttr(tuple(StringAttr(n) for n in layers)),
            "subbatch": IntAttr(subbatch), "subbatches": IntAttr(subbatches),
            "shape": DenseIntsAttr((len(tables.sct.values), len(layers))),
            "workloads": DenseIntsAttr(tables.sct.workloads),
            "sct": flat(tables.sct.values), "met_dram": flat(tables.met.dram),
            "met_sram": flat(tables.met.sram),
            "deps": DenseIntsAttr(tuple(v for pair in tables.deps for v in pair)),
            "tiles": flat(tiles), "fused": DenseIntsAttr(tuple(int(f) for f in fused)),
            "latency_cycles": FloatAttr(float(latency_cycles)),
            "energy_pj": FloatAttr(float(energy_pj)),
        }
        if phase != "forward":
            attrs["phase"] = StringAttr(phase)
        if group is not None:
            attrs["group"] = IntAttr(group)
        if facts is not None:
            attrs.update(facts.attributes())
        op = cls.create(None, (), (), attrs, (), location)
        assert isinstance(op, BlockOp)
        return op

    @property
    def layer_names(self) -> tuple[str, ...]:
        attr = self.attributes.get("layers")
        items = tuple(attr) if isinstance(attr, ArrayAttr) else ()
        return tuple(a.value if isinstance(a, StringAttr) else str(a) for a in items)

    @property
    def group(self) -> int | None:
        """The block's group number, None when it runs on the whole batch."""
        attr = self.attributes.get("group")
        return attr.value if isinstance(attr, IntAttr) else None

    @property
    def subbatch(self) -> int:
        """Samples per sub-batch."""
        return _int(self, "subbatch")

    @property
    def samples(self) -> int:
        """Samples one run of the block processes (``subbatch * subbatches``)."""
        return _int(self, "subbatch") * _int(self, "subbatches")

    @property
    def runs(self) -> int:
        """How many times the block runs: once, or once per slice of the batch in a group."""
        batch = _int(self.parent_op, "batch") if self.parent_op is not None else 0
        if self.group is None or not batch or self.samples <= 0:
            return 1
        return max(1, batch // self.samples)

    @property
    def label(self) -> str:
        names = self.layer_names
        return f"{names[0]}..{names[-1]}" if len(names) > 1 else (names[0] if names else "")

    @property
    def phase(self) -> str:
        attr = self.attributes.get("phase")
        return attr.value if isinstance(attr, StringAttr) else "forward"

    @property
    def latency_cycles(self) -> float:
        return _float(self, "latency_cycles")

    @property
    def energy_pj(self) -> float:
        return _float(self, "energy_pj")

    def tables(self) -> Tables:
        """The block's tables as ``crane.dialects.segment_tables`` objects (after ``verify_layout``)."""
        n = len(self.layer_names)
        flat = _ints(self, "deps")
        deps = tuple((flat[k], flat[k + 1]) for k in range(0, len(flat) - 1, 2))
        sct = ScT(_ints(self, "workloads"), _rows(_ints(self, "sct"), n))
        met = MeT(_rows(_ints(self, "met_dram"), n), _rows(_ints(self, "met_sram"), n))
        return Tables(sct, met, deps, (_int(self, "subbatches"),) * n)

    def tile_split(self) -> tuple[tuple[int, ...], ...]:
        return _rows(_ints(self, "tiles"), len(self.layer_names))

    def plan_facts(self) -> PlanFacts | None:
        """How the ``segment`` pass costed the block (``crane.dialects.segment_facts``), or
        None for a block that records nothing (after ``verify_layout``)."""
        return PlanFacts.of(self, _ints(self, "shape")[0], len(self.layer_names))

    def verify_layout(self) -> None:
        """Sizes of the flattened tables, the dependency pairs and the batch split."""
        n = len(self.layer_names)
        shape = _ints(self, "shape")
        if n == 0 or len(shape) != 2 or shape[1] != n:
            raise VerifyError(f"'shape' must be [states, {n}] for {n} layers, got {list(shape)}")
        states = shape[0]
        for name in _TABLES[1:]:
            if len(_ints(self, name)) != states * n:
                raise VerifyError(f"'{name}' must hold {states} x {n} values, "
                                  f"got {len(_ints(self, name))}")
        if len(_ints(self, "fused")) != n:
            raise VerifyError(f"'fused' must hold {n} flags")
        deps = _ints(self, "deps")
        if len(deps) % 2 or any(not 0 <= d < n for d in deps):
            raise VerifyError(f"'deps' must be (producer, consumer) pairs of columns 0..{n - 1}")
        if _int(self, "subbatch") <= 0 or _int(self, "subbatches") <= 0:
            raise VerifyError("'subbatch' and 'subbatches' must be positive")
        if self.phase not in PHASES:
            raise VerifyError(f"'phase' must be one of {', '.join(PHASES)}, got '{self.phase}'")
        batch = _int(self.parent_op, "batch") if self.parent_op is not None else 0
        samples = self.samples
        if self.group is not None:
            self.verify_group(batch)
        elif batch and (samples > batch if self.phase != "forward" else samples != batch):
            verb = "exceed" if self.phase != "forward" else "do not make"
            raise VerifyError(f"{_int(self, 'subbatches')} sub-batches of "
                              f"{_int(self, 'subbatch')} {verb} the batch of {batch}")

    def verify_group(self, batch: int) -> None:
        """A grouped block is a forward block whose samples divide the batch, right after
        the group's previous block, with the same samples."""
        if self.phase != "forward":
            raise VerifyError(f"only forward blocks can be grouped, not a {self.phase} block")
        if batch and (self.samples >= batch or batch % self.samples):
            raise VerifyError(f"a group's {self.samples} samples must be a proper divisor of "
                              f"the batch of {batch}")
        parent = self.parent_op
        siblings = parent.blocks if isinstance(parent, ScheduleOp) else (self,)
        earlier = siblings[: siblings.index(self)]
        if not earlier or self.group not in {b.group for b in earlier}:
            return
        previous = earlier[-1]
        if previous.group != self.group:
            raise VerifyError(f"the blocks of group {self.group} are not consecutive")
        if previous.samples != self.samples:
            raise VerifyError(f"the blocks of group {self.group} process {previous.samples} "
                              f"and {self.samples} samples per run; a group has one size")

    def mapping(self) -> tuple[list[tuple[int, ...]], list[int]] | None:
        """The ``placement`` (tile ids per entry) and ``ports`` lists, state-major, if set."""
        placement, ports = self.attributes.get("placement"), self.attributes.get("ports")
        if not isinstance(placement, ArrayAttr) or not isinstance(ports, DenseIntsAttr):
            return None
        return ([tuple(e) if isinstance(e, DenseIntsAttr) else () for e in placement],
                list(ports))

    def verify_mapping(self) -> None:
        """Shapes of ``placement``/``ports``: one entry per (state, column), lengths equal to
        the tile counts, ids non-negative, port -1 exactly where nothing is placed. Whether
        the ids exist on the machine is the ``map`` pass's legality check."""
        has_placement, has_ports = "placement" in self.attributes, "ports" in self.attributes
        if not has_placement and not has_ports:
            return
        if has_placement != has_ports:
            raise VerifyError("'placement' and 'ports' must be given together")
        placement = self.attributes["placement"]
        if not isinstance(placement, ArrayAttr) or not all(
                isinstance(e, DenseIntsAttr) for e in placement):
            raise VerifyError("'placement' must be an array of array<i64: ...> entries")
        tiles = _ints(self, "tiles")
        entries, ports = self.mapping() or ([], [])
        if len(entries) != len(tiles) or len(ports) != len(tiles):
            raise VerifyError(f"'placement' and 'ports' must hold {len(tiles)} entries "
                              f"(states x columns), got {len(entries)} and {len(ports)}")
        n = len(self.layer_names)
        for k, (ids, count, port) in enumerate(zip(entries, tiles, ports, strict=True)):
            where = f"state {k // n}, column {k % n} ('{self.layer_names[k % n]}')"
            if len(ids) != count:
                raise VerifyError(f"'placement' of {where} lists {len(ids)} tiles, "
                                  f"'tiles' gives it {count}")
            if any(t < 0 for t in ids):
                raise VerifyError(f"'placement' of {where} has a negative tile id")
            if (port == -1) != (count == 0) or port < -1:
                raise VerifyError(f"'ports' of {where} must be -1 exactly when nothing "
                                  f"is placed, got {port}")

    def tile_violations(self) -> list[Violation]:
        """Tiles given to inactive columns, missing for active ones, or beyond the machine."""
        n, found = len(self.layer_names), []
        workloads = _ints(self, "workloads")
        module = self.parent_op.parent_op if self.parent_op is not None else None
        machine = machine_of(module) if module is not None else None
        for i, row in enumerate(self.tile_split()):
            busy = i < len(workloads) and workloads[i] > 0
            found += [Violation(TILES_INACTIVE, self.label, i, j, f"{t} tiles but inactive")
                      for j, t in enumerate(row) if t and not is_active(n, i, j)]
            found += [Violation(TILES_MISSING, self.label, i, j, "active with no tiles")
                      for j, t in enumerate(row) if busy and not t and is_active(n, i, j)]
            if machine is not None and sum(row) > machine.tiles:
                found.append(Violation(TILES_CAPACITY, self.label, i, None,
                                       f"{sum(row)} tiles > {machine.tiles} on the machine"))
        return found

    def verify_op(self) -> None:
        self.verify_layout()
        self.verify_mapping()
        self.plan_facts()
        found = [*check_tables(self.tables(), self.label), *self.tile_violations()]
        if not found:
            return
        first = found[0]
        where = "".join(f", {k} {v}" for k, v in (("state", first.state), ("column", first.column))
                        if v is not None)
        more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
        raise VerifyError(f"violates {first.constraint} in block '{first.block}'{where}: "
                          f"{first.message}{more}")


class ScheduleOp(Operation):
    """``segment.schedule``: the blocks of one network's schedule, in execution order."""

    __slots__ = ()
    spec = OpSpec(
        "segment.schedule",
        attributes=(
            Attr("func", SymbolRefAttr, doc="the graph.func this schedules"),
            Attr("policy", StringAttr), Attr("objective", StringAttr),
            Attr("batch", IntAttr, doc="samples per step"),
            Attr("latency_cycles", FloatAttr, optional=True),
            Attr("energy_pj", FloatAttr, optional=True),
        ),
        regions=1,
        summary="an inter-layer schedule of a graph.func: blocks run one after another",
    )
    traits = (NoTerminator(), SingleBlock())

    @classmethod
    def build(cls, func: str, policy: str, objective: str, batch: int,
              blocks: Sequence[BlockOp], latency_cycles: float, energy_pj: float,
              location: Location = UNKNOWN) -> ScheduleOp:
        body = Block(())
        for block in blocks:
            body.append(block)
        attrs: dict[str, Attribute] = {
            "func": SymbolRefAttr(func), "policy": StringAttr(policy),
            "objective": StringAttr(objective), "batch": IntAttr(batch),
            "latency_cycles": FloatAttr(float(latency_cycles)),
            "energy_pj": FloatAttr(float(energy_pj)),
        }
        op = cls.create(None, (), (), attrs, [Region([body])], location)
        assert isinstance(op, ScheduleOp)
        return op

    @property
    def func_name(self) -> str:
        attr = self.attributes.get("func")
        return attr.root if isinstance(attr, SymbolRefAttr) else ""

    @property
    def blocks(self) -> tuple[BlockOp, ...]:
        body = self.regions[0].blocks
        return tuple(op for op in body[0].ops if isinstance(op, BlockOp)) if body else ()

    def verify_op(self) -> None:
        out_of_range = BATCH.check("'batch'", _int(self, "batch"))
        if out_of_range is not None:
            raise VerifyError(out_of_range)
        body = self.regions[0].blocks
        strangers = [op.name for op in body[0].ops if not isinstance(op, BlockOp)] if body else []
        if strangers:
            raise VerifyError(f"may hold only segment.block ops, found '{strangers[0]}'")
        seen: set[tuple[str, str]] = set()
        for key in ((block.phase, n) for block in self.blocks for n in block.layer_names):
            if key in seen:
                where = f" in phase {key[0]}" if key[0] != "forward" else ""
                raise VerifyError(f"layer '{key[1]}' is scheduled by more than one block{where}")
            seen.add(key)


SEGMENT = Dialect("segment", (ScheduleOp, BlockOp),
                  summary="inter-layer schedules: blocks, ScT/MeT tables and tile splits")
