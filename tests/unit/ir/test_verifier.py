"""The verifier: structure, traits, specs and op checks, each error at its op."""

from __future__ import annotations

import pytest
from ir_testing import parse

from crane.dialects.builtin import ModuleOp
from crane.dialects.test import AddOp, ConstantOp
from crane.ir.core import Block, Operation, Region, Value
from crane.ir.location import FileLineColLoc
from crane.ir.types import i32, i64
from crane.ir.verifier import verify


def _messages(text: str) -> list[str]:
    return [d.message for d in verify(parse(text))]


def test_valid_function_has_no_errors() -> None:
    assert _messages("test.func @f(%a: i32) -> i32 {\n  test.return %a : i32\n}\n") == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("%p = test.positive {value = 0} : () -> i32\n", "requires a positive 'value', got 0"),
        ("test.func @f() {\n  %c = test.constant 1 : i32\n}\n", "must be followed by a terminator"),
        ('test.func @f() {\n  "test.return"() : () -> ()\n  %c = test.constant 1 : i32\n}\n', "must be the last"),
        ("test.func @f() -> i32 {\n  %c = test.constant 1 : i64\n  test.return %c : i64\n}\n",
         "returns (i64) but the function returns (i32)"),
        ("test.return\n", "expects parent op 'test.func'"),
        ('%c = "test.constant"() : () -> i32\n', "requires attribute 'value'"),
        ('%c = "test.constant"() {value = "x"} : () -> i32\n', "attribute 'value' must be IntAttr"),
        ('%c = "test.addi"() : () -> i32\n', "expected 2 operand(s), found 0"),
        ('"test.region"() : () -> ()\n', "expected 1 region(s), found 0"),
        ("test.func @f() {\n  test.return\n}\ntest.func @f() {\n  test.return\n}\n",
         "redefines symbol '@f'"),
        ('%a = test.constant 1 : i32\n%b = "test.addi"(%a, %a) : (i32, i32) -> i64\n',
         "requires the same type for all operands and results"),
    ],
)
def test_errors(text: str, expected: str) -> None:
    messages = _messages(text)
    assert any(expected in m for m in messages), messages


def test_use_before_definition_is_a_dominance_error() -> None:
    text = """"test.region"() ({
  %b = "test.addi"(%a, %a) : (i32, i32) -> i32
  %a = "test.constant"() {value = 1} : () -> i32
}) : () -> ()
"""
    errors = verify(parse(text))
    assert len(errors) == 1
    assert "does not dominate this use" in errors[0].message
    loc = errors[0].location
    assert isinstance(loc, FileLineColLoc) and loc.line == 2


def test_values_cannot_cross_an_isolated_boundary() -> None:
    module = parse("test.func @f() {\n  test.return\n}\n")
    outer = ConstantOp.build(1, i32)
    module.body.prepend(outer)
    func = module.body.last_op
    assert func is not None
    body = func.regions[0].block
    assert body.first_op is not None
    body.insert_before(body.first_op, AddOp.build(outer.result, outer.result))
    errors = verify(module)
    assert any("not visible here" in e.message for e in errors)


def test_dangling_value_is_reported() -> None:
    block = Block()
    block.append(AddOp.build(Value(i32), Value(i32)))
    errors = verify(ModuleOp.build([Operation.create("test.region", [], [], {}, [Region([block])])]))
    assert any("not defined anywhere" in e.message for e in errors)


def test_errors_are_collected_not_raised() -> None:
    text = "%p = test.positive {value = 0} : () -> i32\n%q = test.positive {value = -1} : () -> i32\n"
    assert len(_messages(text)) == 2


def test_symbol_redefinition_points_at_the_first_definition() -> None:
    errors = verify(parse("test.func @f() {\n  test.return\n}\ntest.func @f() {\n  test.return\n}\n"))
    note = errors[0].notes[0]
    assert isinstance(note.location, FileLineColLoc) and note.location.line == 1


def test_unregistered_ops_can_be_refused() -> None:
    module = parse('"foo.op"() : () -> ()\n', allow_unregistered=True)
    assert verify(module) == []
    assert "is not registered" in verify(module, allow_unregistered=False)[0].message


def test_type_mismatch_through_api_is_caught() -> None:
    a = ConstantOp.build(1, i32)
    b = ConstantOp.build(1, i64)
    add = AddOp.build(a.result, b.result)
    module = ModuleOp.build([a, b, add])
    assert any("same type" in e.message for e in verify(module))
