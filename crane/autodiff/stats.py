"""What a training step costs: forward and backward work, and the memory it holds."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from crane.autodiff.recompute import is_recomputed
from crane.dialects.graph import FuncOp, LayerOp, WeightOp
from crane.dialects.graph_grad import AccumulateOp, GradOp, OptimizerStateOp, UpdateOp
from crane.ir.core import Value
from crane.ir.types import TensorType


def _bytes(values: Iterable[Value]) -> int:
    return sum(v.type.byte_size for v in values if isinstance(v.type, TensorType))


def _sum(rows: list[Mapping[str, int]], key: str) -> int:
    return sum(row.get(key, 0) for row in rows)


def training_stats(func: FuncOp) -> dict[str, int]:
    """Figures of one function (forward-only functions report zero backward figures).

    - ``forward_macs`` / ``forward_flops``: the layer ops;
    - ``backward_macs`` / ``backward_flops``: gradient ops and accumulation;
    - ``optimizer_flops``: the weight updates;
    - ``weight_bytes``, ``gradient_bytes`` (one gradient per updated weight),
      ``optimizer_state_bytes``;
    - ``activation_bytes``: forward values (other than weights) that backward ops read,
      i.e. what must be kept between the forward and backward passes (values rebuilt
      inside backward by a recompute group, see :mod:`crane.autodiff.recompute`, are not).
    """
    ops = list(func.body.ops)
    layers = [op.accounting() for op in ops if isinstance(op, LayerOp)]
    backward = [op.accounting() for op in ops if isinstance(op, GradOp | AccumulateOp)]
    updates = [op for op in ops if isinstance(op, UpdateOp)]
    weights = {op.results[0] for op in ops if isinstance(op, WeightOp)}
    states = {op.results[0] for op in ops if isinstance(op, OptimizerStateOp)}
    kept: set[Value] = set()
    for op in ops:
        if isinstance(op, GradOp):
            kept.update(v for v in op.forward_operands if v not in weights and not is_recomputed(v))
    return {
        "forward_macs": _sum(layers, "macs"),
        "forward_flops": _sum(layers, "flops"),
        "backward_macs": _sum(backward, "backward_macs"),
        "backward_flops": _sum(backward, "backward_flops"),
        "optimizer_flops": _sum([op.accounting() for op in updates], "optimizer_flops"),
        "weight_bytes": _bytes(weights),
        "gradient_bytes": _bytes({op.operands[1] for op in updates}),
        "optimizer_state_bytes": _bytes(states),
        "activation_bytes": _bytes(kept),
    }


def format_training_stats(name: str, stats: Mapping[str, int]) -> str:
    """A readable block, one figure per line, with the training-step memory total."""
    memory = sum(stats[k] for k in ("weight_bytes", "gradient_bytes", "optimizer_state_bytes", "activation_bytes"))
    ratio = stats["backward_macs"] / stats["forward_macs"] if stats["forward_macs"] else 0.0
    lines = [f"training step @{name}"]
    lines += [f"  {key:<22} {value:>20,}" for key, value in stats.items()]
    lines.append(f"  {'step_memory_bytes':<22} {memory:>20,}")
    lines.append(f"  {'backward/forward MACs':<22} {ratio:>20.3f}")
    return "\n".join(lines)
