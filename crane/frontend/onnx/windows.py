"""Window attributes of ``Conv`` and the pools: ONNX's ``strides``, ``pads``, ``auto_pad``
and ``dilations`` in the ``graph`` dialect's form.

ONNX pads are ``[top, left, bottom, right]`` (all begins, then all ends); ``graph`` ops
take ``(top, bottom, left, right)``. ``SAME_UPPER`` puts an odd extra pad at the end,
``SAME_LOWER`` at the beginning.
"""

from __future__ import annotations

from crane.frontend.onnx.reader import Node


def ints(node: Node, name: str, default: tuple[int, ...]) -> tuple[int, ...]:
    """An integer-list attribute."""
    value = node.attrs.get(name)
    return default if value is None else tuple(int(v) for v in value)


def pair(node: Node, name: str, default: int) -> tuple[int, int]:
    """A per-spatial-axis attribute of a 2-d window (two values)."""
    values = ints(node, name, (default, default))
    if len(values) != 2:
        raise node.error(f"{name}={list(values)} must have 2 values (only 2-d windows are supported)")
    return values[0], values[1]


def padding(node: Node, size: tuple[int, int], kernel: tuple[int, int], stride: tuple[int, int],
            dilation: tuple[int, int]) -> tuple[int, int, int, int]:
    """Explicit ``(top, bottom, left, right)`` padding of a window op."""
    mode = str(node.attrs.get("auto_pad", "NOTSET"))
    if mode == "VALID":
        return (0, 0, 0, 0)
    if mode in ("SAME_UPPER", "SAME_LOWER"):
        rows = _same(size[0], kernel[0], stride[0], dilation[0], mode == "SAME_UPPER")
        cols = _same(size[1], kernel[1], stride[1], dilation[1], mode == "SAME_UPPER")
        return (*rows, *cols)
    if mode != "NOTSET":
        raise node.error(f"unknown auto_pad '{mode}'")
    pads = ints(node, "pads", (0, 0, 0, 0))
    if len(pads) != 4:
        raise node.error(f"pads={list(pads)} must have 4 values (only 2-d windows are supported)")
    if min(pads) < 0:
        raise node.error(f"pads={list(pads)} must not be negative")
    return (pads[0], pads[2], pads[1], pads[3])


def _same(size: int, kernel: int, stride: int, dilation: int, upper: bool) -> tuple[int, int]:
    out = -(-size // stride)
    total = max((out - 1) * stride + (kernel - 1) * dilation + 1 - size, 0)
    small, large = total // 2, total - total // 2
    return (small, large) if upper else (large, small)


def require_4d(node: Node, shape: tuple[int, ...]) -> None:
    """Window ops import for NCHW inputs only."""
    if len(shape) != 4:
        raise node.error(f"expects a 4-d NCHW input, got shape {list(shape)} (only 2-d windows "
                         f"are supported)")
