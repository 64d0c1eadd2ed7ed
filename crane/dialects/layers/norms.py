"""Normalising kinds: ``batchnorm``, ``layernorm``, ``softmax``."""

from __future__ import annotations

from crane.dialects.layers.costs import normalising, per_output, zero
from crane.dialects.layers.definition import (
    INFERENCE,
    LayerKind,
    Lowering,
    Onnx,
    ParamType,
    Tiling,
    Trait,
    Work,
    param,
)
from crane.dialects.layers.rules import (
    Attrs,
    Resolved,
    ShapeError,
    Weights,
    check_axis,
    check_min_rank,
    get_int,
    no_weights,
)
from crane.dialects.layers.values import Shape

SOFTMAX_FLOPS = 5
"""Operations per element of a softmax: max, subtract, exp, sum, divide."""


def batchnorm(ins: tuple[Shape, ...], attrs: Attrs) -> Resolved:
    check_min_rank("batchnorm", ins[0], 2)
    return ins[0], dict(attrs)


def batchnorm_weights(ins: tuple[Shape, ...], attrs: Attrs) -> Weights:
    # Only the affine scale/shift are trainable; running statistics (present when the op
    # normalises with them) are buffers, as in the published parameter counts.
    channels = (ins[0][1],)
    affine = (("scale", channels), ("shift", channels))
    return (*affine, ("mean", channels), ("var", channels)) if attrs.get("running") else affine


def layernorm(ins: tuple[Shape, ...], attrs: Attrs) -> Resolved:
    check_min_rank("layernorm", ins[0], 1)
    return ins[0], dict(attrs)


def layernorm_weights(ins: tuple[Shape, ...], attrs: Attrs) -> Weights:
    return (("scale", (ins[0][-1],)), ("shift", (ins[0][-1],)))


def softmax(ins: tuple[Shape, ...], attrs: Attrs) -> Resolved:
    axis = check_axis("softmax", ins[0], get_int(attrs, "axis"))
    if attrs.get("causal") and (len(ins[0]) < 2 or axis != len(ins[0]) - 1):
        raise ShapeError("a causal softmax normalises the last axis of a (..., queries, keys) "
                         "input", "causal")
    return ins[0], {**attrs, "axis": axis}


KINDS = (
    LayerKind(
        "batchnorm", "batch normalisation over channel dimension 1", ("x",),
        (
            param("eps", ParamType.FLOAT, 1e-5, "variance epsilon"),
            param("running", ParamType.BOOL, INFERENCE,
                  "normalise with the running statistics (mean, var buffers), as inference "
                  "does; false: with the batch's own statistics, as training does (default: "
                  "true in a network without a train section)"),
        ),
        batchnorm, batchnorm_weights, zero, normalising(2),
        lowering=Lowering.CHANNEL_NORM,
        tiling=Tiling.ends_chain("batch statistics are taken over the whole image"),
        work=Work.VECTOR,
        onnx=Onnx.not_imported("BatchNormalization folds into the convolution before it, or "
                               "becomes mul and add"),
        traits=frozenset({Trait.BATCH_STATISTICS}), buffers=frozenset({"mean", "var"}),
    ),
    LayerKind(
        "layernorm", "layer normalisation over the last dimension", ("x",),
        (param("eps", ParamType.FLOAT, 1e-5, "variance epsilon"),),
        layernorm, layernorm_weights, zero, per_output(5),
        lowering=Lowering.LAST_AXES_NORM,
        tiling=Tiling.ends_chain("it normalises along the last (W) axis"),
        work=Work.VECTOR, onnx=Onnx.converted("LayerNormalization"),
    ),
    LayerKind(
        "softmax", "softmax along one axis, of scale * x (and causally masked)", ("x",),
        (
            param("axis", ParamType.INT, -1, "axis to normalise"),
            param("scale", ParamType.FLOAT, 1.0, "factor applied to the input first"),
            param("causal", ParamType.BOOL, False,
                  "over the last axis of a (..., queries, keys) input: key j is masked for "
                  "query i when j > i (as attention's causal mask)"),
        ),
        softmax, no_weights, zero, per_output(SOFTMAX_FLOPS),
        lowering=Lowering.AXIS_NORM, tiling=Tiling.ends_chain("it normalises along an axis"),
        work=Work.VECTOR, onnx=Onnx.converted("Softmax"),
    ),
)
"""The normalising kinds, in the order ``LAYER_KINDS`` lists them."""
