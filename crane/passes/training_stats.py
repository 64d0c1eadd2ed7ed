"""``print-training-stats``: forward/backward work and training-step memory per network."""

from __future__ import annotations

import sys
from dataclasses import dataclass

from crane.autodiff.stats import format_training_stats, training_stats
from crane.dialects.graph import FuncOp
from crane.ir.attributes import StringAttr
from crane.ir.core import Operation
from crane.passes.context import PassContext
from crane.passes.pass_base import Pass


@dataclass(frozen=True)
class PrintTrainingStats(Pass):
    """Print, per ``graph.func``, forward and backward MACs/FLOPs, optimizer FLOPs and the
    memory of one training step (weights, gradients, optimizer state, activations the
    backward pass reads) to stderr. Run it after ``autodiff``; before it, backward
    figures are zero. The IR is left unchanged.
    """

    name = "print-training-stats"
    summary = "print forward/backward MACs and training-step memory to stderr"
    anchor = "graph.func"

    def run(self, op: Operation, ctx: PassContext) -> None:
        if not isinstance(op, FuncOp):
            return
        symbol = op.attributes.get("sym_name")
        name = symbol.value if isinstance(symbol, StringAttr) else "?"
        print(format_training_stats(name, training_stats(op)), file=sys.stderr)
