"""Dense layer kinds: ``conv2d``, ``linear``, ``matmul``, ``attention``.

Each kind's shape, weight and MAC rules sit beside its definition; FLOPs are two per MAC
plus bias adds (``crane.dialects.layers.costs``).
"""

from __future__ import annotations

from crane.dialects.layers.costs import kernel_volume, with_bias
from crane.dialects.layers.definition import (
    DERIVED,
    NOT_SPATIAL,
    REQUIRED,
    LayerKind,
    Lowering,
    Onnx,
    ParamType,
    Spatial,
    Tiling,
    Work,
    param,
)
from crane.dialects.layers.norms import SOFTMAX_FLOPS
from crane.dialects.layers.rules import (
    Attrs,
    Resolved,
    ShapeError,
    Weights,
    broadcast,
    check_min_rank,
    check_rank,
    fmt,
    get_int,
    no_weights,
    pair,
    resolve_padding,
    window_out,
)
from crane.dialects.layers.values import Shape, numel


def conv2d(ins: tuple[Shape, ...], attrs: Attrs) -> Resolved:
    (x,) = ins
    check_rank("conv2d", x, 4, "NCHW")
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
    kernel, stride, dilation = pair(attrs, "kernel"), pair(attrs, "stride"), pair(attrs, "dilation")
    pad = resolve_padding(attrs["padding"], (h, w), kernel, stride, dilation)
    oh = window_out("conv2d", "height", h, kernel[0], stride[0], dilation[0], pad[:2])
    ow = window_out("conv2d", "width", w, kernel[1], stride[1], dilation[1], pad[2:])
    return (n, out, oh, ow), {**attrs, "out": out, "groups": groups, "padding": pad}


