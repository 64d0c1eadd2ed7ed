"""Byte offsets for the SRAM buffers of one tile: interval-graph best fit.

The buffers are placed one at a time, largest first (ties: earlier start first). A buffer
may not share bytes with any already-placed buffer whose live range overlaps its own; among
the free gaps left by those, it takes the *smallest* one it fits in at an aligned offset
(best fit; ties go to the lower offset). Largest-first keeps the big buffers at the bottom
and lets the small ones fill the holes between them. When that order strands a buffer
although the live bytes fit, the allocator tries once more in start order (a linear scan
with the same best-fit rule) and keeps whichever order fits with the lower peak.

Figures: ``peak_bytes`` is the highest byte used (offset + size over all buffers);
``max_live_bytes`` the most bytes live at one instruction; ``fragmentation`` is
``1 - max_live_bytes / peak_bytes`` (0 = no byte of the extent is ever wasted).

When the buffers do not fit, :class:`AllocationError` names the tile, the instruction where
the allocation fails and the buffers live there with their sizes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from crane.alloc.liveness import BufferRequest, LiveRange, Pressure, live_ranges, peak_pressure

DEFAULT_ALIGNMENT = 64
SHOWN = 6
"""How many live buffers (the largest) an overflow message names; the rest are summed."""
_CHUNK = 64
"""Instructions per bucket of the overlap index."""


@dataclass(frozen=True, slots=True)
class Allocation:
    """Offsets of one tile's buffers (in request order) and the figures of the result."""

    offsets: tuple[int, ...]
    ranges: tuple[LiveRange, ...]
    peak_bytes: int
    max_live_bytes: int
    capacity: int
    alignment: int

    @property
    def fragmentation(self) -> float:
        """Share of the used extent that is never live at the worst instruction."""
        if not self.peak_bytes:
            return 0.0
        return 1.0 - self.max_live_bytes / self.peak_bytes


class AllocationError(Exception):
    """The buffers of a tile do not fit its SRAM; says where and what is live there."""

    def __init__(self, tile: int | None, instruction: int, live: Sequence[tuple[str, int]],
                 capacity: int, reason: str, ranges: Sequence[LiveRange] = ()) -> None:
        self.tile = tile
        self.instruction = instruction
        self.live = tuple(live)
        """(name, bytes) of every buffer live at ``instruction``, largest first."""
        self.ranges = tuple(ranges)
        """The live range (double buffering applied) of each buffer of ``live``."""
        self.capacity = capacity
        self.reason = reason
        super().__init__(self.describe())

    @property
    def live_bytes(self) -> int:
        return sum(n for _, n in self.live)

    def describe(self) -> str:
        where = f"tile {self.tile}" if self.tile is not None else "tile"
        shown, rest = self.live[:SHOWN], self.live[SHOWN:]
        buffers = ", ".join(f"{name} ({n:,} B)" for name, n in shown)
        if rest:
            buffers += f" and {len(rest)} more ({sum(n for _, n in rest):,} B)"
        return (f"{where} runs out of SRAM at instruction {self.instruction}: {self.reason}; "
                f"{self.live_bytes:,} bytes live of {self.capacity:,}: {buffers}")


