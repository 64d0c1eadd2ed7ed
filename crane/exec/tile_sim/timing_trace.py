"""Chrome trace events of a timing simulation (``{"traceEvents": [...]}``, for Perfetto).

One process per tile (``pid`` = tile id, named ``tile 5 (1, 1)``), one thread per unit:
``compute``, ``dma load``, ``dma store``, ``barrier`` (the wait from arrival to release)
and ``noc <k>`` lanes: transfers of a tile that overlap in time go to different lanes so
that every thread's slices nest properly. Every instruction is a complete event (``"ph":
"X"``) with ``ts``/``dur`` in microseconds of machine time and ``args`` naming the
instruction index, bytes and MACs. A send and its recv each appear on their own tile, joined
by a flow arrow (``"ph": "s"`` / ``"f"`` events with one ``id``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence

    from crane.exec.tile_sim.timing_program import Instr, TileProgram

THREADS = {"compute": 1, "load": 2, "store": 3, "sync": 4}
THREAD_NAMES = {1: "compute", 2: "dma load", 3: "dma store", 4: "barrier"}
NOC_LANE_BASE = 10

Event = dict[str, object]


@dataclass
class TraceBuilder:
    """Collects events while the simulation runs; :meth:`finish` returns them all."""

    frequency_hz: float
    events: list[Event] = field(default_factory=list)
    transfers: dict[int, list[Event]] = field(default_factory=dict)
    sends: dict[object, Event] = field(default_factory=dict)
    """Send slices by their transfer, to draw an arrow to the matching recv."""
    recvs: dict[object, Event] = field(default_factory=dict)

    def micros(self, cycles: float) -> float:
        return cycles / self.frequency_hz * 1e6

    def instruction(self, prog: TileProgram, ins: Instr, issued: float, begin: float,
                    end: float) -> None:
        """Record a completed instruction (``begin`` is when its data started moving)."""
        start = issued if ins.kind == "barrier" else begin
        args: dict[str, object] = {"instruction": ins.index, "op": ins.op.name}
        if ins.nbytes:
            args["bytes"] = ins.nbytes
        if ins.work.macs:
            args["macs"] = ins.work.macs
        if ins.work.vector_ops:
            args["vector_ops"] = ins.work.vector_ops
        event: Event = {"name": ins.label, "cat": ins.kind, "ph": "X", "pid": prog.tile,
                        "ts": self.micros(start), "dur": self.micros(end - start), "args": args}
        if ins.queue == "noc":
            self.transfers.setdefault(prog.tile, []).append(event)
            (self.sends if ins.kind == "send" else self.recvs)[ins.match] = event
            return
        event["tid"] = THREADS[ins.queue]
        self.events.append(event)

    def finish(self, programs: Sequence[TileProgram]) -> list[Event]:
        """All events: metadata first, then instructions by tile and time."""
        meta: list[Event] = []
        for prog in programs:
            meta.append({"name": "process_name", "ph": "M", "pid": prog.tile,
                         "args": {"name": f"tile {prog.tile} ({prog.row}, {prog.col})"}})
            meta.append({"name": "process_sort_index", "ph": "M", "pid": prog.tile,
                         "args": {"sort_index": prog.tile}})
            for tid, name in THREAD_NAMES.items():
                meta.append({"name": "thread_name", "ph": "M", "pid": prog.tile, "tid": tid,
                             "args": {"name": name}})
            lanes = _assign_lanes(self.transfers.get(prog.tile, []))
            for lane in range(lanes):
                meta.append({"name": "thread_name", "ph": "M", "pid": prog.tile,
                             "tid": NOC_LANE_BASE + lane, "args": {"name": f"noc {lane}"}})
        body = self.events + [e for events in self.transfers.values() for e in events]
        body.sort(key=_order)
        return meta + body + self.arrows()

    def arrows(self) -> list[Event]:
        """Flow events (``ph`` s/f) from every send slice to its recv slice."""
        flows: list[Event] = []
        for number, (key, send) in enumerate(self.sends.items()):
            recv = self.recvs.get(key)
            if recv is None:
                continue
            for end, phase in ((send, "s"), (recv, "f")):
                flows.append({"name": "transfer", "cat": "noc", "ph": phase, "id": number,
                              "pid": end["pid"], "tid": end["tid"], "ts": end["ts"], "bp": "e"})
        return flows


def _order(event: Event) -> tuple[int, float]:
    pid, ts = event["pid"], event["ts"]
    assert isinstance(pid, int) and isinstance(ts, float)
    return pid, ts


def _assign_lanes(events: list[Event]) -> int:
    """Give overlapping transfers different NoC lanes (greedy by start); lanes used."""
    free_at: list[float] = []
    for event in sorted(events, key=_order):
        ts, dur = event["ts"], event["dur"]
        assert isinstance(ts, float) and isinstance(dur, float)
        start, stop = ts, ts + dur
        lane = next((k for k, t in enumerate(free_at) if t <= start), len(free_at))
        if lane == len(free_at):
            free_at.append(stop)
        free_at[lane] = stop
        event["tid"] = NOC_LANE_BASE + lane
    return len(free_at)
