"""The execution order codegen follows: phases of items, one item per (layer, batch span).

A *phase* ends with a barrier of every tile. For a ``segment.block`` (its ``tiles``,
``placement`` and ``ports`` tables, Interface 1 of docs/tile-dialect.md):

* **pipelined** (the schedule as written): one phase per state with work; in state ``i``
  every active column ``j`` processes the sub-batches ``sct[i-1][j]+1 .. sct[i][j]``,
  issued step by step (the ``t``-th sub-batch of every active column, columns in order),
  on the tiles ``placement[i][j]`` through DRAM port ``ports[i][j]``;
* **layer by layer** when the block holds a whole-batch op (batchnorm normalises with the
  statistics of the whole batch, as the reference interpreter does; losses; training
  ) and more than one sub-batch: no sub-batch can be finished before every sample
  has passed the layer, so each column becomes one phase on every tile of the block (one
  column runs at a time; its widest state's DRAM port), in which its ops run sub-batch by
  sub-batch except the whole-batch ones, which run once over the whole batch.

Training ops then run after every forward block over the whole batch (backward
sub-batching is not done), one phase per layer: the backward ops of one layer run
together, so the gradients passed between them stay in SRAM. A forward block that the
schedule recomputes for the whole batch (``bw2`` blocks over its layers covering every
sub-batch: it retains none) runs again, as those ``bw2`` blocks say, right before the
first training op of its layers; its results stay in SRAM for the training ops, so the
forward pass stores only what leaves the block. A block that retains some sub-batches is
not recomputed; in it, a layer made by a convolution or matmul with more ops after it
(a conv, its batchnorm and activation) keeps only its output for backward, as the cost
model saves one tensor per layer: its first backward phase runs its forward ops again
(``refresh``) from its input, which its weight gradient reads anyway.

When the schedule carries backward blocks (``phase`` ``bw1``/``bw2``, columns
``<layer>.grad``), an op runs on the tiles of its layer's ``<layer>.grad`` column (its
widest state), in the order of those blocks; otherwise (and for layers without such a
column) on the tiles of its forward layer's widest state, forward blocks in reverse order.
If that order is not topological (an op reads a result placed in a later phase) the
backward ops keep graph order instead.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from itertools import groupby

from crane.codegen.ownership import CodegenError
from crane.dialects.segment import BlockOp
from crane.ir.attributes import ArrayAttr, DenseIntsAttr, IntAttr, StringAttr
from crane.ir.core import Operation


@dataclass(frozen=True, slots=True)
class Home:
    """Where a layer runs in one state: tiles and DRAM port."""

    tiles: tuple[int, ...]
    port: int
    partition: tuple[int, int, int, int] | None = None
    """The cost model's (batch, K, H, W) split of one sub-batch of ``subbatch`` samples of
    the layer over these tiles, as the schedule records it (``partitions``); None where
    codegen chose the tiles itself."""
    subbatch: int = 0


@dataclass(frozen=True, slots=True)
class Item:
    """One layer over one batch span on some tiles (``ops`` empty: nothing to execute)."""

    layer: str
    span: tuple[int, int]
    home: Home
    ops: tuple[int, int] | None = None
    """The slice of the layer's ops to run (None: all of them)."""


Runs = Mapping[str, Sequence[tuple[int, int, bool]]]
"""Layer -> consecutive op ranges ``(start, stop, whole_batch)`` of a layer-by-layer block."""


@dataclass(frozen=True, slots=True)
class Phase:
    """Items issued in order, then a barrier; ``block`` indexes the schedule's blocks."""

    block: int
    label: str
    items: tuple[Item, ...] = ()
    ops: tuple[Operation, ...] = ()
    """Training ops of a backward phase (run on ``items[0].home``)."""
    recompute: bool = False
    """A forward block run again in backward: its results stay in SRAM for the training
    ops and nothing is stored."""
    refresh: bool = False
    """A backward phase that first runs its layer's forward ops again (nothing stored), so
    the layer's training ops read its intermediate results from SRAM."""


def block_phase(block: BlockOp) -> str:
    """``forward`` (the default), ``bw1`` or ``bw2`` (training schedules)."""
    attr = block.attributes.get("phase")
    return attr.value if isinstance(attr, StringAttr) else "forward"


