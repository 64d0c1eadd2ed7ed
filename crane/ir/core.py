"""The IR's structure: SSA values with use lists, operations, blocks and regions.

An :class:`Operation` owns its results and regions; a :class:`Block` holds operations in an
intrusive doubly-linked list (O(1) insert and erase) and has typed arguments; a
:class:`Region` is a list of blocks owned by an op. Registered ops are subclasses of
``Operation`` that add a spec, traits, typed accessors and named constructors; any op
text, registered or not, can still be held by a plain ``Operation``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, ClassVar, TypeVar

from crane.ir.attributes import Attribute
from crane.ir.location import UNKNOWN, Location
from crane.ir.types import Type
from crane.ir.values import BlockArgument, OpResult, Use, Value

if TYPE_CHECKING:
    from crane.ir.opspec import OpSpec
    from crane.ir.traits import Trait

__all__ = ["Block", "BlockArgument", "OpResult", "Operation", "Region", "Use", "Value",
           "VerifyError"]

T = TypeVar("T")


class VerifyError(Exception):
    """Raised by ``verify_op`` and traits; the verifier turns it into a located error."""


class Operation:
    """An operation. Subclasses declare ``spec`` and ``traits`` and add typed accessors.

    Build ops with :meth:`create` (generic) or a subclass's named constructor; the
    parser uses :meth:`create` too, so no validation runs here: :mod:`crane.ir.verifier`
    checks everything later and reports it at the op's location.
    """

    __slots__ = ("name", "_operands", "results", "attributes", "regions", "location",
                 "parent", "_prev", "_next")

    spec: ClassVar[OpSpec | None] = None
    """Operand/result/attribute/region declaration; None for unregistered ops."""
    traits: ClassVar[tuple[Trait, ...]] = ()
    """Trait instances (see :mod:`crane.ir.traits`)."""
    _trait_kinds: ClassVar[frozenset[type] | None] = None

    name: str
    _operands: list[Value]
    results: tuple[OpResult, ...]
    attributes: dict[str, Attribute]
    regions: tuple[Region, ...]
    location: Location
    parent: Block | None
    _prev: Operation | None
    _next: Operation | None

    @classmethod
    def create(
        cls,
        name: str | None = None,
        operands: Sequence[Value] = (),
        result_types: Sequence[Type] = (),
        attributes: dict[str, Attribute] | None = None,
        regions: Sequence[Region] = (),
        location: Location = UNKNOWN,
    ) -> Operation:
        """Build an op of this class; ``name`` defaults to the class's registered name."""
        op = cls.__new__(cls)
        if name is None:
            if cls.spec is None:
                raise ValueError("an unregistered op needs a name")
            name = cls.spec.name
        op.name = name
        op._operands = list(operands)
        for i, value in enumerate(op._operands):
            value.uses.append(Use(op, i))
        if len(result_types) == 1:  # the common case, without a generator
            op.results = (OpResult(result_types[0], op, 0),)
        else:
            op.results = tuple(OpResult(t, op, i) for i, t in enumerate(result_types))
        op.attributes = attributes if attributes is not None else {}
        op.regions = tuple(regions)
        for region in op.regions:
            region.parent_op = op
        op.location = location
        op.parent = None
        op._prev = None
        op._next = None
        return op

    # ----- operands and results

    @property
    def operands(self) -> tuple[Value, ...]:
        return tuple(self._operands)

    def operand(self, index: int) -> Value:
        return self._operands[index]

    @property
    def num_operands(self) -> int:
        return len(self._operands)

    def set_operand(self, index: int, value: Value) -> None:
        old = self._operands[index]
        old.uses = [u for u in old.uses if not (u.owner is self and u.index == index)]
        self._operands[index] = value
        value.uses.append(Use(self, index))

    def set_operands(self, values: Sequence[Value]) -> None:
        self._drop_operand_uses()
        self._operands = list(values)
        for i, value in enumerate(self._operands):
            value.uses.append(Use(self, i))

    def _drop_operand_uses(self) -> None:
        for value in set(self._operands):
            value.uses = [u for u in value.uses if u.owner is not self]

    @property
    def result(self) -> OpResult:
        """The single result (raises if the op does not have exactly one)."""
        if len(self.results) != 1:
            raise ValueError(f"'{self.name}' has {len(self.results)} results, not 1")
        return self.results[0]

    def replace_all_uses_with(self, values: Sequence[Value]) -> None:
        if len(values) != len(self.results):
            raise ValueError(f"'{self.name}' has {len(self.results)} results, got {len(values)}")
        for result, value in zip(self.results, values, strict=True):
            result.replace_all_uses_with(value)

    # ----- attributes

    def attr(self, key: str) -> Attribute | None:
        return self.attributes.get(key)

    # ----- traits and structure

    @classmethod
    def has_trait(cls, trait: type[Trait]) -> bool:
        # Asked for every op by the printer, parser and verifier: answer from a per-class
        # set of the trait classes (with their bases), built on first use.
        kinds = cls.__dict__.get("_trait_kinds")
        if kinds is None:
            kinds = frozenset(k for t in cls.traits for k in type(t).__mro__)
            cls._trait_kinds = kinds
        return trait in kinds

    @classmethod
    def get_trait(cls, trait: type[T]) -> T | None:
        for t in cls.traits:
            if isinstance(t, trait):
                return t
        return None

    def verify_op(self) -> None:
        """Op-specific checks; raise :class:`VerifyError` with a message on failure."""

    @property
    def is_registered(self) -> bool:
        return type(self).spec is not None

    @property
    def dialect_name(self) -> str:
        return self.name.partition(".")[0]

    @property
    def parent_op(self) -> Operation | None:
        block = self.parent
        if block is None or block.parent is None:
            return None
        return block.parent.parent_op

    @property
    def next_op(self) -> Operation | None:
        return self._next

    @property
    def prev_op(self) -> Operation | None:
        return self._prev

    def walk(self, *, reverse: bool = False) -> Iterator[Operation]:
        """This op and all ops nested in it, pre-order (or reverse post-order)."""
        if reverse:
            yield from self._walk_reverse()
            return
        stack: list[Operation] = [self]
        while stack:
            op = stack.pop()
            yield op
            nested = [o for region in op.regions for block in region.blocks for o in block.ops]
            stack.extend(reversed(nested))

    def _walk_reverse(self) -> Iterator[Operation]:
        for region in reversed(self.regions):
            for block in reversed(region.blocks):
                for op in list(block.ops_reversed()):
                    yield from op._walk_reverse()
        yield self

    def is_ancestor_of(self, other: Operation) -> bool:
        current: Operation | None = other
        while current is not None:
            if current is self:
                return True
            current = current.parent_op
        return False

    # ----- mutation

    def detach(self) -> Operation:
        """Unlink from the parent block (the op stays alive with its uses)."""
        if self.parent is not None:
            self.parent._unlink(self)
        return self

    def erase(self, *, check_uses: bool = True) -> None:
        """Detach and drop this op, its regions and its operand uses."""
        if check_uses and any(r.uses for r in self.results):
            raise ValueError(f"cannot erase '{self.name}': its results still have uses")
        self.detach()
        self.drop_all_references()

    def drop_all_references(self) -> None:
        """Drop operand uses of this op and of everything nested in it."""
        for op in self.walk():
            op._drop_operand_uses()
            op._operands = []

    def move_before(self, other: Operation) -> None:
        if other.parent is None:
            raise ValueError("target op is not in a block")
        self.detach()
        other.parent.insert_before(other, self)

    def move_after(self, other: Operation) -> None:
        if other.parent is None:
            raise ValueError("target op is not in a block")
        self.detach()
        other.parent.insert_after(other, self)

    def clone(self, mapping: dict[Value, Value] | None = None) -> Operation:
        """Deep copy; operands found in ``mapping`` are remapped, and the map is extended."""
        mapping = {} if mapping is None else mapping
        operands = [mapping.get(v, v) for v in self._operands]
        regions = [r.clone(mapping) for r in self.regions]
        op = type(self).create(
            self.name, operands, [r.type for r in self.results], dict(self.attributes),
            regions, self.location,
        )
        for old, new in zip(self.results, op.results, strict=True):
            new.name_hint = old.name_hint
            mapping[old] = new
        return op

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name} at {self.location}>"


