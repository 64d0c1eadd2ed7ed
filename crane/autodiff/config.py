"""Which loss and optimizer a training step uses: the ``.crn`` training section, overridden
by ``autodiff`` pass options."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from crane.dialects.optimizers import OPTIMIZERS, hyper_problem
from crane.ir.attributes import Attribute, BoolAttr, DictAttr, FloatAttr, IntAttr, StringAttr

DEFAULT_LR = 0.01
"""Learning rate when neither the training section nor the options give one."""


class TrainingConfigError(ValueError):
    """The training section and options do not describe a usable training step."""


@dataclass(frozen=True)
class TrainingConfig:
    """A resolved training step: the loss value's name, the optimizer and its hyper-parameters."""

    loss: str
    optimizer: str
    hyper: Mapping[str, float | bool] = field(default_factory=dict)
    step: int = 1
    """Adam's step count (bias correction) for this update; 1 for the first step."""


def _plain(attr: Attribute) -> float | bool | None:
    if isinstance(attr, BoolAttr):
        return attr.value
    if isinstance(attr, FloatAttr | IntAttr):
        return float(attr.value)
    return None


def _section(attr: Attribute | None) -> tuple[str, str, dict[str, float | bool]]:
    if not isinstance(attr, DictAttr):
        return "", "", {}
    loss, optimizer, hyper = attr.get("loss"), attr.get("optimizer"), attr.get("hyper")
    values: dict[str, float | bool] = {}
    for key, value in (hyper.entries if isinstance(hyper, DictAttr) else ()):
        plain = _plain(value)
        if plain is not None:
            values[key] = plain
    return (loss.value if isinstance(loss, StringAttr) else "",
            optimizer.value if isinstance(optimizer, StringAttr) else "", values)


def resolve_training(section: Attribute | None, optimizer: str = "", loss: str = "",
                     overrides: Mapping[str, float | bool | None] | None = None,
                     step: int = 1, force: bool = False) -> TrainingConfig | None:
    """The training step described by ``section`` (a func's ``training`` attribute) with
    the given overrides; None when there is neither a section nor any override.

    Switching optimizer keeps only the hyper-parameters the new one accepts; missing ones
    take the optimizer's defaults (the learning rate :data:`DEFAULT_LR` if it has none).
    Raises :class:`TrainingConfigError` for an unknown optimizer or a bad value.
    """
    given = {k: v for k, v in (overrides or {}).items() if v is not None}
    base_loss, base_optimizer, hyper = _section(section)
    if section is None and not (given or optimizer or loss or force):
        return None
    name = optimizer or base_optimizer or "sgd"
    known = OPTIMIZERS.get(name)
    if known is None:
        raise TrainingConfigError(f"unknown optimizer '{name}' (expected one of {', '.join(OPTIMIZERS)})")
    merged: dict[str, float | bool] = {}
    for key, default in known.items():
        value = given.get(key, hyper.get(key, default))
        merged[key] = DEFAULT_LR if value is None else value
    for key, value in merged.items():
        problem = hyper_problem(key, value)
        if problem is not None:
            raise TrainingConfigError(f"{name}: {problem}")
    if step < 1:
        raise TrainingConfigError(f"the step count starts at 1, got {step}")
    return TrainingConfig(loss or base_loss, name, merged, step)
