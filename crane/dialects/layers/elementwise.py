"""Elementwise kinds besides the activations: ``add``, ``mul``, ``dropout``."""

from __future__ import annotations

from crane.dialects.layers.costs import per_output, zero
from crane.dialects.layers.definition import (
    NOT_SPATIAL,
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
    elementwise,
    get_float,
    no_weights,
)
from crane.dialects.layers.values import Shape


def dropout(ins: tuple[Shape, ...], attrs: Attrs) -> Resolved:
    rate = get_float(attrs, "rate")
    if not 0.0 <= rate < 1.0:
        raise ShapeError(f"dropout rate={rate} must be in [0, 1)", "rate")
    return ins[0], dict(attrs)


KINDS = (
    LayerKind("add", "elementwise a + b with numpy broadcasting", ("a", "b"), (),
              elementwise("add"), no_weights, zero, per_output(1), lowering=Lowering.BINARY,
              tiling=Tiling.ends_chain(NOT_SPATIAL), work=Work.ELTWISE,
              onnx=Onnx.converted("Add", "Sub", "Gemm", "BatchNormalization", "Expand", "And", "Or",
                                  "Not", "Where", "SoftmaxNanGuard", "AveragePool")),
    LayerKind("mul", "elementwise a * b with numpy broadcasting", ("a", "b"), (),
              elementwise("mul"), no_weights, zero, per_output(1), lowering=Lowering.BINARY,
              tiling=Tiling.ends_chain(NOT_SPATIAL), work=Work.ELTWISE,
              onnx=Onnx.converted("Mul", "Div", "Sub", "BatchNormalization", "Pow", "And", "Or",
                                  "Not", "Where", "SoftmaxNanGuard", "AveragePool")),
    LayerKind(
        "dropout", "zero elements with probability rate while training", ("x",),
        (param("rate", ParamType.FLOAT, 0.1, "drop probability in [0, 1)"),),
        dropout, no_weights, zero, per_output(1), lowering=Lowering.UNARY,
        tiling=Tiling.ends_chain("its mask is drawn for the whole tensor"),
        work=Work.TRANSPARENT,
        onnx=Onnx.not_imported("an ONNX Dropout imports for inference, where it passes its "
                               "input on"),
        traits=frozenset({Trait.RANDOM}),
    ),
)
"""The elementwise kinds, in the order ``LAYER_KINDS`` lists them."""
