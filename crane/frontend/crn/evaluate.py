"""Evaluating expressions: parameter arithmetic, lists, and calls of layer kinds.

A call of a layer kind checks its tensor inputs and parameters against
:data:`LAYER_KINDS`, runs the kind's shape rule and appends a :class:`Layer`. A call of a
block is delegated to :mod:`crane.frontend.crn.statements`, which runs its body.
"""

from __future__ import annotations

import math

from crane.dialects.layers.definition import INFERENCE, LayerKind, Param, ParamError, coerce
from crane.dialects.layers.kinds import DEFAULT_ATTRS, LAYER_KINDS
from crane.dialects.layers.rules import ShapeError
from crane.dialects.layers.values import did_you_mean
from crane.frontend.crn import ast
from crane.frontend.crn.context import Ctx, Frame, Poisoned
from crane.frontend.crn.scope import POISON, Symbol, Tensor, Value
from crane.frontend.errors import CrnError
from crane.frontend.model import INTEGER_DTYPES, AttrValue, Layer, WeightDecl
from crane.limits import MAX_INTEGER, tensor_size_problem

Number = int | float

PARAMS: dict[str, dict[str, Param]] = {name: {p.name: p for p in kind.params} for name, kind in LAYER_KINDS.items()}
"""Each layer kind's parameters by name (looked up for every keyword argument)."""
REQUIRED: dict[str, tuple[Param, ...]] = {name: tuple(p for p in kind.params if p.required)
                                          for name, kind in LAYER_KINDS.items()}
"""Each layer kind's required parameters, in table order."""
MODE_DEPENDENT: dict[str, tuple[str, ...]] = {
    name: tuple(p.name for p in kind.params if p.default is INFERENCE)
    for name, kind in LAYER_KINDS.items()}
"""Each layer kind's parameters that default to "the network does not train"."""
INPUT_COUNTS: dict[str, tuple[int, int | None]] = {name: (kind.min_inputs, kind.max_inputs)
                                                   for name, kind in LAYER_KINDS.items()}
"""Each layer kind's fewest and most tensor inputs (None: no limit)."""


def eval_expr(ctx: Ctx, frame: Frame, expr: ast.Expr, hint: str | None = None) -> Value:
    """The value of ``expr``; a bare unbound word is an "undefined name" error."""
    value = eval_loose(ctx, frame, expr, hint)
    if isinstance(value, Symbol):
        raise undefined(ctx, frame, value)
    return value


def eval_loose(ctx: Ctx, frame: Frame, expr: ast.Expr, hint: str | None = None) -> Value:
    """Like :func:`eval_expr`, but an unbound bare word is returned as a :class:`Symbol`."""
    # Most frequent first (layer inputs, layer calls, literal parameters): single-class
    # isinstance checks are the cheap ones.
    if isinstance(expr, ast.Name):
        found = frame.scope.lookup(expr.id)
        return Symbol(expr.id, expr.pos) if found is None else found
    if isinstance(expr, ast.Call):
        return eval_call(ctx, frame, expr, hint)
    if isinstance(expr, ast.Num):
        return literal(ctx, frame, expr)
    if isinstance(expr, (ast.Str, ast.Bool)):
        return expr.value
    if isinstance(expr, ast.ListExpr):
        return tuple(_plain(ctx, frame, eval_expr(ctx, frame, item), item) for item in expr.items)
    if isinstance(expr, ast.Neg):
        return -eval_number(ctx, frame, expr.operand)
    return _representable(ctx, frame, expr, _binop(ctx, frame, expr))


def literal(ctx: Ctx, frame: Frame, num: ast.Num) -> Number:
    """The value of a number literal, refused if it does not fit a 64-bit integer or float."""
    if isinstance(num.value, int) and abs(num.value) <= MAX_INTEGER:
        return num.value
    if isinstance(num.value, float) and math.isfinite(num.value):
        return num.value
    raise ctx.error(frame.file, num.pos, f"number literal out of range: integers are limited "
                    f"to +-{MAX_INTEGER} (2^63-1) and floats to about +-1.8e308")


def _representable(ctx: Ctx, frame: Frame, expr: ast.BinOp, value: Number) -> Number:
    """``value``, unless arithmetic overflowed: past 2^63-1, or a float to inf or nan."""
    if isinstance(value, int) and abs(value) <= MAX_INTEGER:
        return value
    if isinstance(value, float) and math.isfinite(value):
        return value
    raise ctx.error(frame.file, expr.pos, f"arithmetic overflow in '{expr.op}': the result "
                    f"{'exceeds 2^63-1 in magnitude' if isinstance(value, int) else 'is not a finite number'}")


