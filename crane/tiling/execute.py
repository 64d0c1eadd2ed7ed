"""Tiled forward and backward execution of layer chains with the numpy reference kernels.

Forward, per tile: slice the segment-input patch (tile plus halo), run the whole chain on it
with the per-op border padding from :mod:`crane.tiling.regions`, write the output patch.

Backward, per tile: recompute that tile's forward from the kept segment input, then
back-propagate the tile's output-gradient patch through the local chain. Every tile owns a
disjoint part of the segment output, hence a disjoint share ``L_t = <g_t, y_t>`` of the
loss; the local backward yields exactly ``dL_t/dx`` and ``dL_t/dW``, because every
recomputed activation, halo included, equals the untiled value. So input-gradient patches
add where halos overlap and weight gradients are the plain sum over tiles: the
intermediate deltas are partial (only this tile's outputs contribute), which is what keeps
the overlapping halo pixels from being double counted. (The SFT artifact instead propagates
*complete* deltas and crops weight gradients per layer to disjoint regions; for
output-partitioned recomputation that crop would drop real contributions.)

Batch normalisation in training mode needs statistics over the whole image. We cut
segments at BN rather than running a two-pass statistics scheme: a segment holding BN must
be a single tile, and :class:`crane.tiling.plan.Planner` offers only the 1x1 grid for such
segments, so the search isolates BN in a short untiled segment when memory is tight. A
two-pass scheme would need every tile's forward twice more (statistics, then normalise)
and a cross-tile reduction in backward too; the cut costs one untiled 1:1 op whose input
is a segment boundary anyway.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from crane.exec.kernels import activation, conv, norm, pool
from crane.exec.kernels._types import Array
from crane.tiling.layers import Layer, Pad4, SpatialOp
from crane.tiling.regions import OpRegion, Rect, chain_regions, live_start, split_grid

Params = tuple[Array, ...]
"""Learnable tensors of one layer, in :meth:`Layer.param_shapes` order."""


@dataclass(frozen=True, slots=True)
class Cache:
    """What one op's backward needs: its input and, for BN, the batch statistics."""

    x: Array
    stats: tuple[Array, ...] = ()


@dataclass(frozen=True, slots=True)
class Segment:
    """Layers ``[start, stop)`` of a chain run as one checkpointed unit on a tile grid."""

    start: int
    stop: int
    rows: int = 1
    cols: int = 1

    def __post_init__(self) -> None:
        if not 0 <= self.start < self.stop or self.rows < 1 or self.cols < 1:
            raise ValueError(f"invalid segment {self}")

    @property
    def tiles(self) -> int:
        """Number of tiles of the grid."""
        return self.rows * self.cols


def init_params(layers: Sequence[Layer], seed: int = 0, dtype: type = np.float32) -> list[Params]:
    """He-scaled random weights (BN: gamma near 1, beta near 0), for tests and examples."""
    rng = np.random.default_rng(seed)
    params: list[Params] = []
    for layer in layers:
        fan_in = max(1, layer.in_channels * layer.window.kernel[0] * layer.window.kernel[1])
        scale = np.sqrt(2.0 / fan_in)
        shapes = layer.param_shapes()
        tensors = tuple(_random_param(rng, s, layer, i, scale, dtype) for i, s in enumerate(shapes))
        params.append(tensors)
    return params


def layer_forward(layer: Layer, params: Params, x: Array, padding: Pad4) -> tuple[Array, Cache]:
    """One op on a (patch of an) input with explicit padding; returns output and backward cache."""
    w = layer.window
    if layer.kind is SpatialOp.CONV:
        bias = params[1] if layer.bias else None
        y = conv.conv2d_forward(x, params[0], bias, stride=w.stride, padding=padding, dilation=w.dilation)
        return y, Cache(x)
    if layer.kind is SpatialOp.MAX_POOL:
        return pool.max_pool2d_forward(x, kernel=w.kernel, stride=w.stride, padding=padding), Cache(x)
    if layer.kind is SpatialOp.AVG_POOL:
        y = pool.avg_pool2d_forward(x, kernel=w.kernel, stride=w.stride, padding=padding)
        # The kernel's divisor array is float64; keep the activation's precision.
        return y.astype(x.dtype, copy=False), Cache(x)
    if layer.kind is SpatialOp.RELU:
        return activation.relu_forward(x), Cache(x)
    y, mean, inv_std = norm.batchnorm_forward_train(x, params[0], params[1])
    return y, Cache(x, (mean, inv_std))


