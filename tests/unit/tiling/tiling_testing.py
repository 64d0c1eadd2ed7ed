"""Shared checks for the tiling tests: tiled execution against the untiled reference."""

from collections.abc import Sequence

import numpy as np

from crane.exec.kernels._types import Array
from crane.tiling.execute import (
    Params,
    Segment,
    init_params,
    segmented_backward,
    segmented_forward,
    untiled_backward,
    untiled_forward,
)
from crane.tiling.layers import Layer

RTOL = 1e-5
RTOL_EXACT = 1e-9
"""float64 tolerance: tiling must be exact up to rounding, so any real error shows here."""


def assert_close(actual: Array, expected: Array, what: str, rtol: float = RTOL, floor: float = 0.0) -> None:
    """``rtol`` with an absolute floor relative to the tensor's scale (sums are reordered).

    ``floor`` adds the reference's own rounding error: a gradient that is a sum with heavy
    cancellation has no float32 digits to spare, whichever order it is summed in.
    """
    scale = float(np.abs(expected).max()) if expected.size else 0.0
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=rtol * scale + floor, err_msg=what)


def _run(
    layers: Sequence[Layer],
    params: Sequence[Params],
    x: Array,
    grad_y: Array,
    segments: Sequence[Segment],
) -> tuple[list[tuple[str, Array]], list[tuple[str, Array]]]:
    """(untiled, tiled) named results: output, segment inputs, input and parameter gradients."""
    y = untiled_forward(layers, params, x)
    grad_x, grads = untiled_backward(layers, params, x, grad_y)
    y_tiled, kept = segmented_forward(layers, params, x, segments)
    grad_x_tiled, grads_tiled = segmented_backward(layers, params, kept, segments, grad_y)
    untiled = [("output", y), ("input gradient", grad_x)]
    tiled = [("output", y_tiled), ("input gradient", grad_x_tiled)]
    for seg, boundary in zip(segments, kept, strict=True):
        prefix = untiled_forward(layers[: seg.start], params[: seg.start], x) if seg.start else x
        untiled.append((f"input of segment {seg}", prefix))
        tiled.append((f"input of segment {seg}", boundary))
    for index, (ref, got) in enumerate(zip(grads, grads_tiled, strict=True)):
        assert len(ref) == len(got)
        name = f"gradient of layer {index} {layers[index].kind}"
        untiled += [(name, g) for g in ref]
        tiled += [(name, g) for g in got]
    return untiled, tiled


def check_segments(
    layers: Sequence[Layer], hw: tuple[int, int], segments: Sequence[Segment], seed: int = 0
) -> None:
    """Tiled forward/backward over ``segments`` equals the untiled chain, every tensor.

    float64 must agree to 1e-9 (exactness); float32 to rtol 1e-5.
    """
    params: list[Params] = init_params(layers, seed=seed)
    rng = np.random.default_rng(seed + 1)
    x = rng.standard_normal((1, layers[0].in_channels, *hw)).astype(np.float32)
    grad_y = rng.standard_normal(untiled_forward(layers, params, x).shape).astype(np.float32)
    params64 = [tuple(p.astype(np.float64) for p in ps) for ps in params]
    exact, tiled64 = _run(layers, params64, x.astype(np.float64), grad_y.astype(np.float64), segments)
    ref32, tiled32 = _run(layers, params, x, grad_y, segments)
    for (name, want), (_, got) in zip(exact, tiled64, strict=True):
        assert_close(got, want, f"float64 {name}", rtol=RTOL_EXACT)
    for (name, want), (_, got), (_, truth) in zip(ref32, tiled32, exact, strict=True):
        assert got.dtype == np.float32, name
        rounding = float(np.abs(want - truth).max()) if want.size else 0.0
        assert_close(got, want, f"float32 {name}", floor=2.0 * rounding)
