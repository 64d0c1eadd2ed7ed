"""Evaluate one graph op kind on numpy arrays, outside any function.

The reference interpreter runs every ``graph`` op through these functions, and the tile
simulator runs every ``tile.compute`` through :func:`evaluate`, so both compute with the same
kernels in the same way:

    y = forward("conv2d", attrs, [x], [w], (1, 4, 8, 8), dtype=np.float32)
    dx, = gradient("relu", "input", {}, g, [x], [], wrt=(0,), dtype=np.float32)
    outs = evaluate("momentum", hyper, [w, g, v], dtype=np.float32)

``attrs`` are plain layer values (``crane.dialects.graph.from_attribute``). Mistakes (an
unknown op, a missing rule) raise :class:`EvalError`; kernels may raise ``ValueError`` and
friends on inconsistent shapes, which callers turn into located errors.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from crane.dialects.graph_grad import UPDATE_OPS
from crane.dialects.layers.kinds import LAYER_KINDS
from crane.dialects.layers.values import AttrValue
from crane.dialects.tile import compute_kind
from crane.exec import kernels as K
from crane.exec.backward import GRAD_INPUT, GRAD_WEIGHT
from crane.exec.forward import FORWARD, Call
from crane.exec.kernels import norm_parts

Array = np.ndarray


class EvalError(Exception):
    """An op that cannot be evaluated; ``message`` says why."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def forward(kind: str, attrs: Mapping[str, AttrValue], inputs: Sequence[Array], weights: Sequence[Array],
            out_shape: tuple[int, ...], *, dtype: Any, seed: int = 0, training: bool = False,
            key: str = "") -> Array:
    """The result of layer ``kind`` on ``inputs`` and ``weights``."""
    rule = FORWARD.get(kind)
    if rule is None:
        raise EvalError(f"no forward rule for '{kind}'")
    call = Call(attrs, list(inputs), list(weights), out_shape, key, seed, training, {"kind": kind})
    return np.asarray(rule(call), dtype=dtype)


def gradient(kind: str, role: str, attrs: Mapping[str, AttrValue], grad_out: Array,
             inputs: Sequence[Array], weights: Sequence[Array], wrt: Sequence[int], *, dtype: Any,
             seed: int = 0, training: bool = True, key: str = "") -> list[Array]:
    """Gradients of layer ``kind``: of the inputs listed in ``wrt`` (``role = "input"``) or
    of every weight (``role = "weight"``), given the gradient of its result."""
    rule = (GRAD_INPUT if role == "input" else GRAD_WEIGHT).get(kind)
    if rule is None:
        raise EvalError(f"no {role}-gradient rule for '{kind}'")
    call = Call(attrs, list(inputs), list(weights), tuple(grad_out.shape), key, seed, training, {"kind": kind})
    grads = rule(call, grad_out)
    picked = [grads[i] for i in wrt] if role == "input" else grads
    if any(g is None for g in picked):
        raise EvalError(f"'{kind}' has no gradient for a requested input")
    return [np.asarray(g, dtype=dtype) for g in picked if g is not None]


def update(name: str, hyper: Mapping[str, AttrValue], weight: Array, grad: Array,
           states: Sequence[Array]) -> list[Array]:
    """``[new weight, new states...]`` of optimizer ``name`` (sgd, momentum, adam)."""
    h = hyper
    lr, wd = float(h["lr"]), float(h.get("weight_decay", 0.0))  # type: ignore[arg-type]
    if name == "sgd":
        return [K.sgd_update(weight, grad, lr=lr, weight_decay=wd)]
    if name == "momentum":
        return list(K.momentum_update(weight, grad, states[0], lr=lr, momentum=float(h["momentum"]),  # type: ignore[arg-type]
                                      nesterov=bool(h.get("nesterov", False)), weight_decay=wd))
    if name == "adam":
        return list(K.adam_update(weight, grad, states[0], states[1], step=int(h.get("step", 1)), lr=lr,  # type: ignore[arg-type]
                                  beta1=float(h["beta1"]), beta2=float(h["beta2"]),  # type: ignore[arg-type]
                                  eps=float(h["eps"]), weight_decay=wd))  # type: ignore[arg-type]
    raise EvalError(f"unknown optimizer '{name}'")


