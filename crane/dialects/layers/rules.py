"""Shape and weight rules of the layer kinds, one pure function per kind.

A shape rule takes the input shapes and the coerced attributes and returns the output
shape with the attributes resolved (``padding="same"`` becomes explicit
``(top, bottom, left, right)``, a depthwise conv gets its ``groups``). It raises
:class:`ShapeError` with a message that names the numbers involved. Layouts: NCHW
activations, OIHW conv weights, ``(in, out)`` linear weights.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from crane.dialects.layers.values import AttrValue, Shape, numel

Attrs = Mapping[str, AttrValue]
Resolved = tuple[Shape, dict[str, AttrValue]]
Weights = tuple[tuple[str, Shape], ...]
ShapeRule = Callable[[tuple[Shape, ...], Attrs], Resolved]
WeightRule = Callable[[tuple[Shape, ...], Attrs], Weights]


class ShapeError(Exception):
    """A shape or attribute problem; ``param`` names the attribute to point at, if any."""

    def __init__(self, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.param = param


def fmt(shape: Shape) -> str:
    """``[1, 3, 224, 224]``: shapes in messages look like they do in `.crn` files."""
    return "[" + ", ".join(str(d) for d in shape) + "]"


def get_int(attrs: Attrs, key: str) -> int:
    """An integer attribute (the table's coercion guarantees the type)."""
    value = attrs[key]
    assert isinstance(value, int)
    return value


def get_float(attrs: Attrs, key: str) -> float:
    """A float attribute (the table's coercion guarantees the type)."""
    value = attrs[key]
    assert isinstance(value, int | float)
    return float(value)


def _pair(attrs: Attrs, key: str) -> tuple[int, int]:
    value = attrs[key]
    assert isinstance(value, tuple)
    return value[0], value[1]


def _rank(kind: str, shape: Shape, rank: int, layout: str) -> None:
    if len(shape) != rank:
        raise ShapeError(f"{kind} expects a {rank}-d {layout} input, got rank {len(shape)} {fmt(shape)}")


def _min_rank(kind: str, shape: Shape, rank: int) -> None:
    if len(shape) < rank:
        raise ShapeError(f"{kind} expects an input of rank >= {rank}, got rank {len(shape)} {fmt(shape)}")


def _axis(kind: str, shape: Shape, axis: int, param: str = "axis") -> int:
    if not -len(shape) <= axis < len(shape):
        raise ShapeError(f"{kind} {param}={axis} is out of range for rank {len(shape)} {fmt(shape)}", param)
    return axis % len(shape)


def resolve_padding(
    padding: AttrValue, size: tuple[int, int], kernel: tuple[int, int],
    stride: tuple[int, int], dilation: tuple[int, int],
) -> tuple[int, int, int, int]:
    """Explicit (top, bottom, left, right) padding; ``same`` is TF-style (extra at the end)."""
    if padding == "valid":
        return (0, 0, 0, 0)
    if padding == "same":
        top, bottom = _same(size[0], kernel[0], stride[0], dilation[0])
        left, right = _same(size[1], kernel[1], stride[1], dilation[1])
        return (top, bottom, left, right)
    if isinstance(padding, int) and not isinstance(padding, bool):
        return (padding, padding, padding, padding)
    assert isinstance(padding, tuple)
    if len(padding) == 2:
        return (padding[0], padding[0], padding[1], padding[1])
    return (padding[0], padding[1], padding[2], padding[3])


def _same(size: int, kernel: int, stride: int, dilation: int) -> tuple[int, int]:
    out = -(-size // stride)
    total = max((out - 1) * stride + (kernel - 1) * dilation + 1 - size, 0)
    return total // 2, total - total // 2


def _window_out(
    kind: str, axis: str, size: int, kernel: int, stride: int, dilation: int,
    pads: tuple[int, int], ceil_mode: bool = False,
) -> int:
    span = size + pads[0] + pads[1] - dilation * (kernel - 1) - 1
    out = (-(-span // stride) if ceil_mode else span // stride) + 1
    if ceil_mode and (out - 1) * stride >= size + pads[0]:
        out -= 1  # PyTorch's rule: the last window must start inside the input or top padding
    if out > 0 and span >= 0:
        return out
    raise ShapeError(
        f"{kind} output {axis} would be {min(out, 0)}: input {axis} {size} with padding "
        f"{pads[0]}+{pads[1]} is smaller than the kernel extent {dilation * (kernel - 1) + 1} "
        f"(kernel {kernel}, dilation {dilation}, stride {stride}); use a smaller kernel or "
        f"more padding",
        "kernel",
    )


def conv2d(ins: tuple[Shape, ...], attrs: Attrs) -> Resolved:
    (x,) = ins
    _rank("conv2d", x, 4, "NCHW")
    n, c, h, w = x
    groups = c if attrs["depthwise"] else get_int(attrs, "groups")
    out = attrs.get("out", c if attrs["depthwise"] else None)
    if out is None:
        raise ShapeError("conv2d needs out=<channels> (or depthwise=true)", None)
    assert isinstance(out, int)
    if c % groups:
        raise ShapeError(f"channel mismatch: conv2d input has {c} channels, not divisible by groups={groups}", "groups")
    if out % groups:
        raise ShapeError(f"channel mismatch: conv2d out={out} is not divisible by groups={groups}", "groups")
    kernel, stride, dilation = _pair(attrs, "kernel"), _pair(attrs, "stride"), _pair(attrs, "dilation")
    pad = resolve_padding(attrs["padding"], (h, w), kernel, stride, dilation)
    oh = _window_out("conv2d", "height", h, kernel[0], stride[0], dilation[0], pad[:2])
    ow = _window_out("conv2d", "width", w, kernel[1], stride[1], dilation[1], pad[2:])
    return (n, out, oh, ow), {**attrs, "out": out, "groups": groups, "padding": pad}


def conv2d_weights(ins: tuple[Shape, ...], attrs: Attrs) -> Weights:
    c, out, groups = ins[0][1], get_int(attrs, "out"), get_int(attrs, "groups")
    kh, kw = _pair(attrs, "kernel")
    weight = ("weight", (out, c // groups, kh, kw))
    return (weight, ("bias", (out,))) if attrs["bias"] else (weight,)


def pool2d(kind: str) -> ShapeRule:
    """The shape rule of a windowed pool (stride defaults to the kernel)."""

    def rule(ins: tuple[Shape, ...], attrs: Attrs) -> Resolved:
        (x,) = ins
        _rank(kind, x, 4, "NCHW")
        n, c, h, w = x
        kernel = _pair(attrs, "kernel")
        stride = _pair(attrs, "stride") if "stride" in attrs else kernel
        pad = resolve_padding(attrs["padding"], (h, w), kernel, stride, (1, 1))
        ceil_mode = bool(attrs["ceil_mode"])
        oh = _window_out(kind, "height", h, kernel[0], stride[0], 1, pad[:2], ceil_mode)
        ow = _window_out(kind, "width", w, kernel[1], stride[1], 1, pad[2:], ceil_mode)
        return (n, c, oh, ow), {**attrs, "stride": stride, "padding": pad}

    return rule


def global_avg_pool(ins: tuple[Shape, ...], attrs: Attrs) -> Resolved:
    (x,) = ins
    _rank("global_avg_pool", x, 4, "NCHW")
    return (x[0], x[1], 1, 1), dict(attrs)


def linear(ins: tuple[Shape, ...], attrs: Attrs) -> Resolved:
    (x,) = ins
    _min_rank("linear", x, 2)
    return (*x[:-1], get_int(attrs, "out")), dict(attrs)


def linear_weights(ins: tuple[Shape, ...], attrs: Attrs) -> Weights:
    d_in, d_out = ins[0][-1], get_int(attrs, "out")
    weight = ("weight", (d_in, d_out))
    return (weight, ("bias", (d_out,))) if attrs["bias"] else (weight,)


def matmul(ins: tuple[Shape, ...], attrs: Attrs) -> Resolved:
    a, b = ins
    _min_rank("matmul", a, 2)
    _min_rank("matmul", b, 2)
    if attrs["transpose_b"]:
        b = (*b[:-2], b[-1], b[-2])
    if a[-1] != b[-2]:
        raise ShapeError(
            f"matmul inner dimensions differ: a is {fmt(a)} (K={a[-1]}) but b is {fmt(b)} "
            f"(K={b[-2]}{', after transpose_b' if attrs['transpose_b'] else ''})"
        )
    batch = broadcast("matmul", a[:-2], b[:-2])
    return (*batch, a[-2], b[-1]), dict(attrs)


def broadcast(kind: str, a: Shape, b: Shape) -> Shape:
    """Numpy broadcasting of two shapes, with a message naming the clashing dimension."""
    rank = max(len(a), len(b))
    pa, pb = (1,) * (rank - len(a)) + a, (1,) * (rank - len(b)) + b
    out = []
    for axis, (da, db) in enumerate(zip(pa, pb, strict=True)):
        if da != db and 1 not in (da, db):
            what = " (channel mismatch)" if axis == 1 and rank == 4 else ""
            raise ShapeError(
                f"{kind} cannot broadcast {fmt(a)} with {fmt(b)}: dimension {axis} is {da} vs {db}{what}"
            )
        out.append(max(da, db))
    return tuple(out)


def elementwise(kind: str) -> ShapeRule:
    """Shape rule of a binary elementwise op with numpy broadcasting."""

    def rule(ins: tuple[Shape, ...], attrs: Attrs) -> Resolved:
        return broadcast(kind, ins[0], ins[1]), dict(attrs)

    return rule


def same_shape(ins: tuple[Shape, ...], attrs: Attrs) -> Resolved:
    return ins[0], dict(attrs)


def batchnorm(ins: tuple[Shape, ...], attrs: Attrs) -> Resolved:
    _min_rank("batchnorm", ins[0], 2)
    return ins[0], dict(attrs)


def batchnorm_weights(ins: tuple[Shape, ...], attrs: Attrs) -> Weights:
    # Only the affine scale/shift are trainable; running statistics (present when the op
    # normalises with them) are buffers, as in the published parameter counts.
    channels = (ins[0][1],)
    affine = (("scale", channels), ("shift", channels))
    return (*affine, ("mean", channels), ("var", channels)) if attrs.get("running") else affine


def layernorm(ins: tuple[Shape, ...], attrs: Attrs) -> Resolved:
    _min_rank("layernorm", ins[0], 1)
    return ins[0], dict(attrs)


def layernorm_weights(ins: tuple[Shape, ...], attrs: Attrs) -> Weights:
    return (("scale", (ins[0][-1],)), ("shift", (ins[0][-1],)))


def softmax(ins: tuple[Shape, ...], attrs: Attrs) -> Resolved:
    axis = _axis("softmax", ins[0], get_int(attrs, "axis"))
    if attrs.get("causal") and (len(ins[0]) < 2 or axis != len(ins[0]) - 1):
        raise ShapeError("a causal softmax normalises the last axis of a (..., queries, keys) "
                         "input", "causal")
    return ins[0], {**attrs, "axis": axis}


def dropout(ins: tuple[Shape, ...], attrs: Attrs) -> Resolved:
    rate = get_float(attrs, "rate")
    if not 0.0 <= rate < 1.0:
        raise ShapeError(f"dropout rate={rate} must be in [0, 1)", "rate")
    return ins[0], dict(attrs)


def concat(ins: tuple[Shape, ...], attrs: Attrs) -> Resolved:
    first = ins[0]
    axis = _axis("concat", first, get_int(attrs, "axis"))
    for index, shape in enumerate(ins[1:], start=2):
        if len(shape) != len(first):
            raise ShapeError(f"concat input {index} has rank {len(shape)} {fmt(shape)}, input 1 has rank {len(first)} {fmt(first)}")
        for dim, (d0, d1) in enumerate(zip(first, shape, strict=True)):
            if dim != axis and d0 != d1:
                raise ShapeError(
                    f"concat input {index} {fmt(shape)} has {d1} at dimension {dim} but input 1 "
                    f"{fmt(first)} has {d0}; only dimension {axis} may differ"
                )
    total = sum(shape[axis] for shape in ins)
    return (*first[:axis], total, *first[axis + 1 :]), {**attrs, "axis": axis}


def reshape(ins: tuple[Shape, ...], attrs: Attrs) -> Resolved:
    (x,) = ins
    target = attrs["shape"]
    assert isinstance(target, tuple)
    if target.count(-1) > 1 or any(d == 0 or d < -1 for d in target):
        raise ShapeError(f"reshape shape={fmt(target)} may hold positive sizes and at most one -1", "shape")
    known = numel(tuple(d for d in target if d != -1))
    total = numel(x)
    if -1 in target and total % known == 0:
        target = tuple(total // known if d == -1 else d for d in target)
    if numel(target) != total:
        raise ShapeError(
            f"reshape of {fmt(x)} ({total} elements) to {fmt(tuple(attrs['shape']))} "  # type: ignore[arg-type]
            f"({known} elements{' times the -1' if -1 in target else ''}) changes the element count",
            "shape",
        )
    return target, {**attrs, "shape": target}


def flatten(ins: tuple[Shape, ...], attrs: Attrs) -> Resolved:
    (x,) = ins
    start = _axis("flatten", x, get_int(attrs, "start"), "start")
    return (*x[:start], numel(x[start:])), {**attrs, "start": start}


def transpose(ins: tuple[Shape, ...], attrs: Attrs) -> Resolved:
    (x,) = ins
    perm = attrs["perm"]
    assert isinstance(perm, tuple)
    if sorted(perm) != list(range(len(x))):
        raise ShapeError(f"transpose perm={fmt(perm)} is not a permutation of the {len(x)} dimensions of {fmt(x)}", "perm")
    return tuple(x[p] for p in perm), dict(attrs)


def slice_(ins: tuple[Shape, ...], attrs: Attrs) -> Resolved:
    (x,) = ins
    axis = _axis("slice", x, get_int(attrs, "axis"))
    start, stop = get_int(attrs, "start"), get_int(attrs, "stop")
    if not 0 <= start < stop <= x[axis]:
        raise ShapeError(
            f"slice {start}..{stop} does not fit dimension {axis} of {fmt(x)} (size {x[axis]}); "
            f"it needs 0 <= start < stop <= {x[axis]}", "stop",
        )
    return (*x[:axis], stop - start, *x[axis + 1 :]), {**attrs, "axis": axis}


def embedding(ins: tuple[Shape, ...], attrs: Attrs) -> Resolved:
    return (*ins[0], get_int(attrs, "dim")), dict(attrs)


def embedding_weights(ins: tuple[Shape, ...], attrs: Attrs) -> Weights:
    return (("table", (get_int(attrs, "vocab"), get_int(attrs, "dim"))),)


def attention(ins: tuple[Shape, ...], attrs: Attrs) -> Resolved:
    x = ins[0]
    _rank("attention", x, 3, "(batch, sequence, hidden)")
    heads = get_int(attrs, "heads")
    if x[2] % heads:
        raise ShapeError(f"attention hidden size {x[2]} is not divisible by heads={heads}", "heads")
    if len(ins) == 2:
        memory = ins[1]
        _rank("attention", memory, 3, "(batch, sequence, hidden)")
        if (memory[0], memory[2]) != (x[0], x[2]):
            raise ShapeError(f"attention memory {fmt(memory)} must match the query {fmt(x)} in batch and hidden size")
    return x, dict(attrs)


def attention_weights(ins: tuple[Shape, ...], attrs: Attrs) -> Weights:
    d = ins[0][2]
    mats = tuple((name, (d, d)) for name in ("wq", "wk", "wv", "wo"))
    biases = tuple((name, (d,)) for name in ("bq", "bk", "bv", "bo"))
    return mats + biases if attrs["bias"] else mats


def cross_entropy(ins: tuple[Shape, ...], attrs: Attrs) -> Resolved:
    logits, labels = ins
    _min_rank("cross_entropy", logits, 2)
    if labels != logits[:-1]:
        raise ShapeError(
            f"cross_entropy labels {fmt(labels)} must have the logits' shape {fmt(logits)} "
            f"without the class dimension, i.e. {fmt(logits[:-1])}"
        )
    return (), dict(attrs)


def mse(ins: tuple[Shape, ...], attrs: Attrs) -> Resolved:
    pred, target = ins
    if pred != target:
        raise ShapeError(f"mse prediction {fmt(pred)} and target {fmt(target)} must have the same shape")
    return (), dict(attrs)


def no_weights(ins: tuple[Shape, ...], attrs: Attrs) -> Weights:
    return ()
