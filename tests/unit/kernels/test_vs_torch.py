"""The reference kernels against PyTorch autograd (float64), when torch is installed.

Each case feeds the same inputs and the same random output projection ``R`` to
both sides and compares the forward output and every input gradient with
``rtol=1e-8`` (plus ``atol=1e-12`` for entries that are zero up to rounding).
Asymmetric padding, which torch's pooling/conv layers cannot express, is
applied on the torch side with ``F.pad`` first.
"""

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pytest
from kernel_cases import CONV_CASES, ConvCase
from kernel_testing import Array

import crane.exec.kernels as K

torch = pytest.importorskip("torch", exc_type=ImportError)
F = torch.nn.functional

RTOL, ATOL = 1e-8, 1e-12
NpForward = Callable[..., Array]
NpBackward = Callable[..., Mapping[str, Array]]
TorchForward = Callable[..., Any]


def assert_matches_torch(
    np_forward: NpForward,
    np_backward: NpBackward,
    torch_forward: TorchForward,
    inputs: Mapping[str, Array],
    seed: int = 0,
) -> None:
    """Assert equal outputs and gradients of ``sum(out * R)`` between numpy and torch."""
    out = np_forward(**inputs)
    proj = np.random.default_rng(seed).standard_normal(np.shape(out))
    grads = np_backward(proj, **inputs)
    tensors = {
        k: torch.tensor(v, dtype=torch.float64, requires_grad=True) for k, v in inputs.items()
    }
    t_out = torch_forward(**tensors)
    (t_out * torch.tensor(proj)).sum().backward()
    np.testing.assert_allclose(out, t_out.detach().numpy(), rtol=RTOL, atol=ATOL)
    for name, tensor in tensors.items():
        np.testing.assert_allclose(
            grads[name], tensor.grad.numpy(), rtol=RTOL, atol=ATOL, err_msg=name
        )


def _torch_pad(x: Any, padding: tuple[int, int, int, int], value: float = 0.0) -> Any:
    top, bottom, left, right = padding
    return F.pad(x, (left, right, top, bottom), value=value)


@pytest.mark.parametrize("case", CONV_CASES, ids=lambda c: c.name)
def test_conv2d(case: ConvCase, rng: np.random.Generator) -> None:
    inputs = {"x": rng.standard_normal(case.x), "w": rng.standard_normal(case.weight)}
    if case.bias:
        inputs["b"] = rng.standard_normal(case.out_channels)
    kw = case.kwargs

    def np_fwd(x: Array, w: Array, b: Array | None = None) -> Array:
        return K.conv2d_forward(x, w, b, **kw)

    def np_bwd(g: Array, x: Array, w: Array, b: Array | None = None) -> Mapping[str, Array]:
        n, c, h, ww = x.shape
        o, cg, kh, kww = w.shape
        grads = {
            "x": K.conv2d_backward_input(g, w, (n, c, h, ww), **kw),
            "w": K.conv2d_backward_weight(g, x, (o, cg, kh, kww), **kw),
        }
        if b is not None:
            grads["b"] = K.conv2d_backward_bias(g)
        return grads

    def t_fwd(x: Any, w: Any, b: Any = None) -> Any:
        return F.conv2d(
            _torch_pad(x, case.padding),
            w,
            b,
            stride=case.stride,
            dilation=case.dilation,
            groups=case.groups,
        )

    assert_matches_torch(np_fwd, np_bwd, t_fwd, inputs)


POOL_CASES = [
    ((2, 2, 4, 6), (2, 2), (2, 2), (0, 0, 0, 0)),
    ((2, 3, 7, 6), (3, 3), (2, 2), (1, 1, 1, 1)),
    ((1, 2, 5, 5), (3, 3), (1, 1), (0, 0, 0, 0)),
    ((2, 2, 8, 7), (3, 2), (2, 3), (1, 0, 0, 1)),
]


