"""Property: for random IR, print -> parse -> print is the identity, in both forms."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from ir_testing import parse

from crane.dialects.builtin import ModuleOp
from crane.ir.attributes import (
    ArrayAttr,
    Attribute,
    BoolAttr,
    DenseIntsAttr,
    DictAttr,
    EnumAttr,
    FloatAttr,
    IntAttr,
    StringAttr,
    SymbolRefAttr,
    TypeAttr,
    UnitAttr,
)
from crane.ir.core import Block, Operation, Region, Value
from crane.ir.location import FileLineColLoc, FusedLoc, NameLoc
from crane.ir.printer import print_op
from crane.ir.types import SCALAR_NAMES, BufferType, ScalarType, TensorType, Type

names = st.from_regex(r"[a-z][a-z0-9_]{0,6}", fullmatch=True)
scalars = st.sampled_from(SCALAR_NAMES).map(ScalarType)
shapes = st.lists(st.integers(0, 64), max_size=4).map(tuple)
types: st.SearchStrategy[Type] = st.one_of(
    scalars,
    st.builds(TensorType, shapes, scalars),
    st.builds(BufferType, shapes, scalars, st.sampled_from(("sram", "dram"))),
)
leaf_attrs: st.SearchStrategy[Attribute] = st.one_of(
    st.builds(IntAttr, st.integers(-(2**70), 2**70)),
    st.builds(IntAttr, st.integers(-100, 100), st.sampled_from((8, 16, 32))),
    st.builds(IntAttr, st.integers(0, 1), st.just(1)),
    st.builds(FloatAttr, st.floats(allow_nan=True, allow_infinity=True)),
    st.builds(BoolAttr, st.booleans()),
    st.builds(StringAttr, st.text(max_size=8)),
    st.just(UnitAttr()),
    st.builds(DenseIntsAttr, st.lists(st.integers(-5, 5), max_size=4).map(tuple)),
    st.builds(EnumAttr, st.just("test.kind"), st.sampled_from(("read", "write", "none"))),
    st.builds(SymbolRefAttr, names, st.lists(names, max_size=2).map(tuple)),
    st.builds(TypeAttr, types),
)
attrs: st.SearchStrategy[Attribute] = st.recursive(
    leaf_attrs,
    lambda inner: st.one_of(
        st.builds(ArrayAttr, st.lists(inner, max_size=3).map(tuple)),
        st.builds(DictAttr, st.dictionaries(names, inner, max_size=3).map(lambda d: tuple(d.items()))),
    ),
    max_leaves=8,
)
locations = st.one_of(
    st.builds(FileLineColLoc, names, st.integers(1, 99), st.integers(1, 99)),
    st.builds(NameLoc, names),
    st.builds(lambda a, b: FusedLoc((a, b)),
              st.builds(FileLineColLoc, names, st.integers(1, 9), st.integers(1, 9)),
              st.builds(NameLoc, names)),
)


@st.composite
def modules(draw: st.DrawFn) -> ModuleOp:
    """A module of unregistered ops using earlier values, with attributes, names and regions."""
    block = Block()
    _fill(draw, block, [], depth=0)
    return ModuleOp.build([Operation.create("x.root", [], [], {}, [Region([block])])])


def _fill(draw: st.DrawFn, block: Block, visible: list[Value], depth: int) -> None:
    for _ in range(draw(st.integers(0, 5))):
        operands = draw(st.lists(st.sampled_from(visible), max_size=3)) if visible else []
        result_types = draw(st.lists(types, max_size=2))
        attributes = draw(st.dictionaries(names, attrs, max_size=3))
        regions: list[Region] = []
        if depth < 2 and draw(st.booleans()):
            inner = Block(draw(st.lists(types, max_size=2)))
            _fill(draw, inner, visible + list(inner.args), depth + 1)
            regions.append(Region([inner]))
        op = Operation.create(f"x.{draw(names)}", operands, result_types, attributes, regions,
                              draw(locations))
        for result in op.results:
            result.name_hint = draw(st.one_of(st.none(), names))
        block.append(op)
        visible = visible + list(op.results)


@settings(max_examples=60, deadline=None)
@given(modules())
def test_print_parse_print_is_identity(module: ModuleOp) -> None:
    for generic in (False, True):
        for debuginfo in (False, True):
            text = print_op(module, generic=generic, debuginfo=debuginfo)
            again = print_op(parse(text, allow_unregistered=True), generic=generic, debuginfo=debuginfo)
            assert again == text
