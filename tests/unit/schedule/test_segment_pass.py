"""The ``segment`` pass on the tiny example networks, the cost report and the verifier."""

from __future__ import annotations

import json
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest

from crane.cost.report import REPORT_KEYS, cost_report_of, format_cost_table, write_cost_report
from crane.dialects import default_context
from crane.dialects.segment import BlockOp, ScheduleOp
from crane.hardware.machine import Machine
from crane.ir.attributes import DenseIntsAttr
from crane.ir.core import Operation
from crane.ir.diagnostics import DiagnosticEngine
from crane.ir.parser import parse_ops
from crane.ir.printer import print_op
from crane.ir.verifier import verify
from crane.passes.context import PassContext
from crane.passes.options import OptionValueError
from crane.passes.segment import Segment
from crane.schedule.from_graph import workload_of
from crane.schedule.training import optimizer_step
from crane.tools.inputs import translate

ROOT = Path(__file__).resolve().parents[3]
NETS = ("tiny_resnet", "tiny_transformer")
BASELINES = ("sequential", "tangram", "set")


def _load(name: str) -> Operation:
    path = ROOT / "examples" / f"{name}.crn"
    return translate("crn", path.read_text(), str(path), default_context())


def _run(module: Operation, segment: Segment) -> PassContext:
    ctx = PassContext(default_context(), DiagnosticEngine())
    ctx.begin_pass(segment.name)
    segment.run(module, ctx)
    return ctx


@cache
def _scheduled(name: str, policy: str = "crane",
               training: bool = False) -> tuple[Operation, PassContext]:
    """The example scheduled with small blocks and short MILP solves (test speed).

    The examples have a training section; without ``training`` it is dropped so the
    function is scheduled for inference.
    """
    module = _load(name)
    if not training:
        for func in (op for op in module.walk() if op.name == "graph.func"):
            del func.attributes["training"]
    ctx = _run(module, Segment(policy=policy, max_block=2, time_limit=0.02))  # type: ignore[arg-type]
    return module, ctx


def _schedule_of(module: Operation) -> ScheduleOp:
    found = [op for op in module.regions[0].blocks[0].ops if isinstance(op, ScheduleOp)]
    assert len(found) == 1
    return found[0]


@pytest.mark.parametrize("training", [False, True], ids=["inference", "training"])
@pytest.mark.parametrize("name", NETS)
def test_schedule_verifies_round_trips_and_covers_every_layer(name: str, training: bool) -> None:
    module, ctx = _scheduled(name, training=training)
    assert not ctx.diagnostics.diagnostics
    assert verify(module) == []
    text = print_op(module)
    again = parse_ops(default_context(), text, "<round-trip>")
    assert len(again) == 1 and print_op(again[0]) == text
    schedule = _schedule_of(module)
    func = next(op for op in module.walk() if op.name == "graph.func")
    forward = [block for block in schedule.blocks if block.phase == "forward"]
    covered = [layer for block in forward for layer in block.layer_names]
    assert covered == [layer.name for layer in workload_of(func).layers]
    batch = schedule.attributes["batch"]
    assert all(b.attributes["subbatch"].value * b.attributes["subbatches"].value  # type: ignore[attr-defined]
               == batch.value for b in forward)  # type: ignore[attr-defined]
    stats = ctx.statistics["segment"]
    assert stats["functions"] == 1 and stats["blocks"] == len(schedule.blocks)


