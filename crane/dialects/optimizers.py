"""Optimizers a training section may name, with their hyper-parameters and defaults.

A default of ``None`` marks a hyper-parameter the user must give (the SGD learning rate);
the type of each default (float or bool) is the type the value must have.
"""

from __future__ import annotations

from collections.abc import Mapping

OPTIMIZERS: Mapping[str, Mapping[str, float | bool | None]] = {
    "sgd": {"lr": None, "weight_decay": 0.0},
    "momentum": {"lr": None, "momentum": 0.9, "nesterov": False, "weight_decay": 0.0},
    "adam": {"lr": 1e-3, "beta1": 0.9, "beta2": 0.999, "eps": 1e-8, "weight_decay": 0.0},
}
"""Hyper-parameters of each optimizer; ``None`` means required."""
