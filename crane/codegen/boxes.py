"""Boxes: half-open index ranges per axis of a tensor, the unit codegen moves and computes.

A ``Box`` is a tuple of ``(start, stop)`` pairs, one per axis, in the coordinates of the
whole (batched) graph tensor. Every buffer of a tile program holds exactly one box of one
graph value; DRAM transfers name the box's starts as offsets.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Sequence

Box = tuple[tuple[int, int], ...]


def full(shape: Sequence[int]) -> Box:
    """The whole tensor."""
    return tuple((0, int(d)) for d in shape)


def extent(box: Box) -> tuple[int, ...]:
    """The shape of the box."""
    return tuple(b - a for a, b in box)


def starts(box: Box) -> tuple[int, ...]:
    return tuple(a for a, _ in box)


def volume(box: Box) -> int:
    count = 1
    for a, b in box:
        count *= b - a
    return count


def intersect(one: Box, other: Box) -> Box | None:
    """The common part of two boxes of the same rank, or None when they do not meet."""
    pairs = []
    for (a, b), (c, d) in zip(one, other, strict=True):  # a loop: codegen's hottest function
        low, high = (a if a > c else c), (b if b < d else d)
        if low >= high:
            return None
        pairs.append((low, high))
    return tuple(pairs)


def contains(outer: Box, inner: Box) -> bool:
    """Whether ``inner`` lies inside ``outer`` (boxes of the same rank)."""
    for (a, b), (c, d) in zip(outer, inner, strict=True):  # noqa: SIM110 (a loop: 1.6x faster, called millions of times)
        if c < a or b < d:
            return False
    return True


def with_axis(box: Box, axis: int, span: tuple[int, int]) -> Box:
    """``box`` with axis ``axis`` replaced by ``span``."""
    return (*box[:axis], span, *box[axis + 1:])


def split_span(start: int, stop: int, parts: int) -> list[tuple[int, int]]:
    """``[start, stop)`` in ``parts`` contiguous non-empty pieces within one of each other."""
    size = stop - start
    parts = max(1, min(parts, size))
    base, extra = divmod(size, parts)
    bounds = [start + k * base + min(k, extra) for k in range(parts + 1)]
    return [(bounds[k], bounds[k + 1]) for k in range(parts)]


def text(box: Box) -> str:
    return "[" + ", ".join(f"{a}:{b}" for a, b in box) + "]"


def subtract(box: Box, hole: Box) -> list[Box]:
    """``box`` minus ``hole``: at most two disjoint slabs per axis."""
    if intersect(box, hole) is None:
        return [box]
    left: list[Box] = []
    rest = box
    for axis, ((a, b), (c, d)) in enumerate(zip(box, hole, strict=True)):
        lo, hi = max(a, c), min(b, d)
        if a < lo:
            left.append(with_axis(rest, axis, (a, lo)))
        if hi < b:
            left.append(with_axis(rest, axis, (hi, b)))
        rest = with_axis(rest, axis, (lo, hi))
    return left


def covers(boxes: Sequence[Box], box: Box) -> bool:
    """Whether the union of ``boxes`` (which may overlap or repeat) holds all of ``box``."""
    left = [box]
    for other in dict.fromkeys(boxes):
        left = [piece for part in left for piece in subtract(part, other)]
        if not left:
            return True
    return not left


class BoxIndex:
    """Boxes, each with a tag, found by the boxes they meet: kept sorted by their start
    along every axis, a query scans only the boxes whose start lets them reach the asked
    span along the most selective axis (a value stored in thousands of steps is asked for
    one box at a time)."""

    def __init__(self) -> None:
        self._entries: list[tuple[Box, int]] = []
        self._starts: list[list[int]] = []
        """Per axis, the entries' starts along it, sorted."""
        self._order: list[list[int]] = []
        """Per axis, the entries' indices in the order of ``_starts``."""
        self._longest: list[int] = []
        """Per axis, the longest extent of an entry along it."""

    def add(self, box: Box, tag: int) -> None:
        if not self._entries:
            self._starts, self._order = [[] for _ in box], [[] for _ in box]
            self._longest = [0] * len(box)
        index = len(self._entries)
        self._entries.append((box, tag))
        for axis, (a, b) in enumerate(box):
            at = bisect_right(self._starts[axis], a)
            self._starts[axis].insert(at, a)
            self._order[axis].insert(at, index)
            self._longest[axis] = max(self._longest[axis], b - a)

    def meeting(self, box: Box) -> list[tuple[Box, int]]:
        """The entries that meet ``box``, in the order they were added."""
        if not self._entries:
            return []
        spans = [(bisect_left(self._starts[axis], a - self._longest[axis] + 1),
                  bisect_left(self._starts[axis], b)) for axis, (a, b) in enumerate(box)]
        axis = min(range(len(box)), key=lambda k: spans[k][1] - spans[k][0])
        low, high = spans[axis]
        found = sorted(self._order[axis][low:high])
        return [entry for k in found if intersect((entry := self._entries[k])[0], box) is not None]
