"""``lower-to-tile`` output run by the functional simulator and checked against the interpreter."""

from __future__ import annotations

import dataclasses
import subprocess
import sys

import numpy as np
import pytest
from tile_sim_testing import ROOT, crn_func

from crane.autodiff import expand_training_step, resolve_training
from crane.dialects import default_context
from crane.dialects.hw import MachineOp
from crane.exec.interpreter import run_function
from crane.exec.tile_sim.check import NOISE_FACTOR, Comparison, _reconsider, check, compare
from crane.hardware.machine import Machine
from crane.ir.printer import print_op
from crane.tools.inputs import parse_ir, translate


def _lowered(network: str, mesh: int) -> str:
    path = ROOT / "examples" / f"{network}.crn"
    module = translate("crn", path.read_text(), str(path), default_context())
    old = next(op for op in module.body.ops if isinstance(op, MachineOp))
    machine = dataclasses.replace(old.machine, rows=mesh, cols=mesh, dram_ports=Machine.edge_ports(mesh, mesh))
    module.body.insert_before(old, MachineOp.build(machine))
    old.erase()
    done = subprocess.run([sys.executable, "-m", "crane.opt", "-p", "lower-to-tile", "-"], input=print_op(module),
                          capture_output=True, text=True, cwd=str(ROOT), timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_tiny_resnet_training_step_on_2x2_matches_the_interpreter() -> None:
    text = _lowered("tiny_resnet", 2)
    assert text.count("tile.program") == 4 and "{offset = -1}" not in text
    report = check(parse_ir(text, "tiny_resnet.tile.mlir", default_context()), rtol=1e-5)
    assert report.ok, report.lines()
    names = {c.name for c in report.comparisons}
    assert {"loss", "stem.conv_bn.y.weight.new", "stem.conv_bn.y.weight.velocity.new"} <= names and len(names) == 41
    assert report.max_rel < 1e-5 and report.counters.noc_bytes > 0


def test_outputs_float32_cannot_resolve_are_judged_against_float64() -> None:
    ref64 = np.array([1e-19, -2e-19, 0.5e-19])
    ref32 = np.array([3e-10, -1e-10, 2e-10], np.float32)
    close = np.array([-2e-10, 2e-10, 1e-10], np.float32)
    dram = {"g": close}
    failed = compare("g", ref32, dram, 1e-5)
    assert not failed.ok
    judged = _reconsider(failed, close, ref32, ref64, 1e-5)
    assert judged.ok and judged.status == "ill-conditioned" and judged.noise is not None
    far = close * 10 * NOISE_FACTOR
    assert not _reconsider(compare("g", ref32, {"g": far}, 1e-5), far, ref32, ref64, 1e-5).ok
    # A well-conditioned output that fails stays failed: float32 resolves it.
    good = Comparison("w", "w", (3,), 0.1, 0.1, False)
    w64 = np.array([1.0, 2.0, 3.0])
    assert not _reconsider(good, w64 + 0.1, w64.astype(np.float32), w64, 1e-5).ok


def test_an_updated_weight_may_be_written_back_in_place() -> None:
    new = np.array([1.0, 2.0], np.float32)
    assert compare("w.new", new, {"w": new.copy()}, 0.0).tensor == "w"
    assert compare("w.new", new, {"w.new": new, "w": new * 0}, 0.0).ok
    missing = compare("w.new", new, {"v": new}, 1e-5)
    assert (missing.tensor, missing.ok) == ("", False)
    assert not compare("w.new", new, {"w": np.array([1.0, 2.1], np.float32)}, 1e-5).ok


def test_gradients_are_judged_given_the_simulated_forward_pass() -> None:
    from crane.exec.tile_sim.check import _activation_rows
    _, func = crn_func(ROOT / "examples" / "tiny_resnet.crn")
    config = resolve_training(func.attributes.get("training"), "", "", {}, 1)
    assert config is not None
    expand_training_step(func, config)
    trace: dict[str, np.ndarray] = {}
    plain = run_function(func, dtype="f64", seed=0, trace=trace)
    name = "stem"
    assert name in trace
    shifted = {name: trace[name] + 0.5}
    pinned = run_function(func, dtype="f64", seed=0, pinned=shifted)
    # The loss is computed from the pinned activation, so it moves; the weights before the
    # pinned layer only see the gradient that flows back through it.
    assert not np.isclose(pinned["loss"], plain["loss"])
    # A pinned activation farther from float64 than float32 allows is a failing row.
    rows = _activation_rows(shifted, {name: trace[name].astype(np.float32)}, {name: trace[name]}, 1e-5)
    assert [r.name for r in rows] == ["stem (activation)"] and not rows[0].ok
    assert _activation_rows({name: trace[name]}, {name: trace[name].astype(np.float32)},
                            {name: trace[name]}, 1e-5) == []


@pytest.mark.parametrize(("kind", "pinned", "fresh", "expected"), [
    ("relu", [0.0, 2.0, 0.0, 3.0], [3e-7, 2.0000002, -1.0, -1e-7], [0.0, 2.0, -1.0, 3.0]),
    ("relu6", [0.0, 6.0, 6.0, 1.5], [1e-7, 5.9999995, 7.0, 1.5000001], [0.0, 6.0, 7.0, 1.5]),
])
def test_a_pinned_clamp_takes_its_gradients_mask_from_the_pinned_pass(
        kind: str, pinned: list[float], fresh: list[float], expected: list[float]) -> None:
    """Judged given the simulator's forward pass, a relu whose simulated output is 0 where
    the float64 input recomputed afresh is just above 0 (rounding on the threshold) must
    mask the gradient as the simulator did: the input moves onto the pinned side of each
    bound, and equals the output between them."""
    from crane.dialects.graph import LAYER_OPS
    from crane.exec.interpreter import _reconcile
    from crane.ir.types import TensorType, f32
    from crane.ir.values import Value

    x = Value(TensorType((4,), f32), name_hint="x")
    op = LAYER_OPS[kind].build([x], [], {}, TensorType((4,), f32))
    env = {x: np.array(fresh)}
    _reconcile(op, env, np.array(pinned))
    np.testing.assert_array_equal(env[x], expected)
