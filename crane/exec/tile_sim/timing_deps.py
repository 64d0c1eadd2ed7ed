"""The scoreboard of one tile, worked out before simulation: which earlier instructions each
instruction must wait for.

Hazards are on SRAM *bytes*, not on buffer names, so two buffers the allocator put on the
same bytes are ordered even though they are different SSA values:

* read after write: a reader waits for the last writer of every byte it reads;
* write after read: a writer (a load, a recv, a compute's output) waits for every reader of
  those bytes since their last write - this is where double buffering pays: a load into
  bytes the running compute still reads must wait for it, a load into other bytes need not;
* write after write: a writer waits for the last writer.

Readers on an exclusive unit (the compute unit, the load and the store channel) finish in
program order, so only the latest reader per unit is kept; NoC transfers may finish in any
order and are all kept. A barrier waits for everything before it and everything after it
waits for the barrier.
"""

from __future__ import annotations

import bisect
from collections.abc import Hashable, Iterable

Span = tuple[int, int]
"""A byte range ``[lo, hi)`` of a tile's address space."""


class ByteMap:
    """Last writers and readers since, for every byte range (a sorted list of segments).

    A segment's writers are one full write, or several *partial* writes: windowed receives
    and copies into one buffer, which write disjoint boxes (codegen joins pieces that way)
    and so need not wait for each other; a reader waits for all of them.
    """

    def __init__(self) -> None:
        self.starts: list[int] = [0]
        self.writers: list[tuple[int, ...]] = [()]
        self.partial: list[bool] = [False]
        self.readers: list[dict[Hashable, int]] = [{}]

    def _split(self, at: int) -> int:
        """Index of the segment starting at ``at`` (splitting the one that holds it)."""
        k = bisect.bisect_right(self.starts, at) - 1
        if self.starts[k] == at:
            return k
        self.starts.insert(k + 1, at)
        self.writers.insert(k + 1, self.writers[k])
        self.partial.insert(k + 1, self.partial[k])
        self.readers.insert(k + 1, dict(self.readers[k]))
        return k + 1

    def _span(self, lo: int, hi: int) -> range:
        first = self._split(lo)
        return range(first, self._split(hi))

    def read(self, span: Span, reader: Hashable, index: int, deps: set[int]) -> None:
        """Record ``index`` reading ``span`` (as ``reader``); add its RAW dependences."""
        for k in self._span(*span):
            deps.update(self.writers[k])
            self.readers[k][reader] = index

    def write(self, span: Span, index: int, deps: set[int], partial: bool = False) -> None:
        """Record ``index`` overwriting ``span`` (a disjoint part of it when ``partial``);
        add its WAR and WAW dependences."""
        segments = self._span(*span)
        for k in segments:
            if not (partial and self.partial[k]):
                deps.update(self.writers[k])
            deps.update(self.readers[k].values())
        first, stop = segments.start, segments.stop
        if partial:
            for k in segments:
                self.writers[k] = (*self.writers[k], index) if self.partial[k] else (index,)
                self.partial[k] = True
            return
        del self.starts[first + 1: stop]
        del self.writers[first + 1: stop]
        del self.partial[first + 1: stop]
        del self.readers[first + 1: stop]
        self.writers[first] = (index,)
        self.partial[first] = False
        self.readers[first] = {}


class Scoreboard:
    """Builds the dependence lists of one tile's instructions, in program order."""

    def __init__(self) -> None:
        self.bytes = ByteMap()
        self.last_in_queue: dict[str, int] = {}
        self.unordered: list[int] = []
        """Transfers since the last barrier (they may complete out of order)."""
        self.fence = -1

    def add(self, index: int, queue: str, reads: Iterable[Span], writes: Iterable[Span],
            exclusive: bool, partial: bool = False) -> tuple[int, ...]:
        """The instructions ``index`` must wait for (sorted, without itself); ``partial``
        writes are disjoint windows of their spans (see :class:`ByteMap`)."""
        deps: set[int] = set()
        reader: Hashable = queue if exclusive else (queue, index)
        for span in reads:
            self.bytes.read(span, reader, index, deps)
        for span in writes:
            self.bytes.write(span, index, deps, partial)
        if self.fence >= 0:
            deps.add(self.fence)
        self.last_in_queue[queue] = index
        if not exclusive:
            self.unordered.append(index)
        deps.discard(index)
        return tuple(sorted(deps))

    def barrier(self, index: int) -> tuple[int, ...]:
        """A barrier waits for all earlier instructions; later ones wait for it."""
        deps = set(self.last_in_queue.values()) | set(self.unordered)
        if self.fence >= 0:
            deps.add(self.fence)
        self.unordered = []
        self.last_in_queue = {}
        self.fence = index
        return tuple(sorted(deps))
