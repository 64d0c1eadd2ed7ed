"""The reference interpreter: run a ``graph.func`` on numpy arrays, op by op.

    outputs = run_function(func, inputs=None, dtype="f64", seed=0)

Inputs not given are drawn from ``seed`` (floats standard normal; integer inputs within
the range their users accept: an embedding's vocabulary, a loss's class count). Weights
not given are initialised from their name and ``seed`` (He scale for conv kernels,
Xavier for matrices, ``1 + 0.1 N`` for norm scales, ``1 + 0.1 |N|`` for running variances,
``0.1 N`` for other vectors), so
two runs agree. Optimizer state not given (by its ``name``) starts at zero.

Outputs are keyed by the name of each returned value (``%loss`` -> ``"loss"``); a
training step (after ``autodiff``) returns the loss, ``"<weight>.new"`` and
``"<weight>.<state>.new"``. Dropout is active in training steps only, with masks that
depend on the seed and the op's ``key``; batchnorm uses its running statistics (``mean``
and ``var`` operands) when its ``running`` attribute says so, else the batch statistics.
"""

from __future__ import annotations

import zlib
from collections.abc import Collection, Mapping, Sequence
from typing import Any

import numpy as np

from crane.dialects.graph import FuncOp, LayerOp, ReturnOp, WeightOp
from crane.dialects.graph_grad import (
    AccumulateOp,
    FillOp,
    GradOp,
    OptimizerStateOp,
    UpdateOp,
    is_training_step,
)
from crane.exec import evaluate as E
from crane.ir.attributes import StringAttr
from crane.ir.core import BlockArgument, Operation, Value
from crane.ir.types import TensorType

Array = np.ndarray
DTYPES: Mapping[str, type[np.floating[Any]]] = {"f32": np.float32, "f64": np.float64}
"""Names accepted for ``dtype``."""


