"""Parsing `.crn` text into the syntax tree of :mod:`crane.frontend.crn.ast`.

The grammar (``grammar/crn.lark``) is run by Lark's LALR parser with an inline
Transformer, so the tree is built during parsing, token by token, without an intermediate
parse tree; the tokens come from :mod:`crane.frontend.crn.tokens`. Positions come from the tokens themselves (every node keeps the position of
its leading token); that is why ``propagate_positions`` is off: it would cost about 60%
of the parse time (toolkit-anchors §6) for information the tokens already carry.
"""

from __future__ import annotations

import functools
import importlib.util
import math
from pathlib import Path
from typing import Any

import lark
from lark import Token, v_args

import crane
from crane.frontend.crn import ast
from crane.frontend.crn.syntax_errors import describe_syntax_error
from crane.frontend.crn.tokens import CrnLexer

GRAMMAR_PATH = Path(crane.__file__).parent.parent / "grammar" / "crn.lark"


def _pos(token: Token) -> ast.Pos:
    return (token.line or 1, token.column or 1, len(token.value) or 1)


def _expr_pos(node: Any) -> ast.Pos:
    return node.pos


@v_args(inline=True)
class _ToAst(lark.Transformer[Token, ast.Module]):
    """Builds AST nodes; one method per grammar rule or alias."""

    def start(self, *items: ast.Item) -> ast.Module:
        return ast.Module(items)

    def import_stmt(self, path: Token) -> ast.Import:
        return ast.Import(path.value[1:-1], _pos(path))

    def block_def(self, name: Token, *rest: Any) -> ast.BlockDef:
        params = tuple(r for r in rest if isinstance(r, ast.Param))
        body = tuple(r for r in rest if r is not None and not isinstance(r, ast.Param))
        return ast.BlockDef(name.value, params, body, _pos(name))

    def param(self, name: Token, default: ast.Expr | None) -> ast.Param:
        return ast.Param(name.value, default, _pos(name))

    def network_def(self, name: Token, *body: ast.Stmt) -> ast.NetworkDef:
        return ast.NetworkDef(name.value, body, _pos(name))

    def assign(self, target: Token, value: ast.Expr) -> ast.Assign:
        return ast.Assign(target.value, value, _pos(target))

    def let_stmt(self, name: Token, value: ast.Expr) -> ast.Let:
        return ast.Let(name.value, value, _pos(name))

    def input_stmt(self, name: Token, dtype: Token, *dims: ast.Expr | None) -> ast.InputStmt:
        kept = tuple(d for d in dims if d is not None)
        return ast.InputStmt(name.value, ast.Name(dtype.value, _pos(dtype)), kept, _pos(name))

    def output_stmt(self, keyword: Token, *names: Token) -> ast.OutputStmt:
        return ast.OutputStmt(tuple(ast.Name(n.value, _pos(n)) for n in names), _pos(keyword))

    def return_stmt(self, keyword: Token, value: ast.Expr) -> ast.Return:
        return ast.Return(value, _pos(keyword))

    def repeat_stmt(self, var: Token, start: ast.Expr, stop: ast.Expr, *body: ast.Stmt) -> ast.Repeat:
        return ast.Repeat(var.value, start, stop, body, _pos(var))

    def use_machine(self, name: Token) -> ast.UseMachine:
        return ast.UseMachine(name.value, _pos(name))

    def batch_stmt(self, keyword: Token, value: ast.Expr) -> ast.BatchStmt:
        return ast.BatchStmt(value, _pos(keyword))

    def train_stmt(self, keyword: Token, *items: Any) -> ast.TrainStmt:
        return ast.TrainStmt(items, _pos(keyword))

    def loss_item(self, keyword: Token, value: ast.Expr) -> ast.LossItem:
        return ast.LossItem(value, _pos(keyword))

    def optimizer_item(self, keyword: Token, call: ast.Call) -> ast.OptimizerItem:
        return ast.OptimizerItem(call, _pos(keyword))

    def machine_def(self, name: Token, base: Token | None, *fields: ast.Field) -> ast.MachineDef:
        base_name = None if base is None else ast.Name(base.value, _pos(base))
        return ast.MachineDef(name.value, base_name, fields, _pos(name))

    def mesh_field(self, keyword: Token, rows: ast.Expr, cols: ast.Expr) -> ast.MeshField:
        return ast.MeshField(rows, cols, _pos(keyword))

    def ports_field(self, keyword: Token, ports: ast.PortsField) -> ast.PortsField:
        return ast.PortsField(ports.named, ports.ports, _pos(keyword))

    def ports_named(self, name: Token) -> ast.PortsField:
        return ast.PortsField(ast.Name(name.value, _pos(name)), (), _pos(name))

    def ports_listed(self, *ports: tuple[ast.Expr, ast.Expr]) -> ast.PortsField:
        return ast.PortsField(None, ports, _expr_pos(ports[0][0]))

    def port(self, row: ast.Expr, col: ast.Expr) -> tuple[ast.Expr, ast.Expr]:
        return (row, col)

    def value_field(self, name: Token, value: ast.Expr, unit: ast.Unit | None) -> ast.ValueField:
        return ast.ValueField(name.value, value, unit, _pos(name))

    def unit(self, num: Token, den: Token | None) -> ast.Unit:
        return ast.Unit(num.value, None if den is None else den.value, _pos(num))

    def binary(self, first: ast.Expr, *rest: Token | ast.Expr) -> ast.Expr:
        return _by_precedence(first, rest)

    def neg(self, minus: Token, operand: ast.Expr) -> ast.Neg:
        return ast.Neg(operand, _pos(minus))

    def int_lit(self, token: Token) -> ast.Num:
        # Past 19 digits an integer cannot fit in 64 bits; the evaluator reports an infinite
        # literal as out of range (and Python refuses to convert over 4300 digits anyway).
        digits = token.value
        return ast.Num(int(digits) if len(digits.lstrip("0")) <= 19 else math.inf, _pos(token))

    def float_lit(self, token: Token) -> ast.Num:
        return ast.Num(float(token.value), _pos(token))

    def str_lit(self, token: Token) -> ast.Str:
        return ast.Str(token.value[1:-1], _pos(token))

    def true_lit(self, token: Token) -> ast.Bool:
        return ast.Bool(True, _pos(token))

    def false_lit(self, token: Token) -> ast.Bool:
        return ast.Bool(False, _pos(token))

    def name_ref(self, token: Token) -> ast.Name:
        return ast.Name(token.value, _pos(token))

    def list_lit(self, bracket: Token, *items: ast.Expr | None) -> ast.ListExpr:
        return ast.ListExpr(tuple(i for i in items if i is not None), _pos(bracket))

    def call(self, func: Token, *args: ast.Expr | ast.KwArg | None) -> ast.Call:
        positional: list[ast.Expr] = []
        keywords: list[ast.KwArg] = []
        late: ast.Pos | None = None
        for arg in args:  # one pass: this runs for every layer line
            if isinstance(arg, ast.KwArg):
                keywords.append(arg)
            elif arg is not None:
                positional.append(arg)
                if keywords and late is None:
                    late = arg.pos
        return ast.Call(func.value, tuple(positional), tuple(keywords), _pos(func), late)

    def kwarg(self, name: Token, value: ast.Expr) -> ast.KwArg:
        return ast.KwArg(name.value, value, _pos(name))


