"""Declaring ops explicitly: named operands, results, attributes and regions.

An op class sets ``spec = OpSpec(...)``; the verifier checks counts, types and attributes
against it before the op's own ``verify_op``. Nothing here is magic: the spec is data that
a type checker can read, and accessors are ordinary properties on the op class.

Example::

    class AddOp(Operation):
        __slots__ = ()
        spec = OpSpec("test.addi", operands=(Operand("lhs"), Operand("rhs")),
                      results=(Result("result"),))
        traits = (Pure(), SameOperandsAndResultType())

        @property
        def lhs(self) -> Value:
            return self.operand(0)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from crane.ir.attributes import Attribute
from crane.ir.core import Operation, VerifyError
from crane.ir.types import Type


@dataclass(frozen=True, slots=True)
class TypeConstraint:
    """A predicate over types with the words used in error messages."""

    description: str
    check: Callable[[Type], bool]

    @classmethod
    def of_class(cls, *types: type[Type]) -> TypeConstraint:
        names = " or ".join(t.__name__ for t in types)
        return cls(names, lambda t: isinstance(t, types))


@dataclass(frozen=True, slots=True)
class Operand:
    name: str
    constraint: TypeConstraint | None = None
    variadic: bool = False


@dataclass(frozen=True, slots=True)
class Result:
    name: str
    constraint: TypeConstraint | None = None
    variadic: bool = False


@dataclass(frozen=True, slots=True)
class Attr:
    """An attribute the op accepts; ``kind`` is the attribute class it must be."""

    name: str
    kind: type[Attribute] | tuple[type[Attribute], ...]
    optional: bool = False
    doc: str = ""


@dataclass(frozen=True, slots=True)
class OpSpec:
    """The declaration of one op kind."""

    name: str
    operands: tuple[Operand, ...] = ()
    results: tuple[Result, ...] = ()
    attributes: tuple[Attr, ...] = ()
    regions: int = 0
    summary: str = ""
    allow_extra_attributes: bool = True
    """Discardable attributes beyond the declared ones are allowed (as in MLIR)."""
    _simple_operands: bool = field(init=False, repr=False, compare=False, default=False)
    _simple_results: bool = field(init=False, repr=False, compare=False, default=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_simple_operands", _is_simple(self.operands))
        object.__setattr__(self, "_simple_results", _is_simple(self.results))

    def verify(self, op: Operation) -> None:
        """Check counts, types and attributes of ``op`` against this spec."""
        # Fast path: a fixed number of unconstrained values needs only a length check.
        if self._simple_operands:
            if len(op._operands) != len(self.operands):
                raise VerifyError(f"expected {len(self.operands)} operand(s), found {len(op._operands)}")
        else:
            _check_values("operand", self.operands, op.operands)
        if self._simple_results:
            if len(op.results) != len(self.results):
                raise VerifyError(f"expected {len(self.results)} result(s), found {len(op.results)}")
        else:
            _check_values("result", self.results, op.results)
        if len(op.regions) != self.regions:
            raise VerifyError(f"expected {self.regions} region(s), found {len(op.regions)}")
        for attr in self.attributes:
            _check_attribute(attr, op.attributes.get(attr.name))


def _is_simple(defs: tuple[Operand, ...] | tuple[Result, ...]) -> bool:
    return all(d.constraint is None and not d.variadic for d in defs)


def _check_values(kind: str, defs: tuple[Operand, ...] | tuple[Result, ...],
                  values: tuple[object, ...]) -> None:
    types: list[Type] = [v.type for v in values]  # type: ignore[attr-defined]
    variadic = any(d.variadic for d in defs)
    pairs: Iterable[tuple[Operand | Result, Type]] = zip(defs, types, strict=True)  # most ops
    if variadic or len(types) != len(defs):
        fixed = len(defs) - (1 if variadic else 0)
        if (not variadic and len(types) != fixed) or len(types) < fixed:
            expected = f"at least {fixed}" if variadic else str(fixed)
            raise VerifyError(f"expected {expected} {kind}(s), found {len(types)}")
        pairs = _pair_with_defs(defs, types)
    for d, value_type in pairs:
        if d.constraint is not None and not d.constraint.check(value_type):
            raise VerifyError(f"{kind} '{d.name}' must be {d.constraint.description}, got {value_type}")


def _pair_with_defs(defs: tuple[Operand, ...] | tuple[Result, ...],
                    types: list[Type]) -> list[tuple[Operand | Result, Type]]:
    """Match values to definitions; the one variadic definition takes the surplus."""
    pairs: list[tuple[Operand | Result, Type]] = []
    surplus = len(types) - len(defs) + 1
    position = 0
    for d in defs:
        count = surplus if d.variadic else 1
        pairs.extend((d, t) for t in types[position:position + count])
        position += count
    return pairs


def _check_attribute(attr: Attr, value: Attribute | None) -> None:
    if value is None:
        if not attr.optional:
            raise VerifyError(f"requires attribute '{attr.name}'")
        return
    if not isinstance(value, attr.kind):
        kinds = attr.kind if isinstance(attr.kind, tuple) else (attr.kind,)
        names = " or ".join(k.__name__ for k in kinds)
        raise VerifyError(f"attribute '{attr.name}' must be {names}, got {value}")


def variadic_group(op: Operation, spec_defs: tuple[Operand, ...], index: int) -> list[int]:
    """Operand positions belonging to definition ``index`` (handles one variadic group)."""
    surplus = op.num_operands - len(spec_defs) + 1
    start = 0
    for i, d in enumerate(spec_defs):
        count = surplus if d.variadic else 1
        if i == index:
            return list(range(start, start + count))
        start += count
    raise IndexError(index)
