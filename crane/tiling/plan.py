"""Choosing segment cuts and tile grids for training under a memory cap.

A plan cuts a chain into consecutive segments. A checkpointed segment keeps only its input
during forward and recomputes itself, tile by tile, during backward; the last segment may
instead be stored (run once, saving activations), as PyTorch's ``checkpoint_sequential``
does. The peak of segment ``s`` is the inputs kept for the segments before it plus the
larger of its forward phase (its input, its output buffer, one tile's working set) and its
backward phase (its input, its output gradient, its input gradient, one tile's recompute
and backward working set); the plan's peak adds parameters, gradients, optimizer state and
the runtime reserve.

:meth:`Planner.search` minimises predicted time under the cap by dynamic programming over
cut positions, keeping per position the Pareto front of (bytes kept so far, time so far),
since a cheap prefix that keeps more bytes can make a later segment infeasible.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from crane.tiling.execute import Segment
from crane.tiling.layers import Layer, Pair, chain_hw
from crane.tiling.memory import CostModel, MemoryModel, chain_footprint
from crane.tiling.regions import Interval, split_axis

GRID_STEPS = (1, 2, 3, 4, 5, 6, 8, 10, 12, 16, 20, 24, 32, 40, 48, 64)
"""Tile counts per axis that the search tries (finer steps where the choice matters most)."""

GIB = 1024**3


class NoPlanFitsError(ValueError):
    """No segmentation and tile grid trains the chain within the memory cap."""

    def __init__(self, cap_bytes: int, minimum_bytes: int) -> None:
        self.cap_bytes = cap_bytes
        self.minimum_bytes = minimum_bytes
        super().__init__(
            f"no plan fits in {cap_bytes} bytes ({cap_bytes / GIB:.2f} GiB); the smallest memory "
            f"any plan needs is {minimum_bytes} bytes ({minimum_bytes / GIB:.2f} GiB)"
        )


@dataclass(frozen=True, slots=True)
class SegmentChoice:
    """One segment of a plan with its predicted peak (excluding earlier kept inputs) and time."""

    segment: Segment
    checkpointed: bool
    peak_bytes: int
    seconds: float


@dataclass(frozen=True, slots=True)
class Plan:
    """A full training plan: segments in order, predicted peak bytes and seconds per step."""

    name: str
    choices: tuple[SegmentChoice, ...]
    peak_bytes: int
    seconds: float

    @property
    def segments(self) -> tuple[Segment, ...]:
        """The segments, ready for :func:`crane.tiling.execute.segmented_forward`."""
        return tuple(choice.segment for choice in self.choices)

    def fits(self, cap_bytes: int) -> bool:
        """Whether the predicted peak is within ``cap_bytes``."""
        return self.peak_bytes <= cap_bytes

    def describe(self) -> str:
        """One line per segment: layer range, grid, checkpointing."""
        parts = []
        for c in self.choices:
            mode = "ckpt" if c.checkpointed else "stored"
            parts.append(f"[{c.segment.start},{c.segment.stop}) {c.segment.rows}x{c.segment.cols} {mode}")
        return "; ".join(parts)


@dataclass(frozen=True, slots=True)
class _State:
    kept: int
    seconds: float
    peak: int
    choices: tuple[SegmentChoice, ...]


@dataclass(frozen=True)
class Planner:
    """Evaluates and searches plans for one chain on one image size (batch 1)."""

    layers: tuple[Layer, ...]
    hw: Pair
    memory: MemoryModel
    cost: CostModel
    grid_steps: tuple[int, ...] = GRID_STEPS
    _shapes: list[Pair] = field(init=False, repr=False)
    _axis_cache: dict[tuple[int, int, int], tuple[list[int], list[int]]] = field(
        init=False, repr=False, default_factory=dict
    )
    _candidates: dict[tuple[int, int], list[SegmentChoice]] = field(
        init=False, repr=False, default_factory=dict
    )

    def __post_init__(self) -> None:
        # Frozen: the derived shapes are set once here; the caches only ever grow.
        object.__setattr__(self, "_shapes", chain_hw(self.layers, self.hw))

    @property
    def fixed_bytes(self) -> int:
        """Parameters, gradients, optimizer state and runtime reserve."""
        return self.memory.fixed_bytes(self.layers)

    def activation_bytes(self, index: int) -> int:
        """Bytes of the full activation ``index`` (0 = image)."""
        h, w = self._shapes[index]
        channels = self.layers[0].in_channels if index == 0 else self.layers[index - 1].out_channels
        return h * w * channels * self.memory.dtype_bytes * self.memory.batch

    def choice(self, segment: Segment, checkpointed: bool) -> SegmentChoice:
        """Predicted peak (beyond earlier kept inputs and fixed bytes) and time of a segment."""
        i, j = segment.start, segment.stop
        layers = self.layers[i:j]
        tiled = segment.tiles > 1
        rows_max, rows_sum = self._axis(i, j, 0, segment.rows)
        cols_max, cols_sum = self._axis(i, j, 1, segment.cols)
        areas = [r * c for r, c in zip(rows_max, cols_max, strict=True)]
        foot = chain_footprint(layers, areas, self.memory, boundaries_external=not tiled, input_grad=i > 0)
        a_in, a_out = self.activation_bytes(i), self.activation_bytes(j)
        grad_in = a_in if i > 0 else 0
        if checkpointed:
            forward, backward = foot.forward_nograd, foot.recompute_backward
        else:
            forward, backward = foot.forward_saving, foot.backward
        peak = max(a_in + a_out + forward, a_in + a_out + grad_in + backward)
        totals = [r * c for r, c in zip(rows_sum, cols_sum, strict=True)]
        return SegmentChoice(segment, checkpointed, peak, self._seconds(i, j, totals, segment.tiles, checkpointed))

    def evaluate(self, name: str, segments: Sequence[Segment], stored_last: bool) -> Plan:
        """Peak and time of a given segmentation (``stored_last``: last segment not recomputed)."""
        choices = []
        kept = peak = 0
        seconds = 0.0
        for index, seg in enumerate(segments):
            checkpointed = not (stored_last and index == len(segments) - 1)
            c = self.choice(seg, checkpointed)
            peak = max(peak, kept + c.peak_bytes)
            kept += self.activation_bytes(seg.start)
            seconds += c.seconds
            choices.append(c)
        return Plan(name, tuple(choices), peak + self.fixed_bytes, seconds)

    def no_checkpointing(self) -> Plan:
        """Plain training: one untiled segment that stores every saved activation."""
        return self.evaluate("no checkpointing", [Segment(0, len(self.layers))], stored_last=True)

    def sequential_checkpointing(self, segments: int = 5) -> Plan:
        """PyTorch ``checkpoint_sequential``: equal module counts, last segment not checkpointed."""
        n = len(self.layers)
        size = n // segments
        if size < 1:
            raise ValueError(f"cannot cut {n} layers into {segments} segments")
        starts = [k * size for k in range(segments)]
        segs = [Segment(s, e) for s, e in zip(starts, [*starts[1:], n], strict=True)]
        return self.evaluate(f"{segments}-segment sequential checkpointing", segs, stored_last=True)

    def search(self, cap_bytes: int) -> Plan:
        """The fastest plan whose peak fits ``cap_bytes``; raises :class:`NoPlanFitsError`."""
        budget = cap_bytes - self.fixed_bytes
        best = self._best_plan(budget)
        if best is None:
            raise NoPlanFitsError(cap_bytes, self.minimum_bytes())
        return Plan("crane", best.choices, best.peak + self.fixed_bytes, best.seconds)

    def minimum_bytes(self) -> int:
        """The smallest peak over all plans the search considers (ignoring time)."""
        n = len(self.layers)
        fronts: list[list[tuple[int, int]]] = [[] for _ in range(n + 1)]
        fronts[0] = [(0, 0)]
        for i in range(n):
            least = {j: min(c.peak_bytes for c in self._segment_candidates(i, j)) for j in range(i + 1, n + 1)}
            kept_next = self.activation_bytes(i)
            for j, need in least.items():
                grown = [(kept + kept_next, max(peak, kept + need)) for kept, peak in fronts[i]]
                fronts[j] = _pareto_pairs(fronts[j] + grown)
        return min(peak for _, peak in fronts[n]) + self.fixed_bytes

    def _best_plan(self, budget: int) -> _State | None:
        n = len(self.layers)
        fronts: list[list[_State]] = [[] for _ in range(n + 1)]
        fronts[0] = [_State(0, 0.0, 0, ())]
        for i in range(n):
            for state in fronts[i]:
                _extend(fronts, self._extensions(state, i, budget))
            for j in range(i + 1, n + 1):
                fronts[j] = _pareto_states(fronts[j])
        return min(fronts[n], key=lambda s: s.seconds, default=None)

    def _extensions(self, state: _State, i: int, budget: int) -> list[tuple[int, _State]]:
        """Every next segment from ``i``, each with its cheapest grid that fits the budget."""
        out = []
        room = budget - state.kept
        for j in range(i + 1, len(self.layers) + 1):
            fitting = [c for c in self._segment_candidates(i, j) if c.peak_bytes <= room]
            if not fitting:
                continue
            c = min(fitting, key=lambda cand: cand.seconds)
            kept = state.kept + self.activation_bytes(i)
            peak = max(state.peak, state.kept + c.peak_bytes)
            out.append((j, _State(kept, state.seconds + c.seconds, peak, (*state.choices, c))))
        return out

    def _segment_candidates(self, i: int, j: int) -> list[SegmentChoice]:
        key = (i, j)
        if key not in self._candidates:
            self._candidates[key] = self._build_candidates(i, j)
        return self._candidates[key]

    def _build_candidates(self, i: int, j: int) -> list[SegmentChoice]:
        out_h, out_w = self._shapes[j]
        # Whole-image statistics (batch norm) forbid splitting the segment.
        tileable = not any(layer.needs_global_statistics for layer in self.layers[i:j])
        grids = _grids(out_h, out_w, self.grid_steps) if tileable else [(1, 1)]
        found = [self.choice(Segment(i, j, r, c), checkpointed=True) for r, c in grids]
        if j == len(self.layers):
            found.append(self.choice(Segment(i, j), checkpointed=False))
        return found

    def _axis(self, i: int, j: int, axis: int, parts: int) -> tuple[list[int], list[int]]:
        """Per activation of layers [i, j): largest and total patch extent over the parts."""
        # Extents at activation k depend only on the output split at j, not on where the
        # segment starts, so one walk from j to the network input serves every i.
        key = (j, axis, parts)
        if key not in self._axis_cache:
            sizes = [hw[axis] for hw in self._shapes[: j + 1]]
            self._axis_cache[key] = _walk_back(self.layers[:j], sizes, axis, split_axis(sizes[-1], parts))
        largest, total = self._axis_cache[key]
        return largest[i : j + 1], total[i : j + 1]

    def _seconds(self, i: int, j: int, totals: Sequence[int], tiles: int, checkpointed: bool) -> float:
        forward = backward = 0.0
        for k, layer in enumerate(self.layers[i:j]):
            forward += self.cost.op_seconds(layer, totals[k], totals[k + 1], backward=False, launches=tiles)
            backward += self.cost.op_seconds(layer, totals[k], totals[k + 1], backward=True, launches=tiles)
        # A checkpointed segment runs its forward twice: once plainly, once before backward.
        return forward * (2 if checkpointed else 1) + backward


def _extend(fronts: list[list[_State]], items: Sequence[tuple[int, _State]]) -> None:
    """Append each (position, state) to its position's front."""
    for position, state in items:
        fronts[position].append(state)


