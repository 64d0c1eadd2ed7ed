"""Training normalises with batch statistics: running-statistics batchnorms switch mode.

A ``graph.batchnorm {running = true}`` (what an inference network's batchnorm is) reads its
``mean`` and ``var`` buffers; a training step, like PyTorch's ``train()``, normalises with
the statistics of the batch instead. :func:`use_batch_statistics` rewrites such ops into
batch-statistics ones with the same scale and shift, and drops buffers nothing else reads.
Frozen-statistics fine-tuning is therefore not expressed by a training step.
"""

from __future__ import annotations

from crane.dialects.graph import LAYER_OPS, FuncOp, LayerOp, WeightOp
from crane.ir.attributes import BoolAttr
from crane.ir.core import Operation


def _running(op: Operation) -> bool:
    if not isinstance(op, LayerOp) or op.kind.name != "batchnorm":
        return False
    flag = op.attributes.get("running")
    return isinstance(flag, BoolAttr) and flag.value


def use_batch_statistics(func: FuncOp) -> int:
    """Switch every running-statistics batchnorm of ``func`` to batch statistics; returns how many."""
    switched = [op for op in func.body.ops if _running(op)]
    for op in switched:
        assert isinstance(op, LayerOp)
        buffers = op.weights[2:]
        attrs = {**op.layer_attrs, "running": False}
        result_type = op.results[0].type
        new = LAYER_OPS["batchnorm"].build(op.inputs, op.weights[:2], attrs, result_type,  # type: ignore[arg-type]
                                           op.location)
        new.results[0].name_hint = op.results[0].name_hint
        func.body.insert_before(op, new)
        op.results[0].replace_all_uses_with(new.results[0])
        op.erase()
        for buffer in buffers:
            owner = buffer.owner_op
            if isinstance(owner, WeightOp) and not any(True for _ in buffer.users()):
                owner.erase()
    return len(switched)
