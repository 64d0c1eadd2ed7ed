"""Exact index analysis for tiling a chain of spatial ops.

Conventions. Every interval is half-open ``[start, stop)`` in the *unpadded* coordinates of
the tensor it indexes. Output pixel ``o`` of a window op with kernel ``k``, stride ``s``,
dilation ``d`` and low padding ``p`` reads unpadded input positions
``o*s - p + d*t`` for taps ``t = 0..k-1``; so output rows ``[a, b)`` need input rows
``[a*s - p, (b-1)*s - p + d*(k-1) + 1)``. The part of that range outside ``[0, size)`` is
exactly the zero (or -inf, for max-pool) padding the op would have seen untiled, so a tile
gets padding only on the sides where its range crosses a true tensor border.

Walking this rule from the last op back to the first gives every op's input region for one
output tile; the regions of op ``i``'s input are op ``i-1``'s output regions.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from crane.tiling.layers import Layer, Pad4, Pair, Window, chain_hw


@dataclass(frozen=True, slots=True)
class Interval:
    """A half-open index range ``[start, stop)``; may be empty but never reversed."""

    start: int
    stop: int

    def __post_init__(self) -> None:
        if self.stop < self.start:
            raise ValueError(f"interval [{self.start}, {self.stop}) is reversed")

    @classmethod
    def full(cls, size: int) -> Interval:
        """The whole axis ``[0, size)``."""
        return cls(0, size)

    @property
    def size(self) -> int:
        """Number of indices in the interval."""
        return self.stop - self.start

    def shift(self, offset: int) -> Interval:
        """The same range expressed relative to ``offset`` (for slicing a patch)."""
        return Interval(self.start - offset, self.stop - offset)

    def as_slice(self) -> slice:
        """The interval as a Python slice."""
        return slice(self.start, self.stop)


@dataclass(frozen=True, slots=True)
class Rect:
    """A rectangle of an (H, W) plane: a row interval times a column interval."""

    rows: Interval
    cols: Interval

    @classmethod
    def full(cls, hw: Pair) -> Rect:
        """The whole plane of shape ``hw``."""
        return cls(Interval.full(hw[0]), Interval.full(hw[1]))

    @classmethod
    def of(cls, row_start: int, row_stop: int, col_start: int, col_stop: int) -> Rect:
        """A region from its four bounds."""
        return cls(Interval(row_start, row_stop), Interval(col_start, col_stop))

    @property
    def hw(self) -> Pair:
        """(rows, cols) extent."""
        return self.rows.size, self.cols.size

    @property
    def area(self) -> int:
        """Number of pixels."""
        return self.rows.size * self.cols.size

    def relative_to(self, outer: Rect) -> Rect:
        """This region in the coordinates of a patch that starts at ``outer``'s corner."""
        return Rect(self.rows.shift(outer.rows.start), self.cols.shift(outer.cols.start))

    def slices(self) -> tuple[slice, slice]:
        """Slices for the last two axes of an NCHW array."""
        return self.rows.as_slice(), self.cols.as_slice()


@dataclass(frozen=True, slots=True)
class OpRegion:
    """What one op computes for one tile: input patch (clipped), border padding, output patch."""

    input: Rect
    padding: Pad4
    """(top, bottom, left, right) padding to apply to the input patch; nonzero only at borders."""
    output: Rect


def axis_input(out: Interval, size: int, window: Window, axis: int) -> tuple[Interval, int, int]:
    """Input interval (clipped to ``[0, size)``) and (low, high) padding for an output interval.

    The padded patch always has exactly the length the window needs, so the op run on it
    with this padding yields ``out.size`` outputs.
    """
    if out.size == 0:
        raise ValueError("an empty output interval needs no input")
    lo_pad, _ = window.pads(axis)
    stride = window.stride[axis]
    start = out.start * stride - lo_pad
    stop = (out.stop - 1) * stride - lo_pad + window.span(axis)
    clipped = Interval(min(max(start, 0), size), max(min(stop, size), 0))
    length = stop - start
    low = min(max(-start, 0), length)
    high = length - low - clipped.size
    return clipped, low, high


