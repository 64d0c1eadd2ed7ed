"""``segment``: schedule every ``graph.func`` of a module on its machine (Crane's search)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import Annotated, Literal

from crane.codegen.account import SramAccount, sram_account
from crane.codegen.ownership import CodegenError
from crane.codegen.plan import block_phase
from crane.cost.bounds import lower_bounds
from crane.cost.report import COST_ATTR, cost_attribute
from crane.cost.workload import Workload
from crane.dialects.graph import FuncOp
from crane.dialects.graph_batch import graph_batch
from crane.dialects.hw import machine_of, retarget
from crane.dialects.segment import BlockOp, ScheduleOp
from crane.hardware.machine import Machine
from crane.ir.attributes import StringAttr
from crane.ir.builder import Builder, InsertPoint
from crane.ir.core import Operation
from crane.limits import MAX_BATCH
from crane.limits.ranges import Between, Checked
from crane.passes.codegen_budget import schedule_problem
from crane.passes.context import PassContext
from crane.passes.pass_base import Pass
from crane.schedule.evaluate import BlockCost, Plan, tables_of
from crane.schedule.from_graph import trains, workload_of
from crane.schedule.objective import Objective
from crane.schedule.options import state_options
from crane.schedule.policies import MILP_BLOCK, schedule
from crane.schedule.record import plan_facts
from crane.schedule.search import BlockChoice, Schedule, usable_workers
from crane.schedule.training import TrainingSchedule, schedule_training


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


def block_op(plan: Plan, cost: BlockCost, machine: Machine, phase: str = "forward",
             gradient: bool = False, group: int | None = None) -> BlockOp:
    """The ``segment.block`` of one block of a schedule (``<layer>.grad`` columns if
    ``gradient``; in ``group`` if given)."""
    names = [f"{layer.name}.grad" if gradient else layer.name for layer in plan.block.layers]
    return BlockOp.build(names, plan.subbatch, plan.q, tables_of(plan),
                         tile_split(plan, machine), plan.fused, cost.latency_cycles,
                         cost.energy_pj, phase=phase, group=group,
                         facts=plan_facts(plan, machine))


def group_numbers(choices: Sequence[BlockChoice]) -> list[int | None]:
    """Each block's group number (counting groups from 0), None outside groups."""
    numbers: list[int | None] = []
    count = -1
    for choice in choices:
        count += choice.opens
        numbers.append(count if choice.repeat > 1 else None)
    return numbers


def schedule_op(func: str, found: Schedule, objective: str, machine: Machine) -> ScheduleOp:
    """The ``segment.schedule`` op of a whole-network schedule."""
    blocks = [block_op(choice.plan, choice.cost, machine, group=group)
              for choice, group in zip(found.blocks, group_numbers(found.blocks), strict=True)]
    return ScheduleOp.build(func, found.policy, objective, found.batch, blocks,
                            found.cost.latency_cycles, found.cost.energy_pj)


def training_op(func: str, policy: str, trained: TrainingSchedule, objective: str,
                machine: Machine) -> ScheduleOp:
    """The ``segment.schedule`` of a training step: forward blocks, then BW1/BW2 blocks."""
    blocks = [block_op(t.choice.plan, t.forward, machine) for t in trained.blocks]
    blocks += [block_op(pb.plan, pb.cost, machine, pb.phase, not pb.recompute)
               for t in reversed(trained.blocks) for pb in t.backward]
    return ScheduleOp.build(func, policy, objective, trained.batch, blocks,
                            trained.cost.latency_cycles, trained.cost.energy_pj)


def training_summary(trained: TrainingSchedule, workload: Workload, machine: Machine,
                     seconds: float) -> dict[str, float]:
    """``cost_summary`` of a training step: all phases, DRAM counting weights, gradients,
    optimizer state and saved activations; lower bounds including the backward work."""
    cost = trained.cost
    bounds = lower_bounds(workload, trained.batch, machine, training=True)
    return {
        "latency_cycles": cost.latency_cycles, "energy_pj": cost.energy_pj,
        "edp": cost.latency_cycles * cost.energy_pj,
        "dram_bytes": cost.traffic.dram_bytes, "noc_byte_hops": cost.traffic.noc_byte_hops,
        "peak_sram_bytes": cost.peak_sram_bytes / machine.tiles,
        "peak_dram_bytes": trained.peak_dram_bytes,
        "latency_lower_bound_cycles": bounds.latency_cycles,
        "energy_lower_bound_pj": bounds.energy_pj, "schedule_seconds": seconds,
    }


