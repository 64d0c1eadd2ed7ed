"""Composite layers written as the primitive ops they stand for (graph to graph).

``expand_attention(func)`` replaces every ``graph.attention`` by its projections,
head split, scores, softmax and head merge, so that every later stage (autodiff, the
scheduler, codegen) divides attention like any other matmul and softmax.
"""

from crane.expand.attention import expand_attention

__all__ = ["expand_attention"]
