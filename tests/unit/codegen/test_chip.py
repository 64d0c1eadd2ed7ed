"""Broadcast trees of ``Chip.spread``: every tile once, one hop per transfer where it can, and
a deep tree's buffer forwarded piece by piece."""

from __future__ import annotations

import pytest

from crane.codegen.chip import PIECE_ELEMENTS, Chip, Hop, broadcast_tree, cut_through
from crane.codegen.program import Alloc, Recv, Send
from crane.ir.types import TensorType, f32
from crane.ir.values import Value


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


def _covered(shape: tuple[int, ...], windows: list) -> list[int]:
    """Flat indices of ``shape`` each window covers, checking each is one contiguous range."""
    strides = [1] * len(shape)
    for axis in range(len(shape) - 2, -1, -1):
        strides[axis] = strides[axis + 1] * shape[axis + 1]
    covered = []
    for offsets, extent in windows:
        flat = sorted(sum((o + i) * s for o, i, s in zip(offsets, index, strides, strict=True))
                      for index in _indices(extent))
        assert flat == list(range(flat[0], flat[0] + len(flat)))  # contiguous
        covered += flat
    return covered


def _indices(extent: tuple[int, ...]) -> list[tuple[int, ...]]:
    out: list[tuple[int, ...]] = [()]
    for n in extent:
        out = [index + (i,) for index in out for i in range(n)]
    return out


@pytest.mark.parametrize(("shape", "rounds"), [((4, 432), 7), ((1, 64, 28, 28), 5), ((2, 8, 6, 6), 7),
                                                ((3, 5, 7, 11), 22), ((1, 1, 1, 4096), 3)])
def test_cut_through_tiles_the_buffer_in_contiguous_pieces(shape: tuple[int, ...], rounds: int) -> None:
    windows = cut_through(shape, rounds)
    size = len(_indices(shape))
    assert 2 <= len(windows) < 2 * rounds
    assert sorted(_covered(shape, windows)) == list(range(size))
    assert all(len(_indices(extent)) >= PIECE_ELEMENTS for _, extent in windows)


@pytest.mark.parametrize(("shape", "rounds"), [((1, 1, 3, 3), 5), ((4, 100), 7), ((64, 64), 1)])
def test_small_buffers_and_shallow_trees_move_whole(shape: tuple[int, ...], rounds: int) -> None:
    assert cut_through(shape, rounds) == []


def test_a_deep_tree_forwards_each_piece_as_soon_as_it_has_it() -> None:
    chip = _chip(1, 8)
    value = Value(TensorType((4, 512), f32))
    source = chip.alloc(0, (4, 512), value)
    [got] = chip.run([chip.spread(source, list(range(8)), value)])
    pieces = cut_through((4, 512), 7)
    assert set(got) == set(range(8)) and len(pieces) > 1
    for tile in range(1, 8):
        body = chip.programs[tile].body
        recvs = [k for k, ins in enumerate(body) if isinstance(ins, Recv)]
        sends = [k for k, ins in enumerate(body) if isinstance(ins, Send)]
        received = [ins for ins in body if isinstance(ins, Recv)]
        assert [ins.window for ins in received] == pieces  # every piece, in order, into one buffer
        assert {ins.buffer for ins in received} == {got[tile]} and isinstance(body[0], Alloc)
        if tile < 7:  # piece p goes on after piece p arrives and before piece p + 1 does
            assert [ins.window for ins in body if isinstance(ins, Send)] == pieces
            assert all(recvs[p] < sends[p] < (recvs + [len(body)])[p + 1] for p in range(len(pieces)))
