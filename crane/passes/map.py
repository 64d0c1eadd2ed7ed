"""``map``: place every block of a schedule on mesh tiles and prove the mapping legal."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Annotated, Literal

from crane.cost.workload import Workload
from crane.dialects.hw import machine_of
from crane.dialects.segment import BlockOp, ScheduleOp
from crane.hardware.machine import Machine
from crane.ir.attributes import StringAttr
from crane.ir.core import Operation
from crane.ir.location import UnknownLoc
from crane.limits.ranges import Between
from crane.mapping.from_schedule import mapping_attributes, problem_of
from crane.mapping.heuristic import place
from crane.mapping.hops import hop_bytes
from crane.mapping.legality import check
from crane.mapping.problem import BlockProblem, Mapping
from crane.mapping.search import search
from crane.passes.context import PassContext
from crane.passes.pass_base import Pass
from crane.schedule.from_graph import workload_of


def _workloads(module: Operation, machine: Machine) -> dict[str, Workload | None]:
    """The scheduler's workload of every ``graph.func`` (None where it cannot be built)."""
    body = module.regions[0].blocks[0] if module.regions and module.regions[0].blocks else None
    found: dict[str, Workload | None] = {}
    for func in (f for f in (body.ops if body is not None else ()) if f.name == "graph.func"):
        name = func.attributes.get("sym_name")
        try:
            workload: Workload | None = workload_of(func, machine.data_bytes)
        except ValueError:
            workload = None
        found[name.value if isinstance(name, StringAttr) else ""] = workload
    return found


@dataclass(frozen=True)
class Map(Pass):
    """Place each ``segment.block`` on concrete tiles, pick DRAM ports, and prove legality.

    For every state of every block the pass gives each placed column as many mesh tiles as
    the block's ``tiles`` table says, and one DRAM port, and writes them as the block's
    ``placement`` (state-major, one ``array<i64: ...>`` of tile ids per (state, column);
    tile id = row * cols + col) and ``ports`` (index into the ``hw.machine``'s
    ``dram_ports``, -1 where nothing is placed; the port nearest the column's run, while
    codegen sends each tile's DMA through the port nearest to that tile). The machine is the module's
    ``crane.machine`` (``edge`` when it names none).

    ``search=heuristic`` lays columns out as contiguous snake runs, trying a few layouts and
    keeping the one with the fewest hop-bytes (``crane.mapping.heuristic``);
    ``search=z3`` also asks Z3 to minimise hop-bytes on meshes of at most 16 tiles, within
    ``timeout`` seconds per block, keeping the heuristic's answer when Z3 finds nothing
    better (``crane.mapping.search``). Either way the result is proved legal in Z3
    (``crane.mapping.legality``: tile exclusivity, SRAM capacity, dependency order, XY route
    validity, DRAM port reachability).

    A block that already has ``placement`` and ``ports`` (written by hand) is checked, not
    replaced; each violated rule is an error at the block naming the constraint, the state,
    the layers and the tiles (from Z3's unsat core). Example:
    ``crane-opt net.crn -p 'segment,map{search=z3 timeout=1}'``. Statistics: ``blocks-placed``,
    ``blocks-checked``, ``hop-bytes``, ``prove-ms`` (building and solving the legality
    proofs), ``z3-ms`` (of which inside Z3), ``z3-search-ms``, ``violations``.
    """

    name = "map"
    summary = "place schedules on mesh tiles (placement, ports) and prove them legal with Z3"
    anchor = "builtin.module"

    search: Literal["heuristic", "z3"] = "heuristic"
    """heuristic (snake layouts) or z3 (Z3 minimises hop-bytes on small meshes)."""
    timeout: Annotated[float, Between(0, 3600, open_low=True)] = 2.0
    """Seconds of Z3 optimisation per block (search=z3)."""

    def run(self, op: Operation, ctx: PassContext) -> None:
        body = op.regions[0].blocks[0] if op.regions and op.regions[0].blocks else None
        schedules = [s for s in (body.ops if body is not None else ()) if isinstance(s, ScheduleOp)]
        if not schedules:
            return
        machine = machine_of(op) or Machine.edge()
        workloads = _workloads(op, machine)
        funcs = {f.attributes.get("sym_name"): f for f in body.ops if f.name == "graph.func"} \
            if body is not None else {}
        for schedule in schedules:
            workload = workloads.get(schedule.func_name)
            # Blocks a pass built carry no location: report at the function they schedule.
            fallback = funcs.get(StringAttr(schedule.func_name), op)
            for block in schedule.blocks:
                at = fallback if isinstance(block.location, UnknownLoc) else block
                self.map_block(block, problem_of(block, machine, workload), ctx, at)

    def map_block(self, block: BlockOp, problem: BlockProblem, ctx: PassContext,
                  at: Operation) -> None:
        """Check the block's own mapping, or place it; report what breaks (at ``at``)."""
        given = block.mapping()
        if given is not None:
            mapping = Mapping.from_flat(given[0], given[1], problem.columns)
        else:
            try:
                mapping = place(problem)
            except ValueError as problem_text:
                ctx.emit_error(at, f"cannot place block '{problem.label}': {problem_text}")
                return
            if self.search == "z3":
                mapping, seconds = search(problem, mapping, self.timeout)
                ctx.statistic("z3-search-ms", round(seconds * 1000))
        began = time.perf_counter()
        result = check(problem, mapping)
        ctx.statistic("prove-ms", round((time.perf_counter() - began) * 1000))
        ctx.statistic("z3-ms", round(result.seconds * 1000))
        for violation in result.violations:
            prefix = "illegal mapping" if given is not None else "no legal mapping"
            ctx.emit_error(at, f"{prefix}: {violation.render()}")
        ctx.statistic("violations", len(result.violations))
        if not result.legal:
            return
        ctx.statistic("hop-bytes", round(hop_bytes(problem, mapping)))
        if given is not None:
            ctx.statistic("blocks-checked")
            return
        block.attributes.update(mapping_attributes(mapping))
        ctx.statistic("blocks-placed")
