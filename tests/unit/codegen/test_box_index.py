"""``BoxIndex``: the boxes meeting a box, as a scan of all of them finds them."""

from __future__ import annotations

import random

from crane.codegen.boxes import Box, BoxIndex, covers, intersect


def _random_box(rng: random.Random, shape: tuple[int, ...]) -> Box:
    spans = []
    for n in shape:
        a = rng.randrange(n)
        spans.append((a, rng.randrange(a + 1, n + 1)))
    return tuple(spans)


def test_the_index_finds_exactly_the_boxes_a_scan_finds() -> None:
    rng = random.Random(7)
    for shape in ((64,), (4, 32, 9), (2, 8, 16, 16)):
        index, added = BoxIndex(), []
        for tag in range(300):
            box = _random_box(rng, shape)
            index.add(box, tag)
            added.append((box, tag))
            asked = _random_box(rng, shape)
            assert index.meeting(asked) == [e for e in added if intersect(e[0], asked) is not None]
    assert BoxIndex().meeting(((0, 4),)) == []


def test_a_value_stored_in_steps_is_covered_by_the_steps() -> None:
    # A layer's output stored as 1,000 row steps: a box over many of them is covered, one
    # reaching past the stored rows is not.
    index = BoxIndex()
    for row in range(1000):
        index.add(((0, 2), (row, row + 1), (0, 64)), 0)
    inside = ((0, 2), (100, 400), (0, 64))
    assert covers([b for b, _ in index.meeting(inside)], inside)
    beyond = ((0, 2), (900, 1001), (0, 64))
    assert not covers([b for b, _ in index.meeting(beyond)], beyond)