class InterpreterError(Exception):
    """A function cannot be run; ``op`` (if any) locates the problem."""

    def __init__(self, message: str, op: Operation | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.op = op


def _tensor(value: Value) -> TensorType:
    if not isinstance(value.type, TensorType):
        raise InterpreterError(f"value of type {value.type} is not a tensor")
    return value.type


def _rng(seed: int, name: str) -> np.random.Generator:
    return np.random.default_rng([seed, zlib.crc32(name.encode())])


def init_weight(name: str, shape: tuple[int, ...], dtype: Any = np.float64, seed: int = 0) -> Array:
    """A deterministic initial value for the weight ``name`` (see the module docstring)."""
    draw = _rng(seed, name).standard_normal(shape)
    if len(shape) == 4:
        return (draw * np.sqrt(2.0 / max(1, shape[1] * shape[2] * shape[3]))).astype(dtype)
    if len(shape) == 2:
        return (draw * np.sqrt(2.0 / (shape[0] + shape[1]))).astype(dtype)
    if name.endswith(("scale", "gamma")):
        return (1.0 + 0.1 * draw).astype(dtype)
    if name.endswith(".var"):  # a running variance: positive
        return (1.0 + 0.1 * np.abs(draw)).astype(dtype)
    return (0.1 * draw).astype(dtype)


def _int_range(arg: Value) -> int:
    for user in arg.users():
        if not isinstance(user, LayerOp):
            continue
        if user.kind.name == "embedding":
            return int(user.layer_attrs["vocab"])  # type: ignore[arg-type]
        if user.kind.is_loss and user.operands[0] is not arg:
            return _tensor(user.operands[0]).shape[-1]
    return 2


def random_input(arg: Value, dtype: Any = np.float64, seed: int = 0) -> Array:
    """A seeded value for the function argument ``arg``."""
    ttype = _tensor(arg)
    rng = _rng(seed, f"input:{arg.name_hint or ''}")
    if ttype.element.is_float:
        return rng.standard_normal(ttype.shape).astype(dtype)
    return rng.integers(0, _int_range(arg), size=ttype.shape).astype(np.int64)


def _check_input(arg: Value, array: Array, name: str) -> Array:
    ttype = _tensor(arg)
    if tuple(array.shape) != ttype.shape:
        raise InterpreterError(f"input '{name}' has shape {tuple(array.shape)}, expected {ttype.shape}")
    if ttype.element.is_float != np.issubdtype(array.dtype, np.floating):
        raise InterpreterError(f"input '{name}' has dtype {array.dtype}, expected {ttype.element}")
    return array


class _Machine:
    """One run: the value table and the run's settings."""

    def __init__(self, dtype: Any, seed: int, training: bool, weights: Mapping[str, Array]) -> None:
        self.env: dict[Value, Array] = {}
        self.dtype, self.seed, self.training, self.weights = dtype, seed, training, weights

    def get(self, value: Value) -> Array:
        return self.env[value]

    def cast(self, array: Array) -> Array:
        return array.astype(self.dtype) if np.issubdtype(array.dtype, np.floating) else array

    def named(self, name: str, value: Value, make: Any) -> Array:
        given = self.weights.get(name)
        if given is None:
            return make()
        return self.cast(_check_input(value, np.asarray(given), name))

    def run(self, op: Operation) -> list[Array]:
        if isinstance(op, LayerOp):
            return [E.forward(op.kind.name, op.layer_attrs, [self.get(v) for v in op.inputs],
                              [self.get(v) for v in op.weights], _tensor(op.results[0]).shape,
                              dtype=self.dtype, seed=self.seed, training=self.training, key=_key(op))]
        if isinstance(op, GradOp):
            return self.grad(op)
        if isinstance(op, WeightOp):
            shape = _tensor(op.results[0]).shape
            return [self.named(op.weight_name, op.results[0],
                               lambda: init_weight(op.weight_name, shape, self.dtype, self.seed))]
        if isinstance(op, OptimizerStateOp):
            ttype = _tensor(op.results[0])
            return [self.named(op.state_name, op.results[0], lambda: np.zeros(ttype.shape, self.dtype))]
        if isinstance(op, FillOp):
            value = op.attributes["value"]
            return [np.full(_tensor(op.results[0]).shape, getattr(value, "value", 0.0), self.dtype)]
        if isinstance(op, AccumulateOp):
            return [E.accumulate([self.get(v) for v in op.operands], self.dtype)]
        if isinstance(op, UpdateOp):
            return self.update(op)
        raise InterpreterError(f"the interpreter cannot run '{op.name}'", op)

    def grad(self, op: GradOp) -> list[Array]:
        try:
            return E.gradient(op.kind.name, op.role, op.layer_attrs, self.get(op.grad_output),
                              [self.get(v) for v in op.forward_inputs],
                              [self.get(v) for v in op.forward_weights], op.wrt, dtype=self.dtype,
                              seed=self.seed, training=self.training, key=_key(op))
        except E.EvalError as problem:
            raise InterpreterError(problem.message, op) from None

    def update(self, op: UpdateOp) -> list[Array]:
        w, g, *states = (self.get(v) for v in op.operands)
        return E.update(op.name.removeprefix("graph."), op.hyper(), w, g, states)


def _key(op: Operation) -> str:
    key = op.attributes.get("key")
    return key.value if isinstance(key, StringAttr) else ""


def _output_names(values: tuple[Value, ...]) -> list[str]:
    names: list[str] = []
    for index, value in enumerate(values):
        name = value.name_hint or f"output{index}"
        names.append(name if name not in names else f"{name}#{index}")
    return names


def run_function(func: Operation, inputs: Mapping[str, Array] | None = None, *,
                 weights: Mapping[str, Array] | None = None, dtype: str | Any = "f64",
                 seed: int = 0, training: bool | None = None,
                 pinned: Mapping[str, Array] | None = None,
                 trace: dict[str, Array] | None = None,
                 trace_only: Collection[str] | None = None) -> dict[str, Array]:
    """Run ``func`` (a ``graph.func``) and return its outputs by name.

    ``inputs`` maps argument names to arrays (missing ones are drawn from ``seed``);
    ``weights`` maps weight (and optimizer-state) names to arrays; ``dtype`` is ``"f32"``,
    ``"f64"`` or a numpy float type; ``training`` defaults to whether ``func`` is a
    training step. ``pinned`` maps names of forward layer results to the values to use
    instead of computing them (a backward pass given another computation's forward
    activations; a pinned clamp such as relu takes its gradient's mask from the pinned
    values, ``_reconcile``); ``trace``, when given, receives every named value computed (the first
    of each name), or only those named in ``trace_only``. Other values are freed after
    their last reader. Raises :class:`InterpreterError` with the failing op.
    """
    if not isinstance(func, FuncOp):
        raise InterpreterError(f"expected a graph.func, got '{func.name}'", func)
    float_type = DTYPES.get(dtype, None) if isinstance(dtype, str) else dtype
    if float_type is None:
        raise InterpreterError(f"unknown dtype '{dtype}' (expected f32 or f64)")
    machine = _Machine(float_type, seed, is_training_step(func) if training is None else training, weights or {})
    given = dict(inputs or {})
    for arg in func.body.args:
        try:
            _bind(machine, arg, given)
        except MemoryError:
            raise InterpreterError(f"input '{arg.name_hint}' needs more memory than this host has",
                                   func) from None
    if given:
        raise InterpreterError(f"no function argument named '{sorted(given)[0]}'", func)
    ops = list(func.body.ops)
    dead_after = _last_uses(ops)
    for index, op in enumerate(ops):
        if isinstance(op, ReturnOp):
            return dict(zip(_output_names(op.operands), (machine.get(v) for v in op.operands), strict=True))
        results = _pin(op, pinned) if pinned else None
        if results:
            _reconcile(op, machine.env, results[0])
        machine.env.update(zip(op.results, results or _run_located(machine, op), strict=True))
        if trace is not None:
            _trace(trace, trace_only, op.results, machine)
        for dead in dead_after.get(index, ()):
            del machine.env[dead]
    raise InterpreterError("the function has no graph.return", func)


def _trace(trace: dict[str, Array], only: Collection[str] | None, results: Sequence[Value],
           machine: _Machine) -> None:
    """Keep the first value of each name (of those in ``only``, when given)."""
    for value in results:
        name = value.name_hint
        if name and name not in trace and (only is None or name in only):
            trace[name] = machine.get(value)


def peak_live_elements(func: FuncOp) -> int:
    """The most tensor elements :func:`run_function` holds at once: every argument, and
    each op's results from that op until their last reader has run (untraced)."""
    ops = list(func.body.ops)
    dead_after = _last_uses(ops)
    live = peak = sum(_size(arg) for arg in func.body.args)
    for index, op in enumerate(ops):
        live += sum(_size(result) for result in op.results)
        peak = max(peak, live)
        live -= sum(_size(value) for value in dead_after.get(index, ()))
    return peak


def _size(value: Value) -> int:
    return value.type.num_elements if isinstance(value.type, TensorType) else 0


def _last_uses(ops: Sequence[Operation]) -> dict[int, list[Value]]:
    """Per op index, the values no later op reads (freed after it runs: a training step
    otherwise holds every activation and gradient until it ends). A value read by the
    ``graph.return`` is never freed; one nobody reads goes right after its op."""
    last: dict[Value, int] = {}
    for index, op in enumerate(ops):
        last.update((result, index) for result in op.results)
        for inner in op.walk():
            for operand in inner.operands:
                if operand in last:
                    last[operand] = len(ops) if isinstance(op, ReturnOp) else index
    dead: dict[int, list[Value]] = {}
    for value, index in last.items():
        dead.setdefault(index, []).append(value)
    return dead


def _pin(op: Operation, pinned: Mapping[str, Array]) -> list[Array] | None:
    """A forward layer op's pinned results (all of them, of the right shapes), else None."""
    if not isinstance(op, LayerOp):
        return None
    found = [pinned.get(v.name_hint or "") for v in op.results]
    if any(a is None or a.shape != _tensor(v).shape for a, v in zip(found, op.results, strict=True)):
        return None
    return [a for a in found if a is not None]


CLAMPS: Mapping[str, tuple[float, float]] = {"relu": (0.0, np.inf), "relu6": (0.0, 6.0)}
"""Activations whose gradient is a mask of where their input lies between two bounds."""


def _reconcile(op: Operation, env: dict[Value, Array], pinned: Array) -> None:
    """Given a pinned result of a clamping activation, move its input (computed afresh)
    onto the pinned pass's side of each bound, so the gradient's mask is the pinned
    pass's: where they disagree, the two passes differ by rounding only."""
    bounds = CLAMPS.get(op.kind.name) if isinstance(op, LayerOp) else None
    x = op.operands[0] if op.operands else None
    if bounds is None or x not in env:
        return
    low, high = bounds
    old = env[x]
    if old.shape != pinned.shape:
        return
    kept = np.where(pinned <= low, np.minimum(old, low), np.maximum(old, high))
    env[x] = np.where((pinned > low) & (pinned < high), pinned, kept).astype(old.dtype)


def _bind(machine: _Machine, arg: BlockArgument, given: dict[str, Array]) -> None:
    name = arg.name_hint or f"arg{arg.index}"
    if name not in given:
        machine.env[arg] = machine.cast(random_input(arg, machine.dtype, machine.seed))
        return
    machine.env[arg] = machine.cast(_check_input(arg, np.asarray(given.pop(name)), name))


def _run_located(machine: _Machine, op: Operation) -> list[Array]:
    try:
        return machine.run(op)
    except InterpreterError as problem:
        raise InterpreterError(problem.message, problem.op or op) from None
    except (ValueError, IndexError, KeyError, TypeError, AssertionError, FloatingPointError) as problem:
        raise InterpreterError(f"'{op.name}' failed: {problem}", op) from None
    except MemoryError:
        raise InterpreterError(f"'{op.name}' needs more memory than this host has: its tensors "
                               f"hold {_elements(op):,} elements", op) from None


def _elements(op: Operation) -> int:
    values = (*op.operands, *op.results)
    return sum(v.type.num_elements for v in values if isinstance(v.type, TensorType))