def placement_of(block: BlockOp, tiles: int, ports: int) -> tuple[list[list[Home]], int]:
    """The block's homes ``[state][column]`` from its ``placement``/``ports`` attributes
    (and the recorded ``partitions``, if any)."""
    n = len(block.layer_names)
    split = block.tile_split()
    facts = block.plan_facts()
    placement = block.attributes.get("placement")
    port_attr = block.attributes.get("ports")
    if not isinstance(placement, ArrayAttr) or not isinstance(port_attr, DenseIntsAttr):
        raise CodegenError(f"block '{block.label}' has no placement (run 'map' before 'codegen')",
                           block)
    lists = [tuple(a) if isinstance(a, DenseIntsAttr) else () for a in placement]
    flat_ports = tuple(port_attr)
    if len(lists) != len(split) * n or len(flat_ports) != len(split) * n:
        raise CodegenError(f"block '{block.label}': 'placement' and 'ports' must hold "
                           f"{len(split)} x {n} entries", block)
    homes: list[list[Home]] = []
    for i, row in enumerate(split):
        homes.append([])
        for j, count in enumerate(row):
            ids, port = lists[i * n + j], flat_ports[i * n + j]
            if len(ids) != count or any(not 0 <= t < tiles for t in ids):
                raise CodegenError(f"block '{block.label}', state {i}, column {j}: placement "
                                   f"{list(ids)} must list {count} tile ids below {tiles}", block)
            if count and not 0 <= port < ports:
                raise CodegenError(f"block '{block.label}', state {i}, column {j}: DRAM port "
                                   f"{port} is not one of the machine's {ports}", block)
            recorded = facts.partitions[i][j] if facts is not None and count else None
            homes[i].append(Home(ids, port, recorded, block.subbatch))
    return homes, n


def widest(homes: Sequence[Sequence[Home]], column: int) -> Home:
    """The column's home in the state giving it the most tiles (first such state)."""
    options = [row[column] for row in homes if row[column].tiles]
    if not options:
        return Home((), -1)
    return max(options, key=lambda h: len(h.tiles))


def block_phases(block: BlockOp, index: int, homes: Sequence[Sequence[Home]], batch: int,
                 runs: Runs | None, offset: int = 0) -> list[Phase]:
    """The forward phases of one block (see the module docstring); ``runs`` makes it
    layer by layer; ``offset`` shifts a grouped block's sub-batches to its run's slice."""
    if offset:
        return [replace(phase, label=f"{phase.label}@{offset}",
                        items=tuple(replace(item, span=(item.span[0] + offset,
                                                        item.span[1] + offset))
                                    for item in phase.items))
                for phase in block_phases(block, index, homes, batch, runs)]
    names = block.layer_names
    sub_attr = block.attributes.get("subbatch")
    sub = sub_attr.value if isinstance(sub_attr, IntAttr) else batch
    if runs is not None:
        every = tuple(dict.fromkeys(t for row in homes for home in row for t in home.tiles))
        return [Phase(index, f"{block.label}:{name}",
                      _layer_items(name, Home(every, widest(homes, j).port), runs, sub, batch))
                for j, name in enumerate(names) if widest(homes, j).tiles]
    tables = block.tables()
    phases = []
    for i, work in enumerate(tables.sct.workloads):
        if work <= 0:
            continue
        active = [j for j in range(len(names)) if homes[i][j].tiles]
        items = []
        for t in range(work):
            for j in active:
                done = tables.sct.values[i - 1][j] if i else 0
                k = done + t
                items.append(Item(names[j], (k * sub, (k + 1) * sub), homes[i][j]))
        phases.append(Phase(index, f"{block.label}:state{i}", tuple(items)))
    return phases


PlacedBlock = tuple[BlockOp, Sequence[Sequence[Home]], Runs | None]
"""A forward block, the homes of its (state, column) and its layer-by-layer runs."""


def forward_phases(placed: Sequence[PlacedBlock], batch: int) -> list[Phase]:
    """The forward phases of the blocks in order. The blocks of a group run on the first
    slice of their samples, then all of them again on the next slice, and so on."""
    phases: list[Phase] = []
    position = 0
    for group, members in groupby(placed, key=lambda p: p[0].group):
        run = [(position + k, member) for k, member in enumerate(members)]
        position += len(run)
        if group is None:
            for index, (block, homes, runs) in run:
                phases += block_phases(block, index, homes, batch, runs)
            continue
        if any(runs is not None for _, (_, _, runs) in run):
            raise CodegenError(f"group {group} holds a whole-batch op (batch statistics, "
                               "a loss): it cannot run on a slice of the batch")
        for offset in range(0, batch, run[0][1][0].samples):
            for index, (block, homes, _) in run:
                phases += block_phases(block, index, homes, batch, None, offset)
    return phases


def _layer_items(name: str, home: Home, runs: Runs, sub: int, batch: int) -> tuple[Item, ...]:
    """A layer's ops by sub-batch, except runs of whole-batch ops over the whole batch."""
    items: list[Item] = []
    for start, stop, whole in runs.get(name, ()):
        spans = [(0, batch)] if whole else [(k, min(k + sub, batch)) for k in range(0, batch, sub)]
        items += [Item(name, span, home, (start, stop)) for span in spans]
    return tuple(items)


