"""Elementwise activations, forward and backward.

Every ``*_backward(grad_out, x)`` takes the forward *input* ``x`` and returns
``grad_out * f'(x)`` with the shape of ``x``. Sigmoid and tanh also offer
``*_backward_from_output(grad_out, out)``, which is cheaper when the forward
output is saved instead of the input.

:data:`ACTIVATIONS` registers the forward and backward kernel of every activation layer kind
(``crane.dialects.layers.activations``) by name; the reference interpreter runs them.
"""

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from crane.exec.kernels._special import erf
from crane.exec.kernels._types import Array

_SQRT_2_OVER_PI = float(np.sqrt(2.0 / np.pi))
_INV_SQRT_2 = float(1.0 / np.sqrt(2.0))
_INV_SQRT_2PI = float(1.0 / np.sqrt(2.0 * np.pi))
_GELU_CUBIC = 0.044715


def relu_forward(x: Array) -> Array:
    """``max(x, 0)``."""
    return np.maximum(x, 0.0).astype(x.dtype, copy=False)


def relu_backward(grad_out: Array, x: Array) -> Array:
    """``grad_out * (x > 0)``; the subgradient at 0 is taken as 0."""
    return np.where(x > 0, grad_out, 0.0).astype(grad_out.dtype, copy=False)


def sigmoid_forward(x: Array) -> Array:
    """Logistic ``1 / (1 + exp(-x))``, evaluated without overflow for large |x|."""
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e)).astype(x.dtype, copy=False)


def sigmoid_backward(grad_out: Array, x: Array) -> Array:
    """``grad_out * s * (1 - s)`` with ``s = sigmoid(x)``."""
    return sigmoid_backward_from_output(grad_out, sigmoid_forward(x))


def sigmoid_backward_from_output(grad_out: Array, out: Array) -> Array:
    """Sigmoid gradient given the forward output ``out = sigmoid(x)``."""
    return grad_out * out * (1.0 - out)


def tanh_forward(x: Array) -> Array:
    """Hyperbolic tangent."""
    return np.tanh(x)


def tanh_backward(grad_out: Array, x: Array) -> Array:
    """``grad_out * (1 - tanh(x)^2)``."""
    return tanh_backward_from_output(grad_out, np.tanh(x))


def tanh_backward_from_output(grad_out: Array, out: Array) -> Array:
    """Tanh gradient given the forward output ``out = tanh(x)``."""
    return grad_out * (1.0 - out * out)


def silu_forward(x: Array) -> Array:
    """SiLU / swish: ``x * sigmoid(x)``."""
    return x * sigmoid_forward(x)


def silu_backward(grad_out: Array, x: Array) -> Array:
    """``grad_out * s * (1 + x * (1 - s))`` with ``s = sigmoid(x)``."""
    s = sigmoid_forward(x)
    return grad_out * s * (1.0 + x * (1.0 - s))


def gelu_forward(x: Array, *, approximate: bool = False) -> Array:
    """GELU. Exact: ``x * Phi(x)`` via erf. ``approximate=True``: the tanh formula
    ``0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))`` (PyTorch ``approximate='tanh'``)."""
    if approximate:
        return 0.5 * x * (1.0 + np.tanh(_tanh_arg(x)))
    return 0.5 * x * (1.0 + erf(x * _INV_SQRT_2))


def gelu_backward(grad_out: Array, x: Array, *, approximate: bool = False) -> Array:
    """Gradient of :func:`gelu_forward` (same ``approximate`` flag)."""
    if approximate:
        t = np.tanh(_tanh_arg(x))
        d_arg = _SQRT_2_OVER_PI * (1.0 + 3.0 * _GELU_CUBIC * x * x)
        return grad_out * (0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * d_arg)
    cdf = 0.5 * (1.0 + erf(x * _INV_SQRT_2))
    pdf = _INV_SQRT_2PI * np.exp(-0.5 * x * x)
    return grad_out * (cdf + x * pdf)


def _tanh_arg(x: Array) -> Array:
    return _SQRT_2_OVER_PI * (x + _GELU_CUBIC * x * x * x)


def relu6_forward(x: Array) -> Array:
    """``min(max(x, 0), 6)`` (PyTorch ``relu6``)."""
    return np.minimum(np.maximum(x, 0.0), 6.0).astype(x.dtype, copy=False)


def relu6_backward(grad_out: Array, x: Array) -> Array:
    """``grad_out`` where ``0 < x < 6``, else 0 (PyTorch's subgradient at the kinks)."""
    return np.where((x > 0.0) & (x < 6.0), grad_out, 0.0).astype(grad_out.dtype, copy=False)


def hardsigmoid_forward(x: Array) -> Array:
    """``relu6(x + 3) / 6`` (PyTorch ``hardsigmoid``)."""
    return (relu6_forward(x + 3.0) / 6.0).astype(x.dtype, copy=False)


def hardsigmoid_backward(grad_out: Array, x: Array) -> Array:
    """``grad_out / 6`` where ``-3 < x < 3``, else 0."""
    return np.where((x > -3.0) & (x < 3.0), grad_out / 6.0, 0.0).astype(grad_out.dtype, copy=False)


def hardswish_forward(x: Array) -> Array:
    """``x * relu6(x + 3) / 6`` (PyTorch ``hardswish``)."""
    return (x * relu6_forward(x + 3.0) / 6.0).astype(x.dtype, copy=False)


def hardswish_backward(grad_out: Array, x: Array) -> Array:
    """0 below -3, ``grad_out * (x / 3 + 1/2)`` up to 3 (included, as PyTorch), ``grad_out``
    above."""
    inside = grad_out * (x / 3.0 + 0.5)
    return np.where(x < -3.0, 0.0, np.where(x <= 3.0, inside, grad_out)).astype(grad_out.dtype, copy=False)


@dataclass(frozen=True, slots=True)
class Activation:
    """The kernels of one activation layer kind."""

    forward: Callable[[Array], Array]
    backward: Callable[[Array, Array], Array]
    """``backward(grad_out, x)``: the gradient of the forward input."""


ACTIVATIONS: Mapping[str, Activation] = {
    "relu": Activation(relu_forward, relu_backward),
    "gelu": Activation(gelu_forward, gelu_backward),
    "silu": Activation(silu_forward, silu_backward),
    "sigmoid": Activation(sigmoid_forward, sigmoid_backward),
    "tanh": Activation(tanh_forward, tanh_backward),
    "relu6": Activation(relu6_forward, relu6_backward),
    "hardsigmoid": Activation(hardsigmoid_forward, hardsigmoid_backward),
    "hardswish": Activation(hardswish_forward, hardswish_backward),
}
"""Activation layer kind -> its kernels."""
