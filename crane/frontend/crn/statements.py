"""Executing statements of network and block bodies, and calling blocks.

Errors are collected per statement: a failing statement is reported, the name it would
have bound becomes poisoned, and later statements that use it fail silently, so one
mistake gives one message, and independent mistakes each get theirs.
"""

from __future__ import annotations

import dataclasses

from crane.dialects.layers.values import did_you_mean
from crane.frontend.crn import ast
from crane.frontend.crn.context import MAX_DEPTH, MAX_REPEAT, BlockInfo, Ctx, Frame, Poisoned
from crane.frontend.crn.evaluate import describe, eval_expr, eval_int, eval_loose
from crane.frontend.crn.scope import POISON, Scope, Tensor, Value
from crane.frontend.errors import CrnError
from crane.frontend.model import DTYPE_BYTES, InputDecl
from crane.limits import tensor_size_problem

NETWORK_ONLY = (ast.InputStmt, ast.OutputStmt, ast.UseMachine, ast.BatchStmt, ast.TrainStmt)


def exec_body(ctx: Ctx, frame: Frame, body: tuple[ast.Stmt, ...]) -> Value | None:
    """Run statements in order; the value of the first ``return``, if any."""
    for stmt in body:
        ctx.step(frame.file, stmt.pos)
        try:
            result = _exec(ctx, frame, stmt)
        except CrnError as error:
            ctx.errors.append(error)
            _poison_target(frame, stmt)
            continue
        except Poisoned:
            _poison_target(frame, stmt)
            continue
        if result is not None:
            return result
    return None


def _poison_target(frame: Frame, stmt: ast.Stmt) -> None:
    if isinstance(stmt, ast.Assign | ast.Let | ast.InputStmt):
        name = stmt.target if isinstance(stmt, ast.Assign) else stmt.name
        carrier = frame.scope.carrier(name) if frame.scope.is_loop else None
        if carrier is not None:
            carrier.names[name] = POISON
        elif name not in frame.scope.names:
            frame.scope.names[name] = POISON
            frame.scope.defs[name] = (frame.file, stmt.pos)
    if isinstance(stmt, ast.Return) and frame.block is not None:
        raise Poisoned()  # the block has no result; its caller's statement fails silently


def _exec(ctx: Ctx, frame: Frame, stmt: ast.Stmt) -> Value | None:
    if frame.block is not None and isinstance(stmt, NETWORK_ONLY):
        raise ctx.error(frame.file, stmt.pos, f"{_keyword(stmt)} belongs in a network, not in block "
                        f"'{frame.block}'; blocks take tensors and numbers as parameters")
    if isinstance(stmt, ast.Assign):
        hint = f"{frame.prefix}{stmt.target}{frame.suffix}"
        bind(ctx, frame, stmt.target, eval_expr(ctx, frame, stmt.value, hint), stmt.pos)
    elif isinstance(stmt, ast.Let):
        bind(ctx, frame, stmt.name, _constant(ctx, frame, stmt.value), stmt.pos)
    elif isinstance(stmt, ast.InputStmt):
        _input(ctx, frame, stmt)
    elif isinstance(stmt, ast.OutputStmt):
        _output(ctx, frame, stmt)
    elif isinstance(stmt, ast.Repeat):
        _repeat(ctx, frame, stmt)
    elif isinstance(stmt, ast.Return):
        return _return(ctx, frame, stmt)
    return None


def _keyword(stmt: ast.Stmt) -> str:
    names = {ast.InputStmt: "'input'", ast.OutputStmt: "'output'", ast.UseMachine: "'machine'",
             ast.BatchStmt: "'batch'", ast.TrainStmt: "'train'"}
    return names.get(type(stmt), "this statement")


def bind(ctx: Ctx, frame: Frame, name: str, value: Value, pos: ast.Pos) -> None:
    """Bind ``name`` in the current scope (or carry it, inside a loop)."""
    scope = frame.scope
    carrier = scope.carrier(name) if scope.is_loop else None
    if carrier is not None:
        carrier.names[name] = value
        return
    if name in scope.names:
        first_file, first_pos = scope.defs[name]
        note = ctx.note(first_file, first_pos, f"'{name}' was first defined here")
        raise ctx.error(frame.file, pos, f"duplicate name '{name}'; each name is bound once "
                        "(inside a repeat, assigning an outer name carries it)", [note])
    scope.names[name] = value
    scope.defs[name] = (frame.file, pos)


def _constant(ctx: Ctx, frame: Frame, expr: ast.Expr) -> Value:
    value = eval_expr(ctx, frame, expr)
    if isinstance(value, Tensor):
        raise ctx.error(frame.file, expr.pos, f"'let' binds numbers, got {describe(value)}; "
                        "bind tensors with `name = ...;`")
    return value


def _input(ctx: Ctx, frame: Frame, stmt: ast.InputStmt) -> None:
    dtype = stmt.dtype.id
    if dtype not in DTYPE_BYTES:
        raise ctx.error(frame.file, stmt.dtype.pos, f"unknown dtype '{dtype}'"
                        f"{did_you_mean(dtype, DTYPE_BYTES)} (valid: {', '.join(DTYPE_BYTES)})")
    dims = tuple(eval_int(ctx, frame, d, "a dimension") for d in stmt.dims)
    for dim, expr in zip(dims, stmt.dims, strict=True):
        if dim <= 0:
            raise ctx.error(frame.file, expr.pos, f"input dimensions must be positive, got {dim}")
    too_large = tensor_size_problem(dims)
    if too_large is not None:
        raise ctx.error(frame.file, stmt.pos, f"input '{stmt.name}': {too_large}")
    bind(ctx, frame, stmt.name, Tensor(stmt.name, dims, dtype), stmt.pos)
    ctx.taken.add(stmt.name)
    ctx.inputs.append(InputDecl(stmt.name, dims, dtype, ctx.loc(frame.file, stmt.pos)))