def conv2d_weights(ins: tuple[Shape, ...], attrs: Attrs) -> Weights:
    c, out, groups = ins[0][1], get_int(attrs, "out"), get_int(attrs, "groups")
    kh, kw = pair(attrs, "kernel")
    weight = ("weight", (out, c // groups, kh, kw))
    return (weight, ("bias", (out,))) if attrs["bias"] else (weight,)


def conv2d_macs(ins: tuple[Shape, ...], out: Shape, attrs: Attrs) -> int:
    return numel(out) * (ins[0][1] // get_int(attrs, "groups")) * kernel_volume(attrs)


def linear(ins: tuple[Shape, ...], attrs: Attrs) -> Resolved:
    (x,) = ins
    check_min_rank("linear", x, 2)
    return (*x[:-1], get_int(attrs, "out")), dict(attrs)


def linear_weights(ins: tuple[Shape, ...], attrs: Attrs) -> Weights:
    d_in, d_out = ins[0][-1], get_int(attrs, "out")
    weight = ("weight", (d_in, d_out))
    return (weight, ("bias", (d_out,))) if attrs["bias"] else (weight,)


def linear_macs(ins: tuple[Shape, ...], out: Shape, attrs: Attrs) -> int:
    return numel(out) * ins[0][-1]


def matmul(ins: tuple[Shape, ...], attrs: Attrs) -> Resolved:
    a, b = ins
    check_min_rank("matmul", a, 2)
    check_min_rank("matmul", b, 2)
    if attrs["transpose_b"]:
        b = (*b[:-2], b[-1], b[-2])
    if a[-1] != b[-2]:
        raise ShapeError(
            f"matmul inner dimensions differ: a is {fmt(a)} (K={a[-1]}) but b is {fmt(b)} "
            f"(K={b[-2]}{', after transpose_b' if attrs['transpose_b'] else ''})"
        )
    batch = broadcast("matmul", a[:-2], b[:-2])
    return (*batch, a[-2], b[-1]), dict(attrs)


def matmul_macs(ins: tuple[Shape, ...], out: Shape, attrs: Attrs) -> int:
    return numel(out) * ins[0][-1]


def attention(ins: tuple[Shape, ...], attrs: Attrs) -> Resolved:
    x = ins[0]
    check_rank("attention", x, 3, "(batch, sequence, hidden)")
    heads = get_int(attrs, "heads")
    if x[2] % heads:
        raise ShapeError(f"attention hidden size {x[2]} is not divisible by heads={heads}", "heads")
    if len(ins) == 2:
        memory = ins[1]
        check_rank("attention", memory, 3, "(batch, sequence, hidden)")
        if (memory[0], memory[2]) != (x[0], x[2]):
            raise ShapeError(f"attention memory {fmt(memory)} must match the query {fmt(x)} in batch and hidden size")
    return x, dict(attrs)


def attention_weights(ins: tuple[Shape, ...], attrs: Attrs) -> Weights:
    d = ins[0][2]
    mats = tuple((name, (d, d)) for name in ("wq", "wk", "wv", "wo"))
    biases = tuple((name, (d,)) for name in ("bq", "bk", "bv", "bo"))
    return mats + biases if attrs["bias"] else mats


def attention_macs(ins: tuple[Shape, ...], out: Shape, attrs: Attrs) -> int:
    """Q and output projections over the queries, K and V over the memory, plus QK^T and AV.

    Causal masking does not reduce the count: the dense matmuls are what runs.
    """
    n, s, d = ins[0]
    sk = ins[-1][1]
    return 2 * n * s * d * d + 2 * n * sk * d * d + 2 * n * s * sk * d


def attention_flops(ins: tuple[Shape, ...], out: Shape, attrs: Attrs) -> int:
    n, s, d = ins[0]
    sk = ins[-1][1]
    biases = 2 * n * s * d + 2 * n * sk * d if attrs["bias"] else 0
    softmax = SOFTMAX_FLOPS * n * get_int(attrs, "heads") * s * sk
    return 2 * attention_macs(ins, out, attrs) + biases + softmax


KINDS = (
    LayerKind(
        "conv2d", "2-d convolution, NCHW input, OIHW weight", ("x",),
        (
            param("out", ParamType.POS_INT, DERIVED, "output channels (default: input channels if depthwise)"),
            param("kernel", ParamType.PAIR, REQUIRED, "kernel size (kh, kw)"),
            param("stride", ParamType.PAIR, 1, "stride (sh, sw)"),
            param("padding", ParamType.PADDING, 0, "explicit, or same/valid; resolved to (top, bottom, left, right)"),
            param("dilation", ParamType.PAIR, 1, "dilation (dh, dw)"),
            param("groups", ParamType.POS_INT, 1, "channel groups"),
            param("depthwise", ParamType.BOOL, False, "one group per input channel"),
            param("bias", ParamType.BOOL, True, "add a per-channel bias"),
        ),
        conv2d, conv2d_weights, conv2d_macs, with_bias(conv2d_macs),
        lowering=Lowering.CONV, tiling=Tiling.window(Spatial.CONV), work=Work.CONV,
        onnx=Onnx.converted("Conv", "BatchNormalization"),
    ),
    LayerKind(
        "linear", "x @ weight + bias over the last dimension; weight (in, out)", ("x",),
        (
            param("out", ParamType.POS_INT, REQUIRED, "output features"),
            param("bias", ParamType.BOOL, True, "add a bias"),
        ),
        linear, linear_weights, linear_macs, with_bias(linear_macs),
        lowering=Lowering.LINEAR, tiling=Tiling.ends_chain(NOT_SPATIAL), work=Work.FC,
        onnx=Onnx.converted("Gemm", "MatMul", "Add", "ReduceMean", "Where"),
    ),
    LayerKind(
        "matmul", "batched a @ b with broadcast batch dimensions", ("a", "b"),
        (param("transpose_b", ParamType.BOOL, False, "use b with its last two dimensions swapped"),),
        matmul, no_weights, matmul_macs, with_bias(matmul_macs),
        lowering=Lowering.MATMUL, tiling=Tiling.ends_chain(NOT_SPATIAL), work=Work.MATMUL,
        onnx=Onnx.converted("MatMul"),
    ),
    LayerKind(
        "attention", "multi-head attention with q/k/v/o projections on (N, S, D)", ("x", "memory"),
        (
            param("heads", ParamType.POS_INT, REQUIRED, "number of heads (must divide D)"),
            param("causal", ParamType.BOOL, False, "mask future positions"),
            param("bias", ParamType.BOOL, True, "biases on the four projections"),
        ),
        attention, attention_weights, attention_macs, attention_flops,
        lowering=Lowering.ATTENTION, tiling=Tiling.ends_chain(NOT_SPATIAL), work=Work.ATTENTION,
        onnx=Onnx.not_imported("exporters decompose attention into MatMul, Softmax and "
                               "reshapes, which import as those"),
        optional_inputs=1,
    ),
)
"""The dense kinds, in the order ``LAYER_KINDS`` lists them."""
