"""The memories of the functional tile simulator: DRAM tensors and each tile's SRAM.

A buffer whose ``tile.alloc`` has ``offset = -1`` gets an array of its own. An allocated
buffer is a view into its tile's SRAM *arena* (one byte array of ``sram_bytes``), so two
live buffers placed on overlapping bytes really overwrite each other (a buffer whose
declared footprint differs from its IR size keeps its own array). The arena also keeps,
per buffer, whether its bytes still hold what was last written through it: a write
through one buffer invalidates every other buffer it overlaps, and reading an invalidated
(or never written) buffer is an error naming both buffers and the overwriting instruction.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from crane.ir.core import Operation, Value
from crane.ir.diagnostics import Diagnostic, DiagnosticError, Severity
from crane.ir.types import BufferType, ScalarType

Array = np.ndarray

NUMPY_DTYPES: dict[str, type[np.generic]] = {
    "f32": np.float32, "f64": np.float64, "f16": np.float16, "bf16": np.float32,
    "i1": np.bool_, "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64,
    "index": np.int64,
}
"""Element type -> the numpy type the simulator stores it as (bf16 is kept as f32)."""


class SimulationError(DiagnosticError):
    """A tile program went wrong at run time; every diagnostic is located at an instruction."""


def fail(op: Operation | None, message: str, *notes: tuple[str, Operation]) -> SimulationError:
    """An error at ``op`` (``'tile.x' op message``) with notes at other instructions."""
    location = op.location if op is not None else None
    text = f"'{op.name}' op {message}" if op is not None else message
    diag = Diagnostic(Severity.ERROR, text, location) if location is not None \
        else Diagnostic(Severity.ERROR, text)
    for note, where in notes:
        diag.attach_note(note, where.location)
    return SimulationError(diag)


def numpy_dtype(element: ScalarType) -> type[np.generic]:
    return NUMPY_DTYPES[element.name]


def describe(value: Value) -> str:
    """``%x`` (the buffer's SSA name) or ``a buffer`` when it has none."""
    return f"%{value.name_hint}" if value.name_hint else "a buffer"


@dataclass
class _Placed:
    """An allocated buffer: its byte range and whether its bytes are still its own."""

    start: int
    end: int
    alloc: Operation
    valid: bool = False
    clobbered_by: Operation | None = None
    clobbering_buffer: Value | None = None


@dataclass
class Sram:
    """One tile's buffers: separate arrays, or views into a byte arena when allocated."""

    tile: int
    capacity: int
    arrays: dict[Value, Array] = field(default_factory=dict)
    placed: dict[Value, _Placed] = field(default_factory=dict)
    valid: dict[Value, _Placed] = field(default_factory=dict)
    """The placed buffers whose bytes still hold what was last written through them."""
    written: set[Value] = field(default_factory=set)
    arena: Array | None = None

    def allocate(self, value: Value, offset: int, size: int, op: Operation) -> None:
        """Make the buffer of ``op`` (a ``tile.alloc``) taking ``size`` bytes at ``offset``
        (-1: its own array). A buffer whose footprint is not its IR size (``bytes``
        narrower than f32) keeps its values in its own array; its bytes are still tracked,
        so overlapping it with a live buffer is detected."""
        btype = value.type
        assert isinstance(btype, BufferType)
        dtype = numpy_dtype(btype.element)
        if offset < 0:
            self.arrays[value] = np.zeros(btype.shape, dtype)
            return
        end = offset + size
        span = int(np.prod(btype.shape, dtype=np.int64)) * np.dtype(dtype).itemsize
        if end > self.capacity:
            raise fail(op, f"buffer {describe(value)} at bytes [{offset}, {end}) lies outside "
                           f"tile {self.tile}'s SRAM of {self.capacity} bytes")
        self.placed[value] = _Placed(offset, end, op)
        if span != size or offset + span > self.capacity:
            self.arrays[value] = np.zeros(btype.shape, dtype)
            return
        if self.arena is None:
            self.arena = np.zeros(self.capacity, np.uint8)
        self.arrays[value] = self.arena[offset: offset + span].view(dtype).reshape(btype.shape)

    def read(self, value: Value, op: Operation) -> Array:
        """The contents of a buffer ``op`` reads; fails if they were never written or were
        overwritten through an overlapping buffer."""
        array = self._array(value, op)
        placed = self.placed.get(value)
        if placed is None:
            if value not in self.written:
                raise fail(op, f"reads {describe(value)} on tile {self.tile} before anything was written to it")
            return array
        if placed.valid:
            return array
        if placed.clobbered_by is None:
            raise fail(op, f"reads {describe(value)} on tile {self.tile} before anything was written to it")
        other = describe(placed.clobbering_buffer) if placed.clobbering_buffer is not None else "another buffer"
        raise fail(op, f"reads {describe(value)} (SRAM bytes [{placed.start}, {placed.end}) of tile "
                       f"{self.tile}), which {other} overwrote: the allocation overlaps live buffers",
                   (f"{describe(value)} is allocated here", placed.alloc),
                   (f"{other} overwrote it here", placed.clobbered_by))

    def target(self, value: Value, op: Operation) -> Array:
        """The array ``op`` writes into (the caller then calls :meth:`wrote`)."""
        return self._array(value, op)

    def wrote(self, value: Value, op: Operation) -> None:
        """Record that ``op`` wrote ``value``: it is valid, overlapping buffers are not."""
        self.written.add(value)
        placed = self.placed.get(value)
        if placed is None:
            return
        placed.valid, placed.clobbered_by = True, None
        hit = [other for other, where in self.valid.items()
               if other is not value and where.start < placed.end and placed.start < where.end]
        for other in hit:
            where = self.valid.pop(other)
            where.valid, where.clobbered_by, where.clobbering_buffer = False, op, value
        self.valid[value] = placed

    def release(self, values: Iterable[Value]) -> None:
        """Forget buffers no instruction will use again: their arrays (an unplaced buffer's
        own array is the simulator's main memory cost) and their overlap records."""
        for value in values:
            self.arrays.pop(value, None)
            self.placed.pop(value, None)
            self.valid.pop(value, None)
            self.written.discard(value)

    def _array(self, value: Value, op: Operation) -> Array:
        array = self.arrays.get(value)
        if array is None:
            raise fail(op, f"uses {describe(value)}, which no tile.alloc of tile {self.tile} has made")
        return array


def box(offsets: tuple[int, ...], shape: tuple[int, ...]) -> tuple[slice, ...]:
    """The index of the box ``[offsets, offsets + shape)``."""
    return tuple(slice(o, o + n) for o, n in zip(offsets, shape, strict=True))


def check_box(op: Operation, what: str, offsets: tuple[int, ...], shape: tuple[int, ...],
              bounds: tuple[int, ...]) -> None:
    """Fail at ``op`` unless the box lies inside ``bounds``."""
    inside = len(offsets) == len(shape) == len(bounds) and all(
        o >= 0 and o + n <= b for o, n, b in zip(offsets, shape, bounds, strict=True))
    if not inside:
        raise fail(op, f"accesses {what} out of bounds: box at {list(offsets)} of shape "
                       f"{list(shape)} in a tensor of shape {list(bounds)}")
