"""Units and dimensions of hardware quantities (``1 MiB``, ``24 GB/s``, ``0.7 pJ/bit``).

A dimension is a triple of exponents (bytes, seconds, picojoules); a unit is a factor in
base units (byte, second, picojoule) and a dimension. Factors are exact fractions so that
``1.35 GHz`` is exactly 1.35e9 Hz and ``0.7 pJ/bit`` exactly 5.6 pJ/byte.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction

from crane.dialects.layers.values import did_you_mean

Dim = tuple[int, int, int]

COUNT: Dim = (0, 0, 0)
BYTES: Dim = (1, 0, 0)
TIME: Dim = (0, 1, 0)
FREQUENCY: Dim = (0, -1, 0)
BANDWIDTH: Dim = (1, -1, 0)
ENERGY: Dim = (0, 0, 1)
ENERGY_PER_BYTE: Dim = (-1, 0, 1)

DIM_NAMES: Mapping[Dim, str] = {
    COUNT: "a plain number",
    BYTES: "a size (bytes)",
    TIME: "a time",
    FREQUENCY: "a frequency",
    BANDWIDTH: "a bandwidth (bytes per second)",
    ENERGY: "an energy",
    ENERGY_PER_BYTE: "an energy per byte or bit",
}

DIM_EXAMPLES: Mapping[Dim, str] = {
    COUNT: "1024",
    BYTES: "1 MiB",
    FREQUENCY: "1 GHz",
    BANDWIDTH: "24 GB/s",
    ENERGY: "0.018 pJ",
    ENERGY_PER_BYTE: "0.7 pJ/bit",
}


@dataclass(frozen=True, slots=True)
class UnitDef:
    factor: Fraction
    dim: Dim


def _u(factor: int | Fraction, dim: Dim) -> UnitDef:
    return UnitDef(Fraction(factor), dim)


UNITS: Mapping[str, UnitDef] = {
    "B": _u(1, BYTES), "byte": _u(1, BYTES), "bytes": _u(1, BYTES),
    "bit": _u(Fraction(1, 8), BYTES), "bits": _u(Fraction(1, 8), BYTES),
    "KB": _u(10**3, BYTES), "MB": _u(10**6, BYTES), "GB": _u(10**9, BYTES), "TB": _u(10**12, BYTES),
    "KiB": _u(2**10, BYTES), "MiB": _u(2**20, BYTES), "GiB": _u(2**30, BYTES), "TiB": _u(2**40, BYTES),
    "s": _u(1, TIME), "ms": _u(Fraction(1, 10**3), TIME), "us": _u(Fraction(1, 10**6), TIME),
    "ns": _u(Fraction(1, 10**9), TIME),
    "Hz": _u(1, FREQUENCY), "kHz": _u(10**3, FREQUENCY), "MHz": _u(10**6, FREQUENCY),
    "GHz": _u(10**9, FREQUENCY),
    "fJ": _u(Fraction(1, 1000), ENERGY), "pJ": _u(1, ENERGY), "nJ": _u(10**3, ENERGY),
    "uJ": _u(10**6, ENERGY), "mJ": _u(10**9, ENERGY), "J": _u(10**12, ENERGY),
    # Counted things: `0.018 pJ/op` reads better than `0.018 pJ` for a per-MAC energy.
    "op": _u(1, COUNT), "ops": _u(1, COUNT), "MAC": _u(1, COUNT), "MACs": _u(1, COUNT),
    "hop": _u(1, COUNT),
}


class UnitError(Exception):
    """An unknown unit or a dimension mismatch; ``on_unit`` says whether to point at the unit."""

    def __init__(self, message: str, on_unit: bool) -> None:
        super().__init__(message)
        self.message = message
        self.on_unit = on_unit


def unit_def(num: str, den: str | None) -> UnitDef:
    """The factor and dimension of ``num`` or ``num/den`` (UnitError for an unknown name)."""
    top = _lookup(num)
    if den is None:
        return top
    bottom = _lookup(den)
    dim = (top.dim[0] - bottom.dim[0], top.dim[1] - bottom.dim[1], top.dim[2] - bottom.dim[2])
    return UnitDef(top.factor / bottom.factor, dim)


def _lookup(name: str) -> UnitDef:
    if name in UNITS:
        return UNITS[name]
    # Case slips (Mb for MB) are the usual mistake; difflib alone misses short names.
    same_letters = [unit for unit in UNITS if unit.lower() == name.lower()]
    hint = f"; did you mean '{same_letters[0]}'?" if same_letters else did_you_mean(name, UNITS)
    raise UnitError(f"unknown unit '{name}'{hint}", on_unit=True)


def convert(value: int | float, unit: UnitDef | None, want: Dim, field: str, shown: str) -> Fraction:
    """``value unit`` in base units of ``want``; UnitError names both dimensions on a mismatch."""
    got = COUNT if unit is None else unit.dim
    if got != want:
        return _mismatch(got, want, field, shown, unit is not None)
    if isinstance(value, float) and not math.isfinite(value):
        raise UnitError(f"{field} must be a finite number, got {value}", on_unit=False)
    exact = Fraction(repr(value)) if isinstance(value, float) else Fraction(value)
    return exact * (unit.factor if unit is not None else 1)


def _mismatch(got: Dim, want: Dim, field: str, shown: str, has_unit: bool) -> Fraction:
    wanted = DIM_NAMES.get(want, "another dimension")
    example = DIM_EXAMPLES.get(want, "")
    if not has_unit:
        raise UnitError(f"{field} needs a unit: it is {wanted}, e.g. `{field} {example};`", on_unit=False)
    got_name = DIM_NAMES.get(got, "an unusual combination of units")
    hint = f", e.g. `{example}`" if example else ""
    raise UnitError(f"{field} wants {wanted}{hint}, but `{shown}` is {got_name}", on_unit=True)
