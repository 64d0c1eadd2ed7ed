"""Layer descriptions for the spatial chains that segmented fused-tiled (SFT) execution handles.

A layer maps one NCHW activation to the next. Only what tiling, execution and the memory
model need is recorded: the kind, the sliding-window geometry (identity for 1:1 ops), the
channel counts and whether a conv has a bias. The VGG-16 and Darknet-19 trunks of the SFT
artifact (``../shared/reference/papers.md`` §2.4) are built here with a channel divisor so
that tests can run the same topologies with few channels.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

Pair = tuple[int, int]
Pad4 = tuple[int, int, int, int]
"""Explicit per-edge padding (top, bottom, left, right), as the numpy kernels take it."""


class SpatialOp(StrEnum):
    """What a layer of a spatial chain computes in tiling's own model (not a graph layer
    kind: ``crane.tiling.chains`` models every graph activation as ``RELU``); window ops
    read neighbourhoods, the rest are 1:1 per pixel."""

    CONV = "conv"
    MAX_POOL = "max_pool"
    AVG_POOL = "avg_pool"
    RELU = "relu"
    BATCH_NORM = "batch_norm"
    """Training-mode batch normalisation: per-channel statistics over the whole image."""


WINDOW_KINDS = frozenset({SpatialOp.CONV, SpatialOp.MAX_POOL, SpatialOp.AVG_POOL})


@dataclass(frozen=True, slots=True)
class Window:
    """Sliding-window geometry of one spatial op; the identity window describes 1:1 ops."""

    kernel: Pair = (1, 1)
    stride: Pair = (1, 1)
    dilation: Pair = (1, 1)
    padding: Pad4 = (0, 0, 0, 0)

    @classmethod
    def identity(cls) -> Window:
        """The window of an elementwise or normalisation op."""
        return cls()

    def span(self, axis: int) -> int:
        """Extent in input pixels of one window along ``axis`` (0 = rows, 1 = cols)."""
        return self.dilation[axis] * (self.kernel[axis] - 1) + 1

    def pads(self, axis: int) -> Pair:
        """(low, high) padding along ``axis``."""
        return (self.padding[0], self.padding[1]) if axis == 0 else (self.padding[2], self.padding[3])

    def out_size(self, size: int, axis: int) -> int:
        """Output extent along ``axis`` for an input extent ``size`` (floor mode)."""
        lo, hi = self.pads(axis)
        out = (size + lo + hi - self.span(axis)) // self.stride[axis] + 1
        if out < 1:
            raise ValueError(f"window {self} does not fit an input extent of {size}")
        return out

    def out_hw(self, hw: Pair) -> Pair:
        """Output (H, W) for an input (H, W)."""
        return self.out_size(hw[0], 0), self.out_size(hw[1], 1)


@dataclass(frozen=True, slots=True)
class Layer:
    """One op of a spatial chain (NCHW in, NCHW out)."""

    kind: SpatialOp
    in_channels: int
    out_channels: int
    window: Window
    bias: bool = False

    @classmethod
    def conv(
        cls,
        in_channels: int,
        out_channels: int,
        kernel: int | Pair,
        *,
        stride: int | Pair = 1,
        dilation: int | Pair = 1,
        padding: int | Pad4 | None = None,
        bias: bool = False,
    ) -> Layer:
        """A dense conv; ``padding=None`` means "same" padding for stride 1 (odd spans)."""
        k, s, d = _pair(kernel), _pair(stride), _pair(dilation)
        pad = _same_padding(k, d) if padding is None else _pad4(padding)
        window = Window(kernel=k, stride=s, dilation=d, padding=pad)
        return cls(SpatialOp.CONV, in_channels, out_channels, window, bias)

    @classmethod
    def max_pool(
        cls, channels: int, kernel: int | Pair = 2, *, stride: int | Pair | None = None,
        padding: int | Pad4 = 0,
    ) -> Layer:
        """Max pooling; the stride defaults to the kernel (PyTorch's convention)."""
        k = _pair(kernel)
        window = Window(kernel=k, stride=k if stride is None else _pair(stride), padding=_pad4(padding))
        return cls(SpatialOp.MAX_POOL, channels, channels, window)

    @classmethod
    def avg_pool(
        cls, channels: int, kernel: int | Pair = 2, *, stride: int | Pair | None = None,
        padding: int | Pad4 = 0,
    ) -> Layer:
        """Average pooling (divisor counts only real pixels, the kernels' default)."""
        k = _pair(kernel)
        window = Window(kernel=k, stride=k if stride is None else _pair(stride), padding=_pad4(padding))
        return cls(SpatialOp.AVG_POOL, channels, channels, window)

    @classmethod
    def relu(cls, channels: int) -> Layer:
        """Elementwise ReLU."""
        return cls(SpatialOp.RELU, channels, channels, Window.identity())

    @classmethod
    def batch_norm(cls, channels: int) -> Layer:
        """Training-mode batch normalisation with learnable scale and shift."""
        return cls(SpatialOp.BATCH_NORM, channels, channels, Window.identity())

    @property
    def is_window(self) -> bool:
        """Whether an output pixel reads a neighbourhood (conv, pools) rather than one pixel."""
        return self.kind in WINDOW_KINDS

    @property
    def needs_global_statistics(self) -> bool:
        """True when one output pixel depends on the whole image (so it cannot be tiled)."""
        return self.kind is SpatialOp.BATCH_NORM

    def param_shapes(self) -> tuple[tuple[int, ...], ...]:
        """Shapes of the learnable tensors: conv (weight OIHW[, bias]); BN (gamma, beta)."""
        if self.kind is SpatialOp.CONV:
            weight = (self.out_channels, self.in_channels, *self.window.kernel)
            return (weight, (self.out_channels,)) if self.bias else (weight,)
        if self.kind is SpatialOp.BATCH_NORM:
            return ((self.out_channels,), (self.out_channels,))
        return ()

    def param_count(self) -> int:
        """Number of learnable scalars."""
        total = 0
        for shape in self.param_shapes():
            count = 1
            for extent in shape:
                count *= extent
            total += count
        return total

    def flops_per_output_pixel(self) -> int:
        """Forward floating-point operations per output pixel (all channels, batch 1)."""
        kh, kw = self.window.kernel
        if self.kind is SpatialOp.CONV:
            return 2 * self.in_channels * kh * kw * self.out_channels
        if self.is_window:
            return kh * kw * self.out_channels
        # ReLU is one op per element; BN is about four (subtract, scale, multiply, add).
        return self.out_channels if self.kind is SpatialOp.RELU else 4 * self.out_channels


def chain_hw(layers: Sequence[Layer], hw: Pair) -> list[Pair]:
    """Spatial shape of every activation of a chain: the input, then each layer's output."""
    shapes = [hw]
    for layer in layers:
        shapes.append(layer.window.out_hw(shapes[-1]))
    return shapes


def vgg16_trunk(divisor: int = 1, in_channels: int = 3) -> tuple[Layer, ...]:
    """The SFT artifact's VGG-16 trunk: 13 3x3 convs (no bias) + ReLU, 2x2/2 max-pool per group.

    ``divisor`` scales every width down (64 -> 64 // divisor) for small-scale tests.
    """
    groups = ((64, 64), (128, 128), (256, 256, 256), (512, 512, 512), (512, 512, 512))
    layers: list[Layer] = []
    channels = in_channels
    for group in groups:
        for width in group:
            out = max(1, width // divisor)
            layers += [Layer.conv(channels, out, 3), Layer.relu(out)]
            channels = out
        layers.append(Layer.max_pool(channels, 2))
    return tuple(layers)


def darknet19_trunk(divisor: int = 1, in_channels: int = 3) -> tuple[Layer, ...]:
    """The SFT artifact's Darknet-19 trunk: 19 convs (3x3 and 1x1, no bias, no ReLU) and 5 pools.

    The artifact's tiled version has no activations; we follow it. ``divisor`` scales widths.
    """
    plan: tuple[int | str, ...] = (
        32, "M", 64, "M", 128, -64, 128, "M", 256, -128, 256, "M",
        512, -256, 512, -256, 512, "M", 1024, -512, 1024, -512, 1024, -1000,
    )
    layers: list[Layer] = []
    channels = in_channels
    for item in plan:
        if isinstance(item, str):
            layers.append(Layer.max_pool(channels, 2))
            continue
        # Negative widths mark the 1x1 convs of the layer list.
        kernel = 1 if item < 0 else 3
        out = max(1, abs(item) // divisor)
        layers.append(Layer.conv(channels, out, kernel))
        channels = out
    return tuple(layers)


def _pair(value: int | Pair) -> Pair:
    return (value, value) if isinstance(value, int) else (int(value[0]), int(value[1]))


def _pad4(value: int | Pad4) -> Pad4:
    if isinstance(value, int):
        return (value, value, value, value)
    if len(value) != 4 or min(value) < 0:
        raise ValueError(f"padding must be four non-negative ints (top, bottom, left, right), got {value}")
    return (int(value[0]), int(value[1]), int(value[2]), int(value[3]))


def _same_padding(kernel: Pair, dilation: Pair) -> Pad4:
    rows = dilation[0] * (kernel[0] - 1)
    cols = dilation[1] * (kernel[1] - 1)
    # Even spans cannot be centred; the extra pixel goes to the high side (TensorFlow's rule).
    return (rows // 2, rows - rows // 2, cols // 2, cols - cols // 2)
