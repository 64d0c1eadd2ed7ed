"""The chip as codegen writes into it: one program per tile, buffers, DRAM tensors and moves.

:class:`Chip` appends instruction records (``crane.codegen.program``) and knows nothing of
the schedule: it allocates buffers, loads and stores boxes of DRAM tensors, cuts boxes out
of buffers, sends buffers between tiles and joins pieces. :meth:`Chip.spread` plans a
broadcast along a tree (:func:`broadcast_tree`: every tile holding the data forwards it
to its waiting neighbours, one hop each), :meth:`Chip.scatter` one whose slabs are
loaded by different tiles, and :meth:`Chip.run` emits several plans round by round (a
deep tree's buffer in pieces, each forwarded as soon as it arrives: :func:`cut_through`);
that is how data several tiles read is fetched once and shared over the NoC.

Every send is emitted right before its matching receive and every barrier on all tiles at
once, so the programs cannot deadlock whether sends block or not: each blocking
instruction waits only for instructions emitted before it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

from crane.codegen.boxes import Box, extent, split_span, starts, with_axis
from crane.codegen.program import (
    Alloc,
    Barrier,
    Buffer,
    Compute,
    Copy,
    DramTensor,
    Instruction,
    Load,
    Program,
    Recv,
    Send,
    Store,
    Window,
)
from crane.codegen.rules import shape_of
from crane.ir.core import Value
from crane.ir.types import TensorType

TensorNamer = Callable[[Value], tuple[str, str]]
"""A value -> (DRAM tensor name, role) for values seen for the first time."""

PIECE_ELEMENTS = 256
"""The fewest elements a broadcast tree forwards as a piece of its own (``cut_through``)."""

Hop = tuple[int, int, "Box | None"]
"""(holder, target, slab): one transfer of a spread (slab None: the whole buffer)."""


@dataclass
class Spread:
    """A planned broadcast of one value's box to some tiles (see :meth:`Chip.run`)."""

    value: Value
    have: dict[int, Buffer]
    """Tiles holding the data (or, for slabs, the buffer each tile receives them into)."""
    rounds: list[list[Hop]]
    tiles: Sequence[int]
    box: Box | None = None
    """The whole box when slabs arrive into pre-allocated buffers (None: whole buffers)."""


def dtype_of(value: Value) -> str:
    return str(value.type.element) if isinstance(value.type, TensorType) else "f32"


