"""``workload_of``: graph.func -> scheduler Workload on the example networks."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest

from crane.dialects import default_context
from crane.dialects.graph_batch import graph_batch
from crane.dialects.graph_grad import AccumulateOp, GradOp, UpdateOp
from crane.dialects.layers.values import numel
from crane.hardware.machine import Machine
from crane.ir.core import Operation
from crane.ir.diagnostics import DiagnosticEngine
from crane.passes.autodiff import Autodiff
from crane.passes.context import PassContext
from crane.passes.generic.op_stats import collect_op_stats
from crane.schedule.block import Block, gradient_block
from crane.schedule.from_graph import grad_work, workload_of
from crane.schedule.training import optimizer_step
from crane.tools.inputs import translate

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


@cache
def _module(name: str) -> Operation:
    path = EXAMPLES / f"{name}.crn"
    return translate("crn", path.read_text(), str(path), default_context())


def _func(name: str) -> Operation:
    return next(op for op in _module(name).walk() if op.name == "graph.func")


def _graph_macs(name: str) -> int:
    """Total MACs as ``print-op-stats`` counts them."""
    return sum(row.get("macs", 0) for row in collect_op_stats(_func(name)).values())


@pytest.mark.parametrize(("name", "low", "high"), [
    ("resnet50", 68, 76), ("googlenet", 60, 90), ("bert_base", 60, 120),
    ("gpt2", 100, 180), ("tiny_resnet", 8, 12), ("tiny_transformer", 12, 30),
])
def test_macs_match_the_graph_and_layer_counts(name: str, low: int, high: int) -> None:
    func = _func(name)
    work = workload_of(func)
    assert low <= len(work) <= high
    assert work.total_macs * graph_batch(func) == _graph_macs(name)


def test_resnet50_structure() -> None:
    work = workload_of(_func("resnet50"))
    kinds = [layer.kind for layer in work.layers]
    assert kinds.count("conv") == 53 and kinds.count("eltwise") == 16
    assert kinds.count("fc") == 1 and kinds.count("pool") == 2
    assert work.outputs() == ("logits",)
    first = work.layers[0]
    assert first.external_input_bytes == 3 * 224 * 224 and not first.inputs
    assert first.dims.partitionable == (64, 112, 112) and first.dims.r == 7
    # Residual adds merge two predecessors; BN and ReLU are folded into the convs.
    adds = [layer for layer in work.layers if layer.kind == "eltwise"]
    assert all(len(layer.inputs) == 2 for layer in adds)
    assert all(layer.vector_ops > 0 for layer in work.layers if layer.kind == "conv")


def test_element_width_scales_bytes() -> None:
    func = _func("tiny_resnet")
    one, two = workload_of(func, 1), workload_of(func, 2)
    assert two.total_weight_bytes == 2 * one.total_weight_bytes
    assert [2 * layer.output_bytes for layer in one.layers] == [
        layer.output_bytes for layer in two.layers]


def test_attention_is_one_layer_split_by_batch_only() -> None:
    func = _func("tiny_transformer")
    work = workload_of(func)
    ops = [op for op in func.walk() if getattr(op, "kind", None) is not None and op.kind.name == "attention"]
    layers = {layer.name: layer for layer in work.layers}
    assert len(ops) == 2 and sum(layer.kind == "attention" for layer in work.layers) == 2
    for op in ops:
        layer = layers[op.results[0].name_hint]
        assert layer.kind == "attention"
        # Codegen splits the op by batch only: no per-sample extent to partition.
        assert layer.dims.partitionable == (1, 1, 1)
        # The whole op's work, per sample (the graph's batch is 4).
        assert layer.macs == op.accounting()["macs"] // 4
        # The Q, K, V and output projections' matrices and biases, one byte per element.
        assert layer.weight_bytes == sum(numel(w.type.shape) for w in op.weights) == 4 * (32 * 32 + 32)
    # Flatten/reshape/dropout are transparent: every edge joins two compute layers.
    assert all(p in layers for layer in work.layers for p in layer.predecessors)


def test_rejects_non_graph_ops() -> None:
    with pytest.raises(ValueError, match="graph.func"):
        workload_of(_module("tiny_resnet"))


def _trained(name: str) -> Operation:
    """The example's training step (``autodiff`` with its ``train`` section)."""
    path = EXAMPLES / f"{name}.crn"
    module = translate("crn", path.read_text(), str(path), default_context())
    ctx = PassContext(default_context(), DiagnosticEngine())
    func = next(op for op in module.walk() if op.name == "graph.func")
    Autodiff().run(func, ctx)
    assert not ctx.diagnostics.error_count, ctx.diagnostics.render_all()
    return func


