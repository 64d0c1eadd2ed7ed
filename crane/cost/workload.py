"""The scheduler's input: a DAG of layers with per-sample work and traffic.

Everything here is per sample; the batch size is a separate parameter of the search, so one
``Workload`` serves every batch. Byte counts are in bytes at the machine's element width as
the builder was told (``elem_bytes``). Training work (dX and dW) is carried per layer.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from functools import cached_property

GEMM_KINDS = frozenset({"conv", "matmul", "fc", "attention"})
"""Kinds whose backward pass needs both dX and dW products (about twice the forward MACs)."""


@dataclass(frozen=True, slots=True)
class Dims:
    """Loop extents used to factorise a layer over tiles (per sample, batch excluded).

    Convolutions use K (out channels), C (in channels), H, W (output size) and R, S (kernel).
    A matmul ``[M, K] @ [K, N]`` is a 1x1 convolution with H = M, W = 1, C = K and K = N.
    """

    k: int = 1
    c: int = 1
    h: int = 1
    w: int = 1
    r: int = 1
    s: int = 1
    halo_h: float = 0.0
    """Fraction of the input's rows each cut of the output's rows reads again: a window
    taller than its stride overlaps the next part's by (window - stride) rows."""
    halo_w: float = 0.0
    """The same along the columns."""

    @classmethod
    def conv(cls, k: int, c: int, h: int, w: int, r: int = 1, s: int = 1,
             halo: tuple[float, float] = (0.0, 0.0)) -> Dims:
        """Dims of a convolution with output ``k x h x w`` over ``c`` inputs, kernel ``r x s``;
        ``halo``: ``(halo_h, halo_w)``."""
        return cls(k=k, c=c, h=h, w=w, r=r, s=s, halo_h=halo[0], halo_w=halo[1])

    @classmethod
    def matmul(cls, m: int, n: int, k: int) -> Dims:
        """Dims of ``[m, k] @ [k, n]``."""
        return cls(k=n, c=k, h=m, w=1)

    @property
    def partitionable(self) -> tuple[int, int, int]:
        """The per-sample extents SET partitions over tiles besides the batch: K, H, W."""
        return (self.k, self.h, self.w)


@dataclass(frozen=True, slots=True)
class LayerWork:
    """One layer's per-sample work, its weights and its traffic to and from neighbours."""

    name: str
    kind: str
    macs: int
    vector_ops: int
    weight_bytes: int
    output_bytes: int
    dims: Dims
    inputs: tuple[tuple[str, int], ...] = ()
    """(predecessor name, bytes read from it per sample)."""
    external_input_bytes: int = 0
    """Bytes read per sample from outside the network (the network input in DRAM)."""
    backward_macs: int = 0
    backward_vector_ops: int = 0
    refreshes: bool = False
    """Back-propagating from the saved output runs the layer's forward work again first: a
    GEMM with elementwise ops or a norm merged after it saves only its output (the model
    keeps one tensor per layer), so its backward recomputes the internals its gradients
    read (codegen's ``refresh``). See :meth:`from_saved_output`."""
    whole_batch: bool = False
    """One of its ops needs every sample at once (a batchnorm over the batch's statistics,
    a loss): the layer runs on the whole batch, never in a group of a smaller sub-batch."""
    joined_input_bytes: int = 0
    """Bytes per sample of its input that are a concatenation of several values: the
    program joins their pieces into one buffer for it (``crane.codegen.fetch``), a
    ``tile.copy`` per element."""
    inner_values: int = 0
    """Values of its output's size it makes before its output (one per op merged after
    the first): its backward reads them, and their gradients."""
    _hash: int = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        # Layers key the cost caches (through blocks and state splits): hash them once.
        object.__setattr__(self, "_hash", hash((
            self.name, self.kind, self.macs, self.vector_ops, self.weight_bytes,
            self.output_bytes, self.dims, self.inputs, self.external_input_bytes,
            self.backward_macs, self.backward_vector_ops, self.refreshes,
            self.joined_input_bytes, self.inner_values)))

    def __hash__(self) -> int:
        return self._hash

    @property
    def predecessors(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.inputs)

    def from_saved_output(self) -> LayerWork:
        """The layer as a backward phase from its saved output runs it: a layer that
        ``refreshes`` does its forward work (MACs and vector operations) again besides dX
        and dW. A phase that recomputes the block first (BW2) reads the recomputed
        internals instead and uses the layer as it is."""
        if not self.refreshes:
            return self
        return replace(self, backward_macs=self.backward_macs + self.macs,
                       backward_vector_ops=self.backward_vector_ops + self.vector_ops,
                       refreshes=False)

    @property
    def input_bytes(self) -> int:
        """All bytes this layer reads per sample, from predecessors and from outside."""
        return sum(b for _, b in self.inputs) + self.external_input_bytes

    @classmethod
    def make(
        cls,
        name: str,
        kind: str,
        *,
        macs: int,
        vector_ops: int,
        weight_bytes: int,
        output_bytes: int,
        dims: Dims,
        inputs: Iterable[tuple[str, int]] = (),
        external_input_bytes: int = 0,
        refreshes: bool = False,
        whole_batch: bool = False,
        joined_input_bytes: int = 0,
        inner_values: int = 0,
    ) -> LayerWork:
        """A layer whose backward work follows the usual rule: dX + dW for GEMM-like kinds
        (twice the forward MACs), and twice the forward vector work for every kind (the
        gradient of an activation, a norm or a bias reads the saved values and the output
        gradient: relu 2 operations per element against 1, a batchnorm over the batch 10
        against 5, as the training rules run them). ``refreshes``: see the field."""
        gemm = kind in GEMM_KINDS
        return cls(
            name=name, kind=kind, macs=macs, vector_ops=vector_ops, weight_bytes=weight_bytes,
            output_bytes=output_bytes, dims=dims, inputs=tuple(inputs),
            external_input_bytes=external_input_bytes,
            backward_macs=2 * macs if gemm else 0,
            backward_vector_ops=2 * vector_ops, refreshes=refreshes, whole_batch=whole_batch,
            joined_input_bytes=joined_input_bytes, inner_values=inner_values,
        )


