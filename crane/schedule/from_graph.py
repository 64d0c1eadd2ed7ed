"""The scheduler's ``Workload`` of an inference ``graph.func``.

One ``LayerWork`` per compute op, per sample, at the machine's element width:

* ``conv2d`` (kind ``conv``), ``linear`` (``fc``) and ``matmul`` (``matmul``) are GEMM
  layers; their MACs come from the op's ``accounting()``, their vector work is what the
  accounting counts beyond ``2 * MACs`` (bias adds);
* ``attention`` is one layer (kind ``attention``), as codegen runs it: its projections,
  QK^T, softmax and AV on the same tiles, split by batch only, with all of the op's
  weights (an expanded attention, ``expand-attention``, is GEMM layers like any other);
* pools are vector layers (``pool``), ``add`` / ``mul`` are ``eltwise`` layers;
* unary elementwise ops and norms (relu, gelu, batchnorm, layernorm, softmax, ...) merge
  into the layer producing their input when they are its only user, else they become
  ``vector`` layers of their own;
* ``reshape``, ``flatten``, ``transpose``, ``slice``, ``concat`` and (at inference)
  ``dropout`` are transparent: edges run through them to the layers behind (a layer
  reading a concatenation of several values also counts its bytes as
  ``joined_input_bytes``: the program joins the pieces for it); ``graph.weight``
  values count as weight bytes of the layer reading them; ``embedding`` runs with the
  earliest layer reading its result (as codegen runs it): that layer reads the ids from
  outside and loads the table as weights;
* a loss merges into the layer making its input, as codegen runs it (a loss left without
  one is left out); the workload of a trained function is its forward pass, plus the
  updates' vector work and state (``Workload.optimizer_vector_ops`` and
  ``optimizer_state_bytes``). In a training step, each gradient op's work
  (``grad_work``) is its forward op's layer's backward work, with the accumulation of the
  gradient it reads; a layer no gradient op differentiates has none. A function without
  gradient ops gets the usual rule (``LayerWork.make``). A GEMM layer with ops merged after
  it ``refreshes``: its backward from a saved output runs its forward work again
  (``LayerWork.refreshes``), as codegen's training ops do.

Which of these a kind is, it declares beside its definition (``LayerKind.work``,
:class:`crane.dialects.layers.definition.Work`); the layer label is the ``Work`` value.

Bytes are elements per sample times ``elem_bytes`` (the graph's f32 types are what the
frontend computes in; the machine stores ``data_bytes`` per element).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from crane.cost.workload import Dims, LayerWork, Workload
from crane.dialects.graph import LayerOp, WeightOp
from crane.dialects.graph_batch import graph_batch
from crane.dialects.graph_grad import (
    AccumulateOp,
    FillOp,
    GradOp,
    OptimizerStateOp,
    UpdateOp,
    is_training_step,
)
from crane.dialects.layers.costs import BATCH_STATISTICS_GRAD_FLOPS
from crane.dialects.layers.definition import Work
from crane.dialects.layers.values import numel
from crane.ir.attributes import StringAttr
from crane.ir.core import Operation, Value
from crane.ir.types import TensorType

GEMM_WORK = frozenset({Work.CONV, Work.FC, Work.MATMUL})
"""Kinds that make a GEMM layer of their own (``LayerKind.work``)."""
LAYER_WORK = GEMM_WORK | {Work.ATTENTION, Work.POOL, Work.ELTWISE, Work.VECTOR}
"""Kinds that make a layer labelled with their ``Work`` value (a vector op only when it
cannot merge into the layer making its input)."""

TRAINING_OPS = (GradOp, FillOp, AccumulateOp, OptimizerStateOp, UpdateOp)
"""Ops ``autodiff`` adds: the workload is the forward pass (``crane.schedule.training``
derives the backward blocks from it)."""

Flow = dict[str | None, int]
"""Producer layer (None: DRAM, outside the network) -> bytes per sample read from it."""


@dataclass
class _Layer:
    """A layer being accumulated (merged elementwise ops still to come)."""

    name: str
    kind: str
    macs: int
    vector_ops: int
    weight_bytes: int
    output_bytes: int
    dims: Dims
    inputs: Flow = field(default_factory=dict)
    gemm: bool = False
    """Made by a conv2d, linear or matmul op (codegen refreshes those, not attention)."""
    merged: int = 0
    """Elementwise ops or norms merged after the op that made it."""
    whole_batch: bool = False
    """One of its ops needs every sample at once (``LayerOp.needs_whole_batch``)."""
    joined_input_bytes: int = 0
    """Input bytes per sample that are a concatenation (``LayerWork.joined_input_bytes``)."""
    backward_macs: int = 0
    backward_vector_ops: int = 0
    """Per sample, of the gradient ops differentiating its ops (a training step only)."""

    def freeze(self, step: bool) -> LayerWork:
        """The layer; ``step``: the function is a training step, whose gradient ops give
        the backward work (else the usual rule does)."""
        named = tuple((p, b) for p, b in self.inputs.items() if p is not None)
        layer = LayerWork.make(
            self.name, self.kind, macs=self.macs, vector_ops=self.vector_ops,
            weight_bytes=self.weight_bytes, output_bytes=self.output_bytes, dims=self.dims,
            inputs=named, external_input_bytes=self.inputs.get(None, 0),
            refreshes=self.gemm and self.merged > 0, whole_batch=self.whole_batch,
            joined_input_bytes=self.joined_input_bytes, inner_values=self.merged)
        if not step:
            return layer
        return replace(layer, backward_macs=self.backward_macs,
                       backward_vector_ops=self.backward_vector_ops)


def layer_flops(op: LayerOp) -> int:
    """The op's FLOPs as the program runs it (its accounting)."""
    return op.accounting()["flops"]


