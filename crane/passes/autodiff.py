"""``autodiff``: expand each ``graph.func`` with a training section into one training step."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal

from crane.autodiff import (
    AutodiffError,
    TrainingConfigError,
    attach_loss,
    expand_training_step,
    is_training_step,
    resolve_training,
)
from crane.dialects.graph import FuncOp
from crane.dialects.optimizers import HYPER_RANGES
from crane.ir.core import Operation
from crane.limits.ranges import Between
from crane.passes.context import PassContext
from crane.passes.pass_base import Pass


@dataclass(frozen=True)
class Autodiff(Pass):
    """Build the training step of a network: forward, loss, backward, weight updates.

    The ``.crn`` training section (the func's ``training`` attribute) names the loss and
    the optimizer; options override it, e.g. ``autodiff{optimizer=adam lr=0.001}``.
    Backward ops are ``graph.<kind>_grad_input`` / ``_grad_weight`` and take the forward
    values they need as operands; fan-out gradients are summed by ``graph.accumulate``;
    each weight gets a ``graph.sgd`` / ``graph.momentum`` / ``graph.adam`` update with its
    state as zero-initialised ``graph.optimizer_state`` values. The function then returns
    ``(loss, updated weights..., updated states...)``.

    A function without a training section is left unchanged unless an option asks for
    training; training without a loss layer is a located error. Functions already
    expanded are skipped.
    """

    name = "autodiff"
    summary = "expand networks into training steps (backward ops and optimizer updates)"
    anchor = "graph.func"

    optimizer: Literal["", "sgd", "momentum", "adam"] = ""
    """sgd, momentum or adam; empty keeps the training section's (sgd without one)."""
    loss: str = ""
    """Name of the loss value; empty keeps the section's (or the only loss layer)."""
    lr: Annotated[float, HYPER_RANGES["lr"]] | None = None
    """Learning rate."""
    momentum: Annotated[float, HYPER_RANGES["momentum"]] | None = None
    """Momentum factor (momentum optimizer)."""
    weight_decay: Annotated[float, HYPER_RANGES["weight_decay"]] | None = None
    """L2 weight decay added to the gradients."""
    beta1: Annotated[float, HYPER_RANGES["beta1"]] | None = None
    """Adam first-moment decay."""
    beta2: Annotated[float, HYPER_RANGES["beta2"]] | None = None
    """Adam second-moment decay."""
    eps: Annotated[float, HYPER_RANGES["eps"]] | None = None
    """Adam denominator epsilon."""
    nesterov: bool | None = None
    """Nesterov momentum."""
    step: Annotated[int, Between(1, 2**31 - 1)] = 1
    """Adam step count used for bias correction."""
    attach_loss: Literal["", "mse", "cross_entropy"] = ""
    """(``attach-loss``) mse or cross_entropy: first add that loss on the first output against a new
    ``%target`` argument (for networks without a loss); implies training."""

    def run(self, op: Operation, ctx: PassContext) -> None:
        if not isinstance(op, FuncOp) or is_training_step(op):
            return
        overrides = {"lr": self.lr, "momentum": self.momentum, "weight_decay": self.weight_decay,
                     "beta1": self.beta1, "beta2": self.beta2, "eps": self.eps, "nesterov": self.nesterov}
        try:
            config = resolve_training(op.attributes.get("training"), self.optimizer, self.loss, overrides,
                                      self.step, force=bool(self.attach_loss))
        except TrainingConfigError as problem:
            ctx.emit_error(op, str(problem))
            return
        if config is None:
            return
        try:
            if self.attach_loss:
                attach_loss(op, self.attach_loss)
            added = expand_training_step(op, config)
        except AutodiffError as problem:
            ctx.emit_error(problem.op, problem.message)
            return
        ctx.statistic("ops added", added)
