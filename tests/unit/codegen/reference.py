"""Test-only: seeded inputs and weights, and the reference interpreter's results."""

from __future__ import annotations

import numpy as np

from crane.dialects.graph import FuncOp, WeightOp
from crane.dialects.graph_grad import OptimizerStateOp
from crane.exec.interpreter import init_weight, random_input, run_function

Array = np.ndarray


def seeded(func: FuncOp, seed: int = 0) -> tuple[dict[str, Array], dict[str, Array]]:
    """Inputs by argument name and weights (and zero optimizer state) by tensor name."""
    inputs = {a.name_hint or f"arg{a.index}": random_input(a, np.float32, seed) for a in func.body.args}
    weights: dict[str, Array] = {}
    for op in func.body.ops:
        shape = getattr(op.results[0].type, "shape", ()) if op.results else ()
        if isinstance(op, WeightOp):
            weights[op.weight_name] = init_weight(op.weight_name, shape, np.float32, seed)
        elif isinstance(op, OptimizerStateOp):
            weights[op.state_name] = np.zeros(shape, np.float32)
    return inputs, weights


def reference(func: FuncOp, inputs: dict[str, Array], weights: dict[str, Array]) -> dict[str, Array]:
    return run_function(func, inputs, weights=weights, dtype="f32")