def grad_work(op: GradOp) -> tuple[int, int]:
    """(MACs, vector operations) of a gradient op as the program runs it, as the timing
    simulator counts them (``crane.exec.tile_sim.timing_work``): the accounting's MACs, one
    vector operation per gradient element and, for an input gradient, the forward op's
    vector work (activation derivatives); a batchnorm over the batch's statistics
    ``BATCH_STATISTICS_GRAD_FLOPS`` per element, all in its input gradient."""
    if op.kind.normalises_by_batch(op.layer_attrs):
        elements = numel(_shape(op.grad_output)) if op.role == "input" else 0
        return 0, BATCH_STATISTICS_GRAD_FLOPS * elements
    figures = op.accounting()
    macs = figures["backward_macs"]
    vector = figures["backward_flops"] - 2 * macs
    if op.role != "input":
        return macs, vector
    shapes = tuple(_shape(v) for v in op.forward_inputs)
    out = _shape(op.grad_output) if not op.kind.is_loss else ()
    forward = op.kind.flops(shapes, out, op.layer_attrs) - 2 * op.forward_macs()
    return macs, vector + max(0, forward)


def trains(func: Operation) -> bool:
    """Whether a ``graph.func`` is trained: it has a training section or is a training step."""
    return "training" in func.attributes or is_training_step(func)


def _shape(value: Value) -> tuple[int, ...]:
    if not isinstance(value.type, TensorType):
        raise ValueError(f"expected a tensor, got {value.type}")
    return tuple(value.type.shape)


def _merge(into: Flow, other: Flow, scale: float = 1.0) -> None:
    for producer, nbytes in other.items():
        into[producer] = into.get(producer, 0) + round(nbytes * scale)


def _vector_dims(shape: tuple[int, ...]) -> Dims:
    """Partitionable extents of a per-sample vector op from its (batched) output shape."""
    rest = shape[1:]
    if len(rest) >= 3:
        return Dims.conv(rest[0], 1, rest[1], numel(rest[2:]))
    if len(rest) == 2:
        return Dims.conv(rest[1], 1, rest[0], 1)
    return Dims.conv(numel(rest), 1, 1, 1)


