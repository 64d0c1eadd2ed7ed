"""Blocks: a contiguous run of a workload's layers scheduled with one ScT/MeT pair.

A ``Block`` is a basic block in the paper's sense: its sub-blocks are layers, in topological
order, with any DAG of dependencies among them (chains, branches and merges inside one block
are handled by the dependency constraint). Blocks compose into a hierarchy: a sequence of
blocks run one after another on the whole machine, which the paper's tables express as a
left-nested chain of two-child composite blocks using states 1 and 3 (sequential).

Data crossing a block boundary comes from (or goes to) DRAM, or stays in SRAM when the
boundary is *fused* (the hierarchy decides that per boundary).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from crane.cost.workload import LayerWork, Workload


@dataclass(frozen=True, slots=True)
class Edge:
    """Producer column ``src`` feeds consumer column ``dst`` with ``bytes`` per sample."""

    src: int
    dst: int
    bytes: int


@dataclass(frozen=True, slots=True)
class Block:
    """Layers ``start .. stop-1`` of a workload as one schedulable block."""

    name: str
    layers: tuple[LayerWork, ...]
    edges: tuple[Edge, ...]
    external_in: tuple[int, ...]
    """Bytes per sample each column reads from outside the block."""
    external_out: tuple[int, ...]
    """Bytes per sample each column must leave for consumers outside the block."""
    in_from_sram: bool = False
    out_to_sram: bool = False
    backward: bool = False
    """Columns run their gradient work (dX and dW) instead of the forward pass."""
    dram_in: tuple[int, ...] = ()
    """Bytes per sample of each column's ``external_in`` read from DRAM even when the
    block's input stays in SRAM: results of a group the schedule has already left (codegen
    keeps a group's results on chip for the group's own blocks only) or of an earlier block
    that stored them (codegen keeps on chip only what the producing block kept). Empty:
    none."""
    dram_out: tuple[int, ...] = ()
    """Bytes per sample of each column's ``external_out`` written to DRAM as well when the
    block's output stays in SRAM: results of a group block read after the group is left,
    which codegen stores as it makes them. Empty: none."""
    _hash: int = field(init=False, compare=False, repr=False)
    _consumers: tuple[tuple[Edge, ...], ...] = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        # Blocks key the solver caches: hash once, not on every lookup.
        object.__setattr__(self, "_hash", hash((self.name, self.layers, self.edges,
                                                self.external_in, self.external_out,
                                                self.in_from_sram, self.out_to_sram,
                                                self.backward, self.dram_in, self.dram_out)))
        object.__setattr__(self, "_consumers", tuple(
            tuple(e for e in self.edges if e.src == j) for j in range(len(self.layers))))

    def __hash__(self) -> int:
        return self._hash

    @property
    def n(self) -> int:
        return len(self.layers)

    @property
    def deps(self) -> tuple[tuple[int, int], ...]:
        return tuple(sorted({(e.src, e.dst) for e in self.edges}))

    def consumers(self, column: int) -> tuple[Edge, ...]:
        return self._consumers[column]

    def external_sram_in(self, column: int) -> int:
        """Bytes per sample ``column`` reads from outside the block out of SRAM."""
        if not self.in_from_sram:
            return 0
        return self.external_in[column] - (self.dram_in[column] if self.dram_in else 0)

    def external_dram_in(self, column: int) -> int:
        """Bytes per sample ``column`` reads from outside the block out of DRAM."""
        return self.external_in[column] - self.external_sram_in(column)

    @classmethod
    def of(cls, workload: Workload, start: int, stop: int, *, in_from_sram: bool = False,
           out_to_sram: bool = False, from_dram: frozenset[str] = frozenset(),
           to_dram: frozenset[str] = frozenset()) -> Block:
        """The block of layers ``[start, stop)``; outside traffic is derived from the DAG.
        ``from_dram``: producers whose results the block reads from DRAM even when its
        input stays in SRAM (``dram_in``); ``to_dram``: its layers whose results it writes
        to DRAM as well when its output stays in SRAM (``dram_out``)."""
        layers = workload.layers[start:stop]
        local = {layer.name: i for i, layer in enumerate(layers)}
        edges = [Edge(local[pred], j, nbytes) for j, layer in enumerate(layers)
                 for pred, nbytes in layer.inputs if pred in local]
        ext_in = [layer.external_input_bytes
                  + sum(nbytes for pred, nbytes in layer.inputs if pred not in local)
                  for layer in layers]
        ext_out = [_outside_bytes(workload, layer, local) for layer in layers]
        name = f"{layers[0].name}..{layers[-1].name}" if len(layers) > 1 else layers[0].name
        dram_in = [sum(nbytes for pred, nbytes in layer.inputs
                       if pred in from_dram and pred not in local)
                   for layer in layers] if from_dram else []
        dram_out = [nbytes if layer.name in to_dram and out_to_sram else 0
                    for layer, nbytes in zip(layers, ext_out, strict=True)]
        return cls(name, layers, tuple(edges), tuple(ext_in), tuple(ext_out),
                   in_from_sram, out_to_sram, dram_in=tuple(dram_in) if any(dram_in) else (),
                   dram_out=tuple(dram_out) if any(dram_out) else ())


def gradient_block(forward: Block, from_saved: bool = False,
                   refreshed: Callable[[LayerWork], bool] | None = None) -> Block:
    """The backward pass of a block: layers in reverse order, gradients flowing backwards.

    ``from_saved``: the pass starts from the activations saved in forward (BW1), so a layer
    that refreshes does its forward work again (``LayerWork.from_saved_output``), unless
    ``refreshed`` says it does not (codegen stores a layer too big to hold in forward
    instead, ``crane.cost.layer.refreshes_on_chip``).

    Column c of the result back-propagates forward column n-1-c. It reads the output
    gradient (from consumers outside the block or from the columns it fed) and its saved or
    recomputed input activations from DRAM, and leaves its input gradient for the
    producers outside the block.
    """
    n = forward.n
    flip = [n - 1 - j for j in range(n)]
    edges = tuple(Edge(flip[e.dst], flip[e.src], e.bytes) for e in forward.edges)
    layers = tuple(layer.from_saved_output()
                   if from_saved and (refreshed is None or refreshed(layer)) else layer
                   for layer in reversed(forward.layers))
    ext_in = tuple(forward.external_out[j] + forward.layers[j].input_bytes for j in reversed(range(n)))
    ext_out = tuple(forward.external_in[j] for j in reversed(range(n)))
    return Block(f"grad({forward.name})", layers, edges, ext_in, ext_out, backward=True)


def split_columns(block: Block) -> tuple[Block, ...]:
    """Each column of ``block`` as a block of its own, run one after another.

    A column reads everything it consumed inside the block from DRAM and writes what its
    consumers inside the block read there, so any block can run at any batch (a block of
    N > 1 columns needs at least N - 1 sub-batches to fill its pipeline).
    """
    parts: list[Block] = []
    for j, layer in enumerate(block.layers):
        taken = sum(e.bytes for e in block.edges if e.dst == j)
        given = max((e.bytes for e in block.consumers(j)), default=0)
        parts.append(Block(layer.name, (layer,), (), (block.external_in[j] + taken,),
                           (block.external_out[j] + given,), backward=block.backward))
    return tuple(parts)


def _outside_bytes(workload: Workload, layer: LayerWork, local: dict[str, int]) -> int:
    """Output bytes a layer leaves for the rest of the network (or the network's result)."""
    succ = workload.successors[layer.name]
    if not succ or any(s not in local for s in succ):
        return layer.output_bytes
    return 0


def crossing_bytes(workload: Workload, cut: int) -> int:
    """Per-sample bytes of the tensors alive across the cut before layer ``cut``."""
    return workload.cut_bytes[cut]
