"""``segment``: schedule every ``graph.func`` of a module on its machine (Crane's search)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from functools import cache
from typing import Literal

from crane.cost.report import COST_ATTR, cost_attribute
from crane.dialects.hw import machine_of
from crane.dialects.segment import BlockOp, ScheduleOp
from crane.hardware.machine import Machine
from crane.ir.attributes import StringAttr
from crane.ir.builder import Builder, InsertPoint
from crane.ir.core import Operation
from crane.passes.context import PassContext
from crane.passes.pass_base import Pass
from crane.schedule.evaluate import Plan, tables_of
from crane.schedule.from_graph import graph_batch, workload_of
from crane.schedule.objective import Objective
from crane.schedule.options import state_options
from crane.schedule.policies import schedule
from crane.schedule.search import BlockChoice, Schedule
from crane.schedule.workload import Workload


@cache
def tile_split(plan: Plan, machine: Machine) -> tuple[tuple[int, ...], ...]:
    """Tiles of each column in each state under the split running most of its sub-batches."""
    rows: list[tuple[int, ...]] = []
    n = plan.block.n
    for i, mix in enumerate(plan.mix):
        if not any(mix):
            rows.append((0,) * n)
            continue
        option = state_options(plan.block, i, plan.subbatch, machine)[mix.index(max(mix))]
        rows.append(tuple(option.region(j).count if j in option.columns else 0
                          for j in range(n)))
    return tuple(rows)


def block_op(choice: BlockChoice, machine: Machine) -> BlockOp:
    """The ``segment.block`` of one block of a schedule."""
    plan = choice.plan
    return BlockOp.build(
        [layer.name for layer in plan.block.layers], plan.subbatch, plan.q, tables_of(plan),
        tile_split(plan, machine), plan.fused, choice.cost.latency_cycles,
        choice.cost.energy_pj)


def schedule_op(func: str, found: Schedule, objective: str, machine: Machine) -> ScheduleOp:
    """The ``segment.schedule`` op of a whole-network schedule."""
    blocks = [block_op(choice, machine) for choice in found.blocks]
    return ScheduleOp.build(func, found.policy, objective, found.batch, blocks,
                            found.cost.latency_cycles, found.cost.energy_pj)


def cost_summary(found: Schedule, workload: Workload, machine: Machine,
                 seconds: float) -> dict[str, float]:
    """The figures of the ``crane.cost`` module attribute for one schedule.

    ``peak_sram_bytes`` is per tile: the worst state boundary's on-chip activations spread
    evenly over the tiles (resident weights excluded: they have their own SRAM share);
    ``peak_dram_bytes`` is the weights plus the worst state's spilled activations.
    """
    cost = found.cost
    return {
        "latency_cycles": cost.latency_cycles, "energy_pj": cost.energy_pj,
        "edp": cost.latency_cycles * cost.energy_pj,
        "dram_bytes": cost.traffic.dram_bytes, "noc_byte_hops": cost.traffic.noc_byte_hops,
        "peak_sram_bytes": cost.peak_sram_bytes / machine.tiles,
        "peak_dram_bytes": cost.peak_dram_bytes + workload.total_weight_bytes,
        "latency_lower_bound_cycles": found.bounds.latency_cycles,
        "energy_lower_bound_pj": found.bounds.energy_pj, "schedule_seconds": seconds,
    }


def combine(summaries: list[dict[str, float]]) -> dict[str, float]:
    """Several networks run one after another: totals add up, peaks take the maximum."""
    total = {key: 0.0 for key in summaries[0]}
    for summary in summaries:
        for key, value in summary.items():
            total[key] = max(total[key], value) if key.startswith("peak_") else total[key] + value
    total["edp"] = total["latency_cycles"] * total["energy_pj"]
    return total


@dataclass(frozen=True)
class Segment(Pass):
    """Choose an inter-layer schedule for every ``graph.func`` and cost it.

    For each inference ``graph.func`` the pass builds the scheduler's workload
    (``crane.schedule.from_graph``), reads the machine the module targets (the
    ``hw.machine`` named by the module's ``crane.machine``; the ``edge`` machine when it
    names none), runs the search of ``crane.schedule.policies.schedule`` and inserts a
    ``segment.schedule`` op right after the function (replacing an earlier schedule of
    the same function). The module gets a ``crane.cost`` attribute with the summed cost
    (``crane.cost.report`` turns it into JSON or a table).

    Example: ``crane-opt net.crn -p 'segment{policy=set batch=8}'``. Statistics:
    ``functions``, ``layers``, ``blocks``, ``fused-columns``.
    """

    name = "segment"
    summary = "schedule networks on their machine (segment.schedule) and cost them"
    anchor = "builtin.module"

    policy: Literal["crane", "sequential", "tangram", "set"] = "crane"
    """crane (the full search) or one of the baselines in the same cost model."""
    objective: str = "edp"
    """edp, latency, energy or 'L^p E^q'."""
    batch: int = 0
    """Samples per step; 0 keeps the graph's batch."""
    time_limit: float = 0.05
    """Seconds per MILP solve."""
    max_block: int = 4
    """Most layers in one block."""

    def run(self, op: Operation, ctx: PassContext) -> None:
        try:
            Objective.parse(self.objective)
        except (ValueError, TypeError):
            ctx.emit_error(op, f"unknown objective '{self.objective}' "
                               "(expected edp, latency, energy or 'L^p E^q')")
            return
        body = op.regions[0].blocks[0] if op.regions and op.regions[0].blocks else None
        funcs = [f for f in body.ops if f.name == "graph.func"] if body is not None else []
        machine = machine_of(op) or Machine.edge()
        summaries = [s for s in (self.schedule_func(f, machine, ctx) for f in funcs) if s]
        if summaries:
            op.attributes[COST_ATTR] = cost_attribute(combine(summaries))

    def schedule_func(self, func: Operation, machine: Machine,
                      ctx: PassContext) -> dict[str, float] | None:
        """Schedule one function, insert its ``segment.schedule``; its cost summary."""
        name_attr = func.attributes.get("sym_name")
        name = name_attr.value if isinstance(name_attr, StringAttr) else ""
        batch = self.batch or graph_batch(func)
        began = time.perf_counter()
        try:
            workload = workload_of(func, machine.data_bytes)
            found = schedule(workload, batch, machine, self.policy, self.objective,
                             max_block=self.max_block, time_limit=self.time_limit)
        except ValueError as problem:
            ctx.emit_error(func, f"cannot schedule: {problem}")
            return None
        seconds = time.perf_counter() - began
        self.replace_schedule(func, name, schedule_op(name, found, self.objective, machine))
        ctx.statistic("functions")
        ctx.statistic("layers", len(workload))
        ctx.statistic("blocks", len(found.blocks))
        ctx.statistic("fused-columns", sum(sum(c.plan.fused) for c in found.blocks))
        return cost_summary(found, workload, machine, seconds)

    @staticmethod
    def replace_schedule(func: Operation, name: str, new: ScheduleOp) -> None:
        """Insert ``new`` after ``func``, dropping earlier schedules of the same function."""
        parent = func.parent
        stale = [o for o in parent.ops if isinstance(o, ScheduleOp) and o.func_name == name] \
            if parent is not None else []
        for old in stale:
            old.erase()
        Builder(InsertPoint.after(func)).insert(new)
