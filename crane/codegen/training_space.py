"""The iteration space of a training op, the rule that parts it, and the attribute helpers
the rules share (:mod:`crane.codegen.training_rules` has the rules themselves)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from crane.codegen.boxes import Box, full
from crane.codegen.rules import Part
from crane.ir.attributes import Attribute, BoolAttr, DenseIntsAttr
from crane.ir.core import Operation


@dataclass(frozen=True, slots=True)
class Space:
    """The iteration space of a training op: extents, and which axes are reductions."""

    extents: tuple[int, ...]
    reductions: frozenset[int] = frozenset()
    fixed: frozenset[int] = frozenset()
    """Axes that are never split (a part always covers them whole)."""

    @property
    def whole(self) -> Box:
        return full(self.extents)

    def splittable(self) -> list[int]:
        """Axes a split may cut, parallel ones first (in axis order), then reductions."""
        axes = [a for a in range(len(self.extents)) if a not in self.fixed and self.extents[a] > 1]
        return sorted(axes, key=lambda a: (a in self.reductions, a))


@dataclass(frozen=True, slots=True)
class TrainingRule:
    """The space of an op and the part a box of it is."""

    space: Callable[[Operation], Space]
    part: Callable[[Operation, Box], Part]


def flag_of(op: Operation, name: str) -> bool:
    attr = op.attributes.get(name)
    return isinstance(attr, BoolAttr) and attr.value


def shape_only(placeholders: Mapping[int, tuple[int, ...]]) -> dict[str, Attribute]:
    """The ``shape_only`` attribute for operands given by shape (index -> shape)."""
    flat: list[int] = []
    for index in sorted(placeholders):
        shape = placeholders[index]
        flat += [index, len(shape), *shape]
    return {"shape_only": DenseIntsAttr(tuple(flat))} if flat else {}


def is_partial(box: Box, space: Space, reduced: Sequence[int]) -> bool:
    """Whether a result summing over the axes ``reduced`` is partial for ``box``."""
    return any(box[a] != (0, space.extents[a]) for a in reduced)
