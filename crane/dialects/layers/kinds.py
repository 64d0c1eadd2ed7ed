"""The fixed vocabulary of layer kinds: one table that the frontend and the ``graph``
dialect both read.

Each :class:`LayerKind` says which tensor inputs it takes, which parameters it accepts
(type, default, meaning), how its output shape follows from its inputs, which weights it
creates, and how many MACs and FLOPs it performs. Adding a layer kind means adding one
entry here (and its rules in :mod:`layer_rules` / :mod:`layer_costs`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum

from crane.dialects.layers import costs as cost
from crane.dialects.layers import rules as rule
from crane.dialects.layers.values import DTYPE_BYTES, AttrValue, did_you_mean

ParamValue = int | float | bool | str | tuple[object, ...]


class ParamType(Enum):
    """What a layer parameter accepts, and the message used when it gets something else."""

    POS_INT = "a positive integer"
    INT = "an integer"
    FLOAT = "a number"
    BOOL = "true or false"
    PAIR = "a positive integer or a list of 2 positive integers"
    PADDING = "same, valid, an integer, or a list of 2 or 4 integers"
    INTS = "a list of integers"
    DTYPE = "a dtype (" + ", ".join(DTYPE_BYTES) + ")"

    @property
    def takes_symbol(self) -> bool:
        """Whether a bare word (``padding=same``) is a value rather than a name to look up."""
        return self in (ParamType.PADDING, ParamType.DTYPE)


REQUIRED = object()
"""Default of a parameter the user must give."""

DERIVED = object()
"""Default of an optional parameter whose value the shape rule works out."""

INFERENCE = object()
"""Default of a boolean parameter that is true in a network without a train section (an
inference network) and false in one that trains (the frontend resolves it)."""


@dataclass(frozen=True, slots=True)
class Param:
    """One parameter of a layer kind."""

    name: str
    type: ParamType
    default: object
    doc: str

    @property
    def required(self) -> bool:
        return self.default is REQUIRED


@dataclass(frozen=True, slots=True)
class LayerKind:
    """A layer kind: inputs, parameters, and its shape, weight and cost rules."""

    name: str
    summary: str
    inputs: tuple[str, ...]
    """Names of the tensor inputs, in order (shown in messages and used by the IR)."""
    params: tuple[Param, ...]
    shape: rule.ShapeRule
    weights: rule.WeightRule
    macs: cost.CostRule
    flops: cost.CostRule
    variadic: bool = False
    """The last input may repeat (concat); ``inputs`` then gives the minimum."""
    optional_inputs: int = 0
    """How many trailing inputs may be left out (attention's memory)."""
    int_inputs: frozenset[int] = frozenset()
    """Positions of inputs that must have an integer dtype (token ids, labels)."""
    is_loss: bool = False
    buffers: frozenset[str] = frozenset()
    """Names of weights that are not trained (batchnorm's running statistics)."""

    def param(self, name: str) -> Param | None:
        """The parameter called ``name``, or None."""
        for param in self.params:
            if param.name == name:
                return param
        return None

    @property
    def min_inputs(self) -> int:
        return len(self.inputs) - self.optional_inputs

    @property
    def max_inputs(self) -> int | None:
        return None if self.variadic else len(self.inputs)


class ParamError(Exception):
    """A parameter value of the wrong type; the message says what was expected."""


def coerce(param: Param, value: ParamValue) -> AttrValue:
    """``value`` converted to the attribute form of ``param`` (e.g. ``3`` -> ``(3, 3)``)."""
    kind = param.type
    if kind is ParamType.BOOL and isinstance(value, bool):
        return value
    if isinstance(value, bool):
        raise ParamError(f"expects {kind.value}, got {str(value).lower()}")
    if kind is ParamType.FLOAT and isinstance(value, int | float):
        return float(value)
    if kind in (ParamType.INT, ParamType.POS_INT) and isinstance(value, int):
        return _positive(value) if kind is ParamType.POS_INT else value
    if kind is ParamType.DTYPE and value in DTYPE_BYTES:
        assert isinstance(value, str)
        return value
    if kind is ParamType.DTYPE and isinstance(value, str):
        raise ParamError(f"expects {kind.value}, got '{value}'{did_you_mean(value, DTYPE_BYTES)}")
    if kind in (ParamType.PAIR, ParamType.PADDING, ParamType.INTS):
        return _coerce_ints(kind, value)
    raise ParamError(f"expects {kind.value}, got {_describe(value)}")


def _coerce_ints(kind: ParamType, value: ParamValue) -> AttrValue:
    if kind is ParamType.PADDING and value in ("same", "valid"):
        assert isinstance(value, str)
        return value
    if kind is ParamType.PADDING and isinstance(value, str):
        raise ParamError(f"expects {kind.value}, got '{value}'{did_you_mean(value, ('same', 'valid'))}")
    ints = _int_tuple(value)
    if ints is None:
        raise ParamError(f"expects {kind.value}, got {_describe(value)}")
    if kind is ParamType.INTS:
        return ints
    if kind is ParamType.PAIR:
        pair = ints * 2 if len(ints) == 1 and isinstance(value, int) else ints
        if len(pair) != 2:
            raise ParamError(f"expects {kind.value}, got {_describe(value)}")
        return (_positive(pair[0]), _positive(pair[1]))
    if isinstance(value, int):
        return _nonnegative(value)
    if len(ints) not in (2, 4):
        raise ParamError(f"expects {kind.value}, got {_describe(value)}")
    return tuple(_nonnegative(p) for p in ints)


def _int_tuple(value: ParamValue) -> tuple[int, ...] | None:
    if isinstance(value, int) and not isinstance(value, bool):
        return (value,)
    if not isinstance(value, tuple):
        return None
    if all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        return tuple(v for v in value if isinstance(v, int))
    return None


def _positive(value: int) -> int:
    if value <= 0:
        raise ParamError(f"must be positive, got {value}")
    return value


def _nonnegative(value: int) -> int:
    if value < 0:
        raise ParamError(f"must not be negative, got {value}")
    return value


def _describe(value: ParamValue) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, tuple):
        return "a list [" + ", ".join(_describe(v) for v in value) + "]"  # type: ignore[arg-type]
    if isinstance(value, str):
        return f"'{value}'"
    return f"{type(value).__name__} {value}"


