"""Optimizer updates against hand-computed formulas over two steps."""

from functools import partial

import numpy as np
import pytest

from crane.exec.kernels import adam_update, momentum_update, sgd_update

P0 = np.array([1.0, -2.0, 0.5])
G1 = np.array([0.1, 0.4, -0.3])
G2 = np.array([-0.2, 0.1, 0.6])


def test_sgd_two_steps() -> None:
    lr, wd = 0.1, 0.01
    p1 = sgd_update(P0, G1, lr=lr, weight_decay=wd)
    p2 = sgd_update(p1, G2, lr=lr, weight_decay=wd)
    e1 = P0 - lr * (G1 + wd * P0)
    np.testing.assert_allclose(p1, e1, rtol=1e-15)
    np.testing.assert_allclose(p2, e1 - lr * (G2 + wd * e1), rtol=1e-15)
    assert P0[0] == 1.0  # inputs untouched


@pytest.mark.parametrize("nesterov", [False, True])
def test_momentum_two_steps(nesterov: bool) -> None:
    lr, mu, wd = 0.1, 0.9, 0.01
    v0 = np.zeros(3)
    p1, v1 = momentum_update(P0, G1, v0, lr=lr, momentum=mu, nesterov=nesterov, weight_decay=wd)
    p2, v2 = momentum_update(p1, G2, v1, lr=lr, momentum=mu, nesterov=nesterov, weight_decay=wd)
    g1 = G1 + wd * P0
    ev1 = g1
    ep1 = P0 - lr * (g1 + mu * ev1 if nesterov else ev1)
    g2 = G2 + wd * ep1
    ev2 = mu * ev1 + g2
    ep2 = ep1 - lr * (g2 + mu * ev2 if nesterov else ev2)
    np.testing.assert_allclose(v1, ev1, rtol=1e-15)
    np.testing.assert_allclose(p1, ep1, rtol=1e-15)
    np.testing.assert_allclose(v2, ev2, rtol=1e-15)
    np.testing.assert_allclose(p2, ep2, rtol=1e-15)


@pytest.mark.parametrize(("wd", "decoupled"), [(0.0, False), (0.05, False), (0.05, True)])
def test_adam_two_steps(wd: float, decoupled: bool) -> None:
    lr, b1, b2, eps = 0.01, 0.9, 0.999, 1e-8
    update = partial(
        adam_update,
        lr=lr,
        beta1=b1,
        beta2=b2,
        eps=eps,
        weight_decay=wd,
        decoupled_weight_decay=decoupled,
    )
    m0 = v0 = np.zeros(3)
    p1, m1, v1 = update(P0, G1, m0, v0, step=1)
    p2, m2, v2 = update(p1, G2, m1, v1, step=2)

    def hand(
        p: np.ndarray, g: np.ndarray, m: np.ndarray, v: np.ndarray, t: int
    ) -> tuple[np.ndarray, ...]:
        base = p * (1 - lr * wd) if decoupled else p
        g = g if decoupled else g + wd * p
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g**2
        m_hat = m / (1 - b1**t)
        v_hat = v / (1 - b2**t)
        return base - lr * m_hat / (np.sqrt(v_hat) + eps), m, v

    e1 = hand(P0, G1, m0, v0, 1)
    e2 = hand(e1[0], G2, e1[1], e1[2], 2)
    for got, expected in zip((p1, m1, v1, p2, m2, v2), (*e1, *e2), strict=True):
        np.testing.assert_allclose(got, expected, rtol=1e-12)
    # First Adam step moves every coordinate by about lr, against the gradient's sign.
    if wd == 0.0:
        np.testing.assert_allclose(P0 - p1, lr * np.sign(G1), rtol=1e-6)


def test_adam_rejects_step_zero() -> None:
    with pytest.raises(ValueError, match="step"):
        adam_update(P0, G1, np.zeros(3), np.zeros(3), step=0)