def test_a_gemm_with_ops_merged_after_it_refreshes_from_its_saved_output() -> None:
    work = workload_of(_func("resnet50"))
    stem, logits = work.layers[0], work.layer("logits")
    assert stem.kind == "conv" and stem.refreshes and not logits.refreshes
    assert not any(layer.refreshes for layer in work.layers if layer.kind not in ("conv", "fc"))
    again = stem.from_saved_output()
    assert again.backward_macs == stem.backward_macs + stem.macs
    assert again.backward_vector_ops == stem.backward_vector_ops + stem.vector_ops
    assert logits.from_saved_output() is logits
    block = Block.of(work, 0, 2)
    assert gradient_block(block, from_saved=True).layers[-1] == again
    assert gradient_block(block).layers[-1] == stem


@pytest.mark.parametrize("name", ["tiny_resnet", "tiny_transformer"])
def test_a_training_step_counts_its_loss_and_its_optimizer_updates(name: str) -> None:
    trained, inference = workload_of(_trained(name)), workload_of(_func(name))
    assert [layer.name for layer in trained.layers] == [layer.name for layer in inference.layers]
    updates = [op for op in _trained(name).walk() if isinstance(op, UpdateOp)]
    assert trained.optimizer_vector_ops == sum(
        op.flops_per_element * op.operands[0].type.num_elements for op in updates) > 0
    assert inference.optimizer_vector_ops == 0
    # The loss runs with the layer making the logits (codegen's ownership of it).
    last, before = trained.layers[-1], inference.layers[-1]
    assert last.vector_ops > before.vector_ops and last.refreshes


@pytest.mark.parametrize("name", ["tiny_resnet", "tiny_transformer"])
def test_a_training_step_takes_each_layers_backward_work_from_its_gradient_ops(name: str) -> None:
    """Every gradient op is charged to the layer running its forward op, at what the
    program runs: the whole step's backward MACs are the gradient ops' MACs, and its
    vector work their vector work (accumulations of fanned-out gradients included)."""
    func = _trained(name)
    step = workload_of(func)
    batch = graph_batch(func)
    macs = vector = 0
    for op in func.walk():
        if isinstance(op, GradOp):
            m, v = grad_work(op)
            macs, vector = macs + m // batch, vector + v // batch
        elif isinstance(op, AccumulateOp):
            vector += op.accounting()["backward_flops"] // batch
    assert sum(layer.backward_macs for layer in step.layers) == macs > 0
    assert sum(layer.backward_vector_ops for layer in step.layers) == vector > 0


def test_a_layer_whose_input_needs_no_gradient_computes_only_its_weight_gradient() -> None:
    """The stem's convolution reads the image, which needs no gradient: its backward is
    dW alone, one forward pass of MACs, not the dX + dW the usual rule assumes."""
    stem = workload_of(_trained("tiny_resnet")).layers[0]
    assert stem.kind == "conv" and stem.backward_macs == stem.macs
    assert workload_of(_func("tiny_resnet")).layers[0].backward_macs == 2 * stem.macs


@pytest.mark.parametrize(("name", "copies"), [("tiny_resnet", 1), ("tiny_transformer", 2)])
def test_the_optimizer_step_moves_weights_and_state_not_gradients(name: str, copies: int) -> None:
    """Each update reads and writes its weight and its state (codegen keeps the gradient on
    the tiles that made it): SGD with momentum keeps one copy of the weights, Adam two."""
    machine = Machine.edge()
    step = workload_of(_trained(name), machine.data_bytes)
    weights = step.total_weight_bytes
    assert step.optimizer_state_bytes == copies * weights
    assert optimizer_step(step, machine).traffic.dram_bytes == 2 * (1 + copies) * weights


def test_an_embeddings_table_is_loaded_by_its_earliest_reader() -> None:
    """Codegen runs an embedding with the layer reading it, whose tiles load the table and
    pick rows by the ids: that layer reads the ids from outside and the table as weights."""
    func = _func("tiny_transformer")
    work = workload_of(func)
    tables = sum(numel(op.weights[0].type.shape) for op in func.walk()
                 if getattr(op, "kind", None) is not None and op.kind.name == "embedding")
    first = work.layers[0]  # add(embedding(tokens), embedding(positions))
    assert first.kind == "eltwise" and first.weight_bytes == tables == (100 + 16) * 32
    assert first.external_input_bytes == 2 * 16  # two rows of 16 ids per sample
    assert sum(layer.weight_bytes for layer in work.layers[1:]) == \
        work.total_weight_bytes - tables