def _p(name: str, type_: ParamType, default: object, doc: str) -> Param:
    return Param(name, type_, default, doc)


_UNARY_DOC = {
    "relu": "max(x, 0)",
    "gelu": "Gaussian error linear unit",
    "silu": "x * sigmoid(x) (swish)",
    "sigmoid": "1 / (1 + exp(-x))",
    "tanh": "hyperbolic tangent",
}

_POOL_PARAMS = (
    _p("kernel", ParamType.PAIR, REQUIRED, "window size (kh, kw)"),
    _p("stride", ParamType.PAIR, DERIVED, "window step; defaults to the kernel"),
    _p("padding", ParamType.PADDING, 0, "explicit, or same/valid; resolved to (top, bottom, left, right)"),
    _p("ceil_mode", ParamType.BOOL, False, "round the output size up (PyTorch ceil_mode)"),
)


def _kinds() -> tuple[LayerKind, ...]:
    x = ("x",)
    unary = tuple(
        LayerKind(name, doc, x, (), rule.same_shape, rule.no_weights, cost.zero, cost.per_output(name))
        for name, doc in _UNARY_DOC.items()
    )
    return (
        LayerKind(
            "conv2d", "2-d convolution, NCHW input, OIHW weight", x,
            (
                _p("out", ParamType.POS_INT, DERIVED, "output channels (default: input channels if depthwise)"),
                _p("kernel", ParamType.PAIR, REQUIRED, "kernel size (kh, kw)"),
                _p("stride", ParamType.PAIR, 1, "stride (sh, sw)"),
                _p("padding", ParamType.PADDING, 0, "explicit, or same/valid; resolved to (top, bottom, left, right)"),
                _p("dilation", ParamType.PAIR, 1, "dilation (dh, dw)"),
                _p("groups", ParamType.POS_INT, 1, "channel groups"),
                _p("depthwise", ParamType.BOOL, False, "one group per input channel"),
                _p("bias", ParamType.BOOL, True, "add a per-channel bias"),
            ),
            rule.conv2d, rule.conv2d_weights, cost.conv2d_macs, cost.with_bias(cost.conv2d_macs),
        ),
        LayerKind("max_pool2d", "2-d max pooling", x, _POOL_PARAMS, rule.pool2d("max_pool2d"),
                  rule.no_weights, cost.zero, cost.pool_flops),
        LayerKind("avg_pool2d", "2-d average pooling", x, _POOL_PARAMS, rule.pool2d("avg_pool2d"),
                  rule.no_weights, cost.zero, cost.pool_flops),
        LayerKind("global_avg_pool", "mean over H and W, giving (N, C, 1, 1)", x, (),
                  rule.global_avg_pool, rule.no_weights, cost.zero, cost.global_pool_flops),
        LayerKind(
            "linear", "x @ weight + bias over the last dimension; weight (in, out)", x,
            (
                _p("out", ParamType.POS_INT, REQUIRED, "output features"),
                _p("bias", ParamType.BOOL, True, "add a bias"),
            ),
            rule.linear, rule.linear_weights, cost.linear_macs, cost.with_bias(cost.linear_macs),
        ),
        LayerKind(
            "matmul", "batched a @ b with broadcast batch dimensions", ("a", "b"),
            (_p("transpose_b", ParamType.BOOL, False, "use b with its last two dimensions swapped"),),
            rule.matmul, rule.no_weights, cost.matmul_macs, cost.with_bias(cost.matmul_macs),
        ),
        LayerKind(
            "batchnorm", "batch normalisation over channel dimension 1", x,
            (
                _p("eps", ParamType.FLOAT, 1e-5, "variance epsilon"),
                _p("running", ParamType.BOOL, INFERENCE,
                   "normalise with the running statistics (mean, var buffers), as inference "
                   "does; false: with the batch's own statistics, as training does (default: "
                   "true in a network without a train section)"),
            ),
            rule.batchnorm, rule.batchnorm_weights, cost.zero, cost.per_output("batchnorm"),
            buffers=frozenset({"mean", "var"}),
        ),
        LayerKind(
            "layernorm", "layer normalisation over the last dimension", x,
            (_p("eps", ParamType.FLOAT, 1e-5, "variance epsilon"),),
            rule.layernorm, rule.layernorm_weights, cost.zero, cost.per_output("layernorm"),
        ),
        *unary,
        LayerKind(
            "softmax", "softmax along one axis, of scale * x (and causally masked)", x,
            (
                _p("axis", ParamType.INT, -1, "axis to normalise"),
                _p("scale", ParamType.FLOAT, 1.0, "factor applied to the input first"),
                _p("causal", ParamType.BOOL, False,
                   "over the last axis of a (..., queries, keys) input: key j is masked for "
                   "query i when j > i (as attention's causal mask)"),
            ),
            rule.softmax, rule.no_weights, cost.zero, cost.per_output("softmax"),
        ),
        LayerKind("add", "elementwise a + b with numpy broadcasting", ("a", "b"), (),
                  rule.elementwise("add"), rule.no_weights, cost.zero, cost.per_output("add")),
        LayerKind("mul", "elementwise a * b with numpy broadcasting", ("a", "b"), (),
                  rule.elementwise("mul"), rule.no_weights, cost.zero, cost.per_output("mul")),
        LayerKind(
            "concat", "join tensors along one axis", ("x",),
            (_p("axis", ParamType.INT, 1, "axis to join along"),),
            rule.concat, rule.no_weights, cost.zero, cost.zero, variadic=True,
        ),
        LayerKind(
            "reshape", "same elements, new shape (one -1 is inferred)", x,
            (_p("shape", ParamType.INTS, REQUIRED, "the new shape"),),
            rule.reshape, rule.no_weights, cost.zero, cost.zero,
        ),
        LayerKind(
            "flatten", "merge dimensions start.. into one", x,
            (_p("start", ParamType.INT, 1, "first dimension to merge"),),
            rule.flatten, rule.no_weights, cost.zero, cost.zero,
        ),
        LayerKind(
            "transpose", "permute dimensions", x,
            (_p("perm", ParamType.INTS, REQUIRED, "output dimension i is input dimension perm[i]"),),
            rule.transpose, rule.no_weights, cost.zero, cost.zero,
        ),
        LayerKind(
            "slice", "the elements start..stop (stop exclusive) of one axis", x,
            (
                _p("axis", ParamType.INT, REQUIRED, "axis to cut"),
                _p("start", ParamType.INT, 0, "first index kept"),
                _p("stop", ParamType.INT, REQUIRED, "first index dropped"),
            ),
            rule.slice_, rule.no_weights, cost.zero, cost.zero,
        ),
        LayerKind(
            "embedding", "look up rows of a (vocab, dim) table by integer ids", ("ids",),
            (
                _p("vocab", ParamType.POS_INT, REQUIRED, "number of rows"),
                _p("dim", ParamType.POS_INT, REQUIRED, "row width"),
                _p("dtype", ParamType.DTYPE, "f32", "dtype of the table and the result"),
            ),
            rule.embedding, rule.embedding_weights, cost.zero, cost.zero, int_inputs=frozenset({0}),
        ),
        LayerKind(
            "attention", "multi-head attention with q/k/v/o projections on (N, S, D)",
            ("x", "memory"),
            (
                _p("heads", ParamType.POS_INT, REQUIRED, "number of heads (must divide D)"),
                _p("causal", ParamType.BOOL, False, "mask future positions"),
                _p("bias", ParamType.BOOL, True, "biases on the four projections"),
            ),
            rule.attention, rule.attention_weights, cost.attention_macs, cost.attention_flops,
            optional_inputs=1,
        ),
        LayerKind(
            "dropout", "zero elements with probability rate while training", x,
            (_p("rate", ParamType.FLOAT, 0.1, "drop probability in [0, 1)"),),
            rule.dropout, rule.no_weights, cost.zero, cost.per_output("dropout"),
        ),
        LayerKind(
            "cross_entropy", "mean softmax cross-entropy of logits (..., C) against integer labels",
            ("logits", "labels"), (), rule.cross_entropy, rule.no_weights, cost.zero,
            cost.per_input("cross_entropy"), int_inputs=frozenset({1}), is_loss=True,
        ),
        LayerKind(
            "mse", "mean squared error between two tensors of one shape", ("pred", "target"), (),
            rule.mse, rule.no_weights, cost.zero, cost.per_input("mse"), is_loss=True,
        ),
    )


LAYER_KINDS: Mapping[str, LayerKind] = {kind.name: kind for kind in _kinds()}
"""Every layer kind by name, in a stable order."""

DEFAULT_ATTRS: Mapping[str, Mapping[str, AttrValue]] = {
    kind.name: {
        p.name: coerce(p, p.default)  # type: ignore[arg-type]
        for p in kind.params if p.default not in (REQUIRED, DERIVED, INFERENCE)
    }
    for kind in LAYER_KINDS.values()
}
"""The coerced defaults of each kind's optional parameters (computed once)."""
