"""Scaled dot-product and multi-head attention, forward and backward.

Pieces, so a pass can expand attention into matmuls and softmax:
``split_heads`` (B, S, D) -> (B, H, S, Dh); ``merge_heads`` its inverse;
``attention_scores`` q k^T * scale plus masking; ``sdpa_forward`` /
``sdpa_backward`` on (B, H, S, Dh).

Masks: ``mask`` broadcasts to (B, H, Sq, Sk). A boolean mask keeps positions
where it is True; a floating mask is *added* to the scores (use -inf to drop).
``causal=True`` lets query i attend keys j <= i (top-left aligned, as PyTorch's
``is_causal``). A query row with every key masked yields NaN, as in PyTorch.
"""

from dataclasses import dataclass

import numpy as np

from crane.exec.kernels._types import Array, BoolArray
from crane.exec.kernels.linear import linear_backward, linear_forward
from crane.exec.kernels.softmax_loss import softmax_backward, softmax_forward


def split_heads(x: Array, num_heads: int) -> Array:
    """(B, S, D) -> (B, H, S, D // H): head h takes features [h * Dh, (h + 1) * Dh)."""
    b, s, d = x.shape
    if d % num_heads:
        raise ValueError(f"model dim {d} is not divisible by num_heads={num_heads}")
    return x.reshape(b, s, num_heads, d // num_heads).transpose(0, 2, 1, 3)


def merge_heads(x: Array) -> Array:
    """(B, H, S, Dh) -> (B, S, H * Dh), the inverse of :func:`split_heads`."""
    b, h, s, dh = x.shape
    return x.transpose(0, 2, 1, 3).reshape(b, s, h * dh)


def causal_mask(s_q: int, s_k: int) -> BoolArray:
    """Boolean (Sq, Sk) keep-mask with ``mask[i, j] = j <= i``."""
    return np.tril(np.ones((s_q, s_k), dtype=bool))


def attention_scores(
    q: Array,
    k: Array,
    *,
    scale: float,
    causal: bool = False,
    mask: Array | BoolArray | None = None,
) -> Array:
    """Masked logits ``q @ k^T * scale`` of shape (B, H, Sq, Sk); masked entries are -inf."""
    scores = np.matmul(q, np.swapaxes(k, -1, -2)) * scale
    if causal:
        scores = np.where(causal_mask(q.shape[-2], k.shape[-2]), scores, -np.inf)
    if mask is None:
        return scores
    if mask.dtype == np.bool_:
        return np.where(mask, scores, -np.inf)
    return scores + mask


def sdpa_forward(
    q: Array,
    k: Array,
    v: Array,
    *,
    causal: bool = False,
    mask: Array | BoolArray | None = None,
    scale: float | None = None,
) -> tuple[Array, Array]:
    """``softmax(q k^T * scale + mask) v`` on (B, H, S, Dh). Returns ``(out, probs)``.

    ``scale`` defaults to ``1 / sqrt(Dh)``; ``probs`` (B, H, Sq, Sk) is saved for backward.
    """
    scale = _default_scale(q) if scale is None else scale
    probs = softmax_forward(attention_scores(q, k, scale=scale, causal=causal, mask=mask), axis=-1)
    return np.matmul(probs, v), probs


def sdpa_backward(
    grad_out: Array, q: Array, k: Array, v: Array, probs: Array, *, scale: float | None = None
) -> tuple[Array, Array, Array]:
    """Return ``(grad_q, grad_k, grad_v)`` of :func:`sdpa_forward` given its saved ``probs``."""
    scale = _default_scale(q) if scale is None else scale
    grad_v = np.matmul(np.swapaxes(probs, -1, -2), grad_out)
    grad_probs = np.matmul(grad_out, np.swapaxes(v, -1, -2))
    # Masked entries have probs == 0, so their score gradient vanishes here.
    grad_scores = softmax_backward(grad_probs, probs, axis=-1) * scale
    grad_q = np.matmul(grad_scores, k)
    grad_k = np.matmul(np.swapaxes(grad_scores, -1, -2), q)
    return grad_q, grad_k, grad_v


@dataclass(frozen=True)
class AttentionWeights:
    """Projection weights saved in the context, in linear layout (in, out); biases or None."""

    wq: Array
    wk: Array
    wv: Array
    wo: Array
    bq: Array | None = None
    bk: Array | None = None
    bv: Array | None = None
    bo: Array | None = None


@dataclass(frozen=True)
class AttentionContext:
    """Everything :func:`attention_backward` needs from the forward pass."""

    x_q: Array
    x_kv: Array
    weights: AttentionWeights
    num_heads: int
    scale: float
    q: Array  # (B, H, Sq, Dh)
    k: Array  # (B, H, Sk, Dh)
    v: Array  # (B, H, Sk, Dh)
    probs: Array  # (B, H, Sq, Sk)
    merged: Array  # (B, Sq, D): heads concatenated, input of the output projection


@dataclass(frozen=True)
class AttentionGrads:
    """Gradients of :func:`attention_forward`; bias grads are None where the bias was None."""

    x_q: Array
    x_kv: Array
    wq: Array
    wk: Array
    wv: Array
    wo: Array
    bq: Array | None
    bk: Array | None
    bv: Array | None
    bo: Array | None


def attention_forward(
    x_q: Array,
    x_kv: Array,
    wq: Array,
    wk: Array,
    wv: Array,
    wo: Array,
    bq: Array | None = None,
    bk: Array | None = None,
    bv: Array | None = None,
    bo: Array | None = None,
    *,
    num_heads: int,
    causal: bool = False,
    mask: Array | BoolArray | None = None,
) -> tuple[Array, AttentionContext]:
    """Multi-head attention: queries from ``x_q`` (B, Sq, Dq), keys/values from ``x_kv`` (B, Sk, Dkv).

    ``out = merge_heads(sdpa(split(x_q wq + bq), split(x_kv wk + bk), split(x_kv wv + bv))) wo + bo``
    with scale ``1 / sqrt(D / num_heads)``; output (B, Sq, Dout). For self-attention pass
    the same array twice and add the two input gradients. Weights use the linear
    layout (in, out): wq (Dq, D), wk and wv (Dkv, D), wo (D, Dout); biases (out,) or None.
    """
    w = AttentionWeights(wq, wk, wv, wo, bq, bk, bv, bo)
    q = split_heads(linear_forward(x_q, w.wq, w.bq), num_heads)
    k = split_heads(linear_forward(x_kv, w.wk, w.bk), num_heads)
    v = split_heads(linear_forward(x_kv, w.wv, w.bv), num_heads)
    scale = _default_scale(q)
    heads, probs = sdpa_forward(q, k, v, causal=causal, mask=mask, scale=scale)
    merged = merge_heads(heads)
    ctx = AttentionContext(x_q, x_kv, w, num_heads, scale, q, k, v, probs, merged)
    return linear_forward(merged, w.wo, w.bo), ctx


def attention_backward(grad_out: Array, ctx: AttentionContext) -> AttentionGrads:
    """Gradients of :func:`attention_forward` wrt both inputs and all weights and biases."""
    w = ctx.weights
    g_merged, g_wo, g_bo = linear_backward(grad_out, ctx.merged, w.wo, has_bias=w.bo is not None)
    g_heads = split_heads(g_merged, ctx.num_heads)
    g_q, g_k, g_v = sdpa_backward(g_heads, ctx.q, ctx.k, ctx.v, ctx.probs, scale=ctx.scale)
    gx_q, g_wq, g_bq = linear_backward(merge_heads(g_q), ctx.x_q, w.wq, has_bias=w.bq is not None)
    gx_k, g_wk, g_bk = linear_backward(merge_heads(g_k), ctx.x_kv, w.wk, has_bias=w.bk is not None)
    gx_v, g_wv, g_bv = linear_backward(merge_heads(g_v), ctx.x_kv, w.wv, has_bias=w.bv is not None)
    return AttentionGrads(
        x_q=gx_q,
        x_kv=gx_k + gx_v,
        wq=g_wq,
        wk=g_wk,
        wv=g_wv,
        wo=g_wo,
        bq=g_bq,
        bk=g_bk,
        bv=g_bv,
        bo=g_bo,
    )


def _default_scale(q: Array) -> float:
    return float(1.0 / np.sqrt(q.shape[-1]))