def accumulate(arrays: Sequence[Array], dtype: Any) -> Array:
    """The sum of gradient contributions."""
    return np.sum(list(arrays), axis=0).astype(dtype)


def num_weights(kind: str, first_input: tuple[int, ...], attrs: Mapping[str, AttrValue]) -> int:
    """How many trailing operands of layer ``kind`` are weights."""
    return len(LAYER_KINDS[kind].weights((first_input,), attrs))


def _key(attrs: Mapping[str, AttrValue]) -> str:
    key = attrs.get("key", "")
    return key if isinstance(key, str) else ""


SHAPE_ONLY = "shape_only"
"""Attribute of a compute run on a part of an op: ``[index, rank, dims..., ...]`` lists the
operands its rule reads only the shape of, which the tile does not load (the operand list
leaves them out; a zero-stride placeholder of that shape stands in)."""
CROP = "crop"
"""Attribute of a gradient run over a wider window than its part: the offset, per axis, of
the part's box (the output buffer's shape) inside the first result; the result is cut to
it, zero where the window does not reach."""


def shape_only_operands(spec: Sequence[int]) -> list[tuple[int, tuple[int, ...]]]:
    """(operand index, shape) of each operand ``spec`` (``SHAPE_ONLY``) gives by shape."""
    found = []
    k = 0
    while k + 1 < len(spec):
        index, rank = int(spec[k]), int(spec[k + 1])
        found.append((index, tuple(int(d) for d in spec[k + 2: k + 2 + rank])))
        k += 2 + rank
    return found


def with_shapes(shapes: Sequence[tuple[int, ...]], spec: Sequence[int]) -> list[tuple[int, ...]]:
    """Operand ``shapes`` with those given by shape only (``spec``) put back in place."""
    full = list(shapes)
    for index, shape in shape_only_operands(spec):
        full.insert(index, shape)
    return full


def with_placeholders(operands: Sequence[Array], spec: Sequence[int], dtype: Any) -> list[Array]:
    """``operands`` with zero-stride placeholders inserted where ``spec`` (``SHAPE_ONLY``)
    says an operand is given by its shape only."""
    full = list(operands)
    for index, shape in shape_only_operands(spec):
        full.insert(index, np.broadcast_to(np.zeros((), dtype), shape))
    return full


def cropped(result: Array, offset: Sequence[int], shape: tuple[int, ...]) -> Array:
    """The box of ``shape`` at ``offset`` of ``result`` (``CROP``), zero outside it."""
    out = np.zeros(shape, result.dtype)
    src, dst = [], []
    for o, n, have in zip(offset, shape, result.shape, strict=True):
        low, high = max(o, 0), min(o + n, have)
        if high <= low:
            return out
        src.append(slice(low, high))
        dst.append(slice(low - o, high - o))
    out[tuple(dst)] = result[tuple(src)]
    return out


def evaluate(op: str, attrs: Mapping[str, AttrValue], operands: Sequence[Array],
             out_shapes: Sequence[tuple[int, ...]] = (), *, dtype: Any, seed: int = 0,
             training: bool = False) -> list[Array]:
    """The results of the graph op called ``op`` (without ``graph.``) on ``operands``, for a
    part of an op as well: operands given by shape only (``SHAPE_ONLY``) and a result cut
    to the part (``CROP``) are filled in here; see :func:`evaluate_whole`."""
    spec = attrs.get(SHAPE_ONLY)
    if isinstance(spec, tuple):
        operands = with_placeholders(operands, spec, dtype)
    results = evaluate_whole(op, attrs, operands, out_shapes, dtype=dtype, seed=seed, training=training)
    crop = attrs.get(CROP)
    if isinstance(crop, tuple) and results and out_shapes:
        results[0] = cropped(results[0], [int(v) for v in crop], tuple(out_shapes[0]))
    return results