def align_up(value: int, alignment: int) -> int:
    return -(-value // alignment) * alignment


class _Placer:
    """Places buffers one by one into the SRAM of a tile (one attempt, one order)."""

    def __init__(self, sizes: Sequence[int], ranges: Sequence[LiveRange], capacity: int,
                 alignment: int) -> None:
        self.sizes = sizes
        self.ranges = ranges
        self.starts = [r.start for r in ranges]
        self.stops = [r.stop for r in ranges]
        self.capacity = capacity
        self.alignment = alignment
        self.offsets: list[int] = [0] * len(sizes)
        self.spans: list[tuple[int, int]] = [(0, 0)] * len(sizes)
        """(offset, end) of each placed buffer."""
        self.buckets: dict[int, list[int]] = {}

    def conflicts(self, i: int) -> list[int]:
        """Placed buffers whose live range overlaps buffer ``i``'s."""
        start, stop = self.starts[i], self.stops[i]
        seen: set[int] = set()
        for chunk in range(start // _CHUNK, stop // _CHUNK + 1):
            seen.update(self.buckets.get(chunk, ()))
        starts, stops = self.starts, self.stops
        return [j for j in seen if starts[j] <= stop and start <= stops[j]]

    def best_fit(self, i: int, others: list[int]) -> int | None:
        """The aligned offset of the smallest free gap that holds buffer ``i``, or None."""
        size, alignment = self.sizes[i], self.alignment
        taken = sorted(map(self.spans.__getitem__, others))
        taken.append((self.capacity, self.capacity))
        best_gap, best_start = -1, 0
        cursor = 0
        for low, high in taken:
            start = -(-cursor // alignment) * alignment  # align_up, inline: the hot loop
            gap = low - start
            if gap >= size and (best_gap < 0 or gap < best_gap):
                best_gap, best_start = gap, start
            if high > cursor:
                cursor = high
        return None if best_gap < 0 else best_start

    def place(self, i: int) -> list[int] | None:
        """Place buffer ``i``; None on success, else the placed buffers in its way."""
        if not self.sizes[i]:
            return None
        others = self.conflicts(i)
        offset = self.best_fit(i, others)
        if offset is None:
            return others
        self.offsets[i] = offset
        self.spans[i] = (offset, offset + self.sizes[i])
        for chunk in range(self.starts[i] // _CHUNK, self.stops[i] // _CHUNK + 1):
            self.buckets.setdefault(chunk, []).append(i)
        return None


def _attempt(order: Sequence[int], sizes: Sequence[int], ranges: Sequence[LiveRange],
             capacity: int, alignment: int) -> tuple[list[int] | None, int, list[int]]:
    """Offsets in one placement order, or (None, failing buffer, buffers in its way)."""
    placer = _Placer(sizes, ranges, capacity, alignment)
    for i in order:
        blocking = placer.place(i)
        if blocking is not None:
            return None, i, blocking
    return placer.offsets, -1, []


def _error(tile: int | None, requests: Sequence[BufferRequest], ranges: Sequence[LiveRange],
           pressure: Pressure, capacity: int, reason: str) -> AllocationError:
    live = [(requests[i].name, requests[i].nbytes) for i in pressure.live]
    return AllocationError(tile, pressure.instruction, live, capacity, reason,
                           [ranges[i] for i in pressure.live])


def allocate(requests: Sequence[BufferRequest], capacity: int, *,
             compute_steps: Sequence[int] = (), alignment: int = DEFAULT_ALIGNMENT,
             double_buffer: bool = True, drain: bool | None = None,
             tile: int | None = None) -> Allocation:
    """Assign an aligned byte offset to every buffer of one tile program.

    ``compute_steps`` (indices of compute instructions) drive the double-buffering and
    draining rules of :mod:`crane.alloc.liveness` (``drain``: by default with
    ``double_buffer``). Raises :class:`AllocationError` (naming ``tile``) when the buffers
    do not fit ``capacity`` bytes, and ``ValueError`` for a non-positive alignment.
    """
    if alignment <= 0:
        raise ValueError(f"alignment must be positive, got {alignment}")
    ranges = live_ranges(requests, compute_steps, double_buffer, drain)
    sizes = [r.nbytes for r in requests]
    if not requests:
        return Allocation((), (), 0, 0, capacity, alignment)
    pressure = peak_pressure(sizes, ranges)
    if pressure.nbytes > capacity:
        raise _error(tile, requests, ranges, pressure, capacity,
                     f"needs {pressure.nbytes - capacity:,} bytes more than the SRAM holds")
    by_size = sorted(range(len(requests)), key=lambda i: (-sizes[i], ranges[i].start, i))
    by_start = sorted(range(len(requests)), key=lambda i: (ranges[i].start, -sizes[i], i))
    found: list[list[int]] = []
    failure: tuple[int, list[int]] | None = None
    for order in (by_size, by_start):
        offsets, failed, blocking = _attempt(order, sizes, ranges, capacity, alignment)
        if offsets is not None:
            found.append(offsets)
        elif failure is None:
            failure = (failed, blocking)
    if not found:
        assert failure is not None
        failed, blocking = failure
        local = peak_pressure(sizes, ranges, [failed, *blocking])
        raise _error(tile, requests, ranges, local, capacity,
                     f"no free gap of {sizes[failed]:,} bytes for {requests[failed].name} "
                     "(the free bytes are fragmented)")
    extents = [max((o + s for o, s in zip(offs, sizes, strict=True)), default=0)
               for offs in found]
    best = min(range(len(found)), key=lambda k: extents[k])
    return Allocation(tuple(found[best]), tuple(ranges), extents[best], pressure.nbytes,
                      capacity, alignment)