_PRECEDENCE = {"+": 1, "-": 1, "*": 2, "/": 2, "//": 2, "%": 2}


def _by_precedence(first: ast.Expr, rest: tuple[Token | ast.Expr, ...]) -> ast.Expr:
    """Left-associative binary operators in a flat ``a op b op c`` list, ``*`` before ``+``."""
    operands: list[ast.Expr] = [first]
    operators: list[Token] = []
    for index in range(0, len(rest), 2):
        op, operand = rest[index], rest[index + 1]
        assert isinstance(op, Token) and not isinstance(operand, Token)
        while operators and _PRECEDENCE[operators[-1].value] >= _PRECEDENCE[op.value]:
            _reduce(operands, operators.pop())
        operators.append(op)
        operands.append(operand)
    while operators:
        _reduce(operands, operators.pop())
    return operands[0]


def _reduce(operands: list[ast.Expr], op: Token) -> None:
    right = operands.pop()
    left = operands.pop()
    operands.append(ast.BinOp(op.value, left, right, _pos(op)))


def _strict_available() -> bool:
    # Lark's strict mode needs the optional `interegular` package to check terminal
    # collisions; the grammar is checked strictly wherever it is installed (CI and tests).
    return importlib.util.find_spec("interegular") is not None


@functools.cache
def parser() -> lark.Lark:
    """The shared LALR parser for `.crn` text (built once, cached on disk by Lark).

    Tokens come from :class:`CrnLexer`, which reads exactly what Lark's contextual lexer
    would, about three times faster; its contextual fallback is built here, so that strict
    mode checks the per-state terminal sets as it would with ``lexer="contextual"``.
    """
    grammar = build_parser(CrnLexer)
    start = grammar.parse_interactive("")
    lexer = start.lexer_thread.lexer
    assert isinstance(lexer, CrnLexer)
    lexer.contextual(start.parser_state)
    return grammar


def build_parser(lexer: str | type[lark.lexer.Lexer]) -> lark.Lark:
    """A `.crn` parser with the given Lark lexer (``"contextual"`` is the reference one)."""
    return lark.Lark(
        GRAMMAR_PATH.read_text(encoding="utf-8"),
        parser="lalr",
        lexer=lexer,
        transformer=_ToAst(),
        strict=_strict_available(),
        cache=True,
        maybe_placeholders=True,
    )


def parse_module(text: str) -> ast.Module:
    """Parse `.crn` text; a syntax error becomes ``SyntaxProblem`` with a friendly message."""
    try:
        module = parser().parse(text)
    except lark.exceptions.UnexpectedInput as error:
        raise describe_syntax_error(error, text, parser()) from None
    assert isinstance(module, ast.Module)
    return module
