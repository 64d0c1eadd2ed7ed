"""Attributes: immutable, hashable compile-time values attached to operations.

Types are attributes too (see :mod:`crane.ir.types`). Every attribute knows its textual
form through ``__str__``; :mod:`crane.ir.parser` reads the same text back.

| class | text |
|---|---|
| ``IntAttr`` | ``3`` (i64) or ``3 : i32`` |
| ``FloatAttr`` | ``0.5``, ``1e-05``, ``inf``, ``nan`` |
| ``BoolAttr`` | ``true`` / ``false`` |
| ``StringAttr`` | ``"text"`` |
| ``UnitAttr`` | ``unit`` (a bare key in a dict) |
| ``ArrayAttr`` | ``[a, b]`` |
| ``DenseIntsAttr`` | ``array<i64: 1, 2, 3>`` (shapes, strides, paddings) |
| ``DictAttr`` | ``{k = v, flag}`` |
| ``EnumAttr`` | ``#graph.pool<max>`` |
| ``SymbolRefAttr`` | ``@name`` or ``@outer::@inner`` |
| ``TypeAttr`` | any type, e.g. ``tensor<4xf32>`` |
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from crane.ir.location import quote

_BARE_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_$.]*\Z")


class Attribute:
    """Base class of attributes and types."""

    __slots__ = ()


def format_key(key: str) -> str:
    """A dictionary key: bare when it is an identifier, quoted otherwise."""
    return key if _BARE_KEY.match(key) else quote(key)


def format_float(value: float) -> str:
    """Shortest text that reads back to exactly the same float."""
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    text = repr(value)
    if "." not in text and "e" not in text:
        text += ".0"
    return text


@dataclass(frozen=True, slots=True)
class IntAttr(Attribute):
    """An integer; ``width`` is the integer type's width (64 by default)."""

    value: int
    width: int = 64

    def __str__(self) -> str:
        return str(self.value) if self.width == 64 else f"{self.value} : i{self.width}"


@dataclass(frozen=True, slots=True)
class FloatAttr(Attribute):
    """A floating-point number (kept as a Python float, i.e. f64 precision)."""

    value: float

    def __str__(self) -> str:
        return format_float(self.value)

    def __eq__(self, other: object) -> bool:
        # nan == nan here, so that parse(print(x)) == x holds for every value.
        if not isinstance(other, FloatAttr):
            return NotImplemented
        same = self.value == other.value or (math.isnan(self.value) and math.isnan(other.value))
        return same and math.copysign(1, self.value) == math.copysign(1, other.value)

    def __hash__(self) -> int:
        return hash(("float", format_float(self.value)))


@dataclass(frozen=True, slots=True)
class BoolAttr(Attribute):
    value: bool

    def __str__(self) -> str:
        return "true" if self.value else "false"


@dataclass(frozen=True, slots=True)
class StringAttr(Attribute):
    value: str

    def __str__(self) -> str:
        return quote(self.value)


@dataclass(frozen=True, slots=True)
class UnitAttr(Attribute):
    """Presence-only flag."""

    def __str__(self) -> str:
        return "unit"


@dataclass(frozen=True, slots=True)
class ArrayAttr(Attribute):
    elements: tuple[Attribute, ...]

    def __str__(self) -> str:
        return "[" + ", ".join(str(e) for e in self.elements) + "]"

    def __iter__(self) -> Iterator[Attribute]:
        return iter(self.elements)

    def __len__(self) -> int:
        return len(self.elements)


@dataclass(frozen=True, slots=True)
class DenseIntsAttr(Attribute):
    """A dense list of integers: shapes, strides, paddings, permutations."""

    values: tuple[int, ...]

    def __str__(self) -> str:
        if not self.values:
            return "array<i64>"
        return "array<i64: " + ", ".join(map(str, self.values)) + ">"

    def __iter__(self) -> Iterator[int]:
        return iter(self.values)

    def __len__(self) -> int:
        return len(self.values)


@dataclass(frozen=True, slots=True)
class DictAttr(Attribute):
    """An ordered dictionary of named attributes (order is kept for exact round trips)."""

    entries: tuple[tuple[str, Attribute], ...]

    @classmethod
    def of(cls, mapping: Mapping[str, Attribute]) -> DictAttr:
        return cls(tuple(mapping.items()))

    def as_dict(self) -> dict[str, Attribute]:
        return dict(self.entries)

    def get(self, key: str) -> Attribute | None:
        for k, v in self.entries:
            if k == key:
                return v
        return None

    def __str__(self) -> str:
        return format_attr_dict(dict(self.entries))


def format_attr_dict(attrs: Mapping[str, Attribute]) -> str:
    """``{k = v, flag}``; an empty mapping prints as ``{}``."""
    parts = [
        format_key(k) if isinstance(v, UnitAttr) else f"{format_key(k)} = {v}"
        for k, v in attrs.items()
    ]
    return "{" + ", ".join(parts) + "}"


@dataclass(frozen=True, slots=True)
class EnumAttr(Attribute):
    """One case of a named enumeration, e.g. ``#graph.pool<max>``."""

    enum: str
    case: str

    def __str__(self) -> str:
        return f"#{self.enum}<{self.case}>"


@dataclass(frozen=True, slots=True)
class SymbolRefAttr(Attribute):
    """A reference to a symbol, possibly nested (``@outer::@inner``)."""

    root: str
    nested: tuple[str, ...] = ()

    def __str__(self) -> str:
        text = "@" + _symbol_text(self.root)
        return text + "".join("::@" + _symbol_text(n) for n in self.nested)


def _symbol_text(name: str) -> str:
    return name if _BARE_KEY.match(name) else quote(name)


@dataclass(frozen=True, slots=True)
class TypeAttr(Attribute):
    """A type used as an attribute value (e.g. a function signature)."""

    type: Attribute

    def __str__(self) -> str:
        return str(self.type)
