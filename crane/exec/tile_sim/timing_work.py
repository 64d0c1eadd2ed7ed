"""How much work one ``tile.compute`` does: MACs for the MAC array, operations for the vector unit.

The figures come from the same rules the analytical model reads (the layer table's MAC and
FLOP rules, the optimizer updates' FLOPs per element, graph accounting), applied to the
tile-level buffer shapes:

* a layer kind ``K``: ``K.macs`` MACs and ``K.flops - 2 * K.macs`` vector operations
  (bias adds, activations, pools, norms), as ``crane.schedule.from_graph`` counts them;
* ``K_grad_input`` / ``K_grad_weight``: the forward MACs of ``K`` at the shapes involved
  (dX and dW each cost about one forward pass), plus one vector operation per gradient
  element and, for ``_grad_input``, the forward vector work (activation derivatives); the
  input gradient of a batchnorm over the batch's statistics
  ``BATCH_STATISTICS_GRAD_FLOPS`` per element (its sums included);
* ``sgd`` / ``momentum`` / ``adam``: the update's FLOPs per weight element;
* ``accumulate``: one add per element per extra input; ``fill``: one store per element;
* the steps of batchnorm over parts of the batch: ``BATCHNORM_PART_OPS`` per element;
* ``slice``, ``concat`` and ``transpose`` (free in the graph-level model, which treats them
  as transparent) move every output element through the vector unit once, like
  ``tile.copy``; ``reshape`` and ``flatten`` are free (a buffer is reinterpreted).

Cycles are then ``max(MACs / macs_per_cycle, vector ops / vector_lanes)``, the array and
the vector unit overlapping inside one instruction (instructions run one after the other:
the cost model adds a layer's MAC and vector cycles, ``crane.cost.layer``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from crane.dialects.graph_grad import UPDATE_OPS
from crane.dialects.layers.costs import BATCH_STATISTICS_GRAD_FLOPS
from crane.dialects.layers.kinds import LAYER_KINDS
from crane.dialects.layers.values import AttrValue
from crane.dialects.tile import compute_kind
from crane.exec.evaluate import SHAPE_ONLY, with_shapes
from crane.hardware.machine import Machine

Shape = tuple[int, ...]

BATCHNORM_PART_OPS = {"batchnorm_sum": 1, "batchnorm_sqdev": 2, "batchnorm_apply": 2,
                      "batchnorm_grad_sums": 5, "batchnorm_grad_apply": 5}
"""Vector operations per element of the box for the steps of batchnorm over parts of the
batch: a sum; a subtraction and a multiply-add; a multiply-add with the channel's scale and
shift; normalising, a multiply-add and an add; normalising and the input gradient's
multiply-adds."""

COPY_KINDS = frozenset({"slice", "concat", "transpose"})
"""Layer kinds that only move data: one vector operation per output element."""


@dataclass(frozen=True, slots=True)
class Work:
    """MACs and vector operations of one compute instruction."""

    macs: int
    vector_ops: int

    def cycles(self, machine: Machine) -> float:
        """Cycles on one tile of ``machine``: the array and the vector unit overlap inside one
        instruction (a bias add rides on the convolution's output)."""
        mac_cycles = self.macs / machine.macs_per_cycle
        return max(mac_cycles, self.vector_ops / machine.vector_lanes)

    def energy_pj(self, machine: Machine) -> float:
        return self.macs * machine.mac_pj + self.vector_ops * machine.vector_op_pj


def numel(shape: Sequence[int]) -> int:
    count = 1
    for d in shape:
        count *= d
    return count


def _forward(base: str, inputs: Sequence[Shape], out: Shape,
             attrs: Mapping[str, AttrValue]) -> tuple[int, int]:
    """(MACs, vector ops) of layer kind ``base``; ``inputs`` are its operands with weights."""
    kind = LAYER_KINDS[base]
    weights = len(kind.weights((inputs[0],), attrs)) if inputs else 0
    data = tuple(inputs[: len(inputs) - weights])
    macs = kind.macs(data, out, attrs)
    return macs, max(0, kind.flops(data, out, attrs) - 2 * macs)


def compute_work(op: str, outputs: Sequence[Shape], inputs: Sequence[Shape],
                 attrs: Mapping[str, AttrValue]) -> Work:
    """The work of ``tile.compute {op}`` writing ``outputs`` from ``inputs`` (shapes).

    Raises ``ValueError`` for an op name the tile dialect does not know and lets the layer
    rules' ``KeyError``/``IndexError``/``TypeError`` through for malformed attributes.
    """
    family, base = compute_kind(op)
    written = sum(numel(s) for s in outputs)
    spec = attrs.get(SHAPE_ONLY)
    if isinstance(spec, tuple):  # operands the kernel reads by shape still shape its work
        inputs = with_shapes(inputs, [int(v) for v in spec])
    if family == "forward" and base in COPY_KINDS:
        return Work(0, written)
    if family == "forward":
        macs, vector = _forward(base, inputs, outputs[0] if outputs else (), attrs)
        return Work(macs, vector)
    if family == "grad_input" and LAYER_KINDS[base].normalises_by_batch(attrs):
        return Work(0, BATCH_STATISTICS_GRAD_FLOPS * numel(inputs[0]) if inputs else 0)
    if family in ("grad_input", "grad_weight"):
        grad_out, forward_operands = (inputs[0], inputs[1:]) if inputs else ((), ())
        macs, vector = _forward(base, forward_operands, grad_out, attrs) \
            if forward_operands else (0, 0)
        extra = vector if family == "grad_input" else 0
        return Work(macs, written + extra)
    if family == "update":
        weight = numel(inputs[0]) if inputs else written
        return Work(0, UPDATE_OPS[base].flops_per_element * weight)
    if family == "accumulate":
        return Work(0, written * max(1, len(inputs) - 1))
    if family == "fill":
        return Work(0, written)
    if family == "batchnorm_part":
        return Work(0, BATCHNORM_PART_OPS[base] * numel(inputs[0]) if inputs else 0)
    raise ValueError(f"unknown compute op '{op}'")
