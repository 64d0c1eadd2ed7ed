"""Loss kinds: ``cross_entropy``, ``mse``. Both reduce to a scalar and train only."""

from __future__ import annotations

from crane.dialects.layers.costs import per_input, zero
from crane.dialects.layers.definition import NOT_SPATIAL, LayerKind, Lowering, Onnx, Tiling, Work
from crane.dialects.layers.rules import (
    Attrs,
    Resolved,
    ShapeError,
    check_min_rank,
    fmt,
    no_weights,
)
from crane.dialects.layers.values import Shape


def cross_entropy(ins: tuple[Shape, ...], attrs: Attrs) -> Resolved:
    logits, labels = ins
    check_min_rank("cross_entropy", logits, 2)
    if labels != logits[:-1]:
        raise ShapeError(
            f"cross_entropy labels {fmt(labels)} must have the logits' shape {fmt(logits)} "
            f"without the class dimension, i.e. {fmt(logits[:-1])}"
        )
    return (), dict(attrs)


def mse(ins: tuple[Shape, ...], attrs: Attrs) -> Resolved:
    pred, target = ins
    if pred != target:
        raise ShapeError(f"mse prediction {fmt(pred)} and target {fmt(target)} must have the same shape")
    return (), dict(attrs)


_NO_ONNX = Onnx.not_imported("losses come from a .crn train section or autodiff's "
                             "attach-loss, not from ONNX models")

KINDS = (
    LayerKind("cross_entropy",
              "mean softmax cross-entropy of logits (..., C) against integer labels",
              ("logits", "labels"), (), cross_entropy, no_weights, zero, per_input(5),
              lowering=Lowering.WHOLE, tiling=Tiling.ends_chain(NOT_SPATIAL), work=Work.LOSS,
              onnx=_NO_ONNX, int_inputs=frozenset({1}), is_loss=True),
    LayerKind("mse", "mean squared error between two tensors of one shape", ("pred", "target"),
              (), mse, no_weights, zero, per_input(3), lowering=Lowering.WHOLE,
              tiling=Tiling.ends_chain(NOT_SPATIAL), work=Work.LOSS, onnx=_NO_ONNX,
              is_loss=True),
)
"""The loss kinds, in the order ``LAYER_KINDS`` lists them."""
