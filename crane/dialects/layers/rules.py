"""What the shape and weight rules of the layer kinds share.

Each kind's own rules live beside its definition (``activations``, ``dense``, ``pools``,
``norms``, ``data``, ``losses``); the helpers they share live here. A shape rule takes the input shapes and the coerced attributes and returns the output
shape with the attributes resolved (``padding="same"`` becomes explicit
``(top, bottom, left, right)``, a depthwise conv gets its ``groups``). It raises
:class:`ShapeError` with a message that names the numbers involved. Layouts: NCHW
activations, OIHW conv weights, ``(in, out)`` linear weights.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from crane.dialects.layers.values import AttrValue, Shape

Attrs = Mapping[str, AttrValue]
Resolved = tuple[Shape, dict[str, AttrValue]]
Weights = tuple[tuple[str, Shape], ...]
ShapeRule = Callable[[tuple[Shape, ...], Attrs], Resolved]
WeightRule = Callable[[tuple[Shape, ...], Attrs], Weights]


class ShapeError(Exception):
    """A shape or attribute problem; ``param`` names the attribute to point at, if any."""

    def __init__(self, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.param = param


def fmt(shape: Shape) -> str:
    """``[1, 3, 224, 224]``: shapes in messages look like they do in `.crn` files."""
    return "[" + ", ".join(str(d) for d in shape) + "]"


def get_int(attrs: Attrs, key: str) -> int:
    """An integer attribute (the table's coercion guarantees the type)."""
    value = attrs[key]
    assert isinstance(value, int)
    return value


def get_float(attrs: Attrs, key: str) -> float:
    """A float attribute (the table's coercion guarantees the type)."""
    value = attrs[key]
    assert isinstance(value, int | float)
    return float(value)


def pair(attrs: Attrs, key: str) -> tuple[int, int]:
    value = attrs[key]
    assert isinstance(value, tuple)
    return value[0], value[1]


def check_rank(kind: str, shape: Shape, rank: int, layout: str) -> None:
    if len(shape) != rank:
        raise ShapeError(f"{kind} expects a {rank}-d {layout} input, got rank {len(shape)} {fmt(shape)}")


def check_min_rank(kind: str, shape: Shape, rank: int) -> None:
    if len(shape) < rank:
        raise ShapeError(f"{kind} expects an input of rank >= {rank}, got rank {len(shape)} {fmt(shape)}")


def check_axis(kind: str, shape: Shape, axis: int, param: str = "axis") -> int:
    if not -len(shape) <= axis < len(shape):
        raise ShapeError(f"{kind} {param}={axis} is out of range for rank {len(shape)} {fmt(shape)}", param)
    return axis % len(shape)


def resolve_padding(
    padding: AttrValue, size: tuple[int, int], kernel: tuple[int, int],
    stride: tuple[int, int], dilation: tuple[int, int],
) -> tuple[int, int, int, int]:
    """Explicit (top, bottom, left, right) padding; ``same`` is TF-style (extra at the end)."""
    if padding == "valid":
        return (0, 0, 0, 0)
    if padding == "same":
        top, bottom = _same(size[0], kernel[0], stride[0], dilation[0])
        left, right = _same(size[1], kernel[1], stride[1], dilation[1])
        return (top, bottom, left, right)
    if isinstance(padding, int) and not isinstance(padding, bool):
        return (padding, padding, padding, padding)
    assert isinstance(padding, tuple)
    if len(padding) == 2:
        return (padding[0], padding[0], padding[1], padding[1])
    return (padding[0], padding[1], padding[2], padding[3])


def _same(size: int, kernel: int, stride: int, dilation: int) -> tuple[int, int]:
    out = -(-size // stride)
    total = max((out - 1) * stride + (kernel - 1) * dilation + 1 - size, 0)
    return total // 2, total - total // 2


def window_out(
    kind: str, axis: str, size: int, kernel: int, stride: int, dilation: int,
    pads: tuple[int, int], ceil_mode: bool = False,
) -> int:
    span = size + pads[0] + pads[1] - dilation * (kernel - 1) - 1
    out = (-(-span // stride) if ceil_mode else span // stride) + 1
    if ceil_mode and (out - 1) * stride >= size + pads[0]:
        out -= 1  # PyTorch's rule: the last window must start inside the input or top padding
    if out > 0 and span >= 0:
        return out
    raise ShapeError(
        f"{kind} output {axis} would be {min(out, 0)}: input {axis} {size} with padding "
        f"{pads[0]}+{pads[1]} is smaller than the kernel extent {dilation * (kernel - 1) + 1} "
        f"(kernel {kernel}, dilation {dilation}, stride {stride}); use a smaller kernel or "
        f"more padding",
        "kernel",
    )


def broadcast(kind: str, a: Shape, b: Shape) -> Shape:
    """Numpy broadcasting of two shapes, with a message naming the clashing dimension."""
    rank = max(len(a), len(b))
    pa, pb = (1,) * (rank - len(a)) + a, (1,) * (rank - len(b)) + b
    out = []
    for axis, (da, db) in enumerate(zip(pa, pb, strict=True)):
        if da != db and 1 not in (da, db):
            what = " (channel mismatch)" if axis == 1 and rank == 4 else ""
            raise ShapeError(
                f"{kind} cannot broadcast {fmt(a)} with {fmt(b)}: dimension {axis} is {da} vs {db}{what}"
            )
        out.append(max(da, db))
    return tuple(out)


def elementwise(kind: str) -> ShapeRule:
    """Shape rule of a binary elementwise op with numpy broadcasting."""

    def rule(ins: tuple[Shape, ...], attrs: Attrs) -> Resolved:
        return broadcast(kind, ins[0], ins[1]), dict(attrs)

    return rule


def same_shape(ins: tuple[Shape, ...], attrs: Attrs) -> Resolved:
    return ins[0], dict(attrs)


def no_weights(ins: tuple[Shape, ...], attrs: Attrs) -> Weights:
    return ()
