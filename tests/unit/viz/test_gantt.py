"""The Gantt chart: its data, and PNG/SVG files checked element by element."""

from __future__ import annotations

import re

import pytest

from crane.dialects.segment import BlockOp
from crane.viz.figure import DPI, block_colour, shade
from crane.viz.gantt import Bar, gantt_data, render_gantt, short_label, spread, tile_runs
from crane.viz.source import schedules
from crane.viz.timeline import timeline

from .support import (
    SVG,
    compiled,
    decode_png,
    png_size,
    shapes_in,
    svg_ids,
    svg_root,
    svg_texts,
)


def _expected_bars(blocks: tuple[BlockOp, ...]) -> set[str]:
    """(block, state, column) of every active column of every busy state, from the IR."""
    found = set()
    for b, op in enumerate(blocks):
        counts = list(op.attributes["workloads"])
        for i, row in enumerate(op.tile_split()):
            found |= {f"bar-b{b}-s{i}-c{j}" for j, t in enumerate(row) if t and counts[i]}
    return found


def _hex(rgb: tuple[float, float, float]) -> str:
    return "#" + "".join(f"{round(255 * v):02x}" for v in rgb)


def _box(d: str) -> tuple[float, float]:
    """Width and height of a rectangle path's bounding box."""
    numbers = [float(v) for v in re.findall(r"-?\d+(?:\.\d+)?", d)]
    xs, ys = numbers[0::2], numbers[1::2]
    return max(xs) - min(xs), max(ys) - min(ys)


def test_gantt_data_has_one_bar_per_state_and_sub_block() -> None:
    module = compiled("segment,map")
    gantt = gantt_data(timeline(module))
    (schedule,) = schedules(module)
    assert {bar.gid for bar in gantt.bars} == _expected_bars(schedule.blocks)
    assert gantt.rows == 16 and "@tiny_resnet on edge (4x4 tiles)" in gantt.title
    assert any("'map' pass's placement" in note for note in gantt.notes)


def test_svg_has_a_labelled_group_per_bar_sized_by_time_and_tiles() -> None:
    module = compiled("segment,map")
    gantt = gantt_data(timeline(module))
    root = svg_root(render_gantt(gantt, "svg"))
    groups = svg_ids(root, "bar-")
    assert set(groups) == {bar.gid for bar in gantt.bars}
    defs = {e.get("id"): e.get("d", "") for e in root.iter(f"{SVG}path") if e.get("id")}
    px_per_cycle, px_per_tile = [], []
    for bar in gantt.bars:
        group = groups[bar.gid]
        uses = [e for e in group.iter() if e.tag in (f"{SVG}use", f"{SVG}path") and
                "fill:" in e.get("style", "")]
        runs = tile_runs(bar.tiles)
        assert len(uses) == len(runs), bar.gid
        colour = _hex(shade(block_colour(bar.block), bar.column, bar.columns))
        assert all(f"fill: {colour}" in e.get("style", "") for e in uses), bar.gid
        for element, (_, count) in zip(uses, runs, strict=True):
            ref = element.get("{http://www.w3.org/1999/xlink}href", "")
            width, height = _box(defs[ref[1:]] if ref else element.get("d", ""))
            if bar.cycles > gantt.total_cycles / 100:  # wide enough to measure
                px_per_cycle.append(width / bar.cycles)
            px_per_tile.append(height / count)
    assert max(px_per_cycle) == pytest.approx(min(px_per_cycle), rel=0.02)
    assert max(px_per_tile) == pytest.approx(min(px_per_tile), rel=0.02)
    texts = svg_texts(root)
    for block in gantt.blocks:
        assert short_label(f"{block.index}: {block.label}") in texts
    assert gantt.title in texts


def test_training_svg_shows_phases_and_the_optimizer_update() -> None:
    gantt = gantt_data(timeline(compiled("segment,map", training=True)))
    root = svg_root(render_gantt(gantt, "svg"))
    assert {p for p, _, _ in gantt.phases} == {"forward", "bw1", "bw2"}
    assert len(svg_ids(root, "phase-")) == len(gantt.phases)
    assert shapes_in(svg_ids(root, "step-0")["step-0"]) >= 1
    texts = svg_texts(root)
    assert "optimizer update" in texts and "bw2" in texts
    assert any(b.phase == "bw1" and f"{b.index}: {b.label}" in texts for b in gantt.blocks)


def test_png_is_valid_and_shows_every_wide_block() -> None:
    gantt = gantt_data(timeline(compiled("segment,map")))
    data = render_gantt(gantt, "png")
    width, height = png_size(data)
    assert width == 14 * DPI and abs(height - (2.3 + 1.1 + 0.28 * 16) * DPI) <= 1
    pixels = decode_png(data)
    rgb = {tuple(int(round(v * 255)) for v in px[:3])
           for px in pixels.reshape(-1, pixels.shape[-1])[:: 7]}
    for block in gantt.blocks:
        if block.cycles < gantt.total_cycles / 20:
            continue
        colour = block_colour(block.index)
        wanted = tuple(int(colour[k: k + 2], 16) for k in (1, 3, 5))
        assert any(max(abs(a - b) for a, b in zip(c, wanted, strict=True)) <= 2 for c in rgb), \
            f"block {block.index}'s colour {colour} is not in the picture"


def test_helpers() -> None:
    assert tile_runs([5, 0, 1, 2, 7, 6]) == [(0, 3), (5, 3)]
    assert short_label("abcdefghij", 7) == "abc…hij"
    assert short_label("short", 7) == "short"
    placed = spread([1.0, 1.0, 1.0, 10.0], 2.0, 0.0, 100.0)
    assert placed == [1.0, 3.0, 5.0, 10.0]
    assert spread([99.0, 99.0], 2.0, 0.0, 100.0) == [98.0, 100.0]
    bar = Bar(3, 1, 2, 4, "conv", 0.0, 10.0, (0, 1))
    assert bar.gid == "bar-b3-s1-c2"
