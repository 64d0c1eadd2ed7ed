"""The ``tile`` pass: tiled IR run by the reference interpreter equals the untiled IR
(outputs and every weight gradient, float32, rtol 1e-5), automatic choice under a memory
cap, diagnostics, recomputation in backward and printed IR that re-parses."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from spatial_tile_testing import (
    assert_same,
    check_tiling,
    darknet19_trunk_crn,
    errors,
    func_of,
    gradient_step,
    module_of,
    run_tile,
    vgg16_trunk_crn,
)

from crane.autodiff.recompute import RECOMPUTE_ATTR, RECOMPUTED_ATTR, group_of
from crane.autodiff.stats import training_stats
from crane.dialects import default_context
from crane.dialects.graph import LayerOp
from crane.exec.interpreter import run_function
from crane.ir.attributes import DenseIntsAttr, DictAttr, IntAttr, StringAttr
from crane.ir.core import Value
from crane.ir.parser import parse_ops
from crane.ir.printer import print_op
from crane.ir.verifier import verify
from crane.passes.options import OptionValueError
from crane.passes.spatial_tile import SpatialTile, parse_size, rest_bytes
from crane.tiling.chains import find_chains
from crane.tiling.memory import CostModel, MemoryModel
from crane.tiling.plan import Planner

ROOT = Path(__file__).resolve().parents[3]
COST = CostModel.of_machine(8704 * 1.35e9, 616e9)
"""The cost model of the gpu11 machine (the pass's default when a module names none)."""

STRIDED = """
network strided {
  input image: f32[1, 2, 23, 31];
  a = tanh(conv2d(image, out=3, kernel=[3, 5], stride=[2, 1], dilation=[1, 2], padding=[2, 0, 1, 3]));
  b = avg_pool2d(a, kernel=3, stride=2, padding=1);
  c = sigmoid(conv2d(b, out=4, kernel=3, dilation=2, padding=same, bias=true));
  d = max_pool2d(c, kernel=[2, 3], stride=[1, 2], padding=[1, 0, 1, 1]);
  e = conv2d(d, out=2, kernel=1, stride=2);
  output e;
}
"""

GROUPED = """
network grouped {
  input image: f32[1, 4, 14, 11];
  a = conv2d(image, out=6, kernel=3, groups=2, padding=1);
  b = gelu(conv2d(a, kernel=5, stride=2, depthwise=true, padding=2));
  c = silu(conv2d(b, out=2, kernel=1));
  output c;
}
"""

SHORT = """
network short {
  input image: f32[1, 3, HW];
  a = relu(conv2d(image, out=64, kernel=3, padding=1, bias=false));
  b = max_pool2d(relu(conv2d(a, out=64, kernel=3, padding=1, bias=false)), kernel=2);
  c = relu(conv2d(b, out=128, kernel=3, padding=1, bias=false));
  output c;
}
"""

PADDED_1X1 = """
network padded {
  input image: f32[1, 2, 4, 4];
  a = conv2d(image, out=2, kernel=1, padding=2);
  output a;
}
"""

MIXED = """
network mixed {
  input image: f32[2, 3, 16, 16];
  a = relu(batchnorm(conv2d(image, out=4, kernel=3, padding=1)));
  b = max_pool2d(conv2d(a, out=4, kernel=3, padding=1), kernel=2);
  f = linear(flatten(b), out=5);
  output f;
}
"""


def _ops(module: object, name: str) -> list[LayerOp]:
    return [op for op in module.walk() if isinstance(op, LayerOp) and op.kind.name == name]  # type: ignore[attr-defined]


@pytest.mark.parametrize(("hw", "tile"), [
    ((64, 64), SpatialTile(segments=(10, 21), grid=(3, 2, 2, 1))),
    ((96, 160), SpatialTile(grid=(2, 3))),
], ids=["64x64-two-segments-uneven", "96x160-one-segment"])
def test_vgg16_trunk_tiled_equals_untiled(hw: tuple[int, int], tile: SpatialTile) -> None:
    text = vgg16_trunk_crn(hw)
    check_tiling(text, tile)


def test_darknet19_trunk_tiled_equals_untiled() -> None:
    # 64x64: the first 8 ops end at 8x8 (3 uneven rows, 2 columns), the rest at 2x2.
    text = darknet19_trunk_crn((64, 64))
    tile = SpatialTile(segments=(8, 16), grid=(3, 2, 2, 2))
    check_tiling(text, tile)


def test_darknet19_trunk_non_square() -> None:
    text = darknet19_trunk_crn((96, 160))
    check_tiling(text, SpatialTile(segments=(8,), grid=(4, 3)))


@pytest.mark.parametrize("grid", [(3, 4), (2, 3), (1, 4), (3, 1)])
def test_strided_dilated_padded_chain(grid: tuple[int, int]) -> None:
    check_tiling(STRIDED, SpatialTile(grid=grid))


@pytest.mark.parametrize("grid", [(2, 2), (3, 2)])
def test_grouped_and_depthwise_convs(grid: tuple[int, int]) -> None:
    check_tiling(GROUPED, SpatialTile(grid=grid))


def test_patches_get_padding_only_at_true_borders() -> None:
    module = module_of(vgg16_trunk_crn((32, 32)))
    assert not errors(run_tile(module, SpatialTile(segments=(2,), grid=(3, 3))))
    convs = [op for op in _ops(module, "conv2d") if "tile" in op.attributes]
    paddings: dict[tuple[int, int], tuple[int, ...]] = {}
    for conv in convs:
        patch = conv.attributes["tile"]
        assert isinstance(patch, DictAttr)
        where = patch.get("patch")
        assert isinstance(where, DenseIntsAttr)
        place = (where.values[0], where.values[1])
        paddings[place] = tuple(conv.layer_attrs["padding"])  # type: ignore[arg-type]
    assert paddings[(0, 0)] == (1, 0, 1, 0)
    assert paddings[(1, 1)] == (0, 0, 0, 0)
    assert paddings[(2, 2)] == (0, 1, 0, 1)
    assert paddings[(0, 2)] == (1, 0, 0, 1)


def test_chains_end_at_batchnorm_and_linear() -> None:
    module = module_of(MIXED)
    chains = find_chains(func_of(module))
    assert [[op.kind.name for op in c.ops] for c in chains] == [["conv2d"], ["relu", "conv2d", "max_pool2d"]]
    assert not errors(run_tile(module, SpatialTile(segments=(1, 3), grid=(2, 2, 2, 2))))
    assert len(_ops(module, "batchnorm")) == 1 and len(_ops(module, "linear")) == 1
    check_tiling(MIXED, SpatialTile(segments=(1, 3), grid=(2, 2, 2, 2)))


def test_backward_recomputes_patches_and_keeps_less() -> None:
    text = vgg16_trunk_crn((64, 64))
    steps = {}
    for recompute in (True, False):
        module = module_of(text)
        assert not errors(run_tile(module, SpatialTile(grid=(2, 2), recompute=recompute)))
        steps[recompute] = gradient_step(func_of(module))
    step = steps[True]
    ops = list(step.body.ops)
    copies = [op for op in ops if RECOMPUTED_ATTR in op.attributes]
    assert copies and not any(RECOMPUTED_ATTR in op.attributes for op in steps[False].body.ops)
    # No backward op of a patch reads a value that patch's forward pass produced.
    forward_groups: dict[Value, str | None] = {r: group_of(op) for op in ops if isinstance(op, LayerOp) for r in op.results
                      if RECOMPUTE_ATTR in op.attributes}
    for op in ops:
        group = group_of(op)
        if group is None or isinstance(op, LayerOp):
            continue
        assert all(forward_groups.get(v) != group for v in op.operands), op
    kept = {k: training_stats(s)["activation_bytes"] for k, s in steps.items()}
    assert kept[True] < kept[False] / 3
    assert_same(run_function(steps[True], dtype="f32"), run_function(steps[False], dtype="f32"))


def test_printed_tiled_ir_reparses_and_runs_the_same() -> None:
    module = module_of(STRIDED)
    assert not errors(run_tile(module, SpatialTile(grid=(3, 2))))
    text = print_op(module)
    again = parse_ops(default_context(), text, "tiled.mlir")
    assert len(again) == 1 and print_op(again[0]) == text
    assert not verify(again[0])
    first = run_function(gradient_step(func_of(module)), dtype="f32")
    second = run_function(gradient_step(func_of(again[0])), dtype="f32")
    assert_same(second, first, rtol=0.0)


def test_automatic_plan_tiles_vgg16_at_20480_within_11gb() -> None:
    module = module_of(vgg16_trunk_crn((20480, 20480), divisor=1))
    ctx = run_tile(module, SpatialTile(memory_cap="11GB"))
    assert not errors(ctx), errors(ctx)
    func = func_of(module)
    plan = func.attributes["tile_plan"]
    assert isinstance(plan, DictAttr)
    peak, cap = plan.get("predicted_peak_bytes"), plan.get("memory_cap_bytes")
    assert isinstance(peak, IntAttr) and isinstance(cap, IntAttr) and peak.value <= cap.value == 11 * 10**9
    assert ctx.statistics["spatial-tile"]["tiles"] > 1
    # The pass applies exactly what the planner chose for this chain.
    chain = find_chains(func_of(module_of(vgg16_trunk_crn((20480, 20480), divisor=1))))[0]
    planner = Planner(chain.layers, chain.hw(0), MemoryModel(), COST)
    segments = plan.get("segments")
    assert isinstance(segments, StringAttr)
    assert segments.value == f"%{chain.ops[0].results[0].name_hint}: {planner.search(11 * 10**9).describe()}"


def test_machine_capacity_is_the_default_cap() -> None:
    text = SHORT.replace("HW", "512, 512").replace("{\n", "{\n  machine gpu11;\n", 1)
    module = module_of(text)
    assert not errors(run_tile(module, SpatialTile()))
    plan = func_of(module).attributes["tile_plan"]
    assert isinstance(plan, DictAttr) and plan.get("memory_cap_bytes") == IntAttr(11 * 10**9)


def test_the_plan_counts_the_batch() -> None:
    peaks = []
    for batch in (1, 2):
        module = module_of(SHORT.replace("1, 3, HW", f"{batch}, 3, 2048, 2048"))
        assert not errors(run_tile(module, SpatialTile(memory_cap="1TB")))
        plan = func_of(module).attributes["tile_plan"]
        assert isinstance(plan, DictAttr)
        peak = plan.get("predicted_peak_bytes")
        assert isinstance(peak, IntAttr)
        chain = find_chains(func_of(module_of(SHORT.replace("1, 3, HW", f"{batch}, 3, 2048, 2048"))))[0]
        planner = Planner(chain.layers, chain.hw(0), MemoryModel(batch=batch), COST)
        assert peak.value == planner.no_checkpointing().peak_bytes
        peaks.append(peak.value)
    # Plain training either way (1 TB is roomy): activations double, weights do not.
    assert 1.9 < peaks[1] / peaks[0] < 2


def test_too_small_a_cap_names_the_smallest_memory() -> None:
    module = module_of(SHORT.replace("HW", "512, 512"))
    func = func_of(module)
    ctx = run_tile(module, SpatialTile(memory_cap="0.6GB"))
    chain = find_chains(func)[0]
    planner = Planner(chain.layers, chain.hw(0), MemoryModel(), COST)
    smallest = planner.minimum_bytes() + rest_bytes(func, chain, 1)
    assert errors(ctx) == [f"no tiling plan fits the memory cap of 600000000 bytes (0.56 GiB); the smallest "
                           f"memory that would work is {smallest} bytes ({smallest / 2**30:.2f} GiB)"]
    # The function is left as it was.
    assert "tile_plan" not in func.attributes and not _ops(module, "slice")
    # And a cap of exactly that size fits.
    assert not errors(run_tile(module, SpatialTile(memory_cap=f"{smallest}B")))
    assert _ops(module, "slice")


@pytest.mark.parametrize(("tile", "message"), [
    (SpatialTile(grid=(2, 2, 2)), "grid= needs one rows,cols pair for all segments or one per segment (1)"),
    (SpatialTile(grid=(9, 2)), "cannot tile this segment's output: cannot split an extent of 3 into 9"),
    (SpatialTile(segments=(4, 9), grid=(2, 2)), "a segment of 9 ops does not fit the chain"),
    (SpatialTile(segments=(4,)), "segments= needs grid="),
    (SpatialTile(), "no memory cap: the module names no machine"),
])
def test_bad_options_are_reported(tile: SpatialTile, message: str) -> None:
    module = module_of(STRIDED)
    before = print_op(module)
    found = errors(run_tile(module, tile))
    assert len(found) == 1 and message in found[0], found
    assert print_op(module) == before


@pytest.mark.parametrize(("cap", "message"), [
    ("11", "got '11'; memory-cap '11' needs a unit"),
    ("11Gb", "got '11Gb'; unknown unit 'Gb'; did you mean 'GB'?"),
])
def test_bad_memory_caps_are_refused_when_the_pass_is_built(cap: str, message: str) -> None:
    with pytest.raises(OptionValueError, match=re.escape(message)):
        SpatialTile(memory_cap=cap)


def test_tiles_reading_only_padding_are_refused() -> None:
    module = module_of(PADDED_1X1)
    found = errors(run_tile(module, SpatialTile(grid=(4, 4))))
    assert found == ["tile (row 0, col 0) would run this op on an empty region (its windows read only "
                     "padding); use a coarser grid"]
    assert not _ops(module, "slice")
    # Coarser grids whose tiles all touch the image are fine.
    check_tiling(PADDED_1X1, SpatialTile(grid=(2, 2)))


def test_tiling_a_training_step_is_refused() -> None:
    module = module_of(STRIDED)
    gradient_step(func_of(module))
    assert errors(run_tile(module, SpatialTile(grid=(2, 2)))) == ["spatial-tile runs on forward networks: put it before autodiff"]


def test_parse_size() -> None:
    assert parse_size("11GB") == 11 * 10**9
    assert parse_size("10.5 GiB") == int(10.5 * 2**30)
    assert parse_size("512MiB") == 512 * 2**20


def test_bundled_trunk_example_and_cli(tmp_path: Path) -> None:
    module = module_of((ROOT / "examples" / "vgg16_trunk.crn").read_text(), "vgg16_trunk.crn")
    assert not errors(run_tile(module, SpatialTile(grid=(2, 2))))
    assert len(_ops(module, "conv2d")) == 13 * 4 and not verify(module)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_random_chains_and_grids_through_the_ir(data: st.DataObject) -> None:
    hw = (data.draw(st.integers(6, 20)), data.draw(st.integers(6, 20)))
    channels = data.draw(st.integers(1, 3))
    lines, size = [], hw
    for index in range(data.draw(st.integers(1, 4))):
        line, size = _random_op(data, f"v{index}", f"v{index - 1}" if index else "image", size)
        lines.append(line)
    last = f"v{len(lines) - 1}"
    text = (f"network prop {{\n  input image: f32[1, {channels}, {hw[0]}, {hw[1]}];\n  "
            + "\n  ".join(lines) + f"\n  output {last};\n}}\n")
    out = size
    grid = (data.draw(st.integers(1, min(out[0], 4))), data.draw(st.integers(1, min(out[1], 4))))
    module = module_of(text)
    found = errors(run_tile(module, SpatialTile(grid=grid)))
    if found:
        # Only a grid so fine that a border tile reads pure padding may be refused.
        assert "empty region" in found[0], found
        return
    check_tiling(text, SpatialTile(grid=grid))


def _random_op(data: st.DataObject, name: str, source: str, hw: tuple[int, int]) -> tuple[str, tuple[int, int]]:
    """A random conv/pool/relu line on ``source`` that fits ``hw``, and its output size."""
    kind = data.draw(st.sampled_from(["conv", "conv", "max", "avg", "relu"]))
    if kind == "relu":
        return f"{name} = relu({source});", hw
    kernel = (data.draw(st.integers(1, 3)), data.draw(st.integers(1, 3)))
    stride = (data.draw(st.integers(1, 2)), data.draw(st.integers(1, 2)))
    dilation = (data.draw(st.integers(1, 2)), data.draw(st.integers(1, 2))) if kind == "conv" else (1, 1)
    limit = [2, 2, 2, 2] if kind == "conv" else [kernel[0] // 2] * 2 + [kernel[1] // 2] * 2
    pad = [data.draw(st.integers(0, cap)) for cap in limit]
    span = [dilation[i] * (kernel[i] - 1) + 1 for i in (0, 1)]
    out = tuple((hw[i] + pad[2 * i] + pad[2 * i + 1] - span[i]) // stride[i] + 1 for i in (0, 1))
    if min(out) < 1 or any(hw[i] + pad[2 * i] + pad[2 * i + 1] < span[i] for i in (0, 1)):
        return f"{name} = relu({source});", hw
    geometry = (f"kernel=[{kernel[0]}, {kernel[1]}], stride=[{stride[0]}, {stride[1]}], "
                f"padding=[{pad[0]}, {pad[1]}, {pad[2]}, {pad[3]}]")
    if kind == "conv":
        channels = data.draw(st.integers(1, 3))
        return (f"{name} = conv2d({source}, out={channels}, {geometry}, "
                f"dilation=[{dilation[0]}, {dilation[1]}]);", (out[0], out[1]))
    pool = "max_pool2d" if kind == "max" else "avg_pool2d"
    return f"{name} = {pool}({source}, {geometry});", (out[0], out[1])
