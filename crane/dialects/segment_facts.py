"""What the ``segment`` pass records of the plan behind each ``segment.block``, so that later
passes and pictures read it instead of searching for it again.

The tables (ScT, MeT, tiles) say *what* a block computes when; these optional attributes
say how the cost model priced it:

* ``mix``: per state, the sub-batches run on each tile split the cost model considers, in
  the order ``crane.schedule.options.state_options`` lists them (``tiles`` records only the
  split running most of them);
* ``boundary = array<i64: in, out>``: 1 where the block's input comes from SRAM / its
  output stays in SRAM across the block boundary (else through DRAM);
* ``state_cycles``: the cost model's latency of each state (they add up to the block's
  ``latency_cycles``, except where a training forward block also saves activations or a
  grouped block runs several times);
* ``regions``: per (state, column), state-major, ``(first, count)``: the run of tiles along
  the cost model's snake path the column uses (``(0, 0)`` when it does not run), a
  placement hint for a block that ``map`` has not placed;
* ``partitions``: per (state, column), ``(batch, K, H, W)``: how the cost model divides the
  column's sub-batch over its tiles (``crane.cost.utilisation.preferred_partition``);
* ``dram_in`` (only where some are): per column, the bytes per sample of its input from
  outside the block that come from DRAM although the input boundary is in SRAM (results
  of a group the schedule has left, or of a block that stored them,
  ``crane.schedule.block.Block.dram_in``);
* ``dram_out`` (only where some are): per column, the bytes per sample of its output to
  outside the block that it writes to DRAM as well although the output boundary is in
  SRAM (results read after the group is left, ``crane.schedule.block.Block.dram_out``).

A hand-written block may leave them out; one that has them must have all of them (but
``dram_in`` and ``dram_out``), sized to its tables.
"""

from __future__ import annotations

from dataclasses import dataclass

from crane.ir.attributes import ArrayAttr, Attribute, DenseIntsAttr, FloatAttr, IntAttr
from crane.ir.core import Operation, VerifyError

FACT_ATTRS = ("mix", "boundary", "state_cycles", "regions", "partitions")

Grid = tuple[tuple[int, ...], ...]


@dataclass(frozen=True, slots=True)
class PlanFacts:
    """The recorded facts of one block's plan (see the module docstring)."""

    mix: Grid
    boundary: tuple[bool, bool]
    state_cycles: tuple[float, ...]
    regions: tuple[tuple[tuple[int, int], ...], ...]
    partitions: tuple[tuple[tuple[int, int, int, int], ...], ...]
    dram_in: tuple[int, ...] = ()
    dram_out: tuple[int, ...] = ()

    def attributes(self) -> dict[str, Attribute]:
        """The block attributes holding these facts."""
        def flat(rows: tuple[tuple[tuple[int, ...], ...], ...]) -> DenseIntsAttr:
            return DenseIntsAttr(tuple(v for row in rows for entry in row for v in entry))

        found: dict[str, Attribute] = {
            "mix": ArrayAttr(tuple(DenseIntsAttr(row) for row in self.mix)),
            "boundary": DenseIntsAttr(tuple(int(b) for b in self.boundary)),
            "state_cycles": ArrayAttr(tuple(FloatAttr(float(c)) for c in self.state_cycles)),
            "regions": flat(self.regions),
            "partitions": flat(self.partitions),
        }
        if self.dram_in:
            found["dram_in"] = DenseIntsAttr(self.dram_in)
        if self.dram_out:
            found["dram_out"] = DenseIntsAttr(self.dram_out)
        return found

    @classmethod
    def of(cls, op: Operation, states: int, columns: int) -> PlanFacts | None:
        """The facts a block records, None when it records none; ``VerifyError`` when they
        are partial or do not fit ``states`` x ``columns`` tables."""
        present = [name for name in FACT_ATTRS if name in op.attributes]
        if not present:
            return None
        if len(present) != len(FACT_ATTRS):
            missing = [name for name in FACT_ATTRS if name not in present]
            raise VerifyError(f"records {', '.join(present)} of its plan but not {', '.join(missing)}")
        boundary = _ints(op, "boundary")
        if len(boundary) != 2 or any(b not in (0, 1) for b in boundary):
            raise VerifyError("'boundary' must be two flags (input in SRAM, output in SRAM)")
        return cls(_mix(op, states), (bool(boundary[0]), bool(boundary[1])),
                   _cycles(op, states), _entries(op, "regions", states, columns, 2),  # type: ignore[arg-type]
                   _entries(op, "partitions", states, columns, 4),  # type: ignore[arg-type]
                   _per_column(op, "dram_in", columns), _per_column(op, "dram_out", columns))


def _per_column(op: Operation, name: str, columns: int) -> tuple[int, ...]:
    if name not in op.attributes:
        return ()
    found = _ints(op, name)
    if len(found) != columns or any(v < 0 for v in found):
        raise VerifyError(f"'{name}' must hold {columns} byte counts, one per column")
    return found


def _ints(op: Operation, name: str) -> tuple[int, ...]:
    attr = op.attributes.get(name)
    if not isinstance(attr, DenseIntsAttr):
        raise VerifyError(f"'{name}' must be an array<i64: ...>")
    return tuple(attr)


def _mix(op: Operation, states: int) -> Grid:
    attr = op.attributes["mix"]
    if not isinstance(attr, ArrayAttr) or not all(isinstance(r, DenseIntsAttr) for r in attr):
        raise VerifyError("'mix' must be an array of array<i64: ...>, one per state")
    rows = tuple(tuple(r) for r in attr if isinstance(r, DenseIntsAttr))
    if len(rows) != states or any(v < 0 for row in rows for v in row):
        raise VerifyError(f"'mix' must hold {states} rows of sub-batch counts, got {len(rows)}")
    return rows


def _cycles(op: Operation, states: int) -> tuple[float, ...]:
    attr = op.attributes["state_cycles"]
    items = tuple(attr) if isinstance(attr, ArrayAttr) else ()
    if len(items) != states or not all(isinstance(c, FloatAttr | IntAttr) for c in items):
        raise VerifyError(f"'state_cycles' must hold {states} numbers")
    cycles = tuple(float(c.value) for c in items if isinstance(c, FloatAttr | IntAttr))
    if any(c < 0 for c in cycles):
        raise VerifyError("'state_cycles' must not be negative")
    return cycles


def _entries(op: Operation, name: str, states: int, columns: int,
             width: int) -> tuple[tuple[tuple[int, ...], ...], ...]:
    flat = _ints(op, name)
    if len(flat) != states * columns * width or any(v < 0 for v in flat):
        raise VerifyError(f"'{name}' must hold {states} x {columns} entries of {width} "
                          f"non-negative values, got {len(flat)} values")
    entries = [tuple(flat[k: k + width]) for k in range(0, len(flat), width)]
    return tuple(tuple(entries[i * columns: (i + 1) * columns]) for i in range(states))