@pytest.mark.parametrize("training", [False, True], ids=["inference", "training"])
@pytest.mark.parametrize("name", NETS)
def test_report_keys_exist_and_are_positive(name: str, training: bool, tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    module, _ = _scheduled(name, training=training)
    report = cost_report_of(module)
    # The search's wall time stays out of the IR unless asked for (same input, same bytes).
    assert report is not None and set(report) == set(REPORT_KEYS) - {"schedule_seconds"}
    assert all(value > 0 for value in report.values()), report
    assert report["latency_cycles"] >= report["latency_lower_bound_cycles"]
    assert report["energy_pj"] >= report["energy_lower_bound_pj"]
    assert report["edp"] == pytest.approx(report["latency_cycles"] * report["energy_pj"])
    schedule = _schedule_of(module)
    func = next(op for op in module.walk() if op.name == "graph.func")
    # A training step's total adds the optimizer update, which is not a block.
    update = optimizer_step(workload_of(func), Machine.edge()).latency_cycles if training else 0.0
    assert sum(b.latency_cycles for b in schedule.blocks) + update == \
        pytest.approx(report["latency_cycles"])
    out = tmp_path / "cost.json"
    assert write_cost_report(module, out)
    assert json.loads(out.read_text()) == report
    assert write_cost_report(module, "-")
    table = capsys.readouterr().err
    assert table == format_cost_table(report) + "\n"
    assert all(key in table for key in report) and "latency / lower bound" in table


def test_record_time_adds_the_search_seconds() -> None:
    module = _load(NETS[0])
    for func in (op for op in module.walk() if op.name == "graph.func"):
        del func.attributes["training"]
    _run(module, Segment(max_block=2, time_limit=0.02, record_time=True))
    report = cost_report_of(module)
    assert report is not None and set(report) == set(REPORT_KEYS)
    assert report["schedule_seconds"] > 0


@pytest.mark.parametrize("name", NETS)
def test_crane_is_never_worse_than_a_baseline(name: str) -> None:
    crane = cost_report_of(_scheduled(name)[0])
    assert crane is not None
    for policy in BASELINES:
        rival = cost_report_of(_scheduled(name, policy)[0])
        assert rival is not None
        assert crane["edp"] <= rival["edp"] * (1 + 1e-9), policy
        assert _schedule_of(_scheduled(name, policy)[0]).attributes["policy"].value == policy  # type: ignore[attr-defined]


def test_a_broken_table_in_the_pass_output_is_rejected() -> None:
    module, _ = _scheduled("tiny_resnet")
    text = print_op(module)
    copy = parse_ops(default_context(), text, "<copy>")[0]
    block = next(op for op in copy.walk() if isinstance(op, BlockOp) and len(op.layer_names) > 1)
    sct = list(block.attributes["sct"])  # type: ignore[call-overload]
    sct[-1] += 1
    block.attributes["sct"] = DenseIntsAttr(tuple(sct))
    errors = [d.message for d in verify(copy)]
    assert len(errors) == 1
    assert f"in block '{block.label}'" in errors[0] and "ScT." in errors[0]
    assert "state" in errors[0] and "column" in errors[0]


def test_batch_option_rerun_replaces_the_schedule_and_bad_objective() -> None:
    module = _load("tiny_resnet")
    _run(module, Segment(policy="sequential", max_block=2))
    ctx = _run(module, Segment(policy="set", batch=4, max_block=2))
    assert not ctx.diagnostics.diagnostics
    schedule = _schedule_of(module)
    assert schedule.attributes["batch"].value == 4  # type: ignore[attr-defined]
    assert schedule.attributes["policy"].value == "set"  # type: ignore[attr-defined]
    assert verify(module) == []
    with pytest.raises(OptionValueError, match="option 'objective' of pass 'segment' expects edp, "
                       "latency, energy or 'L\\^p E\\^q', got 'speed'"):
        Segment(objective="speed")


def test_crane_opt_schedules_and_reparses(tmp_path: Path) -> None:
    """Through the driver's stdout (the solver's banner must not end up in the IR)."""
    command = [sys.executable, "-m", "crane.opt", str(ROOT / "examples" / "tiny_transformer.crn"),
               "-p", "segment{max-block=2 time-limit=0.02}"]
    first = subprocess.run(command, check=True, capture_output=True, text=True, timeout=60)
    out = tmp_path / "scheduled.mlir"
    out.write_text(first.stdout)
    again = subprocess.run([sys.executable, "-m", "crane.opt", str(out)], check=True,
                           capture_output=True, text=True, timeout=60)
    assert again.stdout == first.stdout
    assert "segment.schedule" in again.stdout and "crane.cost = {" in again.stdout
