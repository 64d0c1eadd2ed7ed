"""An embedding whose table is bigger than a tile's weight share streams the table once, in
slices of its columns, however many steps its tokens take.

Before, codegen cut such a part by its tokens (the steps' reads were counted without the
table, a weight) and streamed the whole table through every step: BERT-Base's token
embedding on ``gpu11`` read its 94 MB table nine times (845 MB of DRAM, 1.86e6 simulated
cycles against the model's 210k)."""

from __future__ import annotations

import pytest

from crane.dialects import default_context
from crane.exec.tile_sim.check import check
from crane.exec.tile_sim.timing import simulate
from crane.exec.tile_sim.timing_compare import compare_with_cost
from crane.ir.parser import parse_ops

from .support import lowered_text

TOKENS, VOCAB, DIM = 512, 4000, 256
LOOKUP = f"""
machine small extends gpu11 {{
  sram 1 MiB;
}}
network lookup {{
  machine small;
  input tokens: int32[1, {TOKENS}];
  tok = embedding(tokens, vocab={VOCAB}, dim={DIM});
  y = relu(tok);
  output y;
}}
"""
TABLE_BYTES = VOCAB * DIM * 4
OUTPUT_BYTES = TOKENS * DIM * 4


@pytest.fixture(scope="module")
def lookup_program(tmp_path_factory: pytest.TempPathFactory) -> str:
    return lowered_text(tmp_path_factory.mktemp("lookup"), "lookup", LOOKUP)


def test_the_table_streams_in_once(lookup_program: str) -> None:
    (module,) = parse_ops(default_context(), lookup_program, "lookup.tile.mlir")
    assert TABLE_BYTES > 1024 * 1024 // 4  # more than the weight share: it must stream
    report = simulate(module)
    figures = {c.metric: c for c in compare_with_cost(module, report)}
    ids = 4 * TOKENS * DIM  # at most one read of the ids per table column
    assert figures["dram_bytes"].simulated <= TABLE_BYTES + OUTPUT_BYTES + ids
    assert figures["latency_cycles"].analytical == pytest.approx(
        figures["latency_cycles"].simulated, rel=0.10)


def test_the_sliced_lookup_matches_the_interpreter(lookup_program: str) -> None:
    (module,) = parse_ops(default_context(), lookup_program, "lookup.tile.mlir")
    report = check(module, rtol=1e-5)
    assert report.ok, report.lines()
