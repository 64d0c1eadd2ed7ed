"""Types: scalars, ranked tensors, tile-level buffers and function signatures.

| class | text |
|---|---|
| ``ScalarType`` | ``f32``, ``bf16``, ``f16``, ``f64``, ``i1`` ... ``i64``, ``index`` |
| ``TensorType`` | ``tensor<1x64x56x56xf32>``, ``tensor<f32>`` (rank 0), ``?`` for unknown dims |
| ``BufferType`` | ``buffer<64x56xf32, sram>``: a region of a memory space at the tile level |
| ``FunctionType`` | ``(tensor<4xf32>, f32) -> tensor<4xf32>`` |
"""

from __future__ import annotations

from dataclasses import dataclass, field

from crane.ir.attributes import Attribute

SCALAR_NAMES = ("i1", "i8", "i16", "i32", "i64", "index", "bf16", "f16", "f32", "f64")
_SCALAR_BYTES = {"i1": 1, "i8": 1, "i16": 2, "i32": 4, "i64": 8, "index": 8,
                 "bf16": 2, "f16": 2, "f32": 4, "f64": 8}
DYNAMIC = -1
"""A dimension whose size is not known statically (printed ``?``)."""


class Type(Attribute):
    """Base class of types."""

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class ScalarType(Type):
    """An integer, float or index scalar."""

    name: str

    def __post_init__(self) -> None:
        if self.name not in _SCALAR_BYTES:
            raise ValueError(f"unknown scalar type '{self.name}'")

    def __str__(self) -> str:
        return self.name

    @property
    def byte_width(self) -> int:
        return _SCALAR_BYTES[self.name]

    @property
    def is_float(self) -> bool:
        return self.name.startswith(("f", "bf"))


def _dims_text(shape: tuple[int, ...]) -> str:
    return "".join(("?" if d == DYNAMIC else str(d)) + "x" for d in shape)


@dataclass(frozen=True, slots=True)
class TensorType(Type):
    """A ranked tensor value with a static (or ``?``) shape and an element type."""

    shape: tuple[int, ...]
    element: ScalarType
    _text: str = field(default="", compare=False, hash=False, repr=False)

    def __str__(self) -> str:
        if not self._text:
            object.__setattr__(self, "_text", f"tensor<{_dims_text(self.shape)}{self.element}>")
        return self._text

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def num_elements(self) -> int:
        count = 1
        for d in self.shape:
            count *= d
        return count

    @property
    def byte_size(self) -> int:
        return self.num_elements * self.element.byte_width

    def with_shape(self, shape: tuple[int, ...]) -> TensorType:
        return TensorType(shape, self.element)


MEMORY_SPACES = ("sram", "dram")


@dataclass(frozen=True, slots=True)
class BufferType(Type):
    """A buffer in a memory space (``sram`` of a tile, or ``dram``) at the tile level."""

    shape: tuple[int, ...]
    element: ScalarType
    space: str = "sram"
    _text: str = field(default="", compare=False, hash=False, repr=False)

    def __str__(self) -> str:
        if not self._text:
            object.__setattr__(self, "_text", f"buffer<{_dims_text(self.shape)}{self.element}, {self.space}>")
        return self._text

    @property
    def byte_size(self) -> int:
        count = self.element.byte_width
        for d in self.shape:
            count *= d
        return count


@dataclass(frozen=True, slots=True)
class FunctionType(Type):
    """A signature: input types to result types."""

    inputs: tuple[Type, ...]
    results: tuple[Type, ...]

    def __str__(self) -> str:
        args = "(" + ", ".join(map(str, self.inputs)) + ")"
        if len(self.results) == 1 and not isinstance(self.results[0], FunctionType):
            return f"{args} -> {self.results[0]}"
        return f"{args} -> (" + ", ".join(map(str, self.results)) + ")"


f32 = ScalarType("f32")
f64 = ScalarType("f64")
f16 = ScalarType("f16")
bf16 = ScalarType("bf16")
i1 = ScalarType("i1")
i8 = ScalarType("i8")
i32 = ScalarType("i32")
i64 = ScalarType("i64")
index = ScalarType("index")


def tensor(*shape: int, element: ScalarType = f32) -> TensorType:
    """``tensor(1, 3, 224, 224)`` reads like the type it builds."""
    return TensorType(tuple(shape), element)