@dataclass(frozen=True)
class Workload:
    """A network as a DAG of layers in topological order."""

    name: str
    layers: tuple[LayerWork, ...]
    elem_bytes: int = 1
    optimizer_vector_ops: int = 0
    """Vector operations of one optimizer step over every weight (a training step's
    updates; 0 when the function trains nothing)."""
    optimizer_state_bytes: int = 0
    """Bytes of the optimizer's state (momenta, moments) that a training step's updates read
    and write (its ``graph.optimizer_state`` values; 0 for plain SGD or no updates)."""
    _index: dict[str, int] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def of(cls, name: str, layers: Iterable[LayerWork], elem_bytes: int = 1,
           optimizer_vector_ops: int = 0, optimizer_state_bytes: int = 0) -> Workload:
        """Validate and build: unique names, predecessors defined before use."""
        ordered = tuple(layers)
        index: dict[str, int] = {}
        for pos, layer in enumerate(ordered):
            if layer.name in index:
                raise ValueError(f"duplicate layer name {layer.name!r}")
            missing = [p for p in layer.predecessors if p not in index]
            if missing:
                raise ValueError(f"layer {layer.name!r} reads undefined {missing}")
            index[layer.name] = pos
        return cls(name=name, layers=ordered, elem_bytes=elem_bytes,
                   optimizer_vector_ops=optimizer_vector_ops,
                   optimizer_state_bytes=optimizer_state_bytes, _index=index)

    def __len__(self) -> int:
        return len(self.layers)

    def layer(self, name: str) -> LayerWork:
        return self.layers[self._index[name]]

    def position(self, name: str) -> int:
        return self._index[name]

    @cached_property
    def successors(self) -> dict[str, tuple[str, ...]]:
        """Consumers of each layer, in topological order."""
        succ: dict[str, list[str]] = {layer.name: [] for layer in self.layers}
        for layer in self.layers:
            for pred in layer.predecessors:
                succ[pred].append(layer.name)
        return {name: tuple(names) for name, names in succ.items()}

    @cached_property
    def last_reader(self) -> dict[str, int]:
        """Per layer, the position of the last layer reading its output (-1: none)."""
        return {layer.name: max((self.position(s) for s in self.successors[layer.name]),
                                default=-1) for layer in self.layers}

    @cached_property
    def crossing(self) -> tuple[frozenset[str], ...]:
        """Per cut before layer c (0 .. len): the layers whose outputs are made before it
        and read after it."""
        last = self.last_reader
        return tuple(frozenset(layer.name for layer in self.layers[:cut] if last[layer.name] >= cut)
                     for cut in range(len(self.layers) + 1))

    @cached_property
    def cut_bytes(self) -> tuple[int, ...]:
        """Per cut before layer c (0 .. len): per-sample bytes of the outputs crossing it
        (the scheduler asks for every cut of every block it tries)."""
        return tuple(sum(self.layer(name).output_bytes for name in names)
                     for names in self.crossing)

    @property
    def total_macs(self) -> int:
        return sum(layer.macs for layer in self.layers)

    @property
    def total_backward_macs(self) -> int:
        return sum(layer.backward_macs for layer in self.layers)

    @property
    def total_weight_bytes(self) -> int:
        return sum(layer.weight_bytes for layer in self.layers)

    def outputs(self) -> tuple[str, ...]:
        """Layers nobody inside the network consumes: their results go to DRAM."""
        return tuple(name for name, succ in self.successors.items() if not succ)