def eval_number(ctx: Ctx, frame: Frame, expr: ast.Expr) -> Number:
    """A numeric value (an int or a float, not a bool, tensor or list)."""
    value = eval_expr(ctx, frame, expr)
    if isinstance(value, int | float) and not isinstance(value, bool):
        return value
    raise _poison_or(value, ctx.error(frame.file, expr.pos, f"expected a number here, got {describe(value)}"))


def eval_int(ctx: Ctx, frame: Frame, expr: ast.Expr, what: str) -> int:
    """An integer value; ``what`` names it in the message."""
    value = eval_number(ctx, frame, expr)
    if isinstance(value, int):
        return value
    raise ctx.error(frame.file, expr.pos, f"{what} must be an integer, got {value}")


def undefined(ctx: Ctx, frame: Frame, symbol: Symbol) -> CrnError:
    """The "undefined name" error for a bare word, with the closest visible name."""
    hint = did_you_mean(symbol.name, frame.scope.visible())
    return ctx.error(frame.file, symbol.pos, f"undefined name '{symbol.name}'{hint}")


def describe(value: Value) -> str:
    """How a value is named in messages."""
    if isinstance(value, Tensor):
        return f"tensor '{value.name}' {list(value.shape)}"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, tuple):
        return f"a list of {len(value)} values"
    if isinstance(value, str):
        return f"'{value}'"
    return f"{type(value).__name__} {value}"


def _poison_or(value: Value, error: CrnError) -> Exception:
    return Poisoned() if value is POISON else error


def _plain(ctx: Ctx, frame: Frame, value: Value, expr: ast.Expr) -> Value:
    if isinstance(value, int | float | bool | str):
        return value
    raise _poison_or(value, ctx.error(frame.file, expr.pos, f"a list may hold numbers, got {describe(value)}"))


def _binop(ctx: Ctx, frame: Frame, expr: ast.BinOp) -> Number:
    left = eval_number(ctx, frame, expr.left)
    right = eval_number(ctx, frame, expr.right)
    if expr.op == "+":
        return left + right
    if expr.op == "-":
        return left - right
    if expr.op == "*":
        return left * right
    if right == 0:
        raise ctx.error(frame.file, expr.pos, f"division by zero in '{expr.op}'")
    if expr.op == "//":
        return left // right
    if expr.op == "%":
        return left % right
    exact = isinstance(left, int) and isinstance(right, int) and left % right == 0
    return left // right if exact else left / right


def eval_call(ctx: Ctx, frame: Frame, call: ast.Call, hint: str | None) -> Value:
    """A layer or a block call; ``hint`` is the full name the result should carry."""
    if call.late_positional is not None:
        raise ctx.error(frame.file, call.late_positional, "positional argument after a keyword argument")
    if call.func in ctx.blocks:
        return ctx.expand_block(ctx, frame, call, ctx.blocks[call.func], hint)
    kind = LAYER_KINDS.get(call.func)
    if kind is None:
        known = [*LAYER_KINDS, *ctx.blocks]
        raise ctx.error(frame.file, call.pos,
                        f"unknown layer kind or block '{call.func}'{did_you_mean(call.func, known)}")
    return apply_layer(ctx, frame, call, kind, hint)


def apply_layer(ctx: Ctx, frame: Frame, call: ast.Call, kind: LayerKind, hint: str | None) -> Tensor:
    """Check a layer call, infer its shape, and append the :class:`Layer`."""
    ctx.step(frame.file, call.pos)
    inputs = _tensor_inputs(ctx, frame, call, kind)
    attrs, given = _params(ctx, frame, call, kind)
    shapes = tuple(t.shape for t in inputs)
    try:
        out_shape, resolved = kind.shape(shapes, attrs)
    except ShapeError as problem:
        pos = given.get(problem.param, call.pos) if problem.param else call.pos
        raise ctx.error(frame.file, pos, problem.message) from None
    dtype = _out_dtype(kind, inputs, resolved)
    weights = tuple(WeightDecl(name, shape, dtype) for name, shape in kind.weights(shapes, resolved))
    too_large = next(filter(None, map(tensor_size_problem, (out_shape, *(w.shape for w in weights)))), None)
    if too_large is not None:
        raise ctx.error(frame.file, call.pos, f"{kind.name}: {too_large}")
    name = ctx.unique(hint if hint is not None else f"{frame.prefix}{kind.name}{frame.suffix}")
    loc = ctx.loc(frame.file, call.pos)
    ctx.add_layer(Layer(name, kind.name, tuple(t.name for t in inputs), resolved, weights,
                        out_shape, dtype, loc), frame.file, call.pos)
    return Tensor(name, out_shape, dtype)


