"""``crane-run``: run a network through the reference interpreter.

    crane-run model.crn                        # forward pass on seeded random inputs
    crane-run model.crn --train --save out/    # one training step, outputs as .npy
    crane-run model.crn --input image=x.npy --dtype f32 --seed 3
    crane-run model.onnx --onnx-batch 2        # an ONNX model with its own weights

The input is a ``.crn`` file, an ONNX model (run with its initializers) or ``graph`` IR
text (as for ``crane-opt``); ``--weights`` reads ``DIR/<name>.npy`` files or one ``.npz``
archive (``crane-opt model.onnx --onnx-weights w.npz`` writes one). ``--train`` expands
the function with the ``autodiff`` library first (the file's training section, overridden
by ``--optimizer`` / ``--lr``) unless it already is a training step. Every
output is summarised as ``name shape mean std first-values``; ``--save DIR`` writes
``DIR/<name>.npy``. Mistakes are reported with their location or as one line; the exit
status is 1 for errors in the input or the run, 2 for bad command-line usage, 3 for an
internal error (one line; ``--debug`` shows the traceback).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from crane.atomic import atomic_output
from crane.autodiff import (
    AutodiffError,
    TrainingConfigError,
    expand_training_step,
    is_training_step,
    resolve_training,
)
from crane.dialects import default_context
from crane.dialects.graph import FuncOp
from crane.exec.interpreter import InterpreterError, peak_live_elements, run_function
from crane.ir.core import Operation, VerifyError
from crane.ir.diagnostics import Diagnostic, DiagnosticError, Severity, SourceManager, render
from crane.ir.verifier import verify
from crane.limits import MAX_BATCH
from crane.limits.files import STDIN, check_regular, describe
from crane.tools.exit_codes import UsageError
from crane.tools.guard import MAX_SEED, check_finite, check_whole, guarded
from crane.tools.inputs import input_format, parse_dims, read_source, translate


def build_parser() -> argparse.ArgumentParser:
    """The ``crane-run`` command line."""
    parser = argparse.ArgumentParser(prog="crane-run", description="run a graph function on numpy arrays")
    parser.add_argument("input", help=".crn, .onnx or IR file ('-' reads standard input)")
    parser.add_argument("--input-format", choices=("ir", "crn", "onnx"), default=None,
                        help="override the format guessed from the suffix (stdin defaults to IR)")
    parser.add_argument("--onnx-batch", type=int, default=None, metavar="N",
                        help="ONNX input: size of a symbolic batch dimension (default 1)")
    parser.add_argument("--onnx-dim", action="append", default=[], metavar="NAME=SIZE",
                        help="ONNX input: size of a named symbolic dimension (repeatable)")
    parser.add_argument("--func", default=None, help="function to run (default: the first graph.func)")
    parser.add_argument("--dtype", choices=("f32", "f64"), default="f32", help="float type (default f32)")
    parser.add_argument("--seed", type=int, default=0, help="seed for random inputs, weights and dropout")
    parser.add_argument("--input", dest="inputs", action="append", default=[], metavar="NAME=FILE.npy",
                        help="give an input (repeatable)")
    parser.add_argument("--weights", default=None, metavar="DIR|FILE.npz",
                        help="read weights as DIR/<name>.npy, or from a .npz archive, where present")
    parser.add_argument("--train", action="store_true", help="run one training step")
    parser.add_argument("--optimizer", default="", help="override the training optimizer (sgd, momentum, adam)")
    parser.add_argument("--lr", type=float, default=None, help="override the learning rate")
    parser.add_argument("--save", default=None, metavar="DIR", help="write every output to DIR/<name>.npy")
    parser.add_argument("--show", type=int, default=4, help="how many leading values to print (default 4)")
    parser.add_argument("--max-memory", type=float, default=2.0, metavar="GIB",
                        help="refuse a network whose tensors need more than this many GiB "
                             "(default 2): the interpreter holds each value until its last reader has run, "
                             "and its kernels need about twice as much again for temporaries")
    parser.add_argument("--debug", action="store_true", help="show Python tracebacks for internal errors")
    return parser


def check_flags(args: argparse.Namespace) -> None:
    """UsageError for a number flag outside its range (shared with ``crane-sim``)."""
    check_whole("--seed", args.seed, 0, MAX_SEED)
    check_whole("--show", args.show, 0, 1_000_000)
    check_finite("--lr", getattr(args, "lr", None), 0.0, above=True)
    check_finite("--max-memory", getattr(args, "max_memory", None), 0.0, above=True)
    if getattr(args, "onnx_batch", None) is not None and args.onnx_batch > 0:
        check_whole("--onnx-batch", args.onnx_batch, 1, MAX_BATCH)


def flag_of(what: str) -> str:
    """The flag a file named in a message came from: ``input 'x'`` from ``--input``."""
    return "--input" if what.startswith("input") else "--weights"


def _load_npy(path: str, what: str) -> np.ndarray:
    try:
        check_regular(path)
        return np.asarray(np.load(path, allow_pickle=False))
    except (OSError, ValueError, EOFError) as problem:
        raise UsageError(f"{flag_of(what)}: cannot read {what} '{path}': {problem}") from None


def _inputs(specs: Sequence[str]) -> dict[str, np.ndarray]:
    given: dict[str, np.ndarray] = {}
    for spec in specs:
        name, sep, path = spec.partition("=")
        if not sep or not name or not path:
            raise UsageError(f"--input expects NAME=FILE.npy, got '{spec}'")
        given[name] = _load_npy(path, f"input '{name}'")
    return given


def _weights(directory: str | None) -> dict[str, np.ndarray]:
    if directory is None:
        return {}
    root = Path(directory)
    if root.suffix == ".npz" and root.is_file():
        return _load_npz(directory)
    if not root.is_dir():
        raise UsageError(f"--weights: '{directory}' is neither a directory nor a .npz file")
    return {p.name[: -len(".npy")]: _load_npy(str(p), "weight") for p in sorted(root.glob("*.npy"))}


def _load_npz(path: str) -> dict[str, np.ndarray]:
    try:
        check_regular(path)
        with np.load(path, allow_pickle=False) as archive:
            return {name: np.asarray(archive[name]) for name in archive.files}
    except (OSError, ValueError, EOFError) as problem:
        raise UsageError(f"--weights: cannot read weights '{path}': {problem}") from None


def _onnx(args: argparse.Namespace) -> tuple[Operation, dict[str, np.ndarray]]:
    """The module of an ONNX input and the model's weights."""
    from crane.frontend.onnx import import_onnx_with_weights

    name = "<stdin>" if args.input == "-" else args.input
    try:
        dims = parse_dims(args.onnx_dim)
    except ValueError as problem:
        raise UsageError(str(problem)) from None
    if args.onnx_batch is not None and args.onnx_batch <= 0:
        raise UsageError(f"--onnx-batch must be positive, got {args.onnx_batch}")
    try:
        data = read_source(args.input, "onnx")
    except OSError as problem:
        raise UsageError(f"cannot read input file '{name}': {describe(problem)}") from None
    imported = import_onnx_with_weights(data, batch=args.onnx_batch, dims=dims, filename=name)
    return imported.module, imported.weights