def layer_backward(
    layer: Layer, params: Params, cache: Cache, grad_y: Array, padding: Pad4
) -> tuple[Array, Params]:
    """Gradients wrt the op's input patch and its parameters, given the output gradient."""
    w, x = layer.window, cache.x
    shape = (x.shape[0], x.shape[1], x.shape[2], x.shape[3])
    if layer.kind is SpatialOp.CONV:
        geometry = {"stride": w.stride, "padding": padding, "dilation": w.dilation}
        grad_x = conv.conv2d_backward_input(grad_y, params[0], shape, **geometry)  # type: ignore[arg-type]
        grad_w = conv.conv2d_backward_weight(grad_y, x, params[0].shape, **geometry)  # type: ignore[arg-type]
        grads = (grad_w, conv.conv2d_backward_bias(grad_y)) if layer.bias else (grad_w,)
        return grad_x, grads
    if layer.kind is SpatialOp.MAX_POOL:
        return pool.max_pool2d_backward(grad_y, x, kernel=w.kernel, stride=w.stride, padding=padding), ()
    if layer.kind is SpatialOp.AVG_POOL:
        grad_x = pool.avg_pool2d_backward(grad_y, shape, kernel=w.kernel, stride=w.stride, padding=padding)
        return grad_x.astype(grad_y.dtype, copy=False), ()
    if layer.kind is SpatialOp.RELU:
        return activation.relu_backward(grad_y, x), ()
    grad_x, grad_gamma, grad_beta = norm.batchnorm_backward_train(grad_y, x, params[0], *cache.stats)
    return grad_x, (grad_gamma, grad_beta)


def chain_forward(
    layers: Sequence[Layer], params: Sequence[Params], x: Array, paddings: Sequence[Pad4]
) -> tuple[Array, list[Cache]]:
    """Run a chain on one patch with the given per-op paddings, keeping every backward cache."""
    caches: list[Cache] = []
    for layer, p, pad in zip(layers, params, paddings, strict=True):
        x, cache = layer_forward(layer, p, x, pad)
        caches.append(cache)
    return x, caches


def chain_backward(
    layers: Sequence[Layer],
    params: Sequence[Params],
    caches: Sequence[Cache],
    grad_y: Array,
    paddings: Sequence[Pad4],
) -> tuple[Array, list[Params]]:
    """Back-propagate through a chain run by :func:`chain_forward`; returns (dX, per-layer dW)."""
    grads: list[Params] = [()] * len(layers)
    for index in range(len(layers) - 1, -1, -1):
        grad_y, grads[index] = layer_backward(
            layers[index], params[index], caches[index], grad_y, paddings[index]
        )
    return grad_y, grads


def untiled_forward(layers: Sequence[Layer], params: Sequence[Params], x: Array) -> Array:
    """The reference: every op on the whole tensor with its own padding."""
    y, _ = chain_forward(layers, params, x, [layer.window.padding for layer in layers])
    return y


def untiled_backward(
    layers: Sequence[Layer], params: Sequence[Params], x: Array, grad_y: Array
) -> tuple[Array, list[Params]]:
    """The reference backward: (dX, per-layer parameter gradients) of ``<grad_y, f(x)>``."""
    paddings = [layer.window.padding for layer in layers]
    _, caches = chain_forward(layers, params, x, paddings)
    return chain_backward(layers, params, caches, grad_y, paddings)


def tiled_forward(
    layers: Sequence[Layer], params: Sequence[Params], x: Array, grid: Sequence[Rect]
) -> Array:
    """Fused-tiled forward of one segment: ``grid`` is a disjoint cover of the output plane."""
    in_hw = (x.shape[2], x.shape[3])
    _check_tileable(layers, grid)
    out: Array | None = None
    for tile in grid:
        steps = chain_regions(layers, in_hw, tile)
        first = live_start(steps)
        patch = _input_patch(layers, x, steps, first)
        y, _ = chain_forward(layers[first:], params[first:], patch, [s.padding for s in steps[first:]])
        if out is None:
            out_hw = _out_hw(layers, in_hw)
            out = np.zeros((x.shape[0], y.shape[1], *out_hw), dtype=y.dtype)
        out[(..., *tile.slices())] = y
    if out is None:
        raise ValueError("a tile grid needs at least one tile")
    return out


