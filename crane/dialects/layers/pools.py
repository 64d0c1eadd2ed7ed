"""Pooling kinds: ``max_pool2d``, ``avg_pool2d``, ``global_avg_pool``."""

from __future__ import annotations

from crane.dialects.layers.costs import kernel_volume, zero
from crane.dialects.layers.definition import (
    DERIVED,
    REQUIRED,
    LayerKind,
    Lowering,
    Onnx,
    ParamType,
    Spatial,
    Tiling,
    Work,
    param,
)
from crane.dialects.layers.rules import (
    Attrs,
    Resolved,
    ShapeRule,
    check_rank,
    no_weights,
    pair,
    resolve_padding,
    window_out,
)
from crane.dialects.layers.values import Shape, numel


def pool2d(kind: str) -> ShapeRule:
    """The shape rule of a windowed pool (stride defaults to the kernel)."""

    def rule(ins: tuple[Shape, ...], attrs: Attrs) -> Resolved:
        (x,) = ins
        check_rank(kind, x, 4, "NCHW")
        n, c, h, w = x
        kernel = pair(attrs, "kernel")
        stride = pair(attrs, "stride") if "stride" in attrs else kernel
        pad = resolve_padding(attrs["padding"], (h, w), kernel, stride, (1, 1))
        ceil_mode = bool(attrs["ceil_mode"])
        oh = window_out(kind, "height", h, kernel[0], stride[0], 1, pad[:2], ceil_mode)
        ow = window_out(kind, "width", w, kernel[1], stride[1], 1, pad[2:], ceil_mode)
        return (n, c, oh, ow), {**attrs, "stride": stride, "padding": pad}

    return rule


def global_avg_pool(ins: tuple[Shape, ...], attrs: Attrs) -> Resolved:
    (x,) = ins
    check_rank("global_avg_pool", x, 4, "NCHW")
    return (x[0], x[1], 1, 1), dict(attrs)


def pool_flops(ins: tuple[Shape, ...], out: Shape, attrs: Attrs) -> int:
    return numel(out) * kernel_volume(attrs)


def global_pool_flops(ins: tuple[Shape, ...], out: Shape, attrs: Attrs) -> int:
    return numel(ins[0])


_POOL_PARAMS = (
    param("kernel", ParamType.PAIR, REQUIRED, "window size (kh, kw)"),
    param("stride", ParamType.PAIR, DERIVED, "window step; defaults to the kernel"),
    param("padding", ParamType.PADDING, 0, "explicit, or same/valid; resolved to (top, bottom, left, right)"),
    param("ceil_mode", ParamType.BOOL, False, "round the output size up (PyTorch ceil_mode)"),
)

KINDS = (
    LayerKind("max_pool2d", "2-d max pooling", ("x",), _POOL_PARAMS, pool2d("max_pool2d"),
              no_weights, zero, pool_flops, lowering=Lowering.POOL,
              tiling=Tiling.window(Spatial.MAX_POOL), work=Work.POOL,
              onnx=Onnx.converted("MaxPool", "GlobalMaxPool")),
    LayerKind("avg_pool2d", "2-d average pooling", ("x",), _POOL_PARAMS, pool2d("avg_pool2d"),
              no_weights, zero, pool_flops, lowering=Lowering.POOL,
              tiling=Tiling.window(Spatial.AVG_POOL), work=Work.POOL,
              onnx=Onnx.converted("AveragePool")),
    LayerKind("global_avg_pool", "mean over H and W, giving (N, C, 1, 1)", ("x",), (),
              global_avg_pool, no_weights, zero, global_pool_flops,
              lowering=Lowering.GLOBAL_POOL, tiling=Tiling.ends_chain("it reads the whole plane"),
              work=Work.POOL, onnx=Onnx.converted("GlobalAveragePool", "ReduceMean")),
)
"""The pooling kinds, in the order ``LAYER_KINDS`` lists them."""
