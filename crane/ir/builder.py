"""Insertion points and a builder that places new ops at them.

``InsertPoint.before(op)``, ``.after(op)``, ``.at_start(block)`` and ``.at_end(block)``
read like prose; a :class:`Builder` inserts at its point and moves past what it inserted,
so a sequence of ``insert`` calls keeps program order.
"""

from __future__ import annotations

from dataclasses import dataclass

from crane.ir.core import Block, Operation


@dataclass(frozen=True, slots=True)
class InsertPoint:
    """A place in a block: before ``anchor``, or at the block's end when ``anchor`` is None."""

    block: Block
    anchor: Operation | None = None

    def __post_init__(self) -> None:
        if self.anchor is not None and self.anchor.parent is not self.block:
            raise ValueError("the anchor op is not in the given block")

    @classmethod
    def before(cls, op: Operation) -> InsertPoint:
        if op.parent is None:
            raise ValueError(f"'{op.name}' is not in a block")
        return cls(op.parent, op)

    @classmethod
    def after(cls, op: Operation) -> InsertPoint:
        if op.parent is None:
            raise ValueError(f"'{op.name}' is not in a block")
        return cls(op.parent, op.next_op)

    @classmethod
    def at_start(cls, block: Block) -> InsertPoint:
        return cls(block, block.first_op)

    @classmethod
    def at_end(cls, block: Block) -> InsertPoint:
        return cls(block, None)


class Builder:
    """Inserts ops at an insertion point, in order."""

    def __init__(self, point: InsertPoint) -> None:
        self.point = point

    def insert(self, op: Operation) -> Operation:
        """Insert ``op`` at the point; later inserts go after it."""
        block, anchor = self.point.block, self.point.anchor
        if anchor is None:
            block.append(op)
        else:
            block.insert_before(anchor, op)
        return op
