"""``codegen``: one ``tile.program`` per mesh tile from a scheduled, placed network."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from crane.atomic import write_atomically
from crane.codegen.listing import json_text, listing
from crane.codegen.lower import lower_func, scheduled_funcs
from crane.codegen.ownership import CodegenError
from crane.codegen.program import TileModule
from crane.codegen.to_ir import tile_ops
from crane.dialects.hw import machine_of
from crane.dialects.tile import DramOp, ProgramOp
from crane.ir.builder import Builder, InsertPoint
from crane.ir.core import Operation
from crane.ir.printer import print_op
from crane.passes.codegen_budget import schedule_problem
from crane.passes.context import PassContext
from crane.passes.pass_base import Pass


@dataclass(frozen=True)
class Codegen(Pass):
    """Lower the scheduled ``graph.func`` of a module to one ``tile.program`` per mesh tile.

    Needs the function's ``segment.schedule`` (``segment``) with ``placement`` and
    ``ports`` on every forward block (``map``), and the module's ``hw.machine``. The
    programs (``crane.codegen``) follow the schedule block by block and state by state:
    each active column's sub-batches are split over its tiles as the cost model splits
    them (``crane.codegen.partition``); a box several tiles read is fetched once (from
    DRAM, or from the tiles holding a fused or kept producer's output) and spread along
    trees of nearest tiles, big shared boxes in slabs; windowed sends and receives move
    halos and joins without copies; a tile runs a big part in steps so transfers overlap
    compute; results are stored, or kept on chip where the schedule's memory table keeps
    them (also across blocks); concatenations are read from their inputs, never built;
    a labelled barrier ends every state. A block holding a whole-batch op (batchnorm's
    batch statistics, a loss, training dropout) runs layer by layer, its whole-batch ops
    once over the whole batch. After ``autodiff`` the backward and update ops follow, one per
    phase, on the tiles of the layer they differentiate (its ``<layer>.grad`` column when
    the schedule has backward blocks; ``crane.codegen.plan``). Ops that reach no output
    are dead and emit nothing. The ``graph.func`` stays in the
    module (the functional simulator checks the programs against it); one ``tile.dram``
    is declared per DRAM tensor. Earlier ``tile`` ops are replaced.

    ``fit-sram`` lets an op whose preferred split would not fit half a tile's SRAM per
    part take another split (more transfers, smaller buffers).

    ``emit=listing`` or ``emit=json`` also writes the flat per-tile listing or the JSON of
    ``crane.codegen.listing`` to ``output`` (atomically); buffers carry their footprint
    at the machine's element width (``tile.alloc``'s ``bytes``); ``emit=ir`` with ``output``
    writes the whole module's IR there. Example:
    ``crane-opt net.crn -p 'segment,map,codegen{emit=json output=net.tiles.json}'``.
    Statistics: ``programs``, ``instructions``, ``computes``, ``loads``, ``stores``,
    ``transfers``, ``barriers``, ``dram-tensors``.
    """

    name = "codegen"
    summary = "lower a scheduled, placed network to per-tile programs (tile dialect)"
    anchor = "builtin.module"

    emit: Literal["ir", "listing", "json"] = "ir"
    """What ``output`` receives: the module IR, flat per-tile listings or JSON."""
    output: str = ""
    """File to write the ``emit`` form to (nothing is written when empty)."""
    fit_sram: bool = False
    """Prefer, per op, a split whose parts fit half a tile's SRAM over the batch/channel/space order."""

    def run(self, op: Operation, ctx: PassContext) -> None:
        if self.emit != "ir" and not self.output:
            ctx.emit_error(op, f"emit={self.emit} needs an output file (output=FILE)")
            return
        body = op.regions[0].blocks[0] if op.regions and op.regions[0].blocks else None
        found = scheduled_funcs(list(body.ops)) if body is not None else []
        machine = machine_of(op)
        problem = self.precondition(op, found, machine is not None)
        if problem is not None:
            ctx.emit_error(*problem)
            return
        func, schedule = found[0]
        assert schedule is not None and machine is not None and body is not None
        too_small = schedule_problem(func, schedule, machine)
        if too_small is not None:
            ctx.emit_error(*too_small)
            return
        try:
            made = lower_func(func, schedule, machine, self.fit_sram)
        except CodegenError as error:
            ctx.emit_error(error.op or schedule, error.message)
            return
        for old in [o for o in body.ops if isinstance(o, ProgramOp | DramOp)]:
            old.erase()
        builder = Builder(InsertPoint.after(schedule))
        for new in tile_ops(made, machine.data_bytes):
            builder.insert(new)
        self.count(made, ctx)
        if self.output:
            self.write(op, ctx)

    @staticmethod
    def precondition(op: Operation, found: Sequence[tuple[Operation, Operation | None]],
                     has_machine: bool) -> tuple[Operation, str] | None:
        """The first missing input, located, or None."""
        if not found:
            return op, "codegen needs a graph.func to lower"
        if len(found) > 1:
            return found[1][0], "codegen lowers one network per module (one program per tile)"
        func, schedule = found[0]
        if schedule is None:
            return func, "has no segment.schedule (run 'segment' and 'map' before 'codegen')"
        if not has_machine:
            return op, "names no hw.machine (its 'crane.machine' attribute) to generate code for"
        return None

    @staticmethod
    def count(made: TileModule, ctx: PassContext) -> None:
        kinds: dict[str, int] = {}
        for program in made.programs:
            for instruction in program.body:
                kind = type(instruction).__name__
                kinds[kind] = kinds.get(kind, 0) + 1
        ctx.statistic("programs", len(made.programs))
        ctx.statistic("instructions", made.instructions)
        ctx.statistic("computes", kinds.get("Compute", 0) + kinds.get("Copy", 0))
        ctx.statistic("loads", kinds.get("Load", 0))
        ctx.statistic("stores", kinds.get("Store", 0))
        ctx.statistic("transfers", kinds.get("Send", 0))
        ctx.statistic("barriers", kinds.get("Barrier", 0))
        ctx.statistic("dram-tensors", len(made.tensors))

    def write(self, op: Operation, ctx: PassContext) -> None:
        text = (listing(op) if self.emit == "listing" else json_text(op) if self.emit == "json"
                else print_op(op) + "\n")
        try:
            write_atomically(self.output, text)
        except OSError as error:
            ctx.emit_error(op, f"cannot write '{self.output}': {error.strerror or error}")