def evaluate_whole(op: str, attrs: Mapping[str, AttrValue], operands: Sequence[Array],
                   out_shapes: Sequence[tuple[int, ...]] = (), *, dtype: Any, seed: int = 0,
                   training: bool = False) -> list[Array]:
    """The results of the graph op called ``op`` (without ``graph.``) on ``operands``.

    Operands are in the graph op's order: layer inputs then weights; for gradients the
    result gradient then the forward operands (``attrs["wrt"]`` lists input positions);
    for updates weight, gradient, states (``attrs`` holds the hyper-parameters);
    ``accumulate`` sums its operands; ``fill`` needs ``out_shapes`` and ``attrs["value"]``.
    A dropout's mask depends on ``seed`` and ``attrs["key"]``.
    """
    family, base = compute_kind(op)
    if family == "forward":
        if not operands:
            raise EvalError(f"'{op}' needs at least one input")
        split = len(operands) - num_weights(base, tuple(operands[0].shape), attrs)
        shape = out_shapes[0] if out_shapes else ()
        return [forward(base, attrs, operands[:split], operands[split:], shape, dtype=dtype,
                        seed=seed, training=training, key=_key(attrs))]
    if family in ("grad_input", "grad_weight"):
        if len(operands) < 2:
            raise EvalError(f"'{op}' needs the result gradient and the forward operands")
        fwd = operands[1:]
        split = len(fwd) - num_weights(base, tuple(fwd[0].shape), attrs)
        wrt = attrs.get("wrt", ())
        return gradient(base, family.removeprefix("grad_"), attrs, operands[0], fwd[:split], fwd[split:],
                        tuple(wrt) if isinstance(wrt, tuple) else (), dtype=dtype, seed=seed,
                        training=training, key=_key(attrs))
    if family == "update":
        states = len(UPDATE_OPS[base].states)
        if len(operands) != 2 + states:
            raise EvalError(f"'{op}' needs weight, gradient and {states} state(s), got {len(operands)} arrays")
        outs = update(base, attrs, operands[0], operands[1], operands[2:])
        return [np.asarray(o, dtype=dtype) for o in outs]
    if family == "accumulate":
        return [accumulate(operands, dtype)]
    if family == "fill":
        value = attrs.get("value", 0.0)
        return [np.full(out_shapes[0] if out_shapes else (), float(value), dtype)]  # type: ignore[arg-type]
    if family == "batchnorm_part":
        return [np.asarray(r, dtype=dtype) for r in _batchnorm_part(op, attrs, operands)]
    raise EvalError(f"unknown op '{op}'")


def _batchnorm_part(op: str, attrs: Mapping[str, AttrValue], a: Sequence[Array]) -> list[Array]:
    """A step of batchnorm over parts of the batch (``crane.exec.kernels.norm_parts``)."""
    count = attrs.get("count")
    if not isinstance(count, int) or count <= 0:
        raise EvalError(f"'{op}' needs a positive integer 'count'")
    eps = float(attrs.get("eps", 1e-5))  # type: ignore[arg-type]
    if op == "batchnorm_sum":
        return [norm_parts.batchnorm_sum(a[0])]
    if op == "batchnorm_sqdev":
        return [norm_parts.batchnorm_sqdev(a[0], a[1], count=count)]
    if op == "batchnorm_apply":
        return [norm_parts.batchnorm_apply(*a, count=count, eps=eps)]
    if op == "batchnorm_grad_sums":
        return list(norm_parts.batchnorm_grad_sums(*a, count=count, eps=eps))
    return [norm_parts.batchnorm_grad_apply(*a, count=count, eps=eps)]