@pytest.mark.parametrize(("shape", "kernel", "stride", "padding"), POOL_CASES)
def test_max_pool(
    shape: tuple[int, ...], kernel: Any, stride: Any, padding: Any, rng: np.random.Generator
) -> None:
    x = rng.permutation(int(np.prod(shape))).reshape(shape) * 0.1
    assert_matches_torch(
        lambda x: K.max_pool2d_forward(x, kernel=kernel, stride=stride, padding=padding),
        lambda g, x: {
            "x": K.max_pool2d_backward(g, x, kernel=kernel, stride=stride, padding=padding)
        },
        lambda x: F.max_pool2d(_torch_pad(x, padding, -np.inf), kernel, stride),
        {"x": x},
    )


@pytest.mark.parametrize("include_pad", [False, True])
@pytest.mark.parametrize(("shape", "kernel", "stride", "padding"), POOL_CASES)
def test_avg_pool(
    shape: tuple[int, ...],
    kernel: Any,
    stride: Any,
    padding: Any,
    include_pad: bool,
    rng: np.random.Generator,
) -> None:
    top, bottom, left, right = padding
    symmetric = top == bottom and left == right
    if not (include_pad or symmetric):
        pytest.skip("torch cannot express asymmetric padding that is excluded from the divisor")

    def t_fwd(x: Any) -> Any:
        if include_pad:
            return F.avg_pool2d(_torch_pad(x, padding), kernel, stride)
        return F.avg_pool2d(x, kernel, stride, padding=(top, left), count_include_pad=False)

    kw = {"kernel": kernel, "stride": stride, "padding": padding, "count_include_pad": include_pad}
    assert_matches_torch(
        lambda x: K.avg_pool2d_forward(x, **kw),
        lambda g, x: {"x": K.avg_pool2d_backward(g, x.shape, **kw)},
        t_fwd,
        {"x": rng.standard_normal(shape)},
    )


def test_global_pools(rng: np.random.Generator) -> None:
    x = rng.permutation(2 * 3 * 4 * 5).reshape(2, 3, 4, 5) * 0.1
    assert_matches_torch(
        K.global_avg_pool2d_forward,
        lambda g, x: {"x": K.global_avg_pool2d_backward(g, x.shape)},
        lambda x: F.adaptive_avg_pool2d(x, 1),
        {"x": x},
    )
    assert_matches_torch(
        K.global_max_pool2d_forward,
        lambda g, x: {"x": K.global_max_pool2d_backward(g, x)},
        lambda x: F.adaptive_max_pool2d(x, 1),
        {"x": x},
    )


def test_batchnorm_train(rng: np.random.Generator) -> None:
    inputs = {
        "x": rng.standard_normal((4, 3, 2, 3)),
        "gamma": rng.standard_normal(3),
        "beta": rng.standard_normal(3),
    }

    def np_bwd(g: Array, x: Array, gamma: Array, beta: Array) -> Mapping[str, Array]:
        _, mean, inv_std = K.batchnorm_forward_train(x, gamma, beta)
        dx, dgamma, dbeta = K.batchnorm_backward_train(g, x, gamma, mean, inv_std)
        return {"x": dx, "gamma": dgamma, "beta": dbeta}

    assert_matches_torch(
        lambda x, gamma, beta: K.batchnorm_forward_train(x, gamma, beta)[0],
        np_bwd,
        lambda x, gamma, beta: F.batch_norm(x, None, None, gamma, beta, training=True, eps=1e-5),
        inputs,
    )
    running_mean, running_var = (
        torch.zeros(3, dtype=torch.float64),
        torch.ones(3, dtype=torch.float64),
    )
    F.batch_norm(torch.tensor(inputs["x"]), running_mean, running_var, training=True, momentum=0.1)
    new_mean, new_var = K.batchnorm_running_stats(
        np.zeros(3), np.ones(3), inputs["x"], momentum=0.1
    )
    np.testing.assert_allclose(new_mean, running_mean.numpy(), rtol=RTOL)
    np.testing.assert_allclose(new_var, running_var.numpy(), rtol=RTOL)


