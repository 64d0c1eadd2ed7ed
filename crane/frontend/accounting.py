"""Counting the work and the memory of a network: MACs, FLOPs, parameters, activations.

Per layer and in total; :func:`render_table` prints them as an aligned text table. The
conventions for FLOPs are those of :mod:`crane.dialects.layers.costs`.
"""

from __future__ import annotations

from dataclasses import dataclass

from crane.dialects.layers.kinds import LAYER_KINDS
from crane.frontend.model import DTYPE_BYTES, Layer, Network, numel


@dataclass(frozen=True, slots=True)
class LayerStats:
    """The counts of one layer."""

    name: str
    kind: str
    out_shape: tuple[int, ...]
    macs: int
    flops: int
    params: int
    param_bytes: int
    activation_bytes: int
    """Bytes of the layer's output tensor."""


@dataclass(frozen=True, slots=True)
class NetworkStats:
    """Per-layer counts and their totals."""

    name: str
    layers: tuple[LayerStats, ...]

    @property
    def macs(self) -> int:
        return sum(s.macs for s in self.layers)

    @property
    def flops(self) -> int:
        return sum(s.flops for s in self.layers)

    @property
    def params(self) -> int:
        return sum(s.params for s in self.layers)

    @property
    def param_bytes(self) -> int:
        return sum(s.param_bytes for s in self.layers)

    @property
    def activation_bytes(self) -> int:
        return sum(s.activation_bytes for s in self.layers)


def layer_stats(layer: Layer, input_shapes: tuple[tuple[int, ...], ...]) -> LayerStats:
    """The counts of one layer, given the shapes of its inputs."""
    kind = LAYER_KINDS[layer.kind]
    trained = [w for w in layer.weights if w.name not in kind.buffers]
    params = sum(w.numel for w in trained)
    param_bytes = sum(w.numel * DTYPE_BYTES[w.dtype] for w in trained)
    return LayerStats(
        name=layer.name, kind=layer.kind, out_shape=layer.out_shape,
        macs=kind.macs(input_shapes, layer.out_shape, layer.attrs),
        flops=kind.flops(input_shapes, layer.out_shape, layer.attrs),
        params=params, param_bytes=param_bytes,
        activation_bytes=numel(layer.out_shape) * DTYPE_BYTES[layer.dtype],
    )


def network_stats(network: Network) -> NetworkStats:
    """The counts of every layer of ``network``."""
    shapes = {decl.name: decl.shape for decl in network.inputs}
    stats = []
    for layer in network.layers:
        stats.append(layer_stats(layer, tuple(shapes[name] for name in layer.inputs)))
        shapes[layer.name] = layer.out_shape
    return NetworkStats(network.name, tuple(stats))


def human(count: float, unit: str = "") -> str:
    """``4.09 G``-style rendering of a count (decimal prefixes)."""
    for factor, prefix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(count) >= factor:
            return f"{count / factor:.2f} {prefix}{unit}"
    return f"{count:.0f} {unit}".rstrip()


def render_table(stats: NetworkStats, limit: int | None = None) -> str:
    """An aligned table of the per-layer counts (the first ``limit`` rows) and the totals."""
    header = ("layer", "kind", "output", "MACs", "FLOPs", "params", "param B", "act B")
    rows = [
        (s.name, s.kind, "x".join(map(str, s.out_shape)) or "scalar", human(s.macs), human(s.flops),
         human(s.params), human(s.param_bytes), human(s.activation_bytes))
        for s in stats.layers[:limit]
    ]
    if limit is not None and len(stats.layers) > limit:
        rows.append((f"... {len(stats.layers) - limit} more", "", "", "", "", "", "", ""))
    rows.append((f"total ({len(stats.layers)} layers)", "", "", human(stats.macs), human(stats.flops),
                 human(stats.params), human(stats.param_bytes), human(stats.activation_bytes)))
    widths = [max(len(row[i]) for row in (header, *rows)) for i in range(len(header))]
    lines = [_row(header, widths), "  ".join("-" * w for w in widths)]
    lines.extend(_row(row, widths) for row in rows)
    return "\n".join(lines)


def _row(cells: tuple[str, ...], widths: list[int]) -> str:
    # Names and kinds read left-aligned; numbers line up on the right.
    return "  ".join(c.ljust(w) if i < 3 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths, strict=True))).rstrip()
