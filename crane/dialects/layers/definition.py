"""What a layer kind definition holds: its parameters, rules and the facts others read.

A :class:`LayerKind` is declared once, in its family module (``activations``, ``dense``,
``pools``, ``norms``, ``data``, ``losses``), and gathered into
:data:`crane.dialects.layers.kinds.LAYER_KINDS`. Besides the shape, weight and cost rules it
declares the facts the higher floors read instead of keeping tables of their own:

* :class:`Lowering`: how code generation divides the op over tiles (``crane.codegen``);
* :class:`Tiling`: whether a spatial chain of segmented fused tiling may hold it, and how
  its window reads pixels (``crane.tiling.chains``);
* :class:`Work`: what it is in the scheduler's workload (``crane.schedule.from_graph``);
* :class:`Onnx`: how ONNX models reach it (``crane.frontend.onnx``);
* :class:`Trait`: behaviour several consumers share (random masks, batch statistics).

Behaviour that belongs to a higher floor is registered there against the kind's name: the
interpreter's forward and gradient rules (``crane.exec.forward``/``backward``), code
generation's split rule per :class:`Lowering` class, the ONNX converters. Every field is
required and every consumer looks facts up without a fallback, so a kind missing a fact
fails loudly; ``tests/unit/kinds`` walks every kind through every consumer.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum

from crane.dialects.layers.costs import CostRule
from crane.dialects.layers.rules import ShapeRule, WeightRule, no_weights
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


def param(name: str, type_: ParamType, default: object, doc: str) -> Param:
    """A parameter, spelled like a row of the language reference's table."""
    return Param(name, type_, default, doc)


class Lowering(Enum):
    """How ``codegen`` divides a kind's output over tiles and which boxes each part reads.

    Code generation registers its split rules per class (``crane.codegen.kind_rules``)."""

    UNARY = "unary"
    """One input, elementwise: a part reads its own box (activations, dropout)."""
    BINARY = "binary"
    """Two inputs, elementwise with numpy broadcasting; streamed in steps."""
    CONV = "conv"
    """A convolution: a window over every input channel (one group's), a kernel slice."""
    POOL = "pool"
    """A windowed pool: a window of its own channels."""
    GLOBAL_POOL = "global_pool"
    """A reduction over H and W: a part reads whole planes."""
    CHANNEL_NORM = "channel_norm"
    """Per-channel statistics (batchnorm): split by channel while the statistics are the
    batch's own, else like an elementwise op."""
    LAST_AXES_NORM = "last_axes_norm"
    """Normalises the trailing axes its weights cover (layernorm)."""
    AXIS_NORM = "axis_norm"
    """Normalises along its ``axis`` (softmax): split along any other."""
    LINEAR = "linear"
    """``x @ W`` over the last axis: rows first, then output columns."""
    MATMUL = "matmul"
    """Batched ``a @ b``: rows first, then output columns."""
    ATTENTION = "attention"
    """Multi-head attention: split by batch only; its weight gradient is not split."""
    RESHAPE = "reshape"
    """Same elements, new shape: split by batch when the batch axis survives."""
    GATHER = "gather"
    """Rows of a table by id (embedding): split along the ids."""
    PERMUTE = "permute"
    """Permuted axes (transpose): a part reads the permuted box."""
    ALONG_AXIS = "along_axis"
    """Slice and concat: whole along ``axis``, split along any other."""
    WHOLE = "whole"
    """Every operand whole: one part on one tile. A loss on several tiles splits along its
    positions instead, each part a partial sum of the mean."""


class Spatial(Enum):
    """How a kind that a spatial chain may hold reads NCHW pixels."""

    POINTWISE = "pointwise"
    """Each output pixel reads the same input pixel."""
    CONV = "conv"
    """A sliding window with a kernel (and weights)."""
    MAX_POOL = "max_pool"
    AVG_POOL = "avg_pool"


NOT_SPATIAL = "it is not a per-pixel or sliding-window op on NCHW tensors"
"""Why most kinds end a spatial chain."""


@dataclass(frozen=True, slots=True)
class Tiling:
    """Whether segmented fused tiling may put the kind in a spatial chain, and how."""

    spatial: Spatial | None
    """How it reads pixels inside a chain; None: it ends the chain."""
    reason: str = ""
    """Why it ends a chain (for remarks), when ``spatial`` is None."""

    @classmethod
    def pointwise(cls) -> Tiling:
        return cls(Spatial.POINTWISE)

    @classmethod
    def window(cls, spatial: Spatial) -> Tiling:
        return cls(spatial)

    @classmethod
    def ends_chain(cls, reason: str) -> Tiling:
        return cls(None, reason)