def _walk_back(
    layers: Sequence[Layer], sizes: Sequence[int], axis: int, parts: Sequence[Interval]
) -> tuple[list[int], list[int]]:
    """Largest and total clipped patch extent of every activation over the output parts.

    Vectorised over the parts; the same interval rule as :func:`regions.axis_input`, whose
    agreement with it the tests check.
    """
    start = np.array([p.start for p in parts], dtype=np.int64)
    stop = np.array([p.stop for p in parts], dtype=np.int64)
    largest = [0] * len(sizes)
    total = [0] * len(sizes)
    largest[-1], total[-1] = int((stop - start).max()), int((stop - start).sum())
    for k in range(len(layers) - 1, -1, -1):
        window = layers[k].window
        live = stop > start
        lo_pad, stride = window.pads(axis)[0], window.stride[axis]
        new_start = np.clip(start * stride - lo_pad, 0, sizes[k])
        new_stop = np.clip((stop - 1) * stride - lo_pad + window.span(axis), 0, sizes[k])
        # Parts with nothing left to compute stay empty further back.
        start, stop = np.where(live, new_start, 0), np.where(live, np.maximum(new_stop, new_start), 0)
        extent = stop - start
        largest[k], total[k] = int(extent.max()), int(extent.sum())
    return largest, total


def _grids(out_h: int, out_w: int, steps: Sequence[int]) -> list[tuple[int, int]]:
    """Candidate grids: the steps on the shorter side, the longer side scaled by the aspect."""
    shaped = [(n, round(n * out_w / out_h)) for n in steps] + [(round(n * out_h / out_w), n) for n in steps]
    return sorted({(r, c) for r, c in shaped if 1 <= r <= out_h and 1 <= c <= out_w})


def _pareto_pairs(pairs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Keep pairs not dominated in both coordinates (smaller is better)."""
    kept: list[tuple[int, int]] = []
    for pair in sorted(set(pairs)):
        if not kept or pair[1] < kept[-1][1]:
            kept.append(pair)
    return kept


def _pareto_states(states: list[_State]) -> list[_State]:
    """Keep states not dominated in (kept bytes, seconds)."""
    kept: list[_State] = []
    for state in sorted(states, key=lambda s: (s.kept, s.seconds)):
        if not kept or state.seconds < kept[-1].seconds:
            kept.append(state)
    return kept
