"""A transformer layer's training step on one tile whose SRAM forces the attention
gradients into steps. Before: ``matmul_grad_input`` computes ``dQ`` and ``dK`` at once;
stepping over query rows moved ``dQ``'s window every step while ``dK`` sums over them, and
one window per op closed ``dK`` each step, keeping only the last step's rows (``dK`` off
by 49%). Now each result keeps its own window, and an op with several results cuts at most
one reduction axis into steps. A learning rate of 1 makes a wrong gradient visible in the
updated weights."""

from __future__ import annotations

from pathlib import Path

import pytest

from crane.dialects import default_context
from crane.exec.tile_sim.check import check
from crane.ir.parser import parse_ops
from crane.tools.opt import main as opt_main

ROOT = Path(__file__).resolve().parents[3]
NETWORK = f"""
import "{ROOT / 'examples' / 'lib' / 'transformer.crn'}";
network layer {{
  input x: f32[1, 32, 64];
  h = encoder_layer(x, 64, 2, 128);
  output h;
}}
"""


@pytest.mark.parametrize("sram", ["8 KB", "32 KB"])
def test_attention_gradients_in_steps_match(tmp_path: Path, sram: str) -> None:
    (tmp_path / "layer.crn").write_text(NETWORK)
    (tmp_path / "m.crn").write_text(f'import "{ROOT / "examples" / "machines" / "edge.crn"}";\n'
                                    f"machine m extends edge {{ mesh 1 x 1; sram {sram}; }}\n")
    out = tmp_path / "layer.tile.mlir"
    pipeline = ("expand-attention,autodiff{attach-loss=cross_entropy lr=1.0},"
                "segment{sram-account=true},map,codegen,alloc")
    assert opt_main([str(tmp_path / "layer.crn"), "--machine", f"{tmp_path / 'm.crn'}:m",
                     "-p", pipeline, "-o", str(out)]) == 0
    (module,) = parse_ops(default_context(), out.read_text(), str(out))
    report = check(module, rtol=1e-5)
    assert report.ok, report.lines()