class Work(Enum):
    """What a kind is in the scheduler's ``Workload`` (``crane.schedule.from_graph``); the
    value is the ``LayerWork.kind`` label of a layer it makes."""

    CONV = "conv"
    FC = "fc"
    MATMUL = "matmul"
    ATTENTION = "attention"
    """One layer holding the whole op (projections, scores, softmax, context), split by
    batch only, as ``Lowering.ATTENTION`` runs it."""
    POOL = "pool"
    ELTWISE = "eltwise"
    """A binary elementwise layer of its own."""
    VECTOR = "vector"
    """A vector op that merges into the layer making its input when it is its only reader."""
    TRANSPARENT = "transparent"
    """Moves data only: edges run through it to the layers behind."""
    GATHER = "gather"
    """Reads rows from DRAM: its result counts as network input."""
    LOSS = "loss"
    """Training only: not part of the forward workload."""


@dataclass(frozen=True, slots=True)
class OnnxAttr:
    """A float attribute an ONNX node must have for a one-to-one import."""

    name: str
    value: float
    default: float
    """The value ONNX gives a node that leaves the attribute out."""


@dataclass(frozen=True, slots=True)
class OnnxOp:
    """An ONNX operator that imports one to one as the kind (one input, no parameters)."""

    op_type: str
    attrs: tuple[OnnxAttr, ...] = ()
    clip: tuple[float, float] | None = None
    """``Clip`` only: the (min, max) bounds it must have (max ``inf``: no upper bound)."""


@dataclass(frozen=True, slots=True)
class Onnx:
    """How ONNX models reach a kind."""

    ops: tuple[OnnxOp, ...] = ()
    """Operators the importer's generic converter maps one to one onto the kind."""
    via: tuple[str, ...] = ()
    """Operators whose own converter (``crane.frontend.onnx.registry``) may make the kind."""
    absent: str = ""
    """Why no ONNX operator imports as the kind (neither ``ops`` nor ``via``)."""

    @classmethod
    def one_to_one(cls, *ops: OnnxOp) -> Onnx:
        return cls(ops=ops)

    @classmethod
    def converted(cls, *op_types: str) -> Onnx:
        return cls(via=op_types)

    @classmethod
    def not_imported(cls, reason: str) -> Onnx:
        return cls(absent=reason)

    @property
    def op_types(self) -> frozenset[str]:
        """Every ONNX operator that may become the kind."""
        return frozenset({*(op.op_type for op in self.ops), *self.via})


class Trait(Enum):
    """Behaviour several consumers share."""

    RANDOM = "random"
    """Draws a random mask while training (dropout): not pure, keyed per op so backward
    redraws the same mask, and the mask spans the whole tensor."""
    BATCH_STATISTICS = "batch_statistics"
    """Normalises with statistics of the whole batch unless it uses running statistics
    (batchnorm): its backward, and its forward while training, need every sample."""


@dataclass(frozen=True, slots=True)
class LayerKind:
    """A layer kind: inputs, parameters, rules, and the facts its consumers read."""

    name: str
    summary: str
    inputs: tuple[str, ...]
    """Names of the tensor inputs, in order (shown in messages and used by the IR)."""
    params: tuple[Param, ...]
    shape: ShapeRule
    weights: WeightRule
    macs: CostRule
    flops: CostRule
    lowering: Lowering
    tiling: Tiling
    work: Work
    onnx: Onnx
    traits: frozenset[Trait] = field(default_factory=frozenset)
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
        for p in self.params:
            if p.name == name:
                return p
        return None

    @property
    def min_inputs(self) -> int:
        return len(self.inputs) - self.optional_inputs

    @property
    def max_inputs(self) -> int | None:
        return None if self.variadic else len(self.inputs)

    @property
    def has_weights(self) -> bool:
        """Whether the kind creates weights (so it has a weight-gradient op)."""
        return self.weights is not no_weights

    @property
    def is_random(self) -> bool:
        return Trait.RANDOM in self.traits

    @property
    def has_batch_statistics(self) -> bool:
        return Trait.BATCH_STATISTICS in self.traits

    def normalises_by_batch(self, attrs: Mapping[str, AttrValue]) -> bool:
        """Whether an op of this kind with ``attrs`` normalises with the batch's own
        statistics (a batchnorm not told to use its running ones)."""
        return self.has_batch_statistics and not attrs.get("running")


class ParamError(Exception):
    """A parameter value of the wrong type; the message says what was expected."""


def coerce(p: Param, value: ParamValue) -> AttrValue:
    """``value`` converted to the attribute form of ``p`` (e.g. ``3`` -> ``(3, 3)``)."""
    kind = p.type
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
