"""Bandwidth sharing for the timing simulator: transfers as fluid flows over resources.

Every transfer in flight (a DMA through a DRAM port, a NoC message along its route) is a
*flow* that needs some *resources*, each with a capacity in bytes per cycle: the DRAM
(aggregate bandwidth), a DRAM port (one NoC link's bandwidth into the mesh), a directed
mesh link. Rates are **max-min fair** (progressive filling): the most contended resource
is split equally among its flows, those flows are fixed at that rate, and the rest of the
capacity goes on to the next bottleneck. So two transfers sharing one link each get half
of it and take twice as long, while a transfer limited elsewhere leaves its unused share
to the others. Rates are recomputed only when a flow starts or ends (no per-cycle steps).

Routes are dimension-ordered (XY): along the row to the destination column first, then
along the column; a route given explicitly (``tile.send``'s ``route``) is used as is.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field

Resource = Hashable
"""``("dram",)``, ``("port", p)``, ``("link", a, b)`` or ``("local", t)``."""

_EPS = 1e-6
"""Bytes, or cycles at the flow's rate, below which a flow counts as finished."""


def xy_route(src: int, dst: int, cols: int) -> tuple[int, ...]:
    """Tile ids from ``src`` to ``dst`` (both included), X (columns) first, then Y."""
    row, col = divmod(src, cols)
    drow, dcol = divmod(dst, cols)
    path = [src]
    step = 1 if dcol > col else -1
    while col != dcol:
        col += step
        path.append(row * cols + col)
    step = 1 if drow > row else -1
    while row != drow:
        row += step
        path.append(row * cols + col)
    return tuple(path)


def route_links(route: Sequence[int]) -> tuple[Resource, ...]:
    """The directed links a route crosses."""
    return tuple(("link", a, b) for a, b in zip(route, route[1:], strict=False))


@dataclass(slots=True)
class Flow:
    """One transfer in flight."""

    key: Hashable
    remaining: float
    resources: tuple[Resource, ...]
    rate: float = 0.0
    started: float = 0.0


@dataclass
class FlowNetwork:
    """The transfers in flight and their max-min fair rates."""

    capacity: dict[Resource, float]
    """Bytes per cycle of every resource a flow may name."""
    flows: dict[Hashable, Flow] = field(default_factory=dict)
    now: float = 0.0
    _dirty: bool = False

    def add(self, key: Hashable, nbytes: float, resources: Sequence[Resource]) -> None:
        """Start a transfer at the current time (call :meth:`advance` first)."""
        for r in resources:
            if r not in self.capacity:
                raise KeyError(f"unknown resource {r}")
        self.flows[key] = Flow(key, float(nbytes), tuple(resources), started=self.now)
        self._dirty = True

    def advance(self, now: float) -> None:
        """Move every flow forward to time ``now`` at its current rate."""
        elapsed = now - self.now
        if elapsed > 0:
            for f in self.flows.values():
                f.remaining -= f.rate * elapsed
        self.now = max(self.now, now)

    def next_finish(self) -> float:
        """When the next flow ends at the current rates (``inf`` with none in flight)."""
        if self._dirty:
            self._rebalance()
        best = math.inf
        for f in self.flows.values():
            if f.rate > 0:
                best = min(best, self.now + max(0.0, f.remaining) / f.rate)
        return best

    def pop_finished(self) -> list[Flow]:
        """Remove and return the flows done by now (within rounding)."""
        done = [f for f in self.flows.values() if f.remaining <= _EPS or f.remaining <= _EPS * f.rate]
        for f in done:
            del self.flows[f.key]
        if done:
            self._dirty = True
        return done

    def _rebalance(self) -> None:
        self._dirty = False
        for key, rate in fair_rates({k: f.resources for k, f in self.flows.items()},
                                    self.capacity).items():
            self.flows[key].rate = rate


def fair_rates(flows: dict[Hashable, tuple[Resource, ...]],
               capacity: dict[Resource, float]) -> dict[Hashable, float]:
    """Max-min fair rates of ``flows`` (by progressive filling over their resources)."""
    users: dict[Resource, set[Hashable]] = {}
    for key, resources in flows.items():
        for r in resources:
            users.setdefault(r, set()).add(key)
    remaining = {r: capacity[r] for r in users}
    rates: dict[Hashable, float] = {k: math.inf for k, res in flows.items() if not res}
    while users:
        bottleneck = min(users, key=lambda r: remaining[r] / len(users[r]))
        share = max(0.0, remaining[bottleneck] / len(users[bottleneck]))
        for key in list(users[bottleneck]):
            rates[key] = share
            for r in flows[key]:
                remaining[r] -= share
                members = users.get(r)
                if members is not None:
                    members.discard(key)
                    if not members:
                        del users[r]
    return rates
