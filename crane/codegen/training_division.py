"""How a training op divides over tiles, and one tile's part over steps.

:func:`training_parts` splits an op over tiles (the parallel axes first, a reduction when
it moves less data); :func:`training_steps` cuts one tile's part into steps whose operands
and results fit a byte budget. The boxes come from the op's
:class:`~crane.codegen.training_rules.TrainingRule`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from crane.codegen.boxes import Box, split_span, volume, with_axis
from crane.codegen.rules import Part
from crane.codegen.training_rules import rule_of
from crane.codegen.training_space import Space, TrainingRule
from crane.ir.core import Operation


def footprint(part: Part, elem_bytes: int) -> int:
    """Bytes a part reads and writes (operands given by shape only take none)."""
    return elem_bytes * sum(volume(b) for b in (*part.outs, *part.ins) if b is not None)


def _grid(box: Box, counts: Mapping[int, int], inner: frozenset[int] = frozenset()) -> list[Box]:
    """``box`` cut ``counts[axis]`` ways along each axis, the ``inner`` axes varying fastest
    (so the steps of one window of the parallel axes are consecutive)."""
    boxes = [box]
    for axis, count in sorted(counts.items(), key=lambda item: (item[0] in inner, item[0])):
        boxes = [with_axis(b, axis, span) for b in boxes for span in split_span(*b[axis], count)]
    return boxes


@dataclass(frozen=True, slots=True)
class Division:
    """Boxes of an op's space (one per tile or per step) and their parts."""

    boxes: tuple[Box, ...]
    parts: tuple[Part, ...]


def divide(op: Operation, rule: TrainingRule, box: Box, counts: Mapping[int, int]) -> Division:
    """``box`` of ``op``'s space cut by ``counts``, reductions innermost, and its parts."""
    boxes = tuple(_grid(box, counts, rule.space(op).reductions))
    return Division(boxes, tuple(rule.part(op, b) for b in boxes))


def partial_bytes(part: Part, elem_bytes: int) -> int:
    """Bytes of the part's results that are partial sums (a reduction moves them again)."""
    return elem_bytes * sum(volume(b) for b, flag in zip(part.outs, part.partial, strict=True) if flag)


def training_divisions(op: Operation, tiles: int) -> list[Division]:
    """The candidate divisions of ``op`` over at most ``tiles`` tiles (empty: it has no
    rule): whole, and along each splittable axis alone, keeping those that reach at least
    half as many tiles as the widest."""
    rule = rule_of(op)
    if rule is None:
        return []
    space = rule.space(op)
    whole = space.whole
    options = [divide(op, rule, whole, {})]
    for axis in space.splittable():
        options.append(divide(op, rule, whole, {axis: min(tiles, space.extents[axis])}))
    widest = max(len(o.boxes) for o in options)
    return [o for o in options if len(o.boxes) >= max(1, widest // 2)]


def training_parts(op: Operation, tiles: int, elem_bytes: int) -> Division | None:
    """``op`` divided over at most ``tiles`` tiles (None: it has no rule): the candidate of
    :func:`training_divisions` whose busiest part moves the fewest bytes (its partial sums
    count twice: the reduction moves them again), more parts on ties."""
    options = training_divisions(op, tiles)
    if not options:
        return None
    return min(options, key=lambda o: (max(footprint(p, elem_bytes) + partial_bytes(p, elem_bytes)
                                           for p in o.parts), -len(o.boxes)))


def training_steps(op: Operation, box: Box, budget: int, elem_bytes: int) -> Division:
    """One tile's part (``box`` of the space) cut into steps whose operands and results fit
    ``budget`` bytes: the axis whose halving shrinks the footprint most is cut further,
    until the steps fit or no axis can be cut."""
    rule = rule_of(op)
    assert rule is not None
    space = rule.space(op)
    counts: dict[int, int] = {}
    current = divide(op, rule, box, counts)
    while budget and max(footprint(p, elem_bytes) for p in current.parts) > budget:
        best: tuple[int, Division] | None = None
        for axis in space.splittable():
            size = box[axis][1] - box[axis][0]
            if counts.get(axis, 1) >= size or _second_reduction(op, space, counts, axis):
                continue
            trial = divide(op, rule, box, {**counts, axis: min(size, counts.get(axis, 1) * 2)})
            worst = max(footprint(p, elem_bytes) for p in trial.parts)
            if best is None or worst < best[0]:
                best = (worst, trial)
        if best is None:
            break
        current = best[1]
        counts = _counts_of(current, box)
    return current


def _second_reduction(op: Operation, space: Space, counts: Mapping[int, int], axis: int) -> bool:
    """Whether cutting ``axis`` would split a second reduction axis of an op with several
    results: its results sum over different axes (a matmul's ``dA`` over ``n``, ``dB`` over
    ``m``), so with two of them cut some result's window would come back after closing."""
    if len(op.results) < 2 or axis not in space.reductions:
        return False
    return any(a in space.reductions and a != axis and n > 1 for a, n in counts.items())


def _counts_of(division: Division, box: Box) -> dict[int, int]:
    """How many spans each axis of ``box`` is cut into in ``division``."""
    found: dict[int, int] = {}
    for axis in range(len(box)):
        spans = {b[axis] for b in division.boxes}
        if len(spans) > 1:
            found[axis] = len(spans)
    return found

