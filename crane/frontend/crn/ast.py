"""The syntax tree of a `.crn` file, built directly by the parser's inline transformer.

Positions are ``(line, column, width)`` of the token a node starts at; the file name is
added when an error is reported, which keeps the parser free of per-file state.
"""

from __future__ import annotations

from dataclasses import dataclass

Pos = tuple[int, int, int]


@dataclass(frozen=True, slots=True)
class Num:
    value: int | float
    pos: Pos


@dataclass(frozen=True, slots=True)
class Str:
    value: str
    pos: Pos


@dataclass(frozen=True, slots=True)
class Bool:
    value: bool
    pos: Pos


@dataclass(frozen=True, slots=True)
class Name:
    id: str
    pos: Pos


@dataclass(frozen=True, slots=True)
class ListExpr:
    items: tuple[Expr, ...]
    pos: Pos


@dataclass(frozen=True, slots=True)
class BinOp:
    op: str
    left: Expr
    right: Expr
    pos: Pos


@dataclass(frozen=True, slots=True)
class Neg:
    operand: Expr
    pos: Pos


@dataclass(frozen=True, slots=True)
class KwArg:
    name: str
    value: Expr
    pos: Pos


@dataclass(frozen=True, slots=True)
class Call:
    func: str
    args: tuple[Expr, ...]
    kwargs: tuple[KwArg, ...]
    pos: Pos
    late_positional: Pos | None = None
    """Where a positional argument follows a keyword one (an error), if anywhere."""


Expr = Num | Str | Bool | Name | ListExpr | BinOp | Neg | Call


@dataclass(frozen=True, slots=True)
class Assign:
    target: str
    value: Expr
    pos: Pos


@dataclass(frozen=True, slots=True)
class Let:
    name: str
    value: Expr
    pos: Pos


@dataclass(frozen=True, slots=True)
class InputStmt:
    name: str
    dtype: Name
    dims: tuple[Expr, ...]
    pos: Pos


@dataclass(frozen=True, slots=True)
class OutputStmt:
    names: tuple[Name, ...]
    pos: Pos


@dataclass(frozen=True, slots=True)
class Return:
    value: Expr
    pos: Pos


@dataclass(frozen=True, slots=True)
class Repeat:
    var: str
    start: Expr
    stop: Expr
    body: tuple[Stmt, ...]
    pos: Pos


@dataclass(frozen=True, slots=True)
class UseMachine:
    name: str
    pos: Pos


@dataclass(frozen=True, slots=True)
class BatchStmt:
    value: Expr
    pos: Pos


@dataclass(frozen=True, slots=True)
class LossItem:
    value: Expr
    pos: Pos


@dataclass(frozen=True, slots=True)
class OptimizerItem:
    call: Call
    pos: Pos


@dataclass(frozen=True, slots=True)
class TrainStmt:
    items: tuple[LossItem | OptimizerItem | BatchStmt, ...]
    pos: Pos


Stmt = Assign | Let | InputStmt | OutputStmt | Return | Repeat | UseMachine | BatchStmt | TrainStmt


@dataclass(frozen=True, slots=True)
class Param:
    name: str
    default: Expr | None
    pos: Pos


@dataclass(frozen=True, slots=True)
class BlockDef:
    name: str
    params: tuple[Param, ...]
    body: tuple[Stmt, ...]
    pos: Pos


@dataclass(frozen=True, slots=True)
class NetworkDef:
    name: str
    body: tuple[Stmt, ...]
    pos: Pos


@dataclass(frozen=True, slots=True)
class Unit:
    num: str
    den: str | None
    pos: Pos

    def __str__(self) -> str:
        return self.num if self.den is None else f"{self.num}/{self.den}"


@dataclass(frozen=True, slots=True)
class MeshField:
    rows: Expr
    cols: Expr
    pos: Pos


@dataclass(frozen=True, slots=True)
class PortsField:
    named: Name | None
    ports: tuple[tuple[Expr, Expr], ...]
    pos: Pos


@dataclass(frozen=True, slots=True)
class ValueField:
    name: str
    value: Expr
    unit: Unit | None
    pos: Pos


Field = MeshField | PortsField | ValueField


@dataclass(frozen=True, slots=True)
class MachineDef:
    name: str
    base: Name | None
    fields: tuple[Field, ...]
    pos: Pos


@dataclass(frozen=True, slots=True)
class Import:
    path: str
    pos: Pos


Item = Import | BlockDef | NetworkDef | MachineDef | Let


@dataclass(frozen=True, slots=True)
class Module:
    items: tuple[Item, ...]
