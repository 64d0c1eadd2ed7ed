"""``expand-attention``: every ``graph.attention`` as its projections, matmuls and softmax."""

from __future__ import annotations

from dataclasses import dataclass

from crane.dialects.graph import FuncOp
from crane.expand import expand_attention
from crane.ir.core import Operation
from crane.passes.context import PassContext
from crane.passes.pass_base import Pass


@dataclass(frozen=True)
class ExpandAttention(Pass):
    """Write every ``graph.attention`` of a function as the ops it computes
    (``crane.expand.attention``): the q/k/v projections (``linear``), the head split
    (``reshape``, ``transpose``), the scores (``matmul`` with ``transpose_b``), a
    ``softmax`` with the ``1/sqrt(head size)`` scale and the causal mask, the value mix
    (``matmul``), the head merge and the output projection. The function computes the same
    values; the scheduler and codegen then divide attention over tiles like any matmul (a
    fused attention is one operand-heavy op that a single tile must hold), and autodiff
    differentiates the parts. ``lower-to-tile`` runs it first.

    Statistics: ``attentions expanded``.
    """

    name = "expand-attention"
    summary = "write attention as its projections, matmuls and softmax"
    anchor = "graph.func"

    def run(self, op: Operation, ctx: PassContext) -> None:
        if not isinstance(op, FuncOp):
            return
        count = expand_attention(op)
        if count:
            ctx.statistic("attentions expanded", count)
