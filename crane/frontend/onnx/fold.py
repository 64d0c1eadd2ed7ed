"""Constant folding: a node whose inputs are all constants is evaluated at import time.

Shape arithmetic (``Shape``, ``Gather``, ``Concat``, ``Unsqueeze`` feeding a ``Reshape``),
``Constant`` nodes, transposed or cast initializers and position-embedding lookups of a
fixed ``arange`` all become numpy arrays this way, with the exact semantics of ONNX's
reference implementation (``onnx.reference``) at the model's opset; the gathers run
Crane's own numpy code (``crane.frontend.onnx.gathers``), since the reference
``GatherElements`` fails on the position ids of BERT. A synthetic node
standing for a recognised pattern (``crane.frontend.onnx.patterns``) folds by running the
nodes it replaced.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from crane.frontend.onnx.gathers import GATHERS, GatherError, gather_parameter
from crane.frontend.onnx.reader import DEFAULT_DOMAINS, Node
from crane.frontend.onnx.state import GraphState

NEVER_FOLD = frozenset({
    "RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Multinomial",
    "Bernoulli", "If", "Loop", "Scan", "SequenceConstruct",
})
"""Ops whose results are not a function of their inputs, or that hold subgraphs."""


def foldable(state: GraphState, node: Node) -> bool:
    """Whether every input of ``node`` is a constant (so that its outputs are too)."""
    if node.op_type in NEVER_FOLD:
        return False
    return all(state.is_const(name) for name in node.inputs if name)


def fold(state: GraphState, node: Node) -> None:
    """Evaluate ``node`` on its constant inputs and bind its outputs to the results."""
    env: dict[str, np.ndarray] = {}
    protos = node.proto if isinstance(node.proto, tuple) else (node.proto,)
    for proto in protos:
        # a replaced node reads the pattern's constants, or what an earlier one computed
        feed = {name: env[name] if name in env else state.consts[name] for name in proto.input if name}
        env.update(zip(proto.output, _run(state, node, proto, feed), strict=False))
    for name in node.outputs:
        if name:
            state.bind(name, np.asarray(env[name]))


def _run(state: GraphState, node: Node, proto: Any, feed: dict[str, np.ndarray]) -> list[np.ndarray]:
    from onnx.reference import ReferenceEvaluator

    if proto.op_type in GATHERS and proto.domain in DEFAULT_DOMAINS and len(proto.input) == 2:
        return [_gather(node, proto, feed)]
    try:
        evaluator = ReferenceEvaluator(proto, opsets={"": state.opset})
        return list(evaluator.run(None, feed))
    except Exception as problem:  # the reference implementation raises anything on bad input
        text = str(problem).strip().splitlines()[0] if str(problem).strip() else type(problem).__name__
        raise node.error(f"cannot evaluate this computation on constants: {text}") from None


def _gather(node: Node, proto: Any, feed: dict[str, np.ndarray]) -> np.ndarray:
    from onnx import helper

    attrs = {a.name: helper.get_attribute_value(a) for a in proto.attribute}
    data, indices = (feed[name] for name in proto.input)
    try:
        return GATHERS[proto.op_type](data, indices, gather_parameter(proto.op_type, attrs))
    except GatherError as problem:
        raise node.error(f"cannot evaluate this computation on constants: {problem}") from None