def tiled_backward(
    layers: Sequence[Layer],
    params: Sequence[Params],
    x: Array,
    grid: Sequence[Rect],
    grad_y: Array,
) -> tuple[Array, list[Params]]:
    """Per tile: recompute the forward from ``x``, back-propagate the tile's output gradient.

    Returns (dX, per-layer parameter gradients), equal to :func:`untiled_backward`.
    """
    in_hw = (x.shape[2], x.shape[3])
    _check_tileable(layers, grid)
    grad_x = np.zeros_like(x, dtype=np.result_type(x, grad_y))
    totals: list[list[Array]] = [[np.zeros_like(p) for p in ps] for ps in params]
    for tile in grid:
        steps = chain_regions(layers, in_hw, tile)
        first = live_start(steps)
        paddings = [s.padding for s in steps[first:]]
        patch = _input_patch(layers, x, steps, first)
        _, caches = chain_forward(layers[first:], params[first:], patch, paddings)
        grad_patch, grads = chain_backward(
            layers[first:], params[first:], caches, grad_y[(..., *tile.slices())], paddings
        )
        # Halos overlap between neighbouring tiles: their input-gradient shares add.
        grad_x[(..., *steps[0].input.slices())] += grad_patch if first == 0 else 0.0
        _accumulate(totals[first:], grads)
    return grad_x, [tuple(t) for t in totals]


def segment_grid(layers: Sequence[Layer], in_hw: tuple[int, int], segment: Segment) -> tuple[Rect, ...]:
    """The segment's output plane split into its ``rows`` x ``cols`` grid (uneven parts allowed)."""
    out_hw = _out_hw(layers[segment.start : segment.stop], in_hw)
    return split_grid(out_hw[0], out_hw[1], segment.rows, segment.cols)


def segmented_forward(
    layers: Sequence[Layer], params: Sequence[Params], x: Array, segments: Sequence[Segment]
) -> tuple[Array, list[Array]]:
    """Run consecutive segments; returns the output and the kept segment inputs (checkpoints)."""
    _check_cover(layers, segments)
    kept: list[Array] = []
    for seg in segments:
        kept.append(x)
        grid = segment_grid(layers, (x.shape[2], x.shape[3]), seg)
        x = tiled_forward(layers[seg.start : seg.stop], params[seg.start : seg.stop], x, grid)
    return x, kept


def segmented_backward(
    layers: Sequence[Layer],
    params: Sequence[Params],
    kept: Sequence[Array],
    segments: Sequence[Segment],
    grad_y: Array,
) -> tuple[Array, list[Params]]:
    """Backward over segments in reverse, each recomputed tile by tile from its kept input."""
    _check_cover(layers, segments)
    grads: list[Params] = [()] * len(layers)
    for seg, x in zip(reversed(segments), reversed(kept), strict=True):
        grid = segment_grid(layers, (x.shape[2], x.shape[3]), seg)
        part = slice(seg.start, seg.stop)
        grad_y, seg_grads = tiled_backward(layers[part], params[part], x, grid, grad_y)
        grads[part] = seg_grads
    return grad_y, grads


def _accumulate(totals: Sequence[list[Array]], grads: Sequence[Params]) -> None:
    """Add one tile's parameter gradients into the running totals, in place."""
    for total, layer_grads in zip(totals, grads, strict=True):
        for acc, g in zip(total, layer_grads, strict=True):
            acc += g


def _input_patch(layers: Sequence[Layer], x: Array, steps: Sequence[OpRegion], first: int) -> Array:
    """The segment-input patch, or the empty input of the first op that reads only padding."""
    if first == 0:
        return x[(..., *steps[0].input.slices())]
    shape = (x.shape[0], layers[first].in_channels, *steps[first].input.hw)
    return np.zeros(shape, dtype=x.dtype)


def _out_hw(layers: Sequence[Layer], in_hw: tuple[int, int]) -> tuple[int, int]:
    hw = in_hw
    for layer in layers:
        hw = layer.window.out_hw(hw)
    return hw


def _check_tileable(layers: Sequence[Layer], grid: Sequence[Rect]) -> None:
    if len(grid) > 1 and any(layer.needs_global_statistics for layer in layers):
        raise ValueError(
            "batch norm needs whole-image statistics: cut the segment at it or use one tile"
        )


def _check_cover(layers: Sequence[Layer], segments: Sequence[Segment]) -> None:
    bounds = [0] + [s.stop for s in segments]
    starts = [s.start for s in segments]
    if starts != bounds[:-1] or bounds[-1] != len(layers):
        raise ValueError(f"segments {segments} do not cover layers [0, {len(layers)}) in order")


def _random_param(
    rng: np.random.Generator,
    shape: tuple[int, ...],
    layer: Layer,
    index: int,
    scale: float,
    dtype: type,
) -> Array:
    if layer.kind is SpatialOp.BATCH_NORM:
        # Index 0 is gamma (a scale near 1), index 1 is beta (a shift near 0).
        centre = 1.0 if index == 0 else 0.0
        return (centre + 0.1 * rng.standard_normal(shape)).astype(dtype)
    return (scale * rng.standard_normal(shape)).astype(dtype)