def backward_phases(ops: Sequence[tuple[Operation, str]], rank: Mapping[str, int],
                    homes: Mapping[str, Home], block_of: Mapping[str, int],
                    batch: int) -> list[Phase]:
    """The training ops in ``rank`` order of their layers, graph order within a layer's
    rank (all graph order if that is not topological), an op moved up to its layer's run
    where it can (``_grouped``: in either order, so an update joins the phase that made
    its gradient), one phase per run of consecutive ops of one layer."""
    position = {op: k for k, (op, _) in enumerate(ops)}
    layer = dict(ops)
    ordered = sorted(ops, key=lambda pair: (rank[pair[1]], position[pair[0]]))
    placed = {op: k for k, (op, _) in enumerate(ordered)}
    topological = all(placed.get(v.owner_op, -1) < placed[op]
                      for op, _ in ordered for v in op.operands if v.owner_op in placed)
    chosen = _grouped(ordered if topological else list(ops), layer)
    runs: list[list[Operation]] = []
    for op, name in chosen:
        if runs and layer[runs[-1][0]] == name:
            runs[-1].append(op)
        else:
            runs.append([op])
    return [Phase(block_of[layer[run[0]]], f"backward:{layer[run[0]]}",
                  (Item(layer[run[0]], (0, batch), homes[layer[run[0]]]),), tuple(run))
            for run in runs]


def _grouped(ordered: Sequence[tuple[Operation, str]],
             layer: Mapping[Operation, str]) -> list[tuple[Operation, str]]:
    """``ordered`` (a topological order) with each op moved up to the run of its layer
    when everything it reads is already placed: a layer's optimizer update, which autodiff
    emits after later layers' gradients, joins the phase that made its weight gradient (the
    gradient stays on chip instead of going through DRAM to a phase of its own)."""
    inside = {op for op, _ in ordered}
    waiting: dict[str, list[tuple[Operation, str]]] = {}
    for pair in ordered:
        waiting.setdefault(pair[1], []).append(pair)
    result: list[tuple[Operation, str]] = []
    done: set[Operation] = set()
    head = 0
    while len(result) < len(ordered):
        own = waiting[result[-1][1]] if result else []
        pick = next((pair for pair in own if _ready(pair[0], done, inside)), None)
        if pick is None:  # the earliest op left is ready: everything before it is placed
            while ordered[head][0] in done:
                head += 1
            pick = ordered[head]
        waiting[pick[1]].remove(pick)
        result.append(pick)
        done.add(pick[0])
    return result


def _ready(op: Operation, done: set[Operation], inside: set[Operation]) -> bool:
    return all(v.owner_op in done for v in op.operands if v.owner_op in inside)


def recomputed_blocks(schedule_blocks: Sequence[BlockOp], forward: Sequence[BlockOp],
                      batch: int) -> dict[int, list[BlockOp]]:
    """Forward block index -> the ``bw2`` blocks that recompute it, for the forward blocks
    whose every layer the schedule recomputes for the whole batch (retains no sub-batch)."""
    block_of = {name: b for b, block in enumerate(forward) for name in block.layer_names}
    found: dict[int, list[BlockOp]] = {}
    for block in schedule_blocks:
        names = block.layer_names
        if block_phase(block) != "bw2" or not names or any(n not in block_of for n in names):
            continue
        if _samples(block, batch) < batch or len({block_of[n] for n in names}) != 1:
            continue
        found.setdefault(block_of[names[0]], []).append(block)
    return {b: again for b, again in found.items()
            if {n for block in again for n in block.layer_names} == set(forward[b].layer_names)}


def _samples(block: BlockOp, batch: int) -> int:
    sub, count = block.attributes.get("subbatch"), block.attributes.get("subbatches")
    if not isinstance(sub, IntAttr) or not isinstance(count, IntAttr):
        return batch
    return sub.value * count.value


def with_recomputation(backward: Sequence[Phase], again: Mapping[int, Sequence[Phase]],
                       layers: Mapping[int, Sequence[str]]) -> list[Phase]:
    """``backward`` with the phases ``again[b]`` recomputing forward block ``b`` (whose
    layers are ``layers[b]``) before the first phase running a training op of those
    layers (dropped if there is none)."""
    first: dict[int, int] = {}
    for b, names in layers.items():
        owners = set(names)
        at = next((k for k, phase in enumerate(backward)
                   if phase.items and phase.items[0].layer in owners), None)
        if at is not None and b in again:
            first[b] = at
    ordered: list[Phase] = []
    for k, phase in enumerate(backward):
        for b in sorted(b for b, at in first.items() if at == k):
            ordered += again[b]
        ordered.append(phase)
    return ordered


def with_refresh(backward: Sequence[Phase], layers: frozenset[str]) -> list[Phase]:
    """``backward`` with the first phase of each layer of ``layers`` marked ``refresh``."""
    seen: set[str] = set()
    marked = []
    for phase in backward:
        layer = phase.items[0].layer if phase.ops and phase.items else ""
        if layer in layers and layer not in seen:
            seen.add(layer)
            phase = replace(phase, refresh=True, label=f"{phase.label}+refresh")
        marked.append(phase)
    return marked
