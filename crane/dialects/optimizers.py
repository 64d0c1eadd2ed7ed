"""Optimizers a training section may name, with their hyper-parameters and defaults.

A default of ``None`` marks a hyper-parameter the user must give (the SGD learning rate);
the type of each default (float or bool) is the type the value must have.
"""

from __future__ import annotations

from collections.abc import Mapping

from crane.limits.ranges import Between

OPTIMIZERS: Mapping[str, Mapping[str, float | bool | None]] = {
    "sgd": {"lr": None, "weight_decay": 0.0},
    "momentum": {"lr": None, "momentum": 0.9, "nesterov": False, "weight_decay": 0.0},
    "adam": {"lr": 1e-3, "beta1": 0.9, "beta2": 0.999, "eps": 1e-8, "weight_decay": 0.0},
}
"""Hyper-parameters of each optimizer; ``None`` means required."""

HYPER_RANGES: Mapping[str, Between] = {
    "lr": Between(0, 1e6, open_low=True),
    "momentum": Between(0, 1),
    "weight_decay": Between(0, 1e6),
    "beta1": Between(0, 1, open_high=True),
    "beta2": Between(0, 1, open_high=True),
    "eps": Between(0, 1, open_low=True),
}
"""The range of each numeric hyper-parameter, wherever it is given: a ``.crn`` training
section (checked at elaboration), ``autodiff`` pass options, a ``training`` attribute."""


def hyper_problem(name: str, value: float | bool) -> str | None:
    """None if ``value`` is in the range of hyper-parameter ``name``, else why not."""
    bounds = HYPER_RANGES.get(name)
    if bounds is None or isinstance(value, bool) or bounds.accepts(value):
        return None
    wanted, _ = bounds.describe("a number", "numbers")
    return f"hyper-parameter '{name}' must be {wanted}, got {value:g}"
