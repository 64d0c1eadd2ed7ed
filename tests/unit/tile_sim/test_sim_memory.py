"""The functional simulator holds the live buffers of a run, not every buffer ever made."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
from tile_sim_testing import ROOT, crn_func, lower_whole_ops

from crane.dialects import default_context
from crane.exec.tile_sim.functional import _Run, scratch_tensors, simulate
from crane.exec.tile_sim.liveness import last_uses
from crane.exec.tile_sim.memory import Sram
from crane.ir.core import Operation
from crane.ir.lexer import TokenStream, tokenize
from crane.ir.types import BufferType
from crane.tools.inputs import parse_ir
from crane.tools.opt import main as opt_main


def test_last_uses_names_each_buffer_once_at_its_last_instruction() -> None:
    _, func = crn_func(ROOT / "examples" / "tiny_resnet.crn")
    program = next(p for p in lower_whole_ops(func, 1, 2).walk() if p.name == "tile.program")
    ops = program.instructions  # type: ignore[attr-defined]
    dead = last_uses(ops)
    listed = [value for values in dead.values() for value in values]
    assert len(listed) == len(set(listed)) > 10
    for index, values in dead.items():
        for value in values:
            users = [i for i, op in enumerate(ops) if value in (*op.operands, *op.results)]
            assert isinstance(value.type, BufferType) and max(users) == index


def test_a_run_ends_with_no_buffer_held_and_never_holds_them_all(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    _, func = crn_func(ROOT / "examples" / "tiny_resnet.crn")
    lowered = lower_whole_ops(func, 1, 2)
    srams: list[Sram] = []
    most: dict[int, int] = {}
    made: dict[int, int] = {}
    allocate = Sram.allocate

    def counting(self: Sram, value, offset, size, op) -> None:  # type: ignore[no-untyped-def]
        allocate(self, value, offset, size, op)
        if self not in srams:
            srams.append(self)
        made[self.tile] = made.get(self.tile, 0) + 1
        most[self.tile] = max(most.get(self.tile, 0), len(self.arrays))

    monkeypatch.setattr(Sram, "allocate", counting)
    simulate(lowered)
    assert srams and all(not s.arrays and not s.placed and not s.written for s in srams)
    assert all(most[tile] < made[tile] for tile in made)


def test_bytes_held_stay_those_of_the_live_buffers() -> None:
    """On one tile every buffer of the network is made in turn; the run holds a few."""
    _, func = crn_func(ROOT / "examples" / "tiny_resnet.crn")
    lowered = lower_whole_ops(func, 1, 1)
    program = next(p for p in lowered.walk() if p.name == "tile.program")
    every = sum(int(np.prod(v.type.shape)) * 4 for op in program.instructions  # type: ignore[attr-defined]
                for v in op.results if isinstance(v.type, BufferType))
    tracemalloc.start()
    simulate(lowered)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < every / 2, (peak, every)


def test_the_token_stream_reads_what_tokenize_reads_in_a_bounded_window() -> None:
    text = "builtin.module {\n" + "\n".join(
        f'  "test.op"() {{value = {i}, name = "n{i}", shape = array<i64: {i}, 2>}} : () -> ()'
        for i in range(3000)) + "\n}\n"
    every = tokenize(text)
    assert len(every) > 10 * TokenStream.KEEP
    stream = TokenStream(text)
    for index, token in enumerate(every):
        got = stream.at(index)
        assert (got.kind, got.text, got.start) == (token.kind, token.text, token.start)
        assert len(stream._window) <= 2 * TokenStream.KEEP + TokenStream.CHUNK
    assert stream.at(len(every) + 10).kind == "eof"


@pytest.fixture(scope="module")
def training_step(tmp_path_factory: pytest.TempPathFactory) -> Operation:
    """tiny_resnet's training step lowered to ``mesh2x2``: activations and gradients
    spill to DRAM there."""
    out = tmp_path_factory.mktemp("step") / "step.tile.mlir"
    assert opt_main([str(ROOT / "examples" / "tiny_resnet.crn"), "--machine",
                     str(ROOT / "examples" / "machines" / "mesh2x2.crn"),
                     "-p", "lower-to-tile", "-o", str(out)]) == 0
    return parse_ir(out.read_text(), str(out), default_context())


def test_released_scratch_tensors_leave_dram_and_change_no_output(training_step: Operation) -> None:
    """``release`` drops scratch tensors after their last access; weights and outputs stay,
    bit for bit what a run that keeps everything computes."""
    lowered = training_step
    scratch = scratch_tensors(lowered)
    kept, _ = simulate(lowered)
    dram, _ = simulate(lowered, release=scratch | {"loss"})
    assert len(scratch) > 10 and "loss" not in scratch
    assert set(dram) == set(kept) - scratch
    assert all(np.array_equal(dram[name], kept[name]) for name in dram)


def test_a_scratch_tensor_is_dropped_after_its_last_access_not_before(  # type: ignore[no-untyped-def]
        monkeypatch, training_step: Operation) -> None:
    lowered = training_step
    seen: list[tuple[str, int]] = []
    accessed = _Run.accessed

    def watching(self: _Run, tensor: str) -> None:
        accessed(self, tensor)
        seen.append((tensor, len(self.dram)))

    monkeypatch.setattr(_Run, "accessed", watching)
    dram, _ = simulate(lowered, release=scratch_tensors(lowered))
    sizes = [n for _, n in seen]
    assert min(sizes) == len(dram) and max(sizes) > len(dram)
