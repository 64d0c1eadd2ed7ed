"""A Crane plugin written outside the tree: how busy are the MAC arrays in each block?

The pass ``mac-utilisation{warn-below=F}`` reads a scheduled module (after ``segment``) and,
for every ``segment.block``, compares the MACs the block really does with what the tiles
could do in the block's latency::

    utilisation = MACs of the block's layers for its samples
                  / (latency_cycles * tiles of the machine * MACs per tile per cycle)

It writes the figure on the block as ``tutorial.mac_utilisation`` (the IR keeps it, later
passes ignore it) and reports every block at the ``.crn`` line of its first layer: a
warning when the block does MACs but fewer than ``warn-below`` of what the mesh could
(blocks of pools and other vector work do none), a remark otherwise. Statistics count the
blocks and the warnings::

    crane-opt --load-pass-plugin utilisation.py net.crn \\
        -p 'segment,mac-utilisation{warn-below=0.2}' --pass-statistics

Backward blocks of a training step count ``<layer>.grad`` columns with the layer's
backward MACs (input and weight gradients). This is docs/tutorial.md, part 4.
"""

from __future__ import annotations

from dataclasses import dataclass

from crane.dialects.hw import machine_of
from crane.dialects.segment import ScheduleOp
from crane.ir.attributes import FloatAttr, IntAttr, StringAttr
from crane.ir.core import Operation
from crane.passes.context import PassContext
from crane.passes.pass_base import Pass
from crane.passes.plugins import PluginRegistrar
from crane.schedule.from_graph import workload_of
from crane.cost.workload import LayerWork

UTILISATION_ATTR = "tutorial.mac_utilisation"


def _body(op: Operation) -> list[Operation]:
    """The ops of an op's single-block region (empty when it has none)."""
    if not op.regions or not op.regions[0].blocks:
        return []
    return list(op.regions[0].blocks[0].ops)


def _int(op: Operation, name: str) -> int:
    attr = op.attributes.get(name)
    return attr.value if isinstance(attr, IntAttr) else 0


def _func(module: Operation, name: str) -> Operation | None:
    """The ``graph.func`` called ``name`` at the top of the module."""
    for op in _body(module):
        sym = op.attributes.get("sym_name")
        if op.name == "graph.func" and isinstance(sym, StringAttr) and sym.value == name:
            return op
    return None


def _layer_macs(layers: dict[str, LayerWork], column: str) -> int:
    """MACs per sample of one column: forward, or backward for ``<layer>.grad``."""
    if column.endswith(".grad"):
        layer = layers.get(column.removesuffix(".grad"))
        return layer.backward_macs if layer else 0
    layer = layers.get(column)
    return layer.macs if layer else 0


def _producers(func: Operation) -> dict[str, Operation]:
    """Value name -> the op defining it, to report at a layer's source line."""
    found: dict[str, Operation] = {}
    for op in _body(func):
        for result in op.results:
            if result.name_hint:
                found.setdefault(result.name_hint, op)
    return found


@dataclass(frozen=True)
class MacUtilisation(Pass):
    """Annotate every scheduled block with the fraction of the mesh's MAC cycles it uses.

    Needs a schedule (run it after ``segment``). The figure comes from the cost model: the
    block's ``latency_cycles`` and the MACs of its layers, so it says how well the schedule
    keeps the MAC arrays busy, not what a simulator measures.
    """

    name = "mac-utilisation"
    summary = "annotate segment.block ops with their MAC utilisation; warn about idle ones"
    anchor = "builtin.module"

    warn_below: float = 0.2
    """Warn about blocks whose utilisation is below this fraction (0 turns warnings off)."""

    def run(self, op: Operation, ctx: PassContext) -> None:
        if not 0.0 <= self.warn_below <= 1.0:
            ctx.emit_error(op, f"mac-utilisation: warn-below must be in [0, 1], got {self.warn_below}")
            return
        machine = machine_of(op)
        schedules = [s for s in _body(op) if isinstance(s, ScheduleOp)]
        if machine is None or not schedules:
            ctx.emit_error(op, "mac-utilisation: needs a scheduled module (run 'segment' first)")
            return
        peak = machine.tiles * machine.macs_per_cycle
        for schedule in schedules:
            func = _func(op, schedule.func_name)
            if func is None:
                ctx.emit_error(schedule, f"mac-utilisation: no graph.func @{schedule.func_name}")
                continue
            self._annotate(schedule, func, peak, ctx)

    def _annotate(self, schedule: ScheduleOp, func: Operation, peak: int,
                  ctx: PassContext) -> None:
        layers = {layer.name: layer for layer in workload_of(func).layers}
        producers = _producers(func)
        for index, block in enumerate(schedule.blocks):
            samples = _int(block, "subbatch") * _int(block, "subbatches")
            macs = samples * sum(_layer_macs(layers, c) for c in block.layer_names)
            capacity = block.latency_cycles * peak
            utilisation = macs / capacity if capacity > 0 else 0.0
            block.attributes[UTILISATION_ATTR] = FloatAttr(round(utilisation, 4))
            ctx.statistic("blocks")
            where = producers.get(block.layer_names[0], block)
            text = (f"block {index} ({block.label}, {block.phase}): {macs:,} MACs in "
                    f"{block.latency_cycles:,.0f} cycles, MAC utilisation {utilisation:.1%}")
            if macs and utilisation < self.warn_below:
                ctx.emit_warning(where, f"{text}, below {self.warn_below:.0%}")
                ctx.statistic("blocks-below-threshold")
                continue
            ctx.emit_remark(where, text)


def register(registrar: PluginRegistrar) -> None:
    """Called by ``crane-opt --load-pass-plugin utilisation.py``."""
    registrar.register_pass(MacUtilisation)