def _size(nbytes: float) -> str:
    """Bytes in the largest binary unit that keeps them above one."""
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if nbytes >= scale:
            return f"{nbytes / scale:.2f} {unit}"
    return f"{nbytes:.0f} bytes"


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


def report_overflow(func: FuncOp, account: SramAccount, machine: Machine,
                    ctx: PassContext) -> None:
    """One error for a plan whose buffers overflow SRAM: at the graph op making the largest
    live value of the first tile that overflows, with the other tiles counted in a note."""
    first = account.overflows[0]
    made_by = {r.name_hint: op for op in func.body.ops for r in op.results if r.name_hint}
    at = next((made_by[v] for v, _ in first.values if v in made_by), func)
    diag = ctx.emit_error(at, f"the schedule does not fit '{machine.name}' SRAM: "
                              f"{first.describe()}")
    if len(account.overflows) > 1:
        worst = max(account.overflows, key=lambda o: o.needed)
        more = "1 more tile overflows" if len(account.overflows) == 2 else \
            f"{len(account.overflows) - 1} more tiles overflow"
        diag.attach_note(f"{more} too (the worst, "
                         f"tile {worst.tile}, needs {worst.needed:,} bytes in phase "
                         f"'{worst.phase}')")


@dataclass(frozen=True)
class Segment(Pass):
    """Choose an inter-layer schedule for every ``graph.func`` and cost it.

    For each ``graph.func`` the pass builds the scheduler's workload
    (``crane.schedule.from_graph``), reads the machine the module targets (the
    ``hw.machine`` named by the module's ``crane.machine``; the ``edge`` machine when it
    names none, which the pass then adds to the module for the passes after it), runs the
    search of ``crane.schedule.policies.schedule`` and inserts a
    ``segment.schedule`` op right after the function (replacing an earlier schedule of
    the same function). The module gets a ``crane.cost`` attribute with the summed cost
    (``crane.cost.report`` turns it into JSON or a table).

    A function that trains (it has a ``training`` section, or is a training step made by
    ``autodiff``) is scheduled as one training step (``crane.schedule.training``): the
    forward blocks, then for each of them in reverse order its BW1 block (back-propagating
    the sub-batches whose activations stayed in DRAM) and its BW2 blocks (recomputing the
    others, then back-propagating them), each with its own tables, marked with ``phase``
    (see ``crane.dialects.segment``). ``recompute`` chooses what forward keeps. DRAM must
    hold the weights, their gradients, the optimizer state and the saved activations; a
    step that cannot fit is an error naming the capacity it needs. The schedule's total
    includes the optimizer update (the weights and the optimizer's state read and written
    once; the gradients stay on chip, as codegen runs each update beside its gradient),
    which is not a block.

    ``mode=inference`` schedules the forward pass of a network that has a training section
    (``codegen`` refuses a schedule that does not match its function: a training schedule
    of a function ``autodiff`` has not expanded, or the reverse).

    Example: ``crane-opt net.crn -p 'segment{policy=set batch=8}'``. Statistics:
    ``functions``, ``layers``, ``blocks``, ``fused-columns``, ``backward-blocks``.
    """

    name = "segment"
    summary = "schedule networks on their machine (segment.schedule) and cost them"
    anchor = "builtin.module"

    policy: Literal["crane", "sequential", "tangram", "set"] = "crane"
    """crane (the full search) or one of the baselines in the same cost model."""
    objective: Annotated[str, Checked(Objective.parse, "edp, latency, energy or 'L^p E^q'")] = "edp"
    """edp, latency, energy or 'L^p E^q'."""
    batch: Annotated[int, Between(0, MAX_BATCH)] = 0
    """Samples per step; 0 keeps the graph's batch."""
    time_limit: Annotated[float, Between(0, 3600, open_low=True)] = 0.05
    """Seconds per MILP solve."""
    max_block: Annotated[int, Between(1, 32)] = 12
    """Most layers in one block."""
    milp_block: Annotated[int, Between(0, 32)] = MILP_BLOCK
    """crane policy: most layers of a block also solved by the MILP (larger blocks get the
    baselines' patterns only; more is slower, see ``crane.schedule.policies.MILP_BLOCK``)."""
    workers: Annotated[int, Between(0, 64)] = 0
    """Processes solving the search's distinct blocks side by side (networks with at least
    ``crane.schedule.search.PARALLEL_BLOCKS`` of them); 0: one per CPU this process may use,
    at most 8. The schedule does not depend on it."""
    groups: bool = True
    """Inference with the crane and set policies: let runs of blocks form groups with
    their own sub-batch size (``crane.schedule.search``)."""
    recompute: Literal["crane", "keep", "full"] = "crane"
    """Training only: crane (per-block choice of the sub-batches kept, within DRAM), keep
    (every activation kept) or full (every activation recomputed)."""
    sram_account: bool = False
    """Lower the chosen plan (``crane.codegen.account``: map's heuristic placement, codegen,
    alloc's allocator) and refuse it, located, when a tile's buffers do not fit; the cost's
    ``peak_sram_bytes`` is then the busiest tile's allocated peak. ``lower-to-tile`` turns
    it on. Off (or for the training plan of a network ``autodiff`` has not expanded yet,
    which has no program): the cost model's estimate (no lowering; for planning, sweeps
    and the cost reports of schedules alone)."""
    mode: Literal["auto", "inference", "training"] = "auto"
    """auto: a training step for a function with a training section or made by autodiff,
    else inference; inference: the forward pass only (not of a training step); training:
    a training step (the function must have a training section or be one)."""
    record_time: bool = False
    """Also record the search's wall time as ``schedule_seconds`` in ``crane.cost`` (off by
    default, so that the same input always gives the same bytes)."""

    def run(self, op: Operation, ctx: PassContext) -> None:
        body = op.regions[0].blocks[0] if op.regions and op.regions[0].blocks else None
        funcs = [f for f in body.ops if f.name == "graph.func"] if body is not None else []
        machine = machine_of(op)
        if machine is None:
            machine = Machine.edge()
            retarget(op, machine)  # later passes lower for the machine it was scheduled on
        summaries = [s for s in (self.schedule_func(f, machine, ctx) for f in funcs) if s]
        if not self.record_time:
            for summary in summaries:
                summary.pop("schedule_seconds", None)
        if summaries:
            op.attributes[COST_ATTR] = cost_attribute(combine(summaries))

    def schedule_func(self, func: Operation, machine: Machine,
                      ctx: PassContext) -> dict[str, float] | None:
        """Schedule one function, insert its ``segment.schedule``; its cost summary."""
        name_attr = func.attributes.get("sym_name")
        name = name_attr.value if isinstance(name_attr, StringAttr) else ""
        batch = self.batch or graph_batch(func)
        began = time.perf_counter()
        training = self.trains(func, ctx)
        if training is None:
            return None
        try:
            workload = workload_of(func, machine.data_bytes)
            if training:
                return self.schedule_training(func, name, workload, batch, machine, ctx, began)
            found = schedule(workload, batch, machine, self.policy, self.objective,
                             max_block=self.max_block, time_limit=self.time_limit,
                             grouped=None if self.groups else False,
                             milp_block=self.milp_block, workers=usable_workers(self.workers))
        except ValueError as problem:
            ctx.emit_error(func, f"cannot schedule: {problem}")
            return None
        seconds = time.perf_counter() - began
        made = schedule_op(name, found, self.objective, machine)
        self.replace_schedule(func, name, made)
        self.count(ctx, len(workload), [c.plan for c in found.blocks], 0)
        return self.audit(func, made, machine, cost_summary(found, workload, machine, seconds),
                          ctx)

    def trains(self, func: Operation, ctx: PassContext) -> bool | None:
        """Whether ``func`` is scheduled as a training step (``mode``); None after an error."""
        step = "training_step" in func.attributes
        if self.mode == "inference" and step:
            ctx.emit_error(func, "segment{mode=inference}: this function is a training step "
                                 "(autodiff ran); schedule the network before 'autodiff'")
            return None
        if self.mode == "training" and not trains(func):
            ctx.emit_error(func, "segment{mode=training}: this function has no training "
                                 "section; run 'autodiff' (with attach-loss=...) first")
            return None
        return self.mode == "training" or (self.mode == "auto" and trains(func))

    def schedule_training(self, func: Operation, name: str, workload: Workload, batch: int,
                          machine: Machine, ctx: PassContext,
                          began: float) -> dict[str, float] | None:
        """Schedule one training step (forward, BW1, BW2), or report that it cannot fit."""
        _, trained = schedule_training(workload, batch, machine, self.policy, self.objective,
                                       self.recompute, self.max_block, self.time_limit,
                                       self.milp_block, usable_workers(self.workers))
        if not trained.fits:
            capacity = machine.dram_capacity_bytes or 0
            ctx.emit_error(func, f"training step does not fit in DRAM: it needs "
                                 f"{_size(trained.peak_dram_bytes)} (weights, gradients, "
                                 f"optimizer state and saved activations) but '{machine.name}' "
                                 f"has {_size(capacity)} (recompute={self.recompute})")
            return None
        seconds = time.perf_counter() - began
        made = training_op(name, self.policy, trained, self.objective, machine)
        self.replace_schedule(func, name, made)
        backward = [pb.plan for t in trained.blocks for pb in t.backward]
        self.count(ctx, len(workload), [t.choice.plan for t in trained.blocks], len(backward))
        return self.audit(func, made, machine,
                          training_summary(trained, workload, machine, seconds), ctx)

    def audit(self, func: Operation, made: ScheduleOp, machine: Machine,
              summary: dict[str, float], ctx: PassContext) -> dict[str, float] | None:
        """The summary with the plan's exact SRAM peak (``sram-account``), or None after
        refusing a plan whose buffers do not fit or that cannot be lowered."""
        if not self.sram_account or not isinstance(func, FuncOp):
            return summary
        if "training_step" not in func.attributes and any(
                block_phase(b) != "forward" for b in made.blocks):
            return summary  # a training step's plan before autodiff: no program to account yet
        too_small = schedule_problem(func, made, machine)  # codegen's own guard, first
        if too_small is not None:
            ctx.emit_error(*too_small)
            return None
        try:
            account = sram_account(func, made, machine)
        except CodegenError as problem:
            ctx.emit_error(problem.op or func, f"the schedule cannot be lowered: {problem.message}")
            return None
        except ValueError as problem:
            ctx.emit_error(func, f"the schedule cannot be placed: {problem}")
            return None
        if account.fits:
            ctx.statistic("sram-peak-bytes", account.peak_bytes)
            return {**summary, "peak_sram_bytes": account.peak_bytes}
        report_overflow(func, account, machine, ctx)
        return None

    @staticmethod
    def count(ctx: PassContext, layers: int, forward: list[Plan], backward: int) -> None:
        ctx.statistic("functions")
        ctx.statistic("layers", layers)
        ctx.statistic("blocks", len(forward) + backward)
        ctx.statistic("fused-columns", sum(sum(p.fused) for p in forward))
        if backward:
            ctx.statistic("backward-blocks", backward)

    @staticmethod
    def replace_schedule(func: Operation, name: str, new: ScheduleOp) -> None:
        """Insert ``new`` after ``func``, dropping earlier schedules of the same function."""
        parent = func.parent
        stale = [o for o in parent.ops if isinstance(o, ScheduleOp) and o.func_name == name] \
            if parent is not None else []
        for old in stale:
            old.erase()
        Builder(InsertPoint.after(func)).insert(new)