def _output(ctx: Ctx, frame: Frame, stmt: ast.OutputStmt) -> None:
    for name in stmt.names:
        value = frame.scope.lookup(name.id)
        if value is POISON:
            continue
        if value is None:
            hint = did_you_mean(name.id, frame.scope.visible())
            raise ctx.error(frame.file, name.pos, f"undefined name '{name.id}'{hint}")
        if not isinstance(value, Tensor):
            raise ctx.error(frame.file, name.pos, f"output '{name.id}' must be a tensor, got {describe(value)}")
        if value.name in ctx.outputs:
            raise ctx.error(frame.file, name.pos, f"'{name.id}' is already an output")
        ctx.outputs.append(value.name)


def _repeat(ctx: Ctx, frame: Frame, stmt: ast.Repeat) -> None:
    start = eval_int(ctx, frame, stmt.start, "a repeat bound")
    stop = eval_int(ctx, frame, stmt.stop, "a repeat bound")
    if stop - start > MAX_REPEAT:
        raise ctx.error(frame.file, stmt.stop.pos, f"repeat {start}..{stop} has {stop - start} "
                        f"iterations; at most {MAX_REPEAT} are allowed")
    for index in range(start, stop):
        ctx.step(frame.file, stmt.pos)
        inner = frame.loop_iteration(index)
        bind(ctx, inner, stmt.var, index, stmt.pos)
        if exec_body(ctx, inner, stmt.body) is not None:
            raise ctx.error(frame.file, stmt.pos, "'return' cannot appear inside a repeat body")


def _return(ctx: Ctx, frame: Frame, stmt: ast.Return) -> Value:
    if frame.block is None:
        raise ctx.error(frame.file, stmt.pos, "'return' belongs in a block; a network names its "
                        "results with `output name;`")
    return eval_expr(ctx, frame, stmt.value, frame.prefix[:-1] + frame.suffix)


def call_block(ctx: Ctx, frame: Frame, call: ast.Call, info: BlockInfo, hint: str | None) -> Value:
    """Expand a block call: bind its parameters, run its body, return its result."""
    name = info.defn.name
    if name in frame.stack:
        chain = " -> ".join((*frame.stack[frame.stack.index(name):], name))
        raise ctx.error(frame.file, call.pos, f"block '{name}' calls itself ({chain}); blocks "
                        "cannot be recursive, use repeat")
    if len(frame.stack) >= MAX_DEPTH:
        raise ctx.error(frame.file, call.pos, f"blocks nest more than {MAX_DEPTH} deep")
    instance = ctx.unique(hint if hint is not None else f"{frame.prefix}{name}{frame.suffix}")
    ctx.taken.discard(instance)  # the result layer itself may take the instance name
    assert ctx.net_globals is not None
    inner = Frame(info.file, Scope(ctx.net_globals), f"{instance}.", "", name, (*frame.stack, name))
    _bind_params(ctx, frame, inner, call, info)
    first_layer = len(ctx.layers)
    result = exec_body(ctx, inner, info.defn.body)
    if result is None:
        raise ctx.error(frame.file, call.pos, f"block '{name}' returned nothing; end it with "
                        "`return <expression>;`")
    return _named_result(ctx, result, instance, first_layer)


def _named_result(ctx: Ctx, result: Value, instance: str, first_layer: int) -> Value:
    """A block that returns a name (``return y;``) gives its last layer the call's name."""
    # Only a layer this call made: a returned parameter belongs to the caller.
    last = ctx.layers[-1] if len(ctx.layers) > first_layer else None
    if not isinstance(result, Tensor) or last is None or last.name != result.name:
        return result
    if instance in ctx.taken:
        return result
    # The last layer of the block cannot be an input of any other layer yet: renaming it is safe.
    ctx.taken.discard(last.name)
    ctx.taken.add(instance)
    ctx.layers[-1] = dataclasses.replace(last, name=instance)
    return Tensor(instance, result.shape, result.dtype)


def _bind_params(ctx: Ctx, caller: Frame, inner: Frame, call: ast.Call, info: BlockInfo) -> None:
    params = info.defn.params
    name = info.defn.name
    if len(call.args) > len(params):
        raise ctx.error(caller.file, call.args[len(params)].pos,
                        f"block '{name}' takes {len(params)} parameter(s), got {len(call.args)}")
    values: dict[str, Value] = {}
    for param, arg in zip(params, call.args, strict=False):
        values[param.name] = eval_loose(ctx, caller, arg)
    names = [p.name for p in params]
    for kw in call.kwargs:
        if kw.name not in names:
            raise ctx.error(caller.file, kw.pos, f"block '{name}' has no parameter '{kw.name}'"
                            f"{did_you_mean(kw.name, names)} (parameters: {', '.join(names)})")
        if kw.name in values:
            raise ctx.error(caller.file, kw.pos, f"parameter '{kw.name}' of block '{name}' given twice")
        values[kw.name] = eval_loose(ctx, caller, kw.value)
    for param in params:
        if param.name not in values and param.default is None:
            raise ctx.error(caller.file, call.pos, f"block '{name}' needs parameter '{param.name}'")
        value = values[param.name] if param.name in values else _default(ctx, inner, param)
        if value is POISON:
            raise Poisoned()
        bind(ctx, inner, param.name, value, param.pos)


def _default(ctx: Ctx, inner: Frame, param: ast.Param) -> Value:
    assert param.default is not None
    # Loose: a default may be a bare word for a layer parameter (padding=same).
    return eval_loose(ctx, inner, param.default)
