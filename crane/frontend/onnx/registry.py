"""Which converter handles each ONNX operator, and the dispatch of one node.

A node of the default domain whose inputs are all constants is folded (evaluated at
import time, ``crane.frontend.onnx.fold``), whatever its operator; any other node needs a
converter from :data:`CONVERTERS`. :func:`convert_all` imports a whole graph and reports
every problem at once: each node whose operator has no converter (found before anything
is converted), and each node a converter rejects, named with its operator and located.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

from crane.frontend.onnx import (
    ops_dense,
    ops_elementwise,
    ops_mask,
    ops_norm,
    ops_pool,
    ops_shape,
    ops_slice,
)
from crane.frontend.onnx.fold import NEVER_FOLD, fold, foldable
from crane.frontend.onnx.reader import DEFAULT_DOMAINS, Node, is_unknown_operator
from crane.frontend.onnx.state import GraphState
from crane.ir.diagnostics import DiagnosticError

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
    "ReduceMean": ops_pool.reduce_mean,
    **dict.fromkeys(ops_elementwise.ONE_TO_ONE, ops_elementwise.one_to_one),
    "Gelu": ops_elementwise.gelu,
    "Silu": ops_elementwise.silu,
    "Pow": ops_elementwise.power,
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
    "Slice": ops_slice.slice_,
    "Split": ops_slice.split,
    "Gather": ops_slice.gather,
    "GatherElements": ops_slice.gather_constant,
    "GatherND": ops_slice.gather_constant,
    "Expand": ops_shape.expand,
    "Pad": ops_slice.pad,
    "And": ops_mask.and_,
    "Or": ops_mask.or_,
    "Not": ops_mask.not_,
    "Where": ops_mask.where,
    "SoftmaxNanGuard": ops_mask.nan_guard,
    "Identity": ops_shape.identity,
    "Dropout": ops_shape.dropout,
    "Cast": ops_shape.cast,
    "Shape": ops_shape.shape,
    "Size": ops_shape.size,
}
"""ONNX operator -> converter, for nodes reading at least one activation (``Silu`` and
``SoftmaxNanGuard`` are the synthetic nodes of ``crane.frontend.onnx.patterns``)."""

MOVES = frozenset({
    "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Transpose", "Slice", "Split", "Gather", "GatherND",
    "GatherElements", "Expand", "Identity", "Concat", "Pad",
})
"""Operators that only move elements: a boolean input gives boolean outputs."""

SAME_SHAPE = frozenset({
    "Clip", "HardSwish", "HardSigmoid", "LeakyRelu", "Elu", "Selu", "Celu", "Softplus", "Softsign",
    "Mish", "Erf", "Exp", "Log", "Sqrt", "Abs", "Neg", "Reciprocal", "Floor", "Ceil", "Round", "Sign",
    "Sin", "Cos", "ThresholdedRelu", "Shrink", "PRelu",
})
"""Operators whose output has their first input's shape: when one fails, its input
stands in for its output, so that the nodes after it are still converted and their
problems reported too (MobileNet's every ReLU6, not only the first)."""


UNSUPPORTED_HINTS: Mapping[str, str] = {
    "HardSwish": "hard swish, x * relu6(x + 3) / 6, has no graph layer kind yet",
    "HardSigmoid": "hard sigmoid, relu6(x + 3) / 6, has no graph layer kind yet",
    "IsNaN": "IsNaN imports only as the NaN guard Where(IsNaN(p), 0, p) after a Softmax whose "
             "input cannot be infinite or NaN, which is removed",
    "Erf": "Erf imports only inside the GELU x * (1 + Erf(x / sqrt 2)) * 0.5",
}
"""Why some operators Crane does not import have no graph form (added to the message)."""


def unsupported_message(node: Node, opset: int) -> str:
    """The message for a node whose operator has no converter."""
    if node.domain not in DEFAULT_DOMAINS:
        return (f"operator '{node.op_type}' of domain '{node.domain}' is not supported; Crane imports "
                f"the default ONNX operator set only")
    if node.proto is not None and is_unknown_operator(node.op_type, node.domain, opset):
        return f"unknown ONNX operator '{node.op_type}' (not in the standard operator set at opset {opset})"
    hint = UNSUPPORTED_HINTS.get(node.op_type)
    return f"unsupported ONNX operator '{node.op_type}'" + (
        f": {hint}" if hint else " (see docs/onnx.md for the operators Crane imports)")


def unsupported_nodes(nodes: Sequence[Node], constants: Iterable[str], opset: int) -> dict[int, DiagnosticError]:
    """Node index -> error, for every node that neither folds nor has a converter.

    Which tensors are constants is predicted as the import finds them: initializers,
    ``Constant`` outputs, ``Shape`` and ``Size`` of anything (shapes are static), and the
    outputs of every node reading constants only."""
    known = set(constants) | {""}
    found: dict[int, DiagnosticError] = {}
    for node in nodes:
        default = node.domain in DEFAULT_DOMAINS
        if default and (node.op_type in ("Shape", "Size") or (
                node.op_type not in NEVER_FOLD and all(name in known for name in node.inputs))):
            known.update(node.outputs)
        elif not default or node.op_type not in CONVERTERS:
            found[node.index] = node.error(unsupported_message(node, opset))
    return found


def convert_all(state: GraphState, nodes: Sequence[Node]) -> None:
    """Fold or convert every node; then raise every error at once, in graph order.

    A node that fails is reported; a :data:`SAME_SHAPE` node's input stands in for its
    output, any other node's outputs are marked failed and the nodes reading them skipped
    silently (their errors would only echo the first), except those whose operator is
    unsupported, which are always reported."""
    unsupported = unsupported_nodes(nodes, state.consts, state.opset)
    failed: set[str] = set()
    problems: list[DiagnosticError] = []
    for node in nodes:
        problem = unsupported.get(node.index)
        if problem is None and any(name in failed for name in node.inputs):
            failed.update(node.outputs)
            continue
        error = problem or _converted(state, node)
        if error is not None:
            problems.append(error)
            failed.update(_after_failure(state, node))
    if problems:
        raise DiagnosticError(*(d for p in problems for d in p.diagnostics))


def _converted(state: GraphState, node: Node) -> DiagnosticError | None:
    """Convert one node; its error, if any."""
    try:
        convert(state, node)
    except DiagnosticError as error:
        return error
    return None


def _after_failure(state: GraphState, node: Node) -> tuple[str, ...]:
    """The outputs of a failed node that stay failed (none when its input stands in)."""
    stand_in = state.values.get(node.input(0))
    if node.op_type not in SAME_SHAPE or stand_in is None or len(node.outputs) != 1:
        return node.outputs
    state.bind(node.outputs[0], stand_in)
    return ()


def convert(state: GraphState, node: Node) -> None:
    """Fold or convert one node (see the module docstring)."""
    if node.domain not in DEFAULT_DOMAINS:
        raise node.error(unsupported_message(node, state.opset))
    if foldable(state, node):
        fold(state, node)
        return
    converter = CONVERTERS.get(node.op_type)
    if converter is None:
        raise node.error(unsupported_message(node, state.opset))
    converter(state, node)
    if node.op_type in MOVES and node.input(0) in state.booleans:
        state.booleans.update(name for name in node.outputs if name)