def _tensor_inputs(ctx: Ctx, frame: Frame, call: ast.Call, kind: LayerKind) -> list[Tensor]:
    count, (low, high) = len(call.args), INPUT_COUNTS[kind.name]
    if count < low or (high is not None and count > high):
        names = ", ".join(kind.inputs) + (", ..." if kind.variadic else "")
        span = f"{low}" if low == high else (f"{low} or more" if high is None else f"{low} to {high}")
        raise ctx.error(frame.file, call.pos,
                        f"{kind.name} takes {span} tensor input(s) ({names}), got {count}")
    tensors = [_tensor_arg(ctx, frame, kind, index, arg) for index, arg in enumerate(call.args)]
    if not kind.int_inputs:
        return tensors
    for index in sorted(kind.int_inputs):
        if index < len(tensors) and tensors[index].dtype not in INTEGER_DTYPES:
            raise ctx.error(frame.file, call.args[index].pos,
                            f"{kind.name} input '{kind.inputs[index]}' must have an integer dtype "
                            f"(int32, int64, int8), got {tensors[index].dtype}")
    return tensors


def _tensor_arg(ctx: Ctx, frame: Frame, kind: LayerKind, index: int, arg: ast.Expr) -> Tensor:
    if isinstance(arg, ast.Name):  # the usual input, a bound name: no general evaluation
        found = frame.scope.lookup(arg.id)
        if isinstance(found, Tensor):
            return found
    value = eval_expr(ctx, frame, arg)
    if isinstance(value, Tensor):
        return value
    role = kind.inputs[min(index, len(kind.inputs) - 1)]
    raise _poison_or(value, ctx.error(
        frame.file, arg.pos, f"{kind.name} input '{role}' must be a tensor, got {describe(value)}; "
        "parameters are passed by name, e.g. out=64"))


def _params(ctx: Ctx, frame: Frame, call: ast.Call, kind: LayerKind) -> tuple[dict[str, AttrValue], dict[str, ast.Pos]]:
    attrs: dict[str, AttrValue] = {}
    given: dict[str, ast.Pos] = {}
    params = PARAMS[kind.name]
    for kw in call.kwargs:
        param = params.get(kw.name)
        if param is None:
            valid = ", ".join(p.name for p in kind.params) or "none"
            raise ctx.error(frame.file, kw.pos, f"unknown parameter '{kw.name}' for {kind.name}"
                            f"{did_you_mean(kw.name, [p.name for p in kind.params])} (valid: {valid})")
        if kw.name in given:
            raise ctx.error(frame.file, kw.pos, f"parameter '{kw.name}' given twice")
        given[kw.name] = kw.pos
        attrs[kw.name] = _param_value(ctx, frame, kind, param, kw)
    for param in REQUIRED[kind.name]:
        if param.name not in attrs:
            raise ctx.error(frame.file, call.pos, f"{kind.name} needs {param.name}=... ({param.doc})")
    modes = {name: not ctx.trains for name in MODE_DEPENDENT[kind.name] if name not in attrs}
    return {**DEFAULT_ATTRS[kind.name], **modes, **attrs}, given


def _param_value(ctx: Ctx, frame: Frame, kind: LayerKind, param: Param, kw: ast.KwArg) -> AttrValue:
    name = param.name
    value = literal(ctx, frame, kw.value) if isinstance(kw.value, ast.Num) else eval_loose(ctx, frame, kw.value)
    if isinstance(value, Symbol):
        if not param.type.takes_symbol:
            raise undefined(ctx, frame, value)
        value = value.name
    if value is POISON or isinstance(value, Tensor):
        raise _poison_or(value, ctx.error(frame.file, kw.value.pos,
                                          f"{kind.name} parameter '{name}' expects {param.type.value}, "
                                          f"got {describe(value)}"))
    try:
        return coerce(param, value)  # type: ignore[arg-type]
    except ParamError as problem:
        raise ctx.error(frame.file, kw.value.pos, f"{kind.name} parameter '{name}' {problem}") from None


def _out_dtype(kind: LayerKind, inputs: list[Tensor], attrs: dict[str, AttrValue]) -> str:
    if "dtype" in attrs:
        return str(attrs["dtype"])
    for index, tensor in enumerate(inputs):
        if index not in kind.int_inputs:
            return tensor.dtype
    return "f32"


