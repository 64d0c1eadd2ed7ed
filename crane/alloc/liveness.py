"""Buffers of one tile program and the instruction ranges during which they hold data.

A tile program is a straight line of instructions numbered 0, 1, 2, ...; a buffer is live
from the instruction that first writes it to the last one that reads it, both included.
Two buffers whose ranges share an instruction must not share SRAM bytes.

Double buffering (the rule the allocator applies when asked to): a buffer filled by a DMA
load or a NoC receive has its range *start at the last compute instruction before that
transfer* instead of at the transfer itself. So the buffer is live during that compute, and it cannot get the bytes of
anything that compute reads or writes. The load of sub-batch ``k + 1`` can then run while
compute ``k`` still reads its own operands, and a later-issued load never waits for the
compute ahead of it in the program. A load with no compute before it keeps its range. The
mirror rule drains results: a buffer last read by a DMA store or a NoC send has its range
*end at the first compute instruction after that transfer*, so that compute writes other
bytes and the store of step ``k`` runs while compute ``k + 1`` does (else the next result
takes the freed bytes and waits for the store, and stores never overlap compute).
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class BufferRequest:
    """One SRAM buffer of a tile program, as the allocator sees it."""

    name: str
    """How diagnostics name the buffer (e.g. its SSA name ``%b3``)."""
    nbytes: int
    first: int
    """Index of the instruction that defines (first writes) the buffer."""
    last: int
    """Index of the last instruction that uses it (``>= first``)."""
    dma_target: bool = False
    """Filled by a DMA load or a NoC receive: double buffering moves its start one compute
    step earlier."""
    dma_source: bool = False
    """Last read by a DMA store or a NoC send: draining moves its end one compute step
    later."""

    def __post_init__(self) -> None:
        if self.nbytes < 0:
            raise ValueError(f"buffer '{self.name}' has a negative size {self.nbytes}")
        if self.last < self.first:
            raise ValueError(f"buffer '{self.name}' is last used at {self.last}, "
                             f"before it is defined at {self.first}")


@dataclass(frozen=True, slots=True)
class LiveRange:
    """The instructions ``start .. stop`` (inclusive) during which a buffer needs its bytes."""

    start: int
    stop: int

    def overlaps(self, other: LiveRange) -> bool:
        return self.start <= other.stop and other.start <= self.stop


def double_buffered_start(first: int, compute_steps: Sequence[int]) -> int:
    """The start of a DMA-loaded buffer under double buffering (see the module docstring).

    ``compute_steps`` are the sorted indices of the program's compute instructions.
    """
    k = bisect.bisect_left(compute_steps, first)
    return compute_steps[k - 1] if k else first


def drained_stop(last: int, compute_steps: Sequence[int]) -> int:
    """The end of a buffer a transfer drains, under draining (see the module docstring)."""
    k = bisect.bisect_right(compute_steps, last)
    return compute_steps[k] if k < len(compute_steps) else last


def live_ranges(requests: Sequence[BufferRequest], compute_steps: Sequence[int],
                double_buffer: bool = True, drain: bool | None = None) -> list[LiveRange]:
    """The range each request occupies, in request order (``drain``: the draining rule,
    by default with double buffering)."""
    steps = sorted(compute_steps)
    drain = double_buffer if drain is None else drain
    ranges = []
    for req in requests:
        start, stop = req.first, req.last
        if double_buffer and req.dma_target:
            start = double_buffered_start(req.first, steps)
        if drain and req.dma_source:
            stop = drained_stop(req.last, steps)
        ranges.append(LiveRange(start, stop))
    return ranges


@dataclass(frozen=True, slots=True)
class Pressure:
    """The instruction where the most bytes are live, how many, and which buffers."""

    instruction: int
    nbytes: int
    live: tuple[int, ...]
    """Indices (into the request list) of the buffers live there, largest first."""


def peak_pressure(sizes: Sequence[int], ranges: Sequence[LiveRange],
                  subset: Iterable[int] | None = None) -> Pressure:
    """The first instruction of maximal live bytes over the buffers ``subset`` (default all)."""
    chosen = list(range(len(sizes))) if subset is None else list(subset)
    events: list[tuple[int, int, int]] = []
    for i in chosen:
        events.append((ranges[i].start, 0, sizes[i]))
        events.append((ranges[i].stop + 1, -1, -sizes[i]))
    events.sort()
    best_at, best, current = (ranges[chosen[0]].start if chosen else 0), 0, 0
    for at, _, delta in events:
        current += delta
        if current > best:
            best, best_at = current, at
    live = [i for i in chosen if ranges[i].start <= best_at <= ranges[i].stop]
    live.sort(key=lambda i: (-sizes[i], i))
    return Pressure(best_at, best, tuple(live))
