"""Values, use lists, blocks, regions, cloning, erasing and moving ops."""

from __future__ import annotations

import pytest

from crane.dialects.builtin import ModuleOp
from crane.dialects.test import AddOp, ConstantOp, MulOp
from crane.ir.builder import Builder, InsertPoint
from crane.ir.core import Block, Operation, Region
from crane.ir.types import i32, tensor


def _chain() -> tuple[Block, ConstantOp, Operation, Operation]:
    block = Block([i32])
    const = ConstantOp.build(2, i32)
    block.append(const)
    add = block.append(AddOp.build(block.args[0], const.result))
    mul = block.append(MulOp.build(add.result, add.result))
    return block, const, add, mul


def test_use_lists_track_every_operand() -> None:
    block, const, add, mul = _chain()
    assert [u.owner for u in const.result.uses] == [add]
    assert [(u.owner, u.index) for u in add.result.uses] == [(mul, 0), (mul, 1)]
    assert list(add.result.users()) == [mul]


def test_replace_all_uses_with_moves_uses() -> None:
    block, const, add, mul = _chain()
    add.result.replace_all_uses_with(const.result)
    assert mul.operands == (const.result, const.result)
    assert not add.result.uses
    assert len(const.result.uses) == 3


def test_set_operand_updates_both_use_lists() -> None:
    block, const, add, mul = _chain()
    mul.set_operand(1, const.result)
    assert [u.index for u in add.result.uses] == [0]
    assert any(u.owner is mul and u.index == 1 for u in const.result.uses)


def test_erase_refuses_used_results_and_drops_operand_uses() -> None:
    block, const, add, mul = _chain()
    with pytest.raises(ValueError, match="still have uses"):
        add.erase()
    mul.erase()
    assert not add.result.uses
    assert [op.name for op in block.ops] == ["test.constant", "test.addi"]
    assert len(block) == 2


def test_linked_list_insertion_and_moves() -> None:
    block, const, add, mul = _chain()
    other = ConstantOp.build(7, i32)
    block.insert_before(add, other)
    assert [op for op in block.ops] == [const, other, add, mul]
    other.move_after(mul)
    assert [op for op in block.ops] == [const, add, mul, other]
    assert other.prev_op is mul and other.next_op is None and block.last_op is other
    other.move_before(const)
    assert block.first_op is other and const.prev_op is other
    assert block.index_of(mul) == 3


def test_iterating_survives_erasing_the_current_op() -> None:
    block, const, add, mul = _chain()
    for op in block.ops:
        if op is mul:
            op.erase()
    assert len(block) == 2


def test_builder_inserts_in_program_order() -> None:
    block, const, add, mul = _chain()
    builder = Builder(InsertPoint.before(mul))
    first = builder.insert(ConstantOp.build(1, i32))
    second = builder.insert(ConstantOp.build(2, i32))
    assert list(block.ops) == [const, add, first, second, mul]
    end = Builder(InsertPoint.at_end(block)).insert(ConstantOp.build(3, i32))
    assert block.last_op is end
    start = Builder(InsertPoint.at_start(block)).insert(ConstantOp.build(4, i32))
    assert block.first_op is start


def test_insert_point_validates_itself() -> None:
    block, const, add, mul = _chain()
    with pytest.raises(ValueError):
        InsertPoint(Block(), add)
    with pytest.raises(ValueError):
        InsertPoint.before(ConstantOp.build(1, i32))


def test_clone_is_deep_and_remaps_internal_values() -> None:
    block, const, add, mul = _chain()
    module = ModuleOp.build([Operation.create("test.region", [], [], {}, [Region([block])])])
    copy = module.clone()
    original_ops = list(module.walk())
    copied_ops = list(copy.walk())
    assert [o.name for o in original_ops] == [o.name for o in copied_ops]
    assert not set(map(id, original_ops)) & set(map(id, copied_ops))
    copied_add = next(o for o in copied_ops if o.name == "test.addi")
    copied_block = copied_add.parent
    assert copied_block is not None
    assert copied_add.operand(0) is copied_block.args[0]
    assert copied_add.operand(1).owner_op is not const


def test_walk_orders() -> None:
    block, const, add, mul = _chain()
    holder = Operation.create("test.region", [], [], {}, [Region([block])])
    assert [o.name for o in holder.walk()] == ["test.region", "test.constant", "test.addi", "test.muli"]
    assert [o.name for o in holder.walk(reverse=True)] == ["test.muli", "test.addi", "test.constant", "test.region"]


def test_an_op_can_be_in_one_block_only() -> None:
    block, const, add, mul = _chain()
    with pytest.raises(ValueError, match="already in a block"):
        Block().append(add)


def test_tensor_type_properties() -> None:
    t = tensor(2, 3, 4)
    assert t.rank == 3 and t.num_elements == 24 and t.byte_size == 96
    assert str(t) == "tensor<2x3x4xf32>"
    assert t == tensor(2, 3, 4) and hash(t) == hash(tensor(2, 3, 4))
