"""Reverse-mode differentiation of ``graph`` functions into training steps.

:func:`resolve_training` turns a ``.crn`` training section plus overrides into a
:class:`TrainingConfig`; :func:`expand_training_step` rewrites a ``graph.func`` into
forward, loss, backward (reverse topological order, accumulated fan-out gradients) and
optimizer updates. Per-kind rules live in :mod:`crane.autodiff.rules`.
"""

from crane.autodiff.config import TrainingConfig, TrainingConfigError, resolve_training
from crane.autodiff.expand import (
    AutodiffError,
    attach_loss,
    backward_ops,
    expand_training_step,
    find_loss,
)
from crane.dialects.graph_grad import TRAINING_STEP_ATTR, is_training_step

__all__ = [
    "TRAINING_STEP_ATTR",
    "AutodiffError",
    "TrainingConfig",
    "TrainingConfigError",
    "attach_loss",
    "backward_ops",
    "expand_training_step",
    "find_loss",
    "is_training_step",
    "resolve_training",
]
