"""Row-wise gradients of a training step run on every tile of their phase, not whole on one.

A loss gradient or a layernorm's input gradient reads whole rows. When its input arrives
split by channels, running it whole on one tile receives as many bytes as running halves
of the rows on two; the division is then chosen by what its busiest tile receives, so the
halves win and the tiles compute side by side (tiny_transformer's step on `mbs`: 19,547
simulated cycles with the whole ops on tile 0, 17,954 with them split)."""

from __future__ import annotations

from pathlib import Path

import pytest

from crane.dialects import default_context
from crane.exec.tile_sim.check import check
from crane.ir.parser import parse_ops
from crane.tools.opt import main as opt_main

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def tiny_transformer_step(tmp_path_factory: pytest.TempPathFactory) -> str:
    out = tmp_path_factory.mktemp("balance") / "step.tile.mlir"
    net = str(ROOT / "examples" / "tiny_transformer.crn")
    assert opt_main([net, "--machine", "mbs", "-p", "lower-to-tile", "-o", str(out)]) == 0
    return out.read_text()


def _computes_per_tile(text: str, op: str) -> list[int]:
    counts: list[int] = []
    for line in text.splitlines():
        if "tile.program" in line:
            counts.append(0)
        elif f'op = "{op}"' in line and counts:
            counts[-1] += 1
    return counts


@pytest.mark.parametrize("op", ["cross_entropy_grad_input", "layernorm_grad_input"])
def test_a_row_wise_gradient_runs_on_both_tiles(tiny_transformer_step: str, op: str) -> None:
    counts = _computes_per_tile(tiny_transformer_step, op)
    assert len(counts) == 2 and all(n > 0 for n in counts), counts


def test_the_balanced_step_matches_the_interpreter(tiny_transformer_step: str) -> None:
    (module,) = parse_ops(default_context(), tiny_transformer_step, "step.tile.mlir")
    report = check(module, rtol=1e-5)
    assert report.ok, report.lines()
