"""Optimizer update rules as pure functions ``(param, grad, state...) -> (new_param, new_state...)``.

The formulas follow PyTorch's ``torch.optim`` (SGD with L2 ``weight_decay``
added to the gradient, heavy-ball momentum with optional Nesterov, Adam with
bias correction and optional decoupled AdamW decay). Inputs are never modified.
"""

import math

import numpy as np

from crane.exec.kernels._types import Array


def sgd_update(param: Array, grad: Array, *, lr: float, weight_decay: float = 0.0) -> Array:
    """``param - lr * (grad + weight_decay * param)``."""
    return param - lr * (grad + weight_decay * param)


def momentum_update(
    param: Array,
    grad: Array,
    velocity: Array,
    *,
    lr: float,
    momentum: float,
    nesterov: bool = False,
    weight_decay: float = 0.0,
) -> tuple[Array, Array]:
    """SGD with momentum. Returns ``(new_param, new_velocity)``; start with ``velocity = 0``.

    ``g = grad + wd * param; v' = momentum * v + g``; the step is ``v'`` or, with
    Nesterov, ``g + momentum * v'``; ``param' = param - lr * step``.
    """
    g = grad + weight_decay * param
    new_velocity = momentum * velocity + g
    step = g + momentum * new_velocity if nesterov else new_velocity
    return param - lr * step, new_velocity


def adam_update(
    param: Array,
    grad: Array,
    m: Array,
    v: Array,
    *,
    step: int,
    lr: float = 1e-3,
    beta1: float = 0.9,
    beta2: float = 0.999,
    eps: float = 1e-8,
    weight_decay: float = 0.0,
    decoupled_weight_decay: bool = False,
) -> tuple[Array, Array, Array]:
    """Adam / AdamW. Returns ``(new_param, new_m, new_v)``; ``step`` is 1 on the first update.

    ``m' = b1 m + (1 - b1) g``, ``v' = b2 v + (1 - b2) g^2``,
    ``param' = param - lr * (m' / (1 - b1^t)) / (sqrt(v' / (1 - b2^t)) + eps)``
    (eps is added after bias-correcting v, as PyTorch does). ``weight_decay`` is an
    L2 term added to the gradient, or, with ``decoupled_weight_decay=True`` (AdamW),
    a shrink ``param * (1 - lr * weight_decay)`` applied before the Adam step.
    """
    if step < 1:
        raise ValueError(f"adam step counts from 1, got {step}")
    g = grad
    base = param
    if decoupled_weight_decay:
        base = param * (1.0 - lr * weight_decay)
    else:
        g = grad + weight_decay * param
    new_m = beta1 * m + (1.0 - beta1) * g
    new_v = beta2 * v + (1.0 - beta2) * g * g
    m_hat = new_m / (1.0 - beta1**step)
    # math.sqrt keeps a Python float, so float32 parameters stay float32 (NEP 50).
    denom = np.sqrt(new_v) / math.sqrt(1.0 - beta2**step) + eps
    return base - lr * m_hat / denom, new_m, new_v