def test_batchnorm_inference(rng: np.random.Generator) -> None:
    rm, rv = rng.standard_normal(3), rng.uniform(0.5, 2, 3)
    inputs = {
        "x": rng.standard_normal((2, 3, 2, 2)),
        "gamma": rng.standard_normal(3),
        "beta": rng.standard_normal(3),
    }

    def np_bwd(g: Array, x: Array, gamma: Array, beta: Array) -> Mapping[str, Array]:
        dx, dgamma, dbeta = K.batchnorm_backward_inference(g, x, gamma, rm, rv)
        return {"x": dx, "gamma": dgamma, "beta": dbeta}

    assert_matches_torch(
        lambda x, gamma, beta: K.batchnorm_forward_inference(x, gamma, beta, rm, rv),
        np_bwd,
        lambda x, gamma, beta: F.batch_norm(
            x, torch.tensor(rm), torch.tensor(rv), gamma, beta, training=False
        ),
        inputs,
    )


@pytest.mark.parametrize("norm_shape", [(5,), (3, 5)])
def test_layernorm(norm_shape: tuple[int, ...], rng: np.random.Generator) -> None:
    inputs = {
        "x": rng.standard_normal((2, 3, 5)),
        "gamma": rng.standard_normal(norm_shape),
        "beta": rng.standard_normal(norm_shape),
    }

    def np_bwd(g: Array, x: Array, gamma: Array, beta: Array) -> Mapping[str, Array]:
        _, mean, inv_std = K.layernorm_forward(x, gamma, beta)
        dx, dgamma, dbeta = K.layernorm_backward(g, x, gamma, mean, inv_std)
        return {"x": dx, "gamma": dgamma, "beta": dbeta}

    assert_matches_torch(
        lambda x, gamma, beta: K.layernorm_forward(x, gamma, beta)[0],
        np_bwd,
        lambda x, gamma, beta: F.layer_norm(x, norm_shape, gamma, beta, eps=1e-5),
        inputs,
    )


ACTIVATIONS: list[tuple[str, Any, Any, Any]] = [
    ("relu", K.relu_forward, K.relu_backward, lambda x: F.relu(x)),
    ("sigmoid", K.sigmoid_forward, K.sigmoid_backward, lambda x: torch.sigmoid(x)),
    ("tanh", K.tanh_forward, K.tanh_backward, lambda x: torch.tanh(x)),
    ("silu", K.silu_forward, K.silu_backward, lambda x: F.silu(x)),
    ("gelu", K.gelu_forward, K.gelu_backward, lambda x: F.gelu(x)),
    (
        "gelu_tanh",
        lambda x: K.gelu_forward(x, approximate=True),
        lambda g, x: K.gelu_backward(g, x, approximate=True),
        lambda x: F.gelu(x, approximate="tanh"),
    ),
]


@pytest.mark.parametrize(
    ("name", "fwd", "bwd", "t_fwd"), ACTIVATIONS, ids=[a[0] for a in ACTIVATIONS]
)
def test_activation(name: str, fwd: Any, bwd: Any, t_fwd: Any, rng: np.random.Generator) -> None:
    x = rng.uniform(-5, 5, (4, 6))
    x = np.where(np.abs(x) < 1e-2, 0.5, x)
    assert_matches_torch(fwd, lambda g, x: {"x": bwd(g, x)}, t_fwd, {"x": x})


@pytest.mark.parametrize("axis", [0, -1])
def test_softmax_log_softmax(axis: int, rng: np.random.Generator) -> None:
    x = rng.standard_normal((3, 4, 5)) * 3
    assert_matches_torch(
        lambda x: K.softmax_forward(x, axis),
        lambda g, x: {"x": K.softmax_backward(g, K.softmax_forward(x, axis), axis)},
        lambda x: torch.softmax(x, axis),
        {"x": x},
    )
    assert_matches_torch(
        lambda x: K.log_softmax_forward(x, axis),
        lambda g, x: {"x": K.log_softmax_backward(g, K.log_softmax_forward(x, axis), axis)},
        lambda x: torch.log_softmax(x, axis),
        {"x": x},
    )


