"""From `.crn` files to a :class:`Network`: imports, file-level definitions, the network
body and its training section.

Order of work: the imported files (depth first, each once; cycles are errors), then the
main file's constants, blocks and machines in source order, then the one network.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from crane.dialects.layers.values import did_you_mean
from crane.dialects.optimizers import OPTIMIZERS, hyper_problem
from crane.frontend.crn import ast
from crane.frontend.crn.context import BlockInfo, Ctx, Frame, Poisoned, TooLarge
from crane.frontend.crn.evaluate import describe, eval_expr, eval_int
from crane.frontend.crn.machines import build_machine
from crane.frontend.crn.scope import POISON, Scope, Tensor
from crane.frontend.crn.statements import call_block, exec_body
from crane.frontend.crn.syntax import parse_module
from crane.frontend.crn.syntax_errors import SyntaxProblem
from crane.frontend.errors import CrnError, CrnErrors
from crane.frontend.model import Network, Optimizer, Training
from crane.hardware.machine import Machine, builtin_machines
from crane.limits import BATCH
from crane.limits.files import describe as describe_read_error
from crane.limits.files import read_text

Reader = Callable[[Path], str]


def elaborate(text: str, filename: str, network: str | None = None,
              reader: Reader | None = None) -> Network:
    """Parse and elaborate one `.crn` file; raises :class:`CrnErrors` with every error found."""
    ctx = Ctx(call_block)
    loader = _Loader(ctx, reader or _read_file)
    try:
        module = loader.parse(text, filename)
        result = None if module is None else _elaborate_main(ctx, loader, module, filename, network)
    except TooLarge as stop:
        ctx.errors.append(stop.error)
        result = None
    except RecursionError:
        ctx.errors.append(ctx.error(filename, (1, 1, 1), "the file nests too deeply to elaborate "
                                    "(expressions or blocks nested hundreds of levels)"))
        result = None
    if ctx.errors or result is None:
        unique = {(e.loc, e.message): e for e in ctx.errors}  # a block's error repeats per call
        raise CrnErrors(sorted(unique.values(), key=_order) or [ctx.error(filename, (1, 1, 1), "no network")])
    return result


def elaborate_machines(text: str, filename: str, reader: Reader | None = None) -> dict[str, Machine]:
    """The machines a `.crn` file defines (with those of the files it imports), by name.

    A network in the file is not elaborated; raises :class:`CrnErrors` when the file or
    one of its machines has an error, or when it defines no machine."""
    ctx = Ctx(call_block)
    loader = _Loader(ctx, reader or _read_file)
    module = loader.parse(text, filename)
    if module is not None:
        loader.load(module, filename, main=True)
    if not ctx.errors and not ctx.machines:
        ctx.errors.append(ctx.error(filename, (1, 1, 1), "the file defines no machine; a machine "
                                    "file needs `machine name { ... }`"))
    if ctx.errors:
        raise CrnErrors(sorted({(e.loc, e.message): e for e in ctx.errors}.values(), key=_order))
    return {name: entry[0] for name, entry in ctx.machines.items()}


def _order(error: CrnError) -> tuple[str, int, int]:
    return (error.loc.file, error.loc.line, error.loc.col)


def _read_file(path: Path) -> str:
    return read_text(path)  # a regular file of at most crane.limits.MAX_FILE_BYTES


class _Loader:
    """Parses files and registers their file-level definitions, following imports."""

    def __init__(self, ctx: Ctx, reader: Reader) -> None:
        self.ctx = ctx
        self.reader = reader
        self.done: set[str] = set()
        self.active: list[str] = []

    def parse(self, text: str, filename: str) -> ast.Module | None:
        self.ctx.sources[filename] = text.split("\n")
        try:
            return parse_module(text)
        except SyntaxProblem as problem:
            self.ctx.errors.append(self.ctx.error(filename, problem.pos, problem.message))
            return None

    def load(self, module: ast.Module, filename: str, main: bool) -> None:
        key = os.path.abspath(filename)
        self.active.append(key)
        for item in module.items:
            self._item(item, filename, main)
        self.active.pop()
        self.done.add(key)

    def _item(self, item: ast.Item, filename: str, main: bool) -> None:
        try:
            if isinstance(item, ast.Import):
                self._import(item, filename)
            elif isinstance(item, ast.NetworkDef) and not main:
                raise self.ctx.error(filename, item.pos, f"imported file defines network '{item.name}'; "
                                     "a library file may hold blocks, machines and constants")
            elif isinstance(item, ast.Let):
                _define(self.ctx, filename, item.name, item.pos)
                self.ctx.globals.names[item.name] = POISON  # until its value is known
                self.ctx.globals.names[item.name] = eval_expr(self.ctx, Frame(filename, self.ctx.globals), item.value)
            elif isinstance(item, ast.BlockDef):
                _register_block(self.ctx, item, filename)
            elif isinstance(item, ast.MachineDef):
                _register_machine(self.ctx, item, filename)
        except CrnError as error:
            self.ctx.errors.append(error)
        except Poisoned:
            pass

    def _import(self, item: ast.Import, filename: str) -> None:
        path = os.path.normpath(os.path.join(os.path.dirname(filename), item.path))
        key = os.path.abspath(path)
        if key in self.active:
            chain = " -> ".join(os.path.basename(p) for p in (*self.active[self.active.index(key):], key))
            raise self.ctx.error(filename, item.pos, f"import cycle: {chain}")
        if key in self.done:
            return
        try:
            text = self.reader(Path(path))
        except (OSError, UnicodeDecodeError) as problem:
            reason = describe_read_error(problem)
            raise self.ctx.error(filename, item.pos, f"cannot import \"{item.path}\": {reason} "
                                 f"(looked for {path})") from None
        module = self.parse(text, path)
        if module is not None:
            self.load(module, path, main=False)


def _define(ctx: Ctx, file: str, name: str, pos: ast.Pos) -> None:
    """Check that a file-level name is new (constants, blocks and machines share one space)."""
    first = ctx.globals.defs.get(name)
    if first is not None:
        note = ctx.note(first[0], first[1], f"'{name}' was first defined here")
        raise ctx.error(file, pos, f"duplicate name '{name}'", [note])
    ctx.globals.defs[name] = (file, pos)


def _register_block(ctx: Ctx, item: ast.BlockDef, filename: str) -> None:
    _define(ctx, filename, item.name, item.pos)
    seen: set[str] = set()
    for param in item.params:
        if param.name in seen:
            raise ctx.error(filename, param.pos, f"block '{item.name}' has two parameters named '{param.name}'")
        seen.add(param.name)
    if not any(isinstance(stmt, ast.Return) for stmt in item.body):
        raise ctx.error(filename, item.pos, f"block '{item.name}' has no return statement; end it "
                        "with `return <expression>;`")
    ctx.blocks[item.name] = BlockInfo(item, filename)


def _register_machine(ctx: Ctx, item: ast.MachineDef, filename: str) -> None:
    _define(ctx, filename, item.name, item.pos)
    ctx.failed.add(item.name)
    machine = build_machine(ctx, Frame(filename, ctx.globals), item, _known_machines(ctx))
    ctx.machines[item.name] = (machine, filename, item.pos)
    ctx.failed.discard(item.name)


def _known_machines(ctx: Ctx) -> dict[str, Machine]:
    # User definitions shadow built-ins of the same name (examples/machines/edge.crn).
    return {**builtin_machines(), **{name: entry[0] for name, entry in ctx.machines.items()}}


def _elaborate_main(ctx: Ctx, loader: _Loader, module: ast.Module, filename: str,
                    wanted: str | None) -> Network | None:
    loader.load(module, filename, main=True)
    networks = [item for item in module.items if isinstance(item, ast.NetworkDef)]
    if not networks:
        ctx.errors.append(ctx.error(filename, (1, 1, 1), "the file defines no network; a model file "
                                    "needs `network name { ... }`"))
        return None
    if wanted is not None:
        chosen = [n for n in networks if n.name == wanted]
        if not chosen:
            names = [n.name for n in networks]
            ctx.errors.append(ctx.error(filename, (1, 1, 1), f"no network '{wanted}'{did_you_mean(wanted, names)}"))
            return None
        return _network(ctx, chosen[0], filename)
    if len(networks) > 1:
        ctx.errors.append(ctx.error(filename, networks[1].pos, "the file defines several networks "
                                    f"({', '.join(n.name for n in networks)}); choose one by name"))
        return None
    return _network(ctx, networks[0], filename)


def _network(ctx: Ctx, defn: ast.NetworkDef, filename: str) -> Network | None:
    head = Frame(filename, ctx.globals)
    trains = [stmt for stmt in defn.body if isinstance(stmt, ast.TrainStmt)]
    batch = _batch(ctx, head, defn.body, trains)
    machine = _machine(ctx, head, defn.body)
    ctx.net_globals = Scope(ctx.globals)
    ctx.net_globals.names["batch"] = batch
    ctx.trains = bool(trains)
    frame = Frame(filename, Scope(ctx.net_globals))
    exec_body(ctx, frame, defn.body)
    training = _training(ctx, frame, trains[0], batch) if trains else None
    if len(trains) > 1:
        ctx.errors.append(ctx.error(filename, trains[1].pos, "a network has at most one train section"))
    if not ctx.outputs and ctx.layers:
        # Without `output`, the result is the last layer that is not a loss.
        results = [layer.name for layer in ctx.layers if layer.kind not in ("cross_entropy", "mse")]
        ctx.outputs.append(results[-1] if results else ctx.layers[-1].name)
    return Network(defn.name, tuple(ctx.inputs), tuple(ctx.layers), tuple(ctx.outputs), training,
                   machine, batch, ctx.loc(filename, defn.pos))


def _batch(ctx: Ctx, frame: Frame, body: tuple[ast.Stmt, ...], trains: list[ast.TrainStmt]) -> int:
    stmts = [s for s in body if isinstance(s, ast.BatchStmt)]
    stmts += [i for t in trains for i in t.items if isinstance(i, ast.BatchStmt)]
    if len(stmts) > 1:
        note = ctx.note(frame.file, stmts[0].pos, "the batch size was first set here")
        ctx.errors.append(ctx.error(frame.file, stmts[1].pos, "the batch size is set twice (a train "
                                    "section's batch is the network's batch)", [note]))
    if not stmts:
        return 1
    try:
        value = eval_int(ctx, frame, stmts[0].value, "the batch size")
    except (CrnError, Poisoned) as problem:
        if isinstance(problem, CrnError):
            ctx.errors.append(problem)
        return 1
    out_of_range = BATCH.check("the batch size", value)
    if out_of_range is None:
        return value
    ctx.errors.append(ctx.error(frame.file, stmts[0].value.pos, out_of_range))
    return 1


def _machine(ctx: Ctx, frame: Frame, body: tuple[ast.Stmt, ...]) -> Machine | None:
    uses = [s for s in body if isinstance(s, ast.UseMachine)]
    if not uses:
        return None
    if len(uses) > 1:
        ctx.errors.append(ctx.error(frame.file, uses[1].pos, "a network names one machine"))
    known = _known_machines(ctx)
    if uses[0].name in known:
        return known[uses[0].name]
    if uses[0].name in ctx.failed:
        return None
    ctx.errors.append(ctx.error(frame.file, uses[0].pos, f"unknown machine '{uses[0].name}'"
                                f"{did_you_mean(uses[0].name, known)} (known: {', '.join(sorted(known))})"))
    return None


def _training(ctx: Ctx, frame: Frame, train: ast.TrainStmt, batch: int) -> Training | None:
    losses = [i for i in train.items if isinstance(i, ast.LossItem)]
    opts = [i for i in train.items if isinstance(i, ast.OptimizerItem)]
    if len(losses) != 1 or len(opts) != 1:
        ctx.errors.append(ctx.error(frame.file, train.pos, "a train section needs exactly one `loss ...;` "
                                    f"and one `optimizer ...;` (found {len(losses)} and {len(opts)})"))
        return None
    try:
        loss = _loss(ctx, frame, losses[0])
        optimizer = _optimizer(ctx, frame, opts[0].call)
    except CrnError as error:
        ctx.errors.append(error)
        return None
    except Poisoned:
        return None
    return Training(loss, optimizer, batch, ctx.loc(frame.file, train.pos))


def _loss(ctx: Ctx, frame: Frame, item: ast.LossItem) -> str:
    value = eval_expr(ctx, frame, item.value, "loss")
    if not isinstance(value, Tensor):
        raise ctx.error(frame.file, item.value.pos, f"the loss must be a tensor, got {describe(value)}")
    kinds = {layer.name: layer.kind for layer in ctx.layers}
    if kinds.get(value.name) not in ("cross_entropy", "mse"):
        raise ctx.error(frame.file, item.value.pos, f"the loss must come from a loss layer "
                        f"(cross_entropy or mse), got '{value.name}' ({kinds.get(value.name, 'an input')})")
    return value.name


def _optimizer(ctx: Ctx, frame: Frame, call: ast.Call) -> Optimizer:
    spec = OPTIMIZERS.get(call.func)
    if spec is None:
        raise ctx.error(frame.file, call.pos, f"unknown optimizer '{call.func}'"
                        f"{did_you_mean(call.func, OPTIMIZERS)} (known: {', '.join(OPTIMIZERS)})")
    if call.args:
        raise ctx.error(frame.file, call.args[0].pos, "optimizer hyper-parameters are passed by name, e.g. lr=0.1")
    hyper: dict[str, float | bool] = {}
    for kw in call.kwargs:
        if kw.name not in spec:
            raise ctx.error(frame.file, kw.pos, f"unknown hyper-parameter '{kw.name}' for {call.func}"
                            f"{did_you_mean(kw.name, spec)} (valid: {', '.join(spec)})")
        hyper[kw.name] = _hyper(ctx, frame, kw, isinstance(spec[kw.name], bool))
    for name, default in spec.items():
        if name not in hyper and default is None:
            raise ctx.error(frame.file, call.pos, f"{call.func} needs {name}=...")
    # In the table's order, defaults filled in, so equal sections compare equal.
    ordered = {name: hyper.get(name, default) for name, default in spec.items()}
    return Optimizer(call.func, ordered)  # type: ignore[arg-type]


def _hyper(ctx: Ctx, frame: Frame, kw: ast.KwArg, boolean: bool) -> float | bool:
    value = eval_expr(ctx, frame, kw.value)
    if boolean and isinstance(value, bool):
        return value
    if not boolean and isinstance(value, int | float) and not isinstance(value, bool):
        problem = hyper_problem(kw.name, float(value))
        if problem is not None:
            raise ctx.error(frame.file, kw.value.pos, problem)
        return float(value)
    wanted = "true or false" if boolean else "a number"
    raise ctx.error(frame.file, kw.value.pos, f"hyper-parameter '{kw.name}' expects {wanted}, got {describe(value)}")
