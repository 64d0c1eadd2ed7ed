"""Scaled dot-product and multi-head attention."""

from collections.abc import Mapping
from typing import Any

import numpy as np
import pytest
from kernel_testing import Array, check_gradients

from crane.exec.kernels import (
    attention_backward,
    attention_forward,
    attention_scores,
    causal_mask,
    linear_forward,
    merge_heads,
    sdpa_backward,
    sdpa_forward,
    softmax_forward,
    split_heads,
)


def naive_sdpa(q: Array, k: Array, v: Array, keep: np.ndarray | None) -> Array:
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    if keep is not None:
        scores = np.where(keep, scores, -np.inf)
    return softmax_forward(scores, axis=-1) @ v


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("mask_kind", ["none", "bool", "additive"])
def test_sdpa(causal: bool, mask_kind: str, rng: np.random.Generator) -> None:
    b, h, sq, sk, dh = 2, 2, 4, 5, 3
    inputs = {
        "q": rng.standard_normal((b, h, sq, dh)),
        "k": rng.standard_normal((b, h, sk, dh)),
        "v": rng.standard_normal((b, h, sk, dh)),
    }
    keep = rng.random((b, 1, sq, sk)) > 0.3
    keep[..., 0] = True  # every query keeps key 0, so no row is fully masked
    mask: Array | np.ndarray | None = {
        "none": None,
        "bool": keep,
        "additive": np.where(keep, 0.0, -np.inf),
    }[mask_kind]
    combined = None if mask is None else keep
    if causal:
        combined = causal_mask(sq, sk) if combined is None else combined & causal_mask(sq, sk)
    q, k, v = inputs["q"], inputs["k"], inputs["v"]
    out, probs = sdpa_forward(q, k, v, causal=causal, mask=mask)
    np.testing.assert_allclose(out, naive_sdpa(q, k, v, keep=combined), rtol=1e-12)
    if combined is not None:
        assert np.all(np.where(np.broadcast_to(combined, probs.shape), 0.0, probs) == 0)

    def forward(q: Array, k: Array, v: Array) -> Array:
        return sdpa_forward(q, k, v, causal=causal, mask=mask)[0]

    def backward(g: Array, q: Array, k: Array, v: Array) -> Mapping[str, Array]:
        _, probs = sdpa_forward(q, k, v, causal=causal, mask=mask)
        dq, dk, dv = sdpa_backward(g, q, k, v, probs)
        return {"q": dq, "k": dk, "v": dv}

    check_gradients(forward, backward, inputs)


def test_causal_mask_is_top_left_aligned() -> None:
    np.testing.assert_array_equal(causal_mask(2, 3), [[True, False, False], [True, True, False]])


MHA_CASES = [
    # (name, Sq, Sk, Dq, Dkv, D, Dout, heads, causal, bias, self_attention)
    ("self", 4, 4, 6, 6, 6, 6, 2, False, True, True),
    ("self_causal", 4, 4, 6, 6, 6, 6, 3, True, True, True),
    ("cross", 3, 5, 4, 6, 6, 5, 2, False, True, False),
    ("cross_causal_nobias", 3, 5, 4, 6, 4, 4, 2, True, False, False),
]


def _mha_inputs(case: tuple[Any, ...], rng: np.random.Generator) -> dict[str, Array]:
    _, sq, sk, dq, dkv, d, dout, _, _, bias, self_attn = case
    shapes = {"x_q": (2, sq, dq), "wq": (dq, d), "wk": (dkv, d), "wv": (dkv, d), "wo": (d, dout)}
    if not self_attn:
        shapes["x_kv"] = (2, sk, dkv)
    if bias:
        shapes |= {"bq": (d,), "bk": (d,), "bv": (d,), "bo": (dout,)}
    return {name: rng.standard_normal(shape) for name, shape in shapes.items()}


@pytest.mark.parametrize("case", MHA_CASES, ids=[c[0] for c in MHA_CASES])
def test_multi_head_attention(case: tuple[Any, ...], rng: np.random.Generator) -> None:
    heads, causal, self_attn = case[7], case[8], case[10]
    inputs = _mha_inputs(case, rng)

    def forward(**p: Array) -> Array:
        x_kv = p["x_q"] if self_attn else p["x_kv"]
        w = {k: v for k, v in p.items() if k[0] in "wb"}
        return attention_forward(p["x_q"], x_kv, num_heads=heads, causal=causal, **w)[0]

    def backward(g: Array, **p: Array) -> Mapping[str, Array]:
        x_kv = p["x_q"] if self_attn else p["x_kv"]
        w = {k: v for k, v in p.items() if k[0] in "wb"}
        _, ctx = attention_forward(p["x_q"], x_kv, num_heads=heads, causal=causal, **w)
        grads = attention_backward(g, ctx)
        out = {name: getattr(grads, name) for name in p}
        if self_attn:
            out["x_q"] = grads.x_q + grads.x_kv
        return out

    check_gradients(forward, backward, inputs)


def test_attention_expands_into_pieces(rng: np.random.Generator) -> None:
    case = MHA_CASES[2]
    p = _mha_inputs(case, rng)
    out, _ = attention_forward(
        p["x_q"],
        p["x_kv"],
        p["wq"],
        p["wk"],
        p["wv"],
        p["wo"],
        p["bq"],
        p["bk"],
        p["bv"],
        p["bo"],
        num_heads=2,
    )
    q = split_heads(linear_forward(p["x_q"], p["wq"], p["bq"]), 2)
    k = split_heads(linear_forward(p["x_kv"], p["wk"], p["bk"]), 2)
    v = split_heads(linear_forward(p["x_kv"], p["wv"], p["bv"]), 2)
    probs = softmax_forward(attention_scores(q, k, scale=1 / np.sqrt(q.shape[-1])), axis=-1)
    expanded = linear_forward(merge_heads(probs @ v), p["wo"], p["bo"])
    np.testing.assert_allclose(out, expanded, rtol=1e-13)
    np.testing.assert_array_equal(merge_heads(split_heads(p["x_q"], 2)), p["x_q"])