def test_losses(rng: np.random.Generator) -> None:
    labels = rng.integers(0, 5, (2, 3))
    assert_matches_torch(
        lambda logits: K.softmax_cross_entropy(logits, labels)[0],
        lambda g, logits: {"logits": K.softmax_cross_entropy(logits, labels, grad_loss=g)[1]},
        lambda logits: F.cross_entropy(logits.reshape(-1, 5), torch.tensor(labels.reshape(-1))),
        {"logits": rng.standard_normal((2, 3, 5))},
    )

    def mse_bwd(g: Array, pred: Array, target: Array) -> Mapping[str, Array]:
        dp, dt = K.mse_loss_backward(pred, target, grad_loss=g)
        return {"pred": dp, "target": dt}

    assert_matches_torch(
        K.mse_loss_forward,
        mse_bwd,
        lambda pred, target: F.mse_loss(pred, target),
        {"pred": rng.standard_normal((3, 4)), "target": rng.standard_normal((3, 4))},
    )


@pytest.mark.parametrize(
    ("causal", "cross", "bias"),
    [(False, False, True), (True, False, True), (False, True, True), (True, True, False)],
)
def test_multi_head_attention(
    causal: bool, cross: bool, bias: bool, rng: np.random.Generator
) -> None:
    heads, d = 2, 6
    sq, sk, dkv = (3, 5, 4) if cross else (4, 4, d)
    shapes = {"x_q": (2, sq, d), "wq": (d, d), "wk": (dkv, d), "wv": (dkv, d), "wo": (d, 5)}
    if cross:
        shapes["x_kv"] = (2, sk, dkv)
    if bias:
        shapes |= {"bq": (d,), "bk": (d,), "bv": (d,), "bo": (5,)}
    inputs = {k: rng.standard_normal(s) for k, s in shapes.items()}

    def weights(p: Mapping[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in p.items() if k[0] in "wb"}

    def np_fwd(**p: Array) -> Array:
        return K.attention_forward(
            p["x_q"], p.get("x_kv", p["x_q"]), num_heads=heads, causal=causal, **weights(p)
        )[0]

    def np_bwd(g: Array, **p: Array) -> Mapping[str, Array]:
        _, ctx = K.attention_forward(
            p["x_q"], p.get("x_kv", p["x_q"]), num_heads=heads, causal=causal, **weights(p)
        )
        grads = K.attention_backward(g, ctx)
        out = {name: getattr(grads, name) for name in p}
        if not cross:
            out["x_q"] = grads.x_q + grads.x_kv
        return out

    def t_fwd(**p: Any) -> Any:
        x_kv = p.get("x_kv", p["x_q"])

        def proj(x: Any, w: str, b: str) -> Any:
            y = x @ p[w] + p.get(b, 0)
            return y.reshape(y.shape[0], y.shape[1], heads, -1).transpose(1, 2)

        q, k, v = proj(p["x_q"], "wq", "bq"), proj(x_kv, "wk", "bk"), proj(x_kv, "wv", "bv")
        heads_out = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        merged = heads_out.transpose(1, 2).reshape(2, sq, d)
        return merged @ p["wo"] + p.get("bo", 0)

    assert_matches_torch(np_fwd, np_bwd, t_fwd, inputs)


def test_sdpa_with_boolean_mask(rng: np.random.Generator) -> None:
    keep = rng.random((2, 1, 3, 4)) > 0.4
    keep[..., 0] = True

    def np_bwd(g: Array, q: Array, k: Array, v: Array) -> Mapping[str, Array]:
        _, probs = K.sdpa_forward(q, k, v, mask=keep)
        dq, dk, dv = K.sdpa_backward(g, q, k, v, probs)
        return {"q": dq, "k": dk, "v": dv}

    assert_matches_torch(
        lambda q, k, v: K.sdpa_forward(q, k, v, mask=keep)[0],
        np_bwd,
        lambda q, k, v: F.scaled_dot_product_attention(q, k, v, attn_mask=torch.tensor(keep)),
        {
            "q": rng.standard_normal((2, 2, 3, 3)),
            "k": rng.standard_normal((2, 2, 4, 3)),
            "v": rng.standard_normal((2, 2, 4, 3)),
        },
    )


def test_elementwise_and_movement(rng: np.random.Generator) -> None:
    ab = {"a": rng.standard_normal((2, 1, 4)), "b": rng.standard_normal((3, 1))}

    def add_bwd(g: Array, a: Array, b: Array) -> Mapping[str, Array]:
        return dict(zip("ab", K.add_backward(g, a.shape, b.shape), strict=True))

    def mul_bwd(g: Array, a: Array, b: Array) -> Mapping[str, Array]:
        return dict(zip("ab", K.mul_backward(g, a, b), strict=True))

    def mm_bwd(g: Array, a: Array, b: Array) -> Mapping[str, Array]:
        return dict(zip("ab", K.matmul_backward(g, a, b), strict=True))

    assert_matches_torch(K.add_forward, add_bwd, lambda a, b: a + b, ab)
    assert_matches_torch(K.mul_forward, mul_bwd, lambda a, b: a * b, ab)
    assert_matches_torch(
        K.matmul_forward,
        mm_bwd,
        lambda a, b: a @ b,
        {"a": rng.standard_normal((2, 1, 3, 4)), "b": rng.standard_normal((5, 4, 2))},
    )
    assert_matches_torch(
        lambda a, b: K.concat_forward([a, b], axis=1),
        lambda g, a, b: dict(
            zip("ab", K.concat_backward(g, [a.shape[1], b.shape[1]], axis=1), strict=True)
        ),
        lambda a, b: torch.cat([a, b], dim=1),
        {"a": rng.standard_normal((2, 3)), "b": rng.standard_normal((2, 4))},
    )
    assert_matches_torch(
        lambda x: K.transpose_forward(x, (2, 0, 1)),
        lambda g, x: {"x": K.transpose_backward(g, (2, 0, 1))},
        lambda x: x.permute(2, 0, 1),
        {"x": rng.standard_normal((2, 3, 4))},
    )


def test_embedding(rng: np.random.Generator) -> None:
    ids = np.array([[0, 3, 3], [1, 0, 4]])
    assert_matches_torch(
        lambda table: K.embedding_forward(table, ids),
        lambda g, table: {"table": K.embedding_backward(g, ids, table.shape[0])},
        lambda table: F.embedding(torch.tensor(ids), table),
        {"table": rng.standard_normal((5, 4))},
    )


def _torch_steps(opt_factory: Callable[[list[Any]], Any], grads: list[Array]) -> Array:
    param = torch.tensor([1.0, -2.0, 0.5], dtype=torch.float64, requires_grad=True)
    opt = opt_factory([param])
    for g in grads:
        param.grad = torch.tensor(g)
        opt.step()
    return param.detach().numpy().copy()


GRADS = [np.array([0.1, 0.4, -0.3]), np.array([-0.2, 0.1, 0.6])]
P0 = np.array([1.0, -2.0, 0.5])


def test_sgd_matches_torch() -> None:
    p: Array = P0
    for g in GRADS:
        p = K.sgd_update(p, g, lr=0.1, weight_decay=0.01)
    expected = _torch_steps(lambda ps: torch.optim.SGD(ps, lr=0.1, weight_decay=0.01), GRADS)
    np.testing.assert_allclose(p, expected, rtol=RTOL)


@pytest.mark.parametrize("nesterov", [False, True])
def test_momentum_matches_torch(nesterov: bool) -> None:
    p: Array = P0
    v: Array = np.zeros(3)
    for g in GRADS:
        p, v = K.momentum_update(
            p, g, v, lr=0.1, momentum=0.9, nesterov=nesterov, weight_decay=0.01
        )

    def make(ps: list[Any]) -> Any:
        return torch.optim.SGD(ps, lr=0.1, momentum=0.9, nesterov=nesterov, weight_decay=0.01)

    np.testing.assert_allclose(p, _torch_steps(make, GRADS), rtol=RTOL)


@pytest.mark.parametrize("decoupled", [False, True])
def test_adam_matches_torch(decoupled: bool) -> None:
    p: Array = P0
    m: Array = np.zeros(3)
    v: Array = np.zeros(3)
    for t, g in enumerate(GRADS, start=1):
        p, m, v = K.adam_update(
            p, g, m, v, step=t, lr=0.01, weight_decay=0.05, decoupled_weight_decay=decoupled
        )
    optim = torch.optim.AdamW if decoupled else torch.optim.Adam
    expected = _torch_steps(lambda ps: optim(ps, lr=0.01, weight_decay=0.05), GRADS)
    np.testing.assert_allclose(p, expected, rtol=RTOL)