def _pick_function(module: Operation, name: str | None) -> FuncOp:
    funcs = [op for op in module.walk() if isinstance(op, FuncOp)]
    for func in funcs:
        symbol = getattr(func.attributes.get("sym_name"), "value", None)
        if name is None or symbol == name:
            return func
    if name:
        raise UsageError(f"--func: no graph.func named '{name}'")
    raise DiagnosticError.at(module.location, "the input holds no graph.func to run")


def _train(func: FuncOp, args: argparse.Namespace) -> None:
    if is_training_step(func):
        return
    try:
        config = resolve_training(func.attributes.get("training"), args.optimizer, "", {"lr": args.lr})
    except TrainingConfigError as problem:  # the training section's values
        raise DiagnosticError.at(func.location, str(problem)) from None
    if config is None:
        config = resolve_training(None, "sgd")
    assert config is not None
    expand_training_step(func, config)
    _verify(func)


def _verify(op: Operation) -> None:
    problems = verify(op)
    if problems:
        raise DiagnosticError(*problems)


def summarise(name: str, array: np.ndarray, show: int = 4) -> str:
    """One line: name, shape, mean, std and the first values."""
    flat = np.asarray(array, dtype=np.float64).ravel()
    mean = float(flat.mean()) if flat.size else 0.0
    std = float(flat.std()) if flat.size else 0.0
    head = " ".join(f"{v:.6g}" for v in flat[:show])
    shape = "x".join(map(str, array.shape)) or "scalar"
    return f"{name}  {shape}  mean={mean:.6g}  std={std:.6g}  [{head}{' ...' if flat.size > show else ''}]"


