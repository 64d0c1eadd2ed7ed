"""Broadcast trees of ``Chip.spread``: every tile once, one hop per transfer where it can."""

from __future__ import annotations

import pytest

from crane.codegen.chip import Chip, Hop, broadcast_tree


def _chip(rows: int, cols: int) -> Chip:
    return Chip(rows, cols, lambda value: ("x", "activation"))


def _check_reaches_all(chip: Chip, roots: list[int], tiles: list[int], rounds: list[list[Hop]]) -> None:
    have = set(roots)
    for hops in rounds:
        assert all(holder in have for holder, _, _ in hops)  # only holders send
        targets = [target for _, target, _ in hops]
        assert len(targets) == len(set(targets)) and not have.intersection(targets)
        have.update(targets)
    assert have == set(roots) | set(tiles)


@pytest.mark.parametrize(("rows", "cols", "root"), [(4, 4, 0), (4, 4, 5), (8, 8, 27), (2, 8, 15)])
def test_a_whole_mesh_is_flooded_one_hop_at_a_time(rows: int, cols: int, root: int) -> None:
    chip = _chip(rows, cols)
    tiles = list(range(rows * cols))
    rounds = broadcast_tree(chip, [root], tiles)
    _check_reaches_all(chip, [root], tiles, rounds)
    assert all(chip.hops(h, t) == 1 for hops in rounds for h, t, _ in hops)
    # As many rounds as the farthest tile is away: the data front moves a hop per round.
    assert len(rounds) == max(chip.hops(root, t) for t in tiles)


def test_scattered_tiles_are_served_by_the_nearest_idle_holder() -> None:
    chip = _chip(4, 4)
    # Tile 8 is two hops from tile 0 with no waiting tile between them: it gets the data
    # in the second round, from tile 0 (idle then), while tile 1 floods on along the row.
    rounds = broadcast_tree(chip, [0], [0, 1, 2, 3, 8])
    assert [[(h, t) for h, t, _ in hops] for hops in rounds] == [[(0, 1)], [(1, 2), (0, 8)], [(2, 3)]]
    corners = [0, 3, 12, 15]
    _check_reaches_all(chip, [0], corners, broadcast_tree(chip, [0], corners))
