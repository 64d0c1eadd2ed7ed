"""Helpers for the autodiff tests: build training steps, read gradients, finite differences.

The gradient of a weight is read from one SGD step with ``lr = 1`` and no weight decay:
``grad = w - w.new``. The reference is the central difference of the loss, evaluated by
a copy of the training step that returns only the loss (same dropout masks, batch
statistics). A check passes when ``|analytic - fd| <= rtol * max(|fd|, floor)``.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np

from crane.autodiff import attach_loss, expand_training_step, resolve_training
from crane.dialects import default_context
from crane.dialects.graph import FuncOp, ReturnOp, WeightOp
from crane.exec.interpreter import init_weight, random_input, run_function
from crane.frontend.translate import crn_to_module
from crane.ir.attributes import TypeAttr
from crane.ir.types import FunctionType, TensorType
from crane.ir.verifier import verify

Array = np.ndarray


def load_func(text: str, filename: str = "case.crn") -> FuncOp:
    """The first ``graph.func`` of a ``.crn`` program."""
    module = crn_to_module(text, filename, default_context())
    funcs = [op for op in module.walk() if isinstance(op, FuncOp)]
    assert funcs, "no graph.func"
    return funcs[0]


def sgd_step(func: FuncOp, lr: float = 1.0, *, add_loss: str = "") -> FuncOp:
    """Expand ``func`` into a plain SGD step (no weight decay), verified."""
    if add_loss:
        attach_loss(func, add_loss)
    config = resolve_training(func.attributes.get("training"), "sgd", "", {"lr": lr, "weight_decay": 0.0},
                              force=True)
    assert config is not None
    expand_training_step(func, config)
    problems = verify(func)
    assert not problems, [p.message for p in problems]
    return func


def loss_only(step: FuncOp) -> FuncOp:
    """A copy of a training step that returns only the loss (dead ops removed)."""
    clone = step.clone()
    assert isinstance(clone, FuncOp)
    ret = list(clone.body.ops)[-1]
    assert isinstance(ret, ReturnOp)
    loss = ret.operands[0]
    new_ret = ReturnOp.build([loss])
    clone.body.append(new_ret)
    ret.erase()
    for op in reversed(list(clone.body.ops)[:-1]):
        if all(not r.uses for r in op.results):
            op.erase()
    ftype = clone.attributes["function_type"]
    assert isinstance(ftype, TypeAttr) and isinstance(ftype.type, FunctionType)
    clone.attributes["function_type"] = TypeAttr(FunctionType(ftype.type.inputs, (loss.type,)))
    return clone


def initial_weights(func: FuncOp, seed: int = 0) -> dict[str, Array]:
    """The weights the interpreter would initialise, in float64."""
    weights: dict[str, Array] = {}
    for op in func.body.ops:
        if isinstance(op, WeightOp):
            ttype = op.results[0].type
            assert isinstance(ttype, TensorType)
            weights[op.weight_name] = init_weight(op.weight_name, ttype.shape, np.float64, seed)
    return weights


def seeded_inputs(func: FuncOp, seed: int = 0) -> dict[str, Array]:
    """The inputs the interpreter would draw, in float64."""
    return {a.name_hint or "": random_input(a, np.float64, seed) for a in func.body.args}


@dataclass(frozen=True)
class Mismatch:
    """One failed comparison."""

    weight: str
    probe: str
    analytic: float
    numeric: float

    def __str__(self) -> str:
        return f"{self.weight} {self.probe}: analytic {self.analytic:.10g} vs finite difference {self.numeric:.10g}"


@dataclass
class StepCheck:
    """Compares every weight update of one SGD step with finite differences of the loss."""

    step: FuncOp
    seed: int = 0
    steps: tuple[float, ...] = (1e-5, 1e-6, 1e-7)
    """Finite-difference steps tried in turn: a probe passes if one of them agrees. Relu
    networks with batchnorm move every pre-activation, and a step of 1e-5 crosses about one
    kink per probe in the tiny ResNet (131k activations); smaller steps rarely do."""
    rtol: float = 1e-6
    floor: float = 1e-4
    samples: int = 4
    directions: bool = True
    """Also probe along a random direction of the whole tensor. Off for the tiny ResNet:
    moving every weight at once moves all 131k batch-normalised relu inputs, and the kinks
    crossed keep central differences about 1e-4 off at every step size."""

    def __post_init__(self) -> None:
        self.loss_func = loss_only(self.step)
        self.inputs = seeded_inputs(self.step, self.seed)
        self.weights = initial_weights(self.step, self.seed)
        out = run_function(self.step, self.inputs, weights=self.weights, dtype="f64", seed=self.seed)
        self.outputs = out
        self.grads = {n: (w - out[f"{n}.new"]) for n, w in self.weights.items()}

    def loss(self, name: str, delta: Array) -> float:
        weights = dict(self.weights)
        weights[name] = self.weights[name] + delta
        out = run_function(self.loss_func, self.inputs, weights=weights, dtype="f64", seed=self.seed)
        return float(out["loss"])

    def directional(self, name: str, direction: Array, h: float) -> tuple[float, float]:
        numeric = (self.loss(name, h * direction) - self.loss(name, -h * direction)) / (2 * h)
        return float(np.sum(self.grads[name] * direction)), numeric

    def agrees(self, analytic: float, numeric: float) -> bool:
        return abs(analytic - numeric) <= self.rtol * max(abs(numeric), self.floor)

    def probes(self, name: str) -> list[tuple[str, Array]]:
        shape = self.weights[name].shape
        rng = np.random.default_rng(zlib.crc32(name.encode()))
        probes = [("random direction", rng.standard_normal(shape))] if self.directions else []
        for _ in range(min(self.samples, int(np.prod(shape)))):
            index = tuple(int(rng.integers(0, s)) for s in shape)
            unit = np.zeros(shape)
            unit[index] = 1.0
            probes.append((f"element {index}", unit))
        return probes

    def _probe(self, name: str, probe: str, direction: Array) -> list[Mismatch]:
        analytic, numeric = 0.0, 0.0
        for h in self.steps:
            analytic, numeric = self.directional(name, direction, h)
            if self.agrees(analytic, numeric):
                return []
        return [Mismatch(name, probe, analytic, numeric)]

    def mismatches(self, names: list[str] | None = None) -> list[Mismatch]:
        """Every probe of every weight (or of ``names``) outside tolerance."""
        found: list[Mismatch] = []
        for name in names or sorted(self.weights):
            for probe, direction in self.probes(name):
                found.extend(self._probe(name, probe, direction))
        return found


def relative_error(a: Array, b: Array, floor: float = 1e-6) -> float:
    """Max-norm relative error of ``a`` against ``b`` (whose scale counts as at least ``floor``,
    so gradients that vanish mathematically compare their rounding noise absolutely)."""
    scale = max(float(np.max(np.abs(b))), floor)
    return float(np.max(np.abs(a - b))) / scale