def _save(outputs: dict[str, np.ndarray], directory: str) -> None:
    root = Path(directory)
    try:
        root.mkdir(parents=True, exist_ok=True)
        for name, array in outputs.items():
            with atomic_output(root / f"{name}.npy", binary=True) as handle:
                np.save(handle, array)
    except OSError as problem:
        raise UsageError(f"--save: cannot write to '{directory}': {problem}") from None


def _read_input(path: str, fmt: str) -> tuple[str, str]:
    """The text of ``path`` in the text format ``fmt``, and the name diagnostics give it."""
    try:
        text = read_source(path, fmt)
    except (OSError, UnicodeDecodeError) as problem:
        raise UsageError(f"cannot read input file '{path}': {describe(problem)}") from None
    if not isinstance(text, str):
        raise UsageError(f"input file '{path}': expected a text format, not {fmt}")
    return text, "<stdin>" if path == STDIN else path


def run(args: argparse.Namespace, sources: SourceManager) -> int:
    """Run the command; returns the exit status (raises for located and usage errors)."""
    check_flags(args)
    fmt = input_format("<stdin>" if args.input == "-" else args.input, args.input_format)
    model_weights: dict[str, np.ndarray] = {}
    if fmt == "onnx":
        module, model_weights = _onnx(args)
    else:
        text, filename = _read_input(args.input, fmt)
        sources.add(filename, text)
        module = translate(fmt, text, filename, default_context())
    _verify(module)
    func = _pick_function(module, args.func)
    if args.train:
        _train(func, args)
    _check_memory(func, args.dtype, args.max_memory)
    weights = {**model_weights, **_weights(args.weights)}
    outputs = run_function(func, _inputs(args.inputs), weights=weights, dtype=args.dtype, seed=args.seed)
    if args.save is not None:
        _save(outputs, args.save)
    for name, array in outputs.items():
        print(summarise(name, array, args.show))
    return 0


def _check_memory(func: FuncOp, dtype: str, gib: float) -> None:
    """A located error when the run would hold more than ``gib`` GiB of tensors at once
    (at the float width of ``dtype``), before it starts."""
    width = 8 if dtype == "f64" else 4
    need = peak_live_elements(func) * width
    if need <= gib * 2**30:
        return
    raise DiagnosticError.at(func.location, f"the run would hold {need / 2**30:.1f} GiB of tensors "
                             f"at {dtype}, more than --max-memory {gib:g} GiB; raise it if this host "
                             "has the memory")


def _located(message: str, op: Operation | None, sources: SourceManager) -> str:
    if op is None:
        return f"crane-run: error: {message}"
    return render(Diagnostic(Severity.ERROR, message, op.location), sources)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit status (:func:`crane.tools.guard.guarded`)."""
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:  # argparse reports usage errors itself, with status 2
        return int(exc.code or 0)
    sources = SourceManager()
    return guarded("crane-run", lambda: _reported(args, sources), args.debug)


def _reported(args: argparse.Namespace, sources: SourceManager) -> int:
    """:func:`run`, with errors in the input or the run printed (exit status 1)."""
    try:
        return run(args, sources)
    except DiagnosticError as problem:
        for diag in problem.diagnostics:
            print(render(diag, sources), file=sys.stderr)
        return 1
    except (InterpreterError, AutodiffError) as problem:
        print(_located(problem.message, problem.op, sources), file=sys.stderr)
        return 1
    except (VerifyError, TrainingConfigError, ValueError) as problem:
        print(f"crane-run: error: {problem}", file=sys.stderr)
        return 1


def console_main() -> None:
    """The ``crane-run`` console script."""
    try:
        status = main()
        sys.stdout.flush()
    except BrokenPipeError:
        # Output piped into a pager or ``head`` that stopped reading: not an error.
        sys.stderr.close()
        status = 0
    sys.exit(status)


if __name__ == "__main__":
    console_main()
