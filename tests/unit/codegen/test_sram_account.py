"""One account of SRAM: ``segment`` accepts a plan exactly when ``alloc`` places it.

Random small networks (convolution chains, for inference and for a training step) on
random meshes whose SRAM ranges from too small to ample. For each, the same schedule is
lowered twice: once with plain ``segment`` (the plan goes through to
``alloc`` unchecked) and once with ``segment{sram-account=true}`` (as ``lower-to-tile``
runs it). ``segment`` must accept exactly the
plans ``alloc`` places, and report as its ``peak_sram_bytes`` the peak ``alloc`` places;
what it accepts computes what the interpreter computes (``crane-sim --check``).
"""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from crane.dialects import default_context
from crane.exec.tile_sim.check import check
from crane.ir.parser import parse_ops
from crane.tools.opt import main as opt_main

SEEDS = range(12)


def _network(rng: random.Random, train: bool) -> str:
    size = rng.choice((8, 12, 16))
    channels = rng.choice((4, 8, 16))
    layers = [f"a0 = relu(conv2d(x, out={channels}, kernel=3, padding=1));"]
    for k in range(1, rng.randint(1, 3)):
        channels = rng.choice((4, 8, 16, 32))
        layers.append(f"a{k} = relu(conv2d(a{k - 1}, out={channels}, kernel=3, padding=1));")
    last = f"a{len(layers) - 1}"
    head = "input labels: int32[2];" if train else ""
    tail = "train { loss cross_entropy(logits, labels); optimizer sgd(lr=0.1); }" if train else ""
    body = "\n  ".join(layers)
    return f"""
network random_net {{
  input x: f32[2, 3, {size}, {size}];
  {head}
  {body}
  logits = linear(flatten(global_avg_pool({last})), out=5);
  output logits;
  {tail}
}}
"""


def _machine(rng: random.Random) -> str:
    rows, cols = rng.choice(((1, 1), (1, 2), (2, 2), (2, 3)))
    kib = rng.choice((0.25, 0.5, 1, 2, 4, 64))
    return f'import "{_EDGE}";\nmachine small extends edge {{ mesh {rows} x {cols}; sram {int(kib * 1024)} byte; }}\n'


_EDGE = Path(__file__).resolve().parents[3] / "examples" / "machines" / "edge.crn"


def _lower(source: Path, machine: Path, segment: str, out: Path) -> tuple[int, str]:
    pipeline = ("autodiff," if "train" in source.read_text() else "") + \
        f"{segment},map,codegen,alloc"
    code = opt_main([str(source), "--machine", f"{machine}:small", "-p", pipeline,
                     "-o", str(out)])
    return code, out.read_text() if code == 0 else ""


def _figure(text: str, key: str) -> int:
    found = re.search(rf"{key} = (\d+)", text)
    assert found is not None, f"no {key} in the output"
    return int(found.group(1))


@pytest.mark.parametrize("seed", SEEDS)
def test_segment_accepts_exactly_what_alloc_places(tmp_path: Path, seed: int,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    rng = random.Random(seed)
    source = tmp_path / "net.crn"
    source.write_text(_network(rng, train=rng.random() < 0.5))
    machine = tmp_path / "small.crn"
    machine.write_text(_machine(rng))
    unchecked, _ = _lower(source, machine, "segment", tmp_path / "a.mlir")
    capsys.readouterr()
    checked, text = _lower(source, machine, "segment{sram-account=true}", tmp_path / "b.mlir")
    errors = capsys.readouterr().err
    assert (checked == 0) == (unchecked == 0), errors
    if checked != 0:
        refusals = ("does not fit", "cannot be lowered", "too small to lower")
        assert any(refusal in errors for refusal in refusals), errors
        assert "runs out of SRAM" not in errors, "alloc, not segment, found the overflow"
        return
    assert _figure(text, "peak_sram_bytes") == _figure(text, "peak_bytes_max")
    (module,) = parse_ops(default_context(), text, "b.mlir")
    report = check(module, rtol=1e-5)
    assert report.ok, report.lines()
