"""The ranges of what Crane compiles: machine fields, the mesh, the batch, tensor sizes.

Every pass can rely on these: the `.crn` frontend checks them at elaboration (a located
error at the value), the ``hw`` and ``graph`` verifiers check IR that was written by hand,
and pass options and sweep files check theirs. A value outside its range would either not
be representable (a float that overflowed to ``inf``, an integer past 64 bits) or make a
pass run for hours (a mesh of 10^8 tiles, a batch of 2^31), so it is refused up front.
``docs/crn-language.md`` ("Limits") lists them; keep the two in step.

    >>> MACHINE["rows"].check("mesh rows", 100)
    'mesh rows must be from 1 to 64, got 100'
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction

Number = int | float | Fraction

MAX_MESH_SIDE = 64
"""Rows, and columns, of the largest mesh: 64 x 64 = 4096 tiles."""
MAX_BATCH = 65_536
"""The largest batch a network is elaborated, scheduled or rebatched at."""
MAX_TENSOR_ELEMENTS = 2**40
"""Elements of the largest tensor (about 10^12: 4 TiB of f32); bounds every dimension too."""
MAX_INTEGER = 2**63 - 1
"""Magnitude of the largest integer a `.crn` expression or an IR attribute may hold."""
MAX_FILE_BYTES = 256 * 2**20
"""The largest hand-written text file a tool or a `.crn` import reads (256 MiB): `.crn`
files and sweep files above that size are refused rather than read into memory."""
MAX_IR_BYTES = 2 * 2**30
"""The largest IR file a tool reads (2 GiB): the toolkit's own tile programs for a real
training step run past :data:`MAX_FILE_BYTES` (about 300 MiB for a 24-layer transformer's
step on `edge`), and a tool must read back what another one wrote."""
MAX_MODEL_BYTES = 2 * 2**30
"""The largest ONNX model a tool reads (2 GiB, protobuf's own limit)."""


@dataclass(frozen=True, slots=True)
class Range:
    """The closed range ``low..high`` of one quantity, in its base unit ``unit``."""

    low: float
    high: float
    unit: str = ""
    """``bytes``, ``Hz``, ``B/s``, ``pJ``, ``pJ/byte`` or empty for a count."""

    def contains(self, value: Number) -> bool:
        """Whether ``value`` is finite and within the range (NaN never is)."""
        if isinstance(value, float) and not math.isfinite(value):
            return False
        return self.low <= value <= self.high

    def check(self, what: str, value: Number) -> str | None:
        """None if ``value`` is in range, else a message naming ``what`` and the range."""
        if self.contains(value):
            return None
        return f"{what} must be from {self.show(self.low)} to {self.show(self.high)}, got {self.show(value)}"

    def show(self, value: Number) -> str:
        """``value`` in a readable multiple of the unit: ``16 bytes``, ``1 TiB``, ``2.5e+20 Hz``."""
        return show_quantity(value, self.unit)


_PREFIXES: Mapping[str, tuple[tuple[str, float], ...]] = {
    "bytes": (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)),
    "Hz": (("THz", 1e12), ("GHz", 1e9), ("MHz", 1e6), ("kHz", 1e3)),
    "B/s": (("TB/s", 1e12), ("GB/s", 1e9), ("MB/s", 1e6), ("KB/s", 1e3)),
}


def show_quantity(value: Number, unit: str) -> str:
    """``value unit`` with the largest prefix not above it: ``16 bytes``, ``1 TiB``, ``24 GB/s``."""
    number = _as_float(value)
    prefixed = _prefixed(number, unit) if math.isfinite(number) else None
    if prefixed is not None:
        return prefixed
    return f"{_plain(value, number)} {unit}".strip()


def _plain(value: Number, number: float) -> str:
    if isinstance(value, int) and abs(value) < 10**12:
        return str(value)
    if math.isinf(number) and not isinstance(value, float):  # an exact value past 1e308
        return format(Decimal(value.numerator) / Decimal(value.denominator), ".3g")
    return f"{number:g}"


def _as_float(value: Number) -> float:
    try:
        return float(value)
    except OverflowError:  # an integer or fraction past 1e308
        return math.inf if value > 0 else -math.inf


def _prefixed(number: float, unit: str) -> str | None:
    for name, scale in _PREFIXES.get(unit, ()):
        if number >= scale:
            return f"{number / scale:g} {name}"
    return None


MACHINE: Mapping[str, Range] = {
    "rows": Range(1, MAX_MESH_SIDE),
    "cols": Range(1, MAX_MESH_SIDE),
    "macs_per_cycle": Range(1, 2**24),
    "sram_bytes": Range(1, 2**40, "bytes"),
    "frequency_hz": Range(1e3, 1e12, "Hz"),
    "data_bytes": Range(1, 8, "bytes"),
    "noc_bandwidth": Range(1e3, 1e15, "B/s"),
    "noc_hop_pj_per_byte": Range(0, 1e6, "pJ/byte"),
    "dram_bandwidth": Range(1e3, 1e15, "B/s"),
    "dram_capacity_bytes": Range(1, 2**60, "bytes"),
    "dram_pj_per_byte": Range(0, 1e6, "pJ/byte"),
    "mac_pj": Range(0, 1e6, "pJ"),
    "sram_read_pj_per_byte": Range(0, 1e6, "pJ/byte"),
    "sram_write_pj_per_byte": Range(0, 1e6, "pJ/byte"),
    "vector_lanes": Range(1, 2**24),
    "vector_op_pj": Range(0, 1e6, "pJ"),
}
"""The range of every numeric field of :class:`crane.hardware.machine.Machine`, by attribute."""

BATCH = Range(1, MAX_BATCH)
"""The batch size of a network."""


def tensor_size_problem(shape: tuple[int, ...]) -> str | None:
    """None if a tensor of ``shape`` is within :data:`MAX_TENSOR_ELEMENTS`, else why not."""
    count = 1
    for dim in shape:
        count *= max(dim, 1)
        if count > MAX_TENSOR_ELEMENTS:
            return (f"a tensor of shape [{', '.join(map(str, shape))}] has more than 2^40 "
                    f"elements (about 10^12), the largest Crane handles")
    return None
