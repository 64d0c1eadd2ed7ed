"""What ``tile.compute`` may compute, and the shape rules its verifier applies.

``op`` names a graph op without ``graph.``: a layer kind (``conv2d``), ``<kind>_grad_input``
or ``<kind>_grad_weight``, an optimizer update (``sgd``, ``momentum``, ``adam``),
``accumulate``, ``fill``, or a step of batchnorm over parts of the batch
(``BATCHNORM_PARTS``, see ``crane.exec.kernels.norm_parts``). Layer kinds are checked with
the kind's own shape and weight rules on the buffer shapes (so tile-level attributes must
describe the tile's slice); updates and sums need buffers of one type; batchnorm steps
need per-channel buffers as long as the box's channels.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from crane.dialects.graph_grad import UPDATE_OPS
from crane.dialects.layers.kinds import LAYER_KINDS
from crane.dialects.layers.rules import ShapeError, fmt
from crane.dialects.layers.values import AttrValue
from crane.ir.core import VerifyError
from crane.ir.types import BufferType

COMPUTE_EXTRA = ("accumulate", "fill")
"""Compute ops that are not graph layer kinds, gradients or optimizer updates."""

BATCHNORM_PARTS: Mapping[str, tuple[int, int]] = {
    "batchnorm_sum": (1, 1), "batchnorm_sqdev": (1, 2), "batchnorm_apply": (1, 5),
    "batchnorm_grad_sums": (2, 4), "batchnorm_grad_apply": (1, 7),
}
"""Batchnorm with batch statistics from parts of the batch: op -> (outputs, inputs). The
first input is a box of the batch (N, C, ...) (the gradient's, then the input's, for the
``grad`` steps); every other buffer but ``apply``'s and ``grad_apply``'s output is
per channel (C,)."""


def compute_kind(op: str) -> tuple[str, str]:
    """``(family, base)`` of a compute op name: ``("forward", "conv2d")``,
    ``("grad_input", "conv2d")``, ``("update", "adam")``, ``("accumulate", "")`` ...;
    ``("", op)`` when the name is unknown."""
    if op in LAYER_KINDS:
        return "forward", op
    for role in ("input", "weight"):
        base = op.removesuffix(f"_grad_{role}")
        if base != op and base in LAYER_KINDS:
            return f"grad_{role}", base
    if op in UPDATE_OPS:
        return "update", op
    if op in BATCHNORM_PARTS:
        return "batchnorm_part", op
    return (op, "") if op in COMPUTE_EXTRA else ("", op)


def check_compute(op: str, outputs: Sequence[BufferType], inputs: Sequence[BufferType],
                  attrs: Mapping[str, AttrValue]) -> None:
    """Raise :class:`VerifyError` unless ``op`` can write ``outputs`` from ``inputs``."""
    family, base = compute_kind(op)
    if not family:
        raise VerifyError(f"unknown compute op '{op}' (a graph layer kind, <kind>_grad_input, "
                          "<kind>_grad_weight, sgd, momentum, adam, accumulate, fill or "
                          f"{', '.join(BATCHNORM_PARTS)})")
    if family == "forward":
        _check_forward(base, outputs, inputs, attrs)
    elif family == "update":
        states = len(UPDATE_OPS[base].states)
        _check_same_type(op, outputs, inputs, 1 + states, 2 + states)
    elif family == "accumulate":
        _check_same_type(op, outputs, inputs, 1, None)
    elif family == "fill" and (len(outputs) != 1 or inputs):
        raise VerifyError("'fill' writes one buffer and reads none")
    elif family == "batchnorm_part":
        _check_batchnorm_part(op, outputs, inputs)


def _check_batchnorm_part(op: str, outputs: Sequence[BufferType],
                          inputs: Sequence[BufferType]) -> None:
    writes, reads = BATCHNORM_PARTS[op]
    if len(outputs) != writes or len(inputs) != reads:
        raise VerifyError(f"'{op}' writes {writes} and reads {reads} buffer(s), "
                          f"got {len(outputs)} and {len(inputs)}")
    box = inputs[0].shape
    if len(box) < 2:
        raise VerifyError(f"'{op}' needs a box of rank 2 or more (N, C, ...), got {fmt(box)}")
    boxes = 2 if op.startswith("batchnorm_grad") else 1
    whole = {"batchnorm_apply", "batchnorm_grad_apply"}
    for buf in (*inputs[:boxes], *(outputs if op in whole else ())):
        if buf.shape != box:
            raise VerifyError(f"'{op}' buffer {fmt(buf.shape)} must be the box {fmt(box)}")
    for buf in (*inputs[boxes:], *(() if op in whole else outputs)):
        if buf.shape != (box[1],):
            raise VerifyError(f"'{op}' per-channel buffer {fmt(buf.shape)} must be "
                              f"{fmt((box[1],))}")


def _check_same_type(op: str, outputs: Sequence[BufferType], inputs: Sequence[BufferType],
                     writes: int, reads: int | None) -> None:
    if len(outputs) != writes or (reads is not None and len(inputs) != reads):
        expected = "at least one" if reads is None else str(reads)
        raise VerifyError(f"'{op}' writes {writes} and reads {expected} buffer(s), "
                          f"got {len(outputs)} and {len(inputs)}")
    if not inputs or any(b != outputs[0] for b in (*outputs, *inputs)):
        raise VerifyError(f"'{op}' needs buffers of one type")


def _check_forward(base: str, outputs: Sequence[BufferType], operands: Sequence[BufferType],
                   attrs: Mapping[str, AttrValue]) -> None:
    kind = LAYER_KINDS[base]
    if len(outputs) != 1:
        raise VerifyError(f"'{base}' writes one buffer, not {len(outputs)}")
    if not operands:
        raise VerifyError(f"'{base}' reads no buffer")
    try:
        weights = kind.weights((operands[0].shape,), attrs)
        inputs = operands[: len(operands) - len(weights)]
        out_shape, resolved = kind.shape(tuple(b.shape for b in inputs), attrs)
        expected = kind.weights(tuple(b.shape for b in inputs), resolved)
    except ShapeError as problem:
        raise VerifyError(f"'{base}' at tile level: {problem.message}") from None
    except (KeyError, AssertionError, IndexError, TypeError, ValueError) as problem:
        raise VerifyError(f"'{base}': malformed attrs or operands ({type(problem).__name__}: "
                          f"{problem})") from None
    got = outputs[0].shape
    if got != out_shape:
        raise VerifyError(f"'{base}' output buffer is {fmt(got)}, the inputs give {fmt(out_shape)}")
    for (name, shape), buf in zip(expected, operands[len(inputs):], strict=True):
        if buf.shape != shape:
            raise VerifyError(f"'{base}' weight '{name}' buffer is {fmt(buf.shape)}, expected {fmt(shape)}")
