"""SSA values and their use lists.

A :class:`Value` is defined once (an :class:`OpResult` of an op, or a
:class:`BlockArgument` of a block) and used as operands; each use is recorded, so that
``replace_all_uses_with`` and ``users`` cost time proportional to the uses only.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from crane.ir.types import Type

if TYPE_CHECKING:
    from crane.ir.core import Block, Operation


class Use:
    """One use of a value: operand ``index`` of ``owner``."""

    __slots__ = ("owner", "index")

    def __init__(self, owner: Operation, index: int) -> None:
        self.owner = owner
        self.index = index


class Value:
    """An SSA value: an op result or a block argument."""

    __slots__ = ("type", "uses", "name_hint")

    def __init__(self, type: Type, name_hint: str | None = None) -> None:
        self.type = type
        self.uses: list[Use] = []
        self.name_hint = name_hint

    @property
    def owner_op(self) -> Operation | None:
        """The op that defines this value, or the op whose region has the block argument.

        None for a bare value that nothing defines (a dangling or placeholder value).
        """
        return None

    @property
    def parent_block(self) -> Block | None:
        return None

    def has_uses(self) -> bool:
        return bool(self.uses)

    def users(self) -> Iterator[Operation]:
        """Distinct ops that use this value, in use order."""
        seen: set[int] = set()
        for use in self.uses:
            if id(use.owner) not in seen:
                seen.add(id(use.owner))
                yield use.owner

    def replace_all_uses_with(self, other: Value) -> None:
        """Make every user of this value use ``other`` instead."""
        if other is self:
            return
        for use in self.uses:
            use.owner._operands[use.index] = other
            other.uses.append(use)
        self.uses = []


class OpResult(Value):
    __slots__ = ("op", "index")

    def __init__(self, type: Type, op: Operation, index: int) -> None:
        # Fields set inline rather than through super().__init__: this is the hottest
        # constructor of the parser.
        self.type = type
        self.uses = []
        self.name_hint = None
        self.op = op
        self.index = index

    @property
    def owner_op(self) -> Operation | None:
        return self.op

    @property
    def parent_block(self) -> Block | None:
        return self.op.parent


class BlockArgument(Value):
    __slots__ = ("block", "index")

    def __init__(self, type: Type, block: Block, index: int) -> None:
        super().__init__(type)
        self.block = block
        self.index = index

    @property
    def owner_op(self) -> Operation | None:
        return self.block.parent_op

    @property
    def parent_block(self) -> Block | None:
        return self.block
