"""Converters of ``BatchNormalization`` and ``LayerNormalization``.

An inference ``BatchNormalization`` normalises with its *running* statistics:
``y = (x - mean) / sqrt(var + eps) * gamma + beta``, an affine map per channel. The
``graph.batchnorm`` op normalises with the *batch's* statistics (training semantics), so
it is never used here. Instead, with ``s = gamma / sqrt(var + eps)``:

* after a ``Conv`` whose output nothing else reads, the map is folded into the
  convolution, as inference compilers do: kernel ``W * s`` (per output channel) and bias
  ``(b - mean) * s + beta``, named ``<W>.bn`` and ``<b>.bn`` (``<y>.bias`` when the
  convolution had no bias, ``y`` being the normalisation's output);
* anywhere else it is ``graph.mul`` by ``s`` then ``graph.add`` of ``beta - mean * s``
  (weights ``<y>.scale`` and ``<y>.shift``, shaped to broadcast over the channel axis 1).

Both are exact rewrites of the ONNX semantics (up to float rounding). The statistics are
computed in float64 and stored in the input's precision.

``LayerNormalization`` over the last axis is ``graph.layernorm`` (scale and bias as its
weights; a missing bias is zeros named ``<y>.bias``).
"""

from __future__ import annotations

import numpy as np

from crane.dialects.graph import LayerOp
from crane.frontend.onnx.ops_dense import weight_array
from crane.frontend.onnx.reader import Node
from crane.frontend.onnx.state import GraphState, numpy_dtype, shape_of
from crane.ir.core import Value
from crane.ir.location import FusedLoc


def batch_normalization(g: GraphState, node: Node) -> None:
    _unused_outputs(g, node, "the running statistics of a training-mode normalisation")
    if int(node.attrs.get("training_mode", 0)):
        raise node.error("training_mode=1 (batch statistics) is not an inference model; export the "
                         "model in eval mode")
    if not int(node.attrs.get("spatial", 1)):
        raise node.error("spatial=0 (per-element statistics) is not supported")
    x = g.activation(node, node.input(0))
    if x is None:
        raise node.error("the input is a constant while the statistics are not")
    shape = shape_of(x)
    if len(shape) < 2:
        raise node.error(f"expects an input of rank >= 2 (N, C, ...), got shape {list(shape)}")
    channels = shape[1]
    gamma, beta, mean, var = (_vector(g, node, k, what, channels)
                              for k, what in ((1, "scale"), (2, "bias"), (3, "mean"), (4, "variance")))
    scale = gamma / np.sqrt(var + float(node.attrs.get("epsilon", 1e-5)))
    shift = beta - mean * scale
    if _fold_into_conv(g, node, x, scale, shift):
        return
    dtype = numpy_dtype(x)
    broadcast = (channels,) + (1,) * (len(shape) - 2)
    out = node.outputs[0]
    s = g.weight(f"{out}.scale", scale.reshape(broadcast).astype(dtype), node.location, node)
    t = g.weight(f"{out}.shift", shift.reshape(broadcast).astype(dtype), node.location, node)
    scaled = g.layer(node, "mul", [x, s], name=f"{out}.scaled")
    g.bind(out, g.layer(node, "add", [scaled, t]))


def _fold_into_conv(g: GraphState, node: Node, x: Value, scale: np.ndarray, shift: np.ndarray) -> bool:
    """Fold the per-channel affine map into the ``graph.conv2d`` producing ``x``, if any."""
    conv = x.owner_op
    if not isinstance(conv, LayerOp) or conv.kind.name != "conv2d" or not g.exclusive(node.input(0)):
        return False
    kernel = weight_array(g, conv.weights[0])
    bias_value = conv.weights[1] if len(conv.weights) > 1 else None
    bias = weight_array(g, bias_value) if bias_value is not None else np.zeros(scale.shape)
    if kernel is None or bias is None:
        return False
    names = [_weight_name(v) for v in conv.weights]
    out = node.outputs[0]
    new_kernel = (kernel.astype(np.float64) * scale.reshape(-1, 1, 1, 1)).astype(kernel.dtype)
    new_bias = (bias.astype(np.float64) * scale + shift).astype(kernel.dtype)
    weights = [g.weight(f"{names[0]}.bn", new_kernel, node.location, node),
               g.weight(f"{names[1]}.bn" if len(names) > 1 else f"{out}.bias", new_bias, node.location, node)]
    attrs = {**conv.layer_attrs, "bias": True}
    folded = g.layer(node, "conv2d", [conv.inputs[0]], weights, attrs)
    owner = folded.owner_op
    assert owner is not None
    owner.location = FusedLoc.of(conv.location, node.location)
    g.erase(conv)
    g.bind(out, folded)
    return True


def _weight_name(value: Value) -> str:
    owner = value.owner_op
    name = owner.attributes.get("name") if owner is not None else None
    return str(getattr(name, "value", value.name_hint or "w"))


def _vector(g: GraphState, node: Node, position: int, what: str, channels: int) -> np.ndarray:
    array = g.required_const(node, position, what)
    if array.size != channels:
        raise node.error(f"the {what} has {array.size} values for {channels} channels")
    return array.reshape(channels).astype(np.float64)


def _unused_outputs(g: GraphState, node: Node, what: str) -> None:
    for name in node.outputs[1:]:
        if name and g.consumers.get(name, 0):
            raise node.error(f"output '{name}' ({what}) is used; Crane imports only the normalised output")


def layer_normalization(g: GraphState, node: Node) -> None:
    _unused_outputs(g, node, "the mean or inverse deviation")
    x = g.activation(node, node.input(0))
    if x is None:
        raise node.error("the input is a constant while the scale is not")
    shape = shape_of(x)
    axis = int(node.attrs.get("axis", -1))
    if not shape or axis % len(shape) != len(shape) - 1:
        raise node.error(f"normalises from axis {axis} of a rank-{len(shape)} input; Crane's layernorm "
                         f"normalises the last axis only")
    width = shape[-1]
    dtype = numpy_dtype(x)
    out = node.outputs[0]
    scale_name, bias_name = node.input(1), node.input(2)
    scale = _affine(g, node, 1, "scale", width) if scale_name else np.ones(width, dtype)
    bias = _affine(g, node, 2, "bias", width) if bias_name else np.zeros(width, dtype)
    weights = [g.weight(scale_name or f"{out}.scale", scale, node.location, node),
               g.weight(bias_name or f"{out}.bias", bias, node.location, node)]
    eps = float(node.attrs.get("epsilon", 1e-5))
    g.bind(out, g.layer(node, "layernorm", [x], weights, {"eps": eps}))


def _affine(g: GraphState, node: Node, position: int, what: str, width: int) -> np.ndarray:
    array = g.required_const(node, position, what)
    if array.size != width or array.shape[-1:] != (width,):
        raise node.error(f"the {what} has shape {list(array.shape)}; Crane needs {width} values along "
                         f"the normalised axis")
    return array.reshape(width)