class Chip:
    """Programs of a ``rows`` x ``cols`` mesh being written (see the module docstring)."""

    def __init__(self, rows: int, cols: int, namer: TensorNamer,
                 ports: Sequence[int] = ()) -> None:
        self.rows, self.cols = rows, cols
        self.ports = tuple(ports)
        """Per tile, its DRAM port (empty: the port each load or store is given)."""
        self.programs = [Program(r * cols + c, r, c) for r in range(rows) for c in range(cols)]
        self._around = [_neighbours(t, rows, cols) for t in range(rows * cols)]
        self._trees: dict[tuple[tuple[int, ...], tuple[int, ...]], list[list[Hop]]] = {}
        """(roots, tiles) -> their broadcast tree: a step of a streamed layer repeats the
        last step's spreads, and a big program has hundreds of thousands of them."""
        self.namer = namer
        self.tensors: dict[Value, DramTensor] = {}
        self.names: set[str] = set()
        self.buffers = 0
        self.tags = 0
        self.barriers = 0

    # ----- geometry
    def hops(self, a: int, b: int) -> int:
        """Manhattan distance between two tiles (the XY route's length)."""
        (ra, ca), (rb, cb) = divmod(a, self.cols), divmod(b, self.cols)
        return abs(ra - rb) + abs(ca - cb)

    def neighbours(self, tile: int) -> list[int]:
        """The tiles one hop from ``tile``, in ascending order."""
        return self._around[tile]

    def tree(self, roots: Sequence[int], tiles: Sequence[int]) -> list[list[Hop]]:
        """:func:`broadcast_tree` of ``roots`` to ``tiles`` (a fresh list of rounds)."""
        key = (tuple(roots), tuple(tiles))
        rounds = self._trees.get(key)
        if rounds is None:
            rounds = self._trees[key] = broadcast_tree(self, roots, tiles)
        return [list(hops) for hops in rounds]

    def nearest(self, tiles: Sequence[int], target: int) -> int:
        """The tile of ``tiles`` closest to ``target`` (the first on ties)."""
        return min(tiles, key=lambda t: self.hops(t, target))

    # ----- DRAM tensors
    def tensor(self, value: Value) -> DramTensor:
        """The DRAM tensor of ``value`` (declared on first use)."""
        found = self.tensors.get(value)
        if found is not None:
            return found
        name, role = self.namer(value)
        if role in ("activation", "gradient"):
            name = self._unique(name)
        self.names.add(name)
        made = DramTensor(name, shape_of(value), dtype_of(value), role)
        self.tensors[value] = made
        return made

    def _unique(self, base: str) -> str:
        name, k = base, 1
        while name in self.names:
            k += 1
            name = f"{base}#{k}"
        return name

    # ----- instructions
    def emit(self, tile: int, instruction: Instruction) -> None:
        """Append ``instruction`` to ``tile``'s program, views read through windows."""
        body = self.programs[tile].body
        base = instruction.buffer.base if isinstance(instruction, Store) else None
        if isinstance(instruction, Store) and base is not None:
            # A DMA takes no window of its buffer: the view's box is copied out first.
            view = instruction.buffer
            self.buffers += 1
            copied = Buffer(self.buffers, view.tile, view.shape, view.dtype, view.value)
            body.append(Alloc(copied))
            body.append(Copy(copied, base, view.at, (0,) * len(view.shape), view.shape))
            instruction = replace(instruction, buffer=copied)
        body.append(_through_windows(instruction))

    def alloc(self, tile: int, shape: tuple[int, ...], value: Value) -> Buffer:
        self.buffers += 1
        label = self.tensors[value].name if value in self.tensors else (value.name_hint or "")
        buffer = Buffer(self.buffers, tile, shape, dtype_of(value), label)
        self.emit(tile, Alloc(buffer))
        return buffer

    def port(self, tile: int, port: int) -> int:
        """The DRAM port ``tile``'s DMA goes through: its own nearest one when known."""
        return self.ports[tile] if self.ports else port

    def load(self, value: Value, box: Box, tile: int, port: int) -> Buffer:
        buffer = self.alloc(tile, extent(box), value)
        self.emit(tile, Load(buffer, self.tensor(value).name, starts(box), self.port(tile, port)))
        return buffer

    def store(self, value: Value, buffer: Buffer, box: Box, port: int,
              accumulate: bool = False) -> None:
        self.emit(buffer.tile, Store(buffer, self.tensor(value).name, starts(box),
                                     self.port(buffer.tile, port), accumulate))

    def cut(self, buffer: Buffer, have: Box, want: Box, value: Value) -> Buffer:
        """``want`` out of a buffer holding ``have``: a view of it, read in place (the
        buffer itself when they are equal)."""
        if have == want:
            return buffer
        offsets = _offsets(have, want)
        root = buffer.base or buffer
        at = tuple(a + o for a, o in zip(buffer.at or (0,) * len(offsets), offsets, strict=True))
        self.buffers += 1
        return Buffer(self.buffers, buffer.tile, extent(want), buffer.dtype, buffer.value, root, at)

    def move(self, buffer: Buffer, tile: int, value: Value) -> Buffer:
        """``buffer`` sent to ``tile`` (itself when it is already there)."""
        if buffer.tile == tile:
            return buffer
        self.tags += 1
        target = self.alloc(tile, buffer.shape, value)
        self.emit(buffer.tile, Send(buffer, tile, self.tags))
        self.emit(tile, Recv(target, buffer.tile, self.tags))
        return target

    def reduce(self, buffers: Sequence[Buffer], value: Value) -> Buffer:
        """Buffers of one shape sent to the first one's tile and added there
        (``accumulate``; the first itself when it is alone)."""
        first = buffers[0]
        if len(buffers) == 1:
            return first
        moved = [first, *(self.move(b, first.tile, value) for b in buffers[1:])]
        out = self.alloc(first.tile, first.shape, value)
        self.emit(first.tile, Compute("accumulate", (out,), tuple(moved)))
        return out

    def transfer(self, source: Buffer, have: Box, want: Box, tile: int, value: Value,
                 into: tuple[Buffer, Box] | None = None) -> Buffer:
        """``want`` (inside ``have``, the box ``source`` holds) on ``tile``, straight from
        ``source``: a send of that window (no copy on the sender), received into a new
        buffer or into the window of ``into`` (a buffer and the box it holds)."""
        if source.tile == tile and into is None:
            return self.cut(source, have, want, value)
        if source.tile == tile:
            target, target_box = into  # type: ignore[misc]
            self.emit(tile, Copy(target, source, _offsets(have, want), _offsets(target_box, want),
                                 extent(want)))
            return target
        self.tags += 1
        sent = None if have == want else (_offsets(have, want), extent(want))
        if into is None:
            target, window = self.alloc(tile, extent(want), value), None
        else:
            target, window = into[0], (_offsets(into[1], want), extent(want))
        self.emit(source.tile, Send(source, tile, self.tags, sent))
        self.emit(tile, Recv(target, source.tile, self.tags, window))
        return target

    def spread(self, source: Buffer, tiles: Sequence[int], value: Value,
               held: Mapping[int, Buffer] | None = None) -> Spread:
        """A plan to bring ``source`` to every tile of ``tiles`` along a tree (``held``:
        tiles that already have the data, which forward it too); :meth:`run` emits it."""
        have = {source.tile: source, **(held or {})}
        return Spread(value, have, self.tree(list(have), tiles), tiles)

    def scatter(self, value: Value, box: Box, tiles: Sequence[int], slabs: int,
                fetch: Callable[[Box, int, tuple[Buffer, Box]], None]) -> Spread:
        """A plan to bring ``box`` to every tile of ``tiles`` in ``slabs`` slabs: each slab is
        fetched (now, by ``fetch(slab, tile, into)``: from DRAM or from the pieces holding
        it, into its window of ``into``, the tile's buffer for the whole box and that box)
        by a different tile and spread along its own tree into every tile's buffer. The fetches
        run side by side instead of queueing on one tile, and the slabs' trees use different
        links at once, so the box arrives in about one slab's tree time."""
        axis = max(range(len(box)), key=lambda a: extent(box)[a])
        whole = {t: self.alloc(t, extent(box), value) for t in tiles}
        plan = Spread(value, dict(whole), [], tiles, box)
        for k, span in enumerate(split_span(*box[axis], slabs)):
            slab = with_axis(box, axis, span)
            loader = tiles[k * len(tiles) // slabs]
            fetch(slab, loader, (whole[loader], box))
            for depth, hops in enumerate(self.tree([loader], tiles)):
                if depth == len(plan.rounds):
                    plan.rounds.append([])
                plan.rounds[depth] += [(holder, target, slab) for holder, target, _ in hops]
        return plan

    def run(self, plans: Sequence[Spread]) -> list[dict[int, Buffer]]:
        """Emit the transfers of several spreads round by round across all of them, so a
        tile's in-order NoC queue never holds a forward whose data has not arrived ahead
        of data it could already receive; each plan's buffer per tile, in plan order.

        A whole-buffer tree deeper than one round goes piece by piece (:func:`cut_through`):
        all rounds of the first piece, then all rounds of the next, so a tile forwards a
        piece as soon as it has it. Every tile's program then follows one order of (piece,
        round, plan), and every wait is for a transfer emitted before it."""
        windows = [self._pieces(plan) for plan in plans]
        for piece in range(max((len(w) for w in windows), default=0)):
            for depth in range(max((len(p.rounds) for p in plans), default=0)):
                for plan, pieces in zip(plans, windows, strict=True):
                    if piece >= len(pieces) or depth >= len(plan.rounds):
                        continue
                    for hop in plan.rounds[depth]:
                        self._hop(plan, *hop, window=pieces[piece])
        return [{t: plan.have[t] for t in plan.tiles} for plan in plans]

    @staticmethod
    def _pieces(plan: Spread) -> list[Window | None]:
        """The windows a plan's hops move one after the other ([None]: one move each)."""
        if plan.box is not None or len(plan.rounds) < 2 or not plan.have:
            return [None]
        shape = next(iter(plan.have.values())).shape
        pieces: list[Window | None] = [*cut_through(shape, len(plan.rounds))]
        return pieces or [None]

    def _hop(self, plan: Spread, holder: int, target: int, slab: Box | None,
             window: Window | None = None) -> None:
        if window is not None:
            self._forward(plan, holder, target, window)
            return
        if plan.box is None or slab is None:
            plan.have[target] = self.move(plan.have[holder], target, plan.value)
            return
        self.tags += 1
        window = (_offsets(plan.box, slab), extent(slab))
        self.emit(holder, Send(plan.have[holder], target, self.tags, window))
        self.emit(target, Recv(plan.have[target], holder, self.tags, window))

    def _forward(self, plan: Spread, holder: int, target: int, window: Window) -> None:
        """One piece of a whole-buffer tree: into the target's buffer (made by the first)."""
        source = plan.have[holder]
        if target not in plan.have:
            plan.have[target] = self.alloc(target, source.shape, plan.value)
        self.tags += 1
        self.emit(holder, Send(source, target, self.tags, window))
        self.emit(target, Recv(plan.have[target], holder, self.tags, window))

    def barrier(self, label: str = "") -> None:
        """Every tile waits for all the others (the end of a phase)."""
        tiles = tuple(p.tile for p in self.programs)
        for program in self.programs:
            program.body.append(Barrier(self.barriers, tiles, label))
        self.barriers += 1


def _neighbours(tile: int, rows: int, cols: int) -> list[int]:
    """The tiles one hop from ``tile`` on a ``rows`` x ``cols`` mesh, in ascending order."""
    row, col = divmod(tile, cols)
    around = ((row - 1, col), (row, col - 1), (row, col + 1), (row + 1, col))
    return [r * cols + c for r, c in around if 0 <= r < rows and 0 <= c < cols]


def broadcast_tree(chip: Chip, roots: Sequence[int], tiles: Sequence[int]) -> list[list[Hop]]:
    """(holder, target, None) transfers of a broadcast from ``roots``, round by round.

    Every holder sends to each of its waiting neighbours: one hop per transfer, and no two
    of these share a link, so the data crosses the fewest links (what the cost model
    charges) without contention. A waiting tile that no chain of waiting neighbours joins
    to a holder (tiles scattered over the mesh) gets the data from the nearest idle
    holder, and floods its own neighbours from there."""
    have = list(dict.fromkeys(roots))
    order = {t: k for k, t in enumerate(dict.fromkeys(tiles))}
    waiting = {t: None for t in order if t not in have}  # an ordered set
    rounds: list[list[Hop]] = []
    while waiting:
        hops: list[Hop] = []
        for holder in have:
            beside = [t for t in chip.neighbours(holder) if t in waiting]
            for target in sorted(beside, key=order.__getitem__):
                del waiting[target]
                hops.append((holder, target, None))
        stranded = _unreached(chip, [*have, *(target for _, target, _ in hops)], waiting)
        senders = {holder for holder, _, _ in hops}
        for holder in (h for h in have if h not in senders):
            if not stranded:
                break
            target = chip.nearest(stranded, holder)
            stranded.remove(target)
            del waiting[target]
            hops.append((holder, target, None))
        have += [target for _, target, _ in hops]
        rounds.append(hops)
    return rounds


def cut_through(shape: tuple[int, ...], rounds: int) -> list[Window]:
    """Contiguous windows of a buffer of ``shape`` that a broadcast tree of ``rounds`` rounds
    forwards one by one ([] when one piece is best).

    A tree that forwards whole buffers takes ``rounds`` buffer times; in ``k`` pieces it
    takes about ``rounds + k - 1`` piece times, so up to ``rounds`` pieces of at least
    ``PIECE_ELEMENTS`` each. Each window fixes one index of the axes before the axis it
    splits and spans the axes after it (a contiguous byte range, so a forward waits only
    for its own piece)."""
    size = 1
    for n in shape:
        size *= n
    wanted = min(rounds, size // PIECE_ELEMENTS)
    if wanted < 2:
        return []
    outer = 1
    for axis, n in enumerate(shape):
        if outer * n < wanted:
            outer *= n
            continue
        inner = size // outer  # the elements of one index of the axes before
        spans = split_span(0, n, min(-(-wanted // outer), inner // PIECE_ELEMENTS))
        if outer * len(spans) < 2:
            return []
        return [(_unravel(shape[:axis], k) + (a,) + (0,) * (len(shape) - axis - 1),
                 (1,) * axis + (b - a,) + shape[axis + 1:])
                for k in range(outer) for a, b in spans]
    return []


def _unravel(shape: tuple[int, ...], index: int) -> tuple[int, ...]:
    """The position of flat ``index`` in row-major ``shape``."""
    out = []
    for n in reversed(shape):
        index, at = divmod(index, n)
        out.append(at)
    return tuple(reversed(out))


def _unreached(chip: Chip, have: Sequence[int], waiting: Mapping[int, None]) -> list[int]:
    """The waiting tiles no chain of neighbouring waiting tiles joins to a holder."""
    frontier = [t for h in have for t in chip.neighbours(h) if t in waiting]
    reached = set(frontier)
    while frontier:
        for t in chip.neighbours(frontier.pop()):
            if t in waiting and t not in reached:
                reached.add(t)
                frontier.append(t)
    return [t for t in waiting if t not in reached]


def _in_base(buffer: Buffer, window: Window | None) -> tuple[Buffer, Window | None]:
    """A buffer and a window of it as the allocated buffer under a view and a window of that."""
    if buffer.base is None:
        return buffer, window
    offsets, shape = window or ((0,) * len(buffer.shape), buffer.shape)
    return buffer.base, (tuple(a + o for a, o in zip(buffer.at, offsets, strict=True)), shape)


def _through_windows(ins: Instruction) -> Instruction:
    """``ins`` with every view it reads replaced by its buffer and a window of it."""
    if isinstance(ins, Compute):
        if any(b.base is not None for b in ins.outs):
            raise ValueError(f"codegen bug: '{ins.op}' writes a view")
        if all(b.base is None for b in ins.ins):
            return ins
        reads = [_in_base(b, None) for b in ins.ins]
        return replace(ins, ins=tuple(b for b, _ in reads), in_windows=tuple(w for _, w in reads))
    if isinstance(ins, Send | Recv) and ins.buffer.base is not None:
        buffer, window = _in_base(ins.buffer, ins.window)
        return replace(ins, buffer=buffer, window=window)
    if isinstance(ins, Copy) and (ins.src.base is not None or ins.dst.base is not None):
        src, src_window = _in_base(ins.src, (ins.src_offsets, ins.shape))
        dst, dst_window = _in_base(ins.dst, (ins.dst_offsets, ins.shape))
        assert src_window is not None and dst_window is not None
        return Copy(dst, src, src_window[0], dst_window[0], ins.shape)
    if isinstance(ins, Load) and ins.buffer.base is not None:
        raise ValueError("codegen bug: a load into a view")
    return ins


def _offsets(outer: Box, inner: Box) -> tuple[int, ...]:
    """Where ``inner`` starts inside ``outer``, per axis."""
    return tuple(c - a for (a, _), (c, _) in zip(outer, inner, strict=True))