def op_region(window: Window, in_hw: Pair, output: Rect) -> OpRegion:
    """The input region and border padding one op needs to produce ``output``."""
    out_hw = window.out_hw(in_hw)
    _check_inside(output, out_hw)
    rows, top, bottom = axis_input(output.rows, in_hw[0], window, 0)
    cols, left, right = axis_input(output.cols, in_hw[1], window, 1)
    return OpRegion(Rect(rows, cols), (top, bottom, left, right), output)


def chain_regions(layers: Sequence[Layer], in_hw: Pair, output: Rect) -> tuple[OpRegion, ...]:
    """Per-op regions (first op first) for one tile ``output`` of the chain's last op."""
    shapes = chain_hw(layers, in_hw)
    regions: list[OpRegion] = []
    needed = output
    for index in range(len(layers) - 1, -1, -1):
        step = _idle(needed) if needed.area == 0 else op_region(layers[index].window, shapes[index], needed)
        regions.append(step)
        needed = step.input
    regions.reverse()
    return tuple(regions)


def live_start(steps: Sequence[OpRegion]) -> int:
    """Index of the first op a tile must run: ops before it have nothing to compute.

    A window lying entirely in padding reads no real pixel (say a 1x1 conv padded by 2), so
    for a border tile the ops feeding it may have empty outputs and are skipped.
    """
    empty = [index for index, step in enumerate(steps) if step.output.area == 0]
    return empty[-1] + 1 if empty else 0


def split_axis(size: int, parts: int) -> tuple[Interval, ...]:
    """Split ``[0, size)`` into ``parts`` contiguous intervals whose sizes differ by at most one."""
    if parts < 1 or parts > size:
        raise ValueError(f"cannot split an extent of {size} into {parts} non-empty parts")
    base, extra = divmod(size, parts)
    # The first ``extra`` parts take one more pixel so sizes stay within one of each other.
    cuts = [index * base + min(index, extra) for index in range(1, parts)]
    return cut_axis(size, cuts)


def cut_axis(size: int, cuts: Sequence[int]) -> tuple[Interval, ...]:
    """Split ``[0, size)`` at explicit, strictly increasing interior cut positions."""
    bounds = [0, *cuts, size]
    if any(b <= a for a, b in zip(bounds, bounds[1:], strict=False)):
        raise ValueError(f"cuts {list(cuts)} must be strictly increasing inside (0, {size})")
    return tuple(Interval(a, b) for a, b in zip(bounds, bounds[1:], strict=False))


def split_grid(height: int, width: int, rows: int, cols: int) -> tuple[Rect, ...]:
    """A ``rows`` x ``cols`` grid of disjoint tiles covering (height, width), row-major."""
    return grid_from_axes(split_axis(height, rows), split_axis(width, cols))


def grid_from_cuts(
    height: int, width: int, row_cuts: Sequence[int], col_cuts: Sequence[int]
) -> tuple[Rect, ...]:
    """A grid of disjoint tiles from explicit interior cut positions on each axis, row-major."""
    return grid_from_axes(cut_axis(height, row_cuts), cut_axis(width, col_cuts))


def grid_from_axes(rows: Sequence[Interval], cols: Sequence[Interval]) -> tuple[Rect, ...]:
    """The Cartesian product of row and column intervals, row-major."""
    return tuple(Rect(r, c) for r in rows for c in cols)


def _idle(output: Rect) -> OpRegion:
    """The step of an op with an empty output: no input and no padding."""
    return OpRegion(Rect(Interval(0, 0), Interval(0, 0)), (0, 0, 0, 0), output)


def _check_inside(region: Rect, hw: Pair) -> None:
    inside = (
        0 <= region.rows.start < region.rows.stop <= hw[0]
        and 0 <= region.cols.start < region.cols.stop <= hw[1]
    )
    if not inside:
        raise ValueError(f"region {region} is empty or outside an output of shape {hw}")