class Block:
    """A list of operations with typed arguments."""

    __slots__ = ("args", "parent", "_first", "_last", "_len")

    def __init__(self, arg_types: Iterable[Type] = ()) -> None:
        self.args: list[BlockArgument] = [BlockArgument(t, self, i) for i, t in enumerate(arg_types)]
        self.parent: Region | None = None
        self._first: Operation | None = None
        self._last: Operation | None = None
        self._len = 0

    @property
    def parent_op(self) -> Operation | None:
        return None if self.parent is None else self.parent.parent_op

    def add_argument(self, type: Type, name_hint: str | None = None) -> BlockArgument:
        arg = BlockArgument(type, self, len(self.args))
        arg.name_hint = name_hint
        self.args.append(arg)
        return arg

    @property
    def ops(self) -> Iterator[Operation]:
        """The ops in order; safe against erasing the current op while iterating."""
        op = self._first
        while op is not None:
            following = op._next
            yield op
            op = following

    def ops_reversed(self) -> Iterator[Operation]:
        op = self._last
        while op is not None:
            preceding = op._prev
            yield op
            op = preceding

    @property
    def first_op(self) -> Operation | None:
        return self._first

    @property
    def last_op(self) -> Operation | None:
        return self._last

    def __len__(self) -> int:
        return self._len

    def is_empty(self) -> bool:
        return self._first is None

    def _adopt(self, op: Operation) -> None:
        if op.parent is not None:
            raise ValueError(f"'{op.name}' is already in a block; detach it first")
        op.parent = self
        self._len += 1

    def append(self, op: Operation) -> Operation:
        self._adopt(op)
        op._prev = self._last
        op._next = None
        if self._last is None:
            self._first = op
        else:
            self._last._next = op
        self._last = op
        return op

    def extend(self, ops: Iterable[Operation]) -> None:
        for op in ops:
            self.append(op)

    def prepend(self, op: Operation) -> Operation:
        if self._first is None:
            return self.append(op)
        return self.insert_before(self._first, op)

    def insert_before(self, anchor: Operation, op: Operation) -> Operation:
        if anchor.parent is not self:
            raise ValueError("anchor op is not in this block")
        self._adopt(op)
        op._next = anchor
        op._prev = anchor._prev
        if anchor._prev is None:
            self._first = op
        else:
            anchor._prev._next = op
        anchor._prev = op
        return op

    def insert_after(self, anchor: Operation, op: Operation) -> Operation:
        if anchor._next is None:
            if anchor.parent is not self:
                raise ValueError("anchor op is not in this block")
            return self.append(op)
        return self.insert_before(anchor._next, op)

    def _unlink(self, op: Operation) -> None:
        if op._prev is None:
            self._first = op._next
        else:
            op._prev._next = op._next
        if op._next is None:
            self._last = op._prev
        else:
            op._next._prev = op._prev
        op._prev = op._next = None
        op.parent = None
        self._len -= 1

    def index_of(self, op: Operation) -> int:
        for i, candidate in enumerate(self.ops):
            if candidate is op:
                return i
        raise ValueError("op is not in this block")


class Region:
    """A list of blocks owned by an operation."""

    __slots__ = ("blocks", "parent_op")

    def __init__(self, blocks: Iterable[Block] = ()) -> None:
        self.blocks: list[Block] = []
        self.parent_op: Operation | None = None
        for block in blocks:
            self.add_block(block)

    @classmethod
    def with_block(cls, arg_types: Iterable[Type] = ()) -> Region:
        """A region holding one fresh block."""
        return cls([Block(arg_types)])

    def add_block(self, block: Block) -> Block:
        block.parent = self
        self.blocks.append(block)
        return block

    @property
    def block(self) -> Block:
        """The only block (raises unless there is exactly one)."""
        if len(self.blocks) != 1:
            raise ValueError(f"region has {len(self.blocks)} blocks, not 1")
        return self.blocks[0]

    def clone(self, mapping: dict[Value, Value]) -> Region:
        region = Region()
        for block in self.blocks:
            new_block = region.add_block(Block())
            for arg in block.args:
                mapping[arg] = new_block.add_argument(arg.type, arg.name_hint)
        for block, new_block in zip(self.blocks, region.blocks, strict=True):
            for op in block.ops:
                new_block.append(op.clone(mapping))
        return region
