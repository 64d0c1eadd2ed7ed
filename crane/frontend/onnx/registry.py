"""Which converter handles each ONNX operator, and the dispatch of one node.

A node of the default domain whose inputs are all constants is folded (evaluated at
import time, ``crane.frontend.onnx.fold``), whatever its operator; any other node needs a
converter from :data:`CONVERTERS`, else the import stops with an error naming the node and
its operator.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from crane.frontend.onnx import ops_dense, ops_elementwise, ops_norm, ops_pool, ops_shape
from crane.frontend.onnx.fold import fold, foldable
from crane.frontend.onnx.reader import DEFAULT_DOMAINS, Node
from crane.frontend.onnx.state import GraphState

Converter = Callable[[GraphState, Node], None]

CONVERTERS: Mapping[str, Converter] = {
    "Conv": ops_dense.conv,
    "Gemm": ops_dense.gemm,
    "MatMul": ops_dense.matmul,
    "BatchNormalization": ops_norm.batch_normalization,
    "LayerNormalization": ops_norm.layer_normalization,
    "MaxPool": ops_pool.max_pool,
    "AveragePool": ops_pool.average_pool,
    "GlobalAveragePool": ops_pool.global_average_pool,
    "GlobalMaxPool": ops_pool.global_max_pool,
    **dict.fromkeys(ops_elementwise.ONE_TO_ONE, ops_elementwise.one_to_one),
    "Gelu": ops_elementwise.gelu,
    "Softmax": ops_elementwise.softmax,
    "Add": ops_elementwise.add,
    "Mul": ops_elementwise.mul,
    "Sub": ops_elementwise.sub,
    "Div": ops_elementwise.div,
    "Reshape": ops_shape.reshape,
    "Flatten": ops_shape.flatten,
    "Squeeze": ops_shape.squeeze,
    "Unsqueeze": ops_shape.unsqueeze,
    "Transpose": ops_shape.transpose,
    "Concat": ops_shape.concat,
    "Slice": ops_shape.slice_,
    "Split": ops_shape.split,
    "Gather": ops_shape.gather,
    "Identity": ops_shape.identity,
    "Dropout": ops_shape.dropout,
    "Cast": ops_shape.cast,
    "Shape": ops_shape.shape,
    "Size": ops_shape.size,
}
"""ONNX operator -> converter, for nodes reading at least one activation."""


def convert(state: GraphState, node: Node) -> None:
    """Fold or convert one node (see the module docstring)."""
    if node.domain not in DEFAULT_DOMAINS:
        raise node.error(f"operator '{node.op_type}' of domain '{node.domain}' is not supported; Crane "
                         f"imports the default ONNX operator set only")
    if foldable(state, node):
        fold(state, node)
        return
    converter = CONVERTERS.get(node.op_type)
    if converter is None:
        raise node.error(f"unsupported ONNX operator '{node.op_type}' (see docs/onnx.md for the "
                         f"operators Crane imports)")
    converter(state, node)
