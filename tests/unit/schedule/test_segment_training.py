"""The ``segment`` pass on training functions: BW1/BW2 blocks, recompute options, DRAM."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest

from crane.cost.report import cost_report_of
from crane.dialects import default_context
from crane.dialects.hw import MachineOp
from crane.dialects.segment import BlockOp, ScheduleOp
from crane.ir.attributes import IntAttr, StringAttr
from crane.ir.core import Operation
from crane.ir.diagnostics import DiagnosticEngine
from crane.ir.parser import parse_ops
from crane.ir.printer import print_op
from crane.ir.verifier import verify
from crane.passes.autodiff import Autodiff
from crane.passes.context import PassContext
from crane.passes.segment import Segment
from crane.schedule.from_graph import workload_of
from crane.tools.inputs import translate

ROOT = Path(__file__).resolve().parents[3]


def _load(name: str = "tiny_resnet") -> Operation:
    path = ROOT / "examples" / f"{name}.crn"
    return translate("crn", path.read_text(), str(path), default_context())


def _run(module: Operation, pass_: Segment | Autodiff, anchor: str = "") -> PassContext:
    ctx = PassContext(default_context(), DiagnosticEngine())
    ctx.begin_pass(pass_.name)
    targets = [op for op in module.regions[0].blocks[0].ops if op.name == anchor] \
        if anchor else [module]
    for op in targets:
        pass_.run(op, ctx)
    return ctx


@cache
def _trained(recompute: str, after_autodiff: bool = False) -> tuple[Operation, PassContext]:
    module = _load()
    if after_autodiff:
        _run(module, Autodiff(), "graph.func")
    segment = Segment(max_block=2, time_limit=0.02, recompute=recompute)  # type: ignore[arg-type]
    return module, _run(module, segment)


def _schedule(module: Operation) -> ScheduleOp:
    return next(op for op in module.regions[0].blocks[0].ops if isinstance(op, ScheduleOp))


def _samples(block: BlockOp) -> int:
    return block.attributes["subbatch"].value * block.attributes["subbatches"].value  # type: ignore[attr-defined]


def _func(module: Operation) -> Operation:
    return next(op for op in module.walk() if op.name == "graph.func")


@pytest.mark.parametrize("recompute", ["crane", "keep", "full"])
def test_every_layer_is_back_propagated_for_every_sample(recompute: str) -> None:
    module, ctx = _trained(recompute)
    assert not ctx.diagnostics.diagnostics
    assert verify(module) == []
    schedule = _schedule(module)
    batch = schedule.attributes["batch"].value  # type: ignore[attr-defined]
    phases = [b.phase for b in schedule.blocks]
    # Forward blocks first, then only backward ones.
    assert phases == sorted(phases, key=lambda p: p != "forward")
    grads: dict[str, int] = {}
    recomputed: dict[str, int] = {}
    for block in schedule.blocks:
        if block.phase == "forward":
            assert all(not n.endswith(".grad") for n in block.layer_names)
            continue
        into = grads if block.layer_names[0].endswith(".grad") else recomputed
        assert block.phase == "bw2" or into is grads
        for name in block.layer_names:
            into[name] = into.get(name, 0) + _samples(block)
    layers = [layer.name for layer in workload_of(_func(module)).layers]
    assert grads == {f"{name}.grad": batch for name in layers}
    if recompute == "keep":
        assert "bw2" not in phases and recomputed == {}
    if recompute == "full":
        assert "bw1" not in phases and recomputed == {name: batch for name in layers}
    # BW2 back-propagates exactly the samples it recomputed.
    bw2 = {}
    for block in (b for b in schedule.blocks if b.phase == "bw2"):
        for name in block.layer_names:
            bw2[name] = bw2.get(name, 0) + _samples(block)
    assert {n: c for n, c in bw2.items() if not n.endswith(".grad")} == recomputed
    assert {n[:-5]: c for n, c in bw2.items() if n.endswith(".grad")} == recomputed


def test_training_prints_parses_and_counts_dram() -> None:
    module, ctx = _trained("crane")
    text = print_op(module)
    again = parse_ops(default_context(), text, "<round-trip>")
    assert print_op(again[0]) == text
    assert 'phase = "bw' in text
    assert ctx.statistics["segment"]["backward-blocks"] > 0
    report = cost_report_of(module)
    keep, full = cost_report_of(_trained("keep")[0]), cost_report_of(_trained("full")[0])
    assert report is not None and keep is not None and full is not None
    weights = workload_of(_func(module)).total_weight_bytes
    # Weights, gradients and two optimizer moments are resident, plus saved activations.
    assert report["peak_dram_bytes"] >= 4 * weights
    assert keep["peak_dram_bytes"] > 4 * weights and full["peak_dram_bytes"] > 4 * weights
    assert report["edp"] <= min(keep["edp"], full["edp"]) * (1 + 1e-9)


def test_the_training_step_after_autodiff_schedules_the_same_forward() -> None:
    before, _ = _trained("keep")
    after, ctx = _trained("keep", after_autodiff=True)
    assert not ctx.diagnostics.diagnostics
    assert verify(after) == []
    forward = [[b.layer_names for b in _schedule(m).blocks if b.phase == "forward"]
               for m in (before, after)]
    assert forward[0] == forward[1]


def test_a_step_that_does_not_fit_in_dram_is_a_located_error() -> None:
    module = _load()
    machine = next(op for op in module.walk() if isinstance(op, MachineOp))
    machine.attributes["dram_capacity_bytes"] = IntAttr(100_000)
    ctx = _run(module, Segment(max_block=2, time_limit=0.02, recompute="keep"))
    messages = [d.message for d in ctx.diagnostics.diagnostics]
    assert len(messages) == 1
    assert "does not fit in DRAM: it needs" in messages[0] and "but 'edge' has 97.66 KiB" in messages[0]
    assert ctx.diagnostics.diagnostics[0].location == _func(module).location
    assert not any(isinstance(op, ScheduleOp) for op in module.regions[0].blocks[0].ops)


def _edited(edit: str) -> list[str]:
    module, _ = _trained("crane")
    copy = parse_ops(default_context(), print_op(module), "<copy>")[0]
    schedule = _schedule(copy)
    blocks = schedule.blocks
    backward = next(b for b in blocks if b.phase != "forward")
    if edit == "phase":
        backward.attributes["phase"] = StringAttr("bw3")
    elif edit == "samples":
        backward.attributes["subbatch"] = IntAttr(backward.attributes["subbatch"].value * 16)  # type: ignore[attr-defined]
    elif edit == "duplicate":
        backward.attributes["phase"] = StringAttr("forward")
        backward.attributes["layers"] = blocks[0].attributes["layers"]
    return [d.message for d in verify(copy)]


def test_the_verifier_checks_phases() -> None:
    assert _edited("none") == []
    assert any("'phase' must be one of forward, bw1, bw2, got 'bw3'" in m for m in _edited("phase"))
    assert any("exceed the batch of 8" in m for m in _edited("samples"))
    assert any("is scheduled by more than one block" in m for m in _edited("duplicate"))
