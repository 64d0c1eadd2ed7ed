"""Activations: elementwise functions of one tensor, without parameters.

A new activation is one entry here (its formula, FLOPs per element and ONNX operator) plus
its numpy kernels in ``crane.exec.kernels.activation``; every other consumer reads the facts
below: code generation splits it as :attr:`Lowering.UNARY`, segmented fused tiling keeps it
in spatial chains, the scheduler merges it into the layer making its input.
"""

from __future__ import annotations

from crane.dialects.layers.costs import per_output, zero
from crane.dialects.layers.definition import (
    LayerKind,
    Lowering,
    Onnx,
    OnnxAttr,
    OnnxOp,
    Tiling,
    Work,
)
from crane.dialects.layers.rules import no_weights, same_shape


def activation(name: str, formula: str, element_flops: int, onnx: Onnx) -> LayerKind:
    """An activation: one input, its shape kept, ``element_flops`` operations per element."""
    return LayerKind(name, formula, ("x",), (), same_shape, no_weights, zero,
                     per_output(element_flops), lowering=Lowering.UNARY,
                     tiling=Tiling.pointwise(), work=Work.VECTOR, onnx=onnx)


KINDS = (
    activation("relu", "max(x, 0)", 1,
               Onnx(ops=(OnnxOp("Relu"), OnnxOp("Clip", clip=(0.0, float("inf")))),
                    via=("Where", "SoftmaxNanGuard"))),
    activation("gelu", "Gaussian error linear unit", 8, Onnx.converted("Gelu")),
    activation("silu", "x * sigmoid(x) (swish)", 5,
               Onnx.converted("Silu")),  # the importer's name for a recognised x * Sigmoid(x)
    activation("sigmoid", "1 / (1 + exp(-x))", 4, Onnx.one_to_one(OnnxOp("Sigmoid"))),
    activation("tanh", "hyperbolic tangent", 4, Onnx.one_to_one(OnnxOp("Tanh"))),
    activation("relu6", "min(max(x, 0), 6)", 2,
               Onnx.one_to_one(OnnxOp("Clip", clip=(0.0, 6.0)))),
    activation("hardsigmoid", "relu6(x + 3) / 6 (PyTorch's hardsigmoid)", 4,
               Onnx.one_to_one(OnnxOp("HardSigmoid", (OnnxAttr("alpha", 1 / 6, 0.2),
                                                      OnnxAttr("beta", 0.5, 0.5))))),
    activation("hardswish", "x * relu6(x + 3) / 6", 5, Onnx.one_to_one(OnnxOp("HardSwish"))),
)
"""The activations, in the order ``LAYER_KINDS`` lists them."""
