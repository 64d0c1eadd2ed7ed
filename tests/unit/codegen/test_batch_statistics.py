"""Batchnorm with batch statistics runs where the batch is, exchanging per-channel sums.

The tile ops (``batchnorm_sum`` ... ``batchnorm_grad_apply``) are verified and costed
like any compute; codegen uses them for every batch-statistics batchnorm of a training
step, so the forward and backward phases move per-channel vectors instead of re-laying
the activations out by channel (the functional match is ``test_simulated``'s).
"""

from __future__ import annotations

from functools import cache

import pytest

from crane.codegen.lower import lower_func
from crane.codegen.program import Barrier, Compute, Send, TileModule
from crane.dialects.tile_compute import check_compute
from crane.exec.tile_sim.timing_work import Work, compute_work
from crane.ir.core import VerifyError
from crane.ir.types import BufferType, ScalarType

from .support import prepared

BOX, CHANNELS = (2, 4, 3, 3), (4,)


def buffers(*shapes: tuple[int, ...]) -> list[BufferType]:
    return [BufferType(shape, ScalarType("f32")) for shape in shapes]


def test_the_verifier_checks_box_and_channel_buffers() -> None:
    check_compute("batchnorm_apply", buffers(BOX), buffers(BOX, *[CHANNELS] * 4), {})
    check_compute("batchnorm_grad_sums", buffers(CHANNELS, CHANNELS),
                  buffers(BOX, BOX, CHANNELS, CHANNELS), {})
    with pytest.raises(VerifyError, match="per-channel buffer"):
        check_compute("batchnorm_sum", buffers((3,)), buffers(BOX), {})
    with pytest.raises(VerifyError, match="must be the box"):
        check_compute("batchnorm_grad_apply", buffers(BOX), buffers(BOX, (2, 4, 3, 2), *[CHANNELS] * 5), {})
    with pytest.raises(VerifyError, match="writes 1 and reads 2"):
        check_compute("batchnorm_sqdev", buffers(CHANNELS), buffers(BOX), {})


def test_work_is_counted_per_element_of_the_box() -> None:
    elements = 2 * 4 * 3 * 3
    assert compute_work("batchnorm_sum", [CHANNELS], [BOX], {}) == Work(0, elements)
    assert compute_work("batchnorm_grad_apply", [BOX], [BOX, BOX, *[CHANNELS] * 5], {}) == Work(0, 5 * elements)


@cache
def lowered() -> TileModule:
    _, func, schedule, machine = prepared("tiny_resnet", 2, 2, True)
    return lower_func(func, schedule, machine)


def test_training_batchnorms_use_per_channel_sums() -> None:
    ops = {ins.op for program in lowered().programs for ins in program.body if isinstance(ins, Compute)}
    assert {"batchnorm_apply", "batchnorm_grad_apply", "batchnorm_grad_sums"} <= ops
    assert not ops & {"batchnorm", "batchnorm_grad_input", "batchnorm_grad_weight"}


def test_the_stem_sends_per_channel_vectors_not_its_activations() -> None:
    """The stem's conv is split over the tiles by batch or space; its batchnorm used to
    move most of the 8x16x32x32 result between tiles."""
    sent = 0
    for program in lowered().programs:
        for ins in program.body:
            if isinstance(ins, Barrier):
                break
            if isinstance(ins, Send):
                sent += _elements(ins.buffer.shape if ins.window is None else ins.window[1])
    assert sent < 0.05 * 8 * 16 * 32 * 32


def _elements(shape: tuple[int, ...]) -> int:
    count = 1
    for d in shape:
        count *= d
    return count


def _rounds_per_phase(module: TileModule) -> list[tuple[str, int, int]]:
    """(label, batchnorm_sum, batchnorm_grad_sums) instructions of every tile's phases."""
    found = []
    for program in module.programs:
        sums = grads = 0
        for ins in program.body:
            if isinstance(ins, Barrier):
                found.append((ins.label, sums, grads))
                sums = grads = 0
            elif isinstance(ins, Compute):
                sums += ins.op == "batchnorm_sum"
                grads += ins.op == "batchnorm_grad_sums"
    return found


def test_a_batchnorm_gradient_takes_the_moments_its_refresh_or_recomputation_made() -> None:
    """A backward phase that runs its layer's forward ops again (``+refresh``) makes the
    batch's moments once, for the batchnorm and its gradient; a phase after the block's
    recomputation takes the moments the recomputation made, and makes none."""
    _, func, schedule, machine = prepared("tiny_resnet", 1, 1, True)
    phases = [p for p in _rounds_per_phase(lower_func(func, schedule, machine)) if p[2]]
    refreshed = [p for p in phases if p[0].endswith("+refresh")]
    assert refreshed and all(sums == grads for _, sums, grads in refreshed), phases
    assert all(sums == 0 for label, sums, _ in phases if not label.endswith("+refresh")), phases
    assert len(refreshed) < len(phases)
    split = [p for p in _rounds_per_phase(lowered()) if p[2]]
    assert sum(sums for _, sums, _ in split) < 2 * sum(grads for _, _, grads in split)