class WorkloadBuilder:
    """Walks one function body in order and accumulates its layers."""

    def __init__(self, batch: int, elem_bytes: int) -> None:
        self.batch = batch
        self.elem_bytes = elem_bytes
        self.layers: list[_Layer] = []
        self.flows: dict[Value, Flow] = {}
        self.weights: dict[Value, int] = {}
        self.tables: dict[Value, int] = {}
        """Table bytes behind a gathered value, loaded by the earliest layer reading it."""
        self.joined: dict[Value, int] = {}
        """Bytes per sample of a value that are a concatenation of several values."""
        self.owner: dict[Value, _Layer] = {}
        self.by_name: dict[str, _Layer] = {}
        self.names: set[str] = set()
        self.optimizer_ops = 0
        self.optimizer_state_bytes = 0
        self.differentiated: dict[tuple[str, tuple[Value, ...]], _Layer] = {}
        """The layer running each forward op, by its kind and operands (what its gradient
        ops name): the layer it made or merged into, or for a transparent op the layer
        making its input."""
        self.unowned: dict[tuple[str, tuple[Value, ...]], Value] = {}
        """The result of each forward op no layer runs yet, by its kind and operands."""
        self.accumulated: dict[Value, int] = {}
        """Vector operations of the accumulation making a gradient, charged to the layer
        whose gradient op reads it."""

    def sample_bytes(self, value: Value) -> int:
        return numel(_shape(value)) // self.batch * self.elem_bytes

    def per_sample(self, count: int) -> int:
        return count // self.batch

    def unique(self, value: Value, fallback: str) -> str:
        base = value.name_hint or fallback
        name, k = base, 1
        while name in self.names:
            k += 1
            name = f"{base}#{k}"
        self.names.add(name)
        return name

    def read(self, values: tuple[Value, ...]) -> tuple[Flow, int]:
        """The flows and weight bytes behind some operands."""
        flow: Flow = {}
        weight_bytes = 0
        for v in values:
            if v in self.weights:
                weight_bytes += self.weights[v]
                continue
            weight_bytes += self.tables.pop(v, 0)
            _merge(flow, self.flows.get(v, {None: self.sample_bytes(v)}))
        return flow, weight_bytes

    def add(self, layer: _Layer, result: Value) -> None:
        self.layers.append(layer)
        self.by_name[layer.name] = layer
        self.owner[result] = layer
        self.flows[result] = {layer.name: layer.output_bytes}

    def visit(self, op: Operation) -> None:
        if isinstance(op, GradOp):
            self.backward(op)
        if isinstance(op, AccumulateOp):
            self.accumulated[op.results[0]] = op.accounting()["backward_flops"]
        if isinstance(op, UpdateOp):
            self.optimizer_ops += op.accounting()["optimizer_flops"]
        if isinstance(op, OptimizerStateOp):
            self.optimizer_state_bytes += numel(_shape(op.results[0])) * self.elem_bytes
        if isinstance(op, TRAINING_OPS):
            return
        if isinstance(op, WeightOp):
            self.weights[op.results[0]] = numel(_shape(op.results[0])) * self.elem_bytes
            return
        if not isinstance(op, LayerOp):
            if op.name != "graph.return":
                raise ValueError(f"'{op.name}' is not an inference graph op")
            return
        self.visit_layer(op)
        layer = self.owner.get(op.results[0]) if op.results else None
        source = self.flows.get(op.inputs[0], {}) if op.inputs else {}
        if layer is None and len(source) == 1:
            layer = self.by_name.get(next(iter(source)) or "")
        key = (op.kind.name, tuple(op.operands))
        if layer is not None:
            self.differentiated[key] = layer
        elif op.results:  # a gather: its readers' layer runs it
            self.unowned[key] = op.results[0]

    def backward(self, op: GradOp) -> None:
        """Charge a gradient op's work to the layer running its forward op (a gather's: the
        layer of its earliest reader, which runs it)."""
        key = (op.kind.name, op.forward_operands)
        layer = self.differentiated.get(key)
        made = self.unowned.get(key)
        if layer is None and made is not None:
            readers = (self.differentiated.get((u.kind.name, tuple(u.operands)))
                       for u in made.users() if isinstance(u, LayerOp))
            layer = next((found for found in readers if found is not None), None)
        if layer is None:
            return
        macs, vector = grad_work(op)
        layer.backward_macs += self.per_sample(macs)
        layer.backward_vector_ops += self.per_sample(vector + self.accumulated.pop(op.grad_output, 0))

    def visit_layer(self, op: LayerOp) -> None:
        work = op.kind.work
        if work is Work.LOSS:
            if self.mergeable(op):  # codegen runs the loss with the layer making its input
                self.merge_unary(op)
            return
        if work is Work.TRANSPARENT:
            self.transparent(op)
        elif work is Work.GATHER:
            self.gather(op)
        elif work is Work.VECTOR and self.mergeable(op):
            self.merge_unary(op)
        elif work in LAYER_WORK:
            self.layer(op, work)
        else:
            raise ValueError(f"'{op.name}': no workload rule for {work}")

    def transparent(self, op: LayerOp) -> None:
        flow: Flow = {}
        inputs = op.inputs
        scale = 1.0
        if op.kind.name == "slice":  # reads only its slice of the flow
            scale = numel(_shape(op.results[0])) / max(1, numel(_shape(inputs[0])))
        for v in inputs:
            _merge(flow, self.flows.get(v, {None: self.sample_bytes(v)}), scale)
        self.flows[op.results[0]] = flow
        joined = round(scale * sum(self.joined.get(v, 0) for v in inputs))
        if op.kind.name == "concat" and len(inputs) > 1:  # its readers join the pieces
            joined = self.sample_bytes(op.results[0])
        if joined:
            self.joined[op.results[0]] = joined
        tables = sum(self.tables.pop(v, 0) for v in inputs)
        if tables:
            self.tables[op.results[0]] = tables

    def gather(self, op: LayerOp) -> None:
        """An embedding runs with its earliest reader (``crane.codegen.ownership``), whose tiles
        load the table and pick its rows by the ids: the reader reads the ids from outside
        and the table as weights."""
        self.flows[op.results[0]] = self.read(op.inputs)[0]
        self.tables[op.results[0]] = self.read(op.weights)[1]

    def mergeable(self, op: LayerOp) -> bool:
        source = op.inputs[0]
        forward = [u for u in source.uses if not isinstance(u.owner, TRAINING_OPS)]
        return source in self.owner and len(forward) == 1

    def merge_unary(self, op: LayerOp) -> None:
        layer = self.owner.pop(op.inputs[0])
        layer.vector_ops += self.per_sample(layer_flops(op))
        layer.weight_bytes += self.read(op.weights)[1]
        layer.output_bytes = self.sample_bytes(op.results[0])
        layer.merged += 1
        layer.whole_batch |= op.needs_whole_batch
        self.owner[op.results[0]] = layer
        self.flows[op.results[0]] = {layer.name: layer.output_bytes}

    def layer(self, op: LayerOp, work: Work) -> None:
        figures = op.accounting()
        flow, weight_bytes = self.read(op.operands)
        out = _shape(op.results[0])
        macs = self.per_sample(figures["macs"])
        vector = self.per_sample(layer_flops(op) - 2 * figures["macs"])
        dims = self.layer_dims(op, work, out)
        name = self.unique(op.results[0], op.kind.name)
        self.add(_Layer(name, work.value, macs, vector, weight_bytes,
                        self.sample_bytes(op.results[0]), dims, flow, gemm=work in GEMM_WORK,
                        whole_batch=op.needs_whole_batch,
                        joined_input_bytes=sum(self.joined.get(v, 0) for v in op.inputs)),
                 op.results[0])

    def layer_dims(self, op: LayerOp, work: Work, out: tuple[int, ...]) -> Dims:
        """The per-sample extents codegen may split the layer's op over."""
        if work is Work.ATTENTION:  # split by batch only (``Lowering.ATTENTION``)
            return Dims()
        if work not in GEMM_WORK:
            return _vector_dims(out)
        first = _shape(op.inputs[0])
        if work is Work.CONV:
            attrs = op.layer_attrs
            kernel, groups = attrs["kernel"], attrs["groups"]
            stride, dilation = attrs["stride"], attrs["dilation"]
            assert isinstance(kernel, tuple) and isinstance(groups, int)
            assert isinstance(stride, tuple) and isinstance(dilation, tuple)
            halo = tuple(max(0, (int(k) - 1) * int(d) + 1 - int(st)) / size
                         for k, d, st, size in zip(kernel, dilation, stride, first[2:4], strict=True))
            return Dims.conv(out[1], first[1] // groups, out[2], out[3],
                             int(kernel[0]), int(kernel[1]), (halo[0], halo[1]))
        cols = out[-1] if out else 1
        rows = numel(out) // self.batch // max(1, cols)
        return Dims.matmul(rows, cols, first[-1])

def workload_of(func: Operation, elem_bytes: int = 1) -> Workload:
    """The per-sample ``Workload`` of a ``graph.func``'s forward pass (see the module docstring).

    ``elem_bytes`` is the machine's element width (``Machine.data_bytes``). Raises
    ``ValueError`` for ops that are not graph ops.
    """
    if func.name != "graph.func" or not func.regions or not func.regions[0].blocks:
        raise ValueError(f"expected a graph.func with a body, got '{func.name}'")
    builder = WorkloadBuilder(graph_batch(func), elem_bytes)
    for op in func.regions[0].blocks[0].ops:
        builder.visit(op)
    name = func.attributes.get("sym_name")
    label = name.value if isinstance(name, StringAttr) else "network"
    step = is_training_step(func)
    return Workload.of(label, [layer.freeze(step) for layer in builder.layers], elem_bytes,
                       builder.optimizer_ops, builder.optimizer_state_bytes)
