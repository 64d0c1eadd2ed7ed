"""Splitting one layer over the cores a schedule assigns to it: by batch, output channel or space.

Each core gets a :class:`CoreWork`: which batch items, output channels and output pixels it
produces, and which input channels and input region (with border padding) it must read. The
union of the cores' outputs is the layer's output, disjointly. Under a spatial split the
input regions overlap by the halo, as in fused tiling; under a channel split a dense conv
reads every input channel, while a 1:1 op or a pool reads only its own channels.

:func:`forward_on_cores` and :func:`backward_on_cores` run the split with the numpy kernels, so a
mapping can be checked against the untiled layer: output parts are placed, input gradients
add (halos overlap), weight gradients add over batch and space and are concatenated over
output channels.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

import numpy as np

from crane.exec.kernels._types import Array
from crane.tiling.execute import Params, layer_backward, layer_forward
from crane.tiling.layers import Layer, Pad4, Pair, SpatialOp
from crane.tiling.regions import Interval, Rect, op_region, split_axis, split_grid


class SplitDim(StrEnum):
    """The dimension a layer's work is divided along."""

    BATCH = "batch"
    CHANNEL = "channel"
    SPATIAL = "spatial"


@dataclass(frozen=True, slots=True)
class CoreWork:
    """The part of one layer that one core computes."""

    core: int
    batch: Interval
    out_channels: Interval
    output: Rect
    in_channels: Interval
    input: Rect
    padding: Pad4
    """Border padding of the input patch (nonzero only where it meets the tensor edge)."""


def split_layer(layer: Layer, batch: int, in_hw: Pair, cores: int, dim: SplitDim) -> tuple[CoreWork, ...]:
    """Divide ``layer`` over ``cores`` along ``dim``; raises when the dimension is too small."""
    out_hw = layer.window.out_hw(in_hw)
    full_out = Rect.full(out_hw)
    whole = op_region(layer.window, in_hw, full_out)
    all_out = Interval.full(layer.out_channels)
    all_in = Interval.full(layer.in_channels)
    if dim is not SplitDim.CHANNEL and layer.needs_global_statistics:
        raise ValueError("batch norm needs whole-batch, whole-image statistics: split it by channel")
    if dim is SplitDim.BATCH:
        parts = split_axis(batch, cores)
        return tuple(
            CoreWork(k, part, all_out, full_out, all_in, whole.input, whole.padding)
            for k, part in enumerate(parts)
        )
    if dim is SplitDim.CHANNEL:
        dense = layer.kind is SpatialOp.CONV
        return tuple(
            CoreWork(k, Interval.full(batch), part, full_out, all_in if dense else part, whole.input, whole.padding)
            for k, part in enumerate(split_axis(layer.out_channels, cores))
        )
    rows, cols = spatial_grid(out_hw, cores)
    works = []
    for k, tile in enumerate(split_grid(out_hw[0], out_hw[1], rows, cols)):
        step = op_region(layer.window, in_hw, tile)
        works.append(CoreWork(k, Interval.full(batch), all_out, tile, all_in, step.input, step.padding))
    return tuple(works)


def spatial_grid(out_hw: Pair, cores: int) -> Pair:
    """The rows x cols factorisation of ``cores`` whose tiles are closest to square."""
    options = [(r, cores // r) for r in range(1, cores + 1) if cores % r == 0]
    fitting = [(r, c) for r, c in options if r <= out_hw[0] and c <= out_hw[1]]
    if not fitting:
        raise ValueError(f"cannot split an output of shape {out_hw} over {cores} cores")
    return min(fitting, key=lambda rc: abs(np.log((out_hw[0] / rc[0]) / (out_hw[1] / rc[1]))))


def forward_on_cores(layer: Layer, params: Params, x: Array, works: Sequence[CoreWork]) -> Array:
    """Run every core's part and assemble the layer output."""
    out_hw = layer.window.out_hw((x.shape[2], x.shape[3]))
    out = np.zeros((x.shape[0], layer.out_channels, *out_hw), dtype=x.dtype)
    for work in works:
        y, _ = layer_forward(layer, _core_params(layer, params, work), _core_input(x, work), work.padding)
        out[_out_index(work)] = y
    return out


def backward_on_cores(
    layer: Layer, params: Params, x: Array, grad_y: Array, works: Sequence[CoreWork]
) -> tuple[Array, Params]:
    """Every core's backward from its output-gradient part; returns (dX, parameter gradients)."""
    grad_x = np.zeros_like(x)
    totals = [np.zeros_like(p) for p in params]
    for work in works:
        core_params = _core_params(layer, params, work)
        _, cache = layer_forward(layer, core_params, _core_input(x, work), work.padding)
        gx, grads = layer_backward(layer, core_params, cache, grad_y[_out_index(work)], work.padding)
        rows, cols = work.input.slices()
        grad_x[work.batch.as_slice(), work.in_channels.as_slice(), rows, cols] += gx
        # A channel split owns a slice of every parameter; batch and space own partial sums.
        for total, g in zip(totals, grads, strict=True):
            total[_param_index(layer, work, total)] += g
    return grad_x, tuple(totals)


def _core_input(x: Array, work: CoreWork) -> Array:
    rows, cols = work.input.slices()
    return x[work.batch.as_slice(), work.in_channels.as_slice(), rows, cols]


def _out_index(work: CoreWork) -> tuple[slice, slice, slice, slice]:
    rows, cols = work.output.slices()
    return work.batch.as_slice(), work.out_channels.as_slice(), rows, cols


def _core_params(layer: Layer, params: Params, work: CoreWork) -> Params:
    if work.out_channels.size == layer.out_channels:
        return params
    return tuple(p[work.out_channels.as_slice()] for p in params)


def _param_index(layer: Layer, work: CoreWork, tensor: Array) -> tuple[slice, ...]:
    if work.out_channels.size == layer.out_channels:
        return (slice(None),) * tensor.ndim
    return (work.out_channels.as_slice(),)
