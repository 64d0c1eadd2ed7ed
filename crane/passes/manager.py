"""Run a resolved pipeline over the IR, with verification and instrumentation.

Order of work, for each step of an :class:`OpPipeline` anchored on op ``A``:

- a pass whose ``anchor`` is None or ``A`` runs on ``A`` itself;
- a pass anchored on another op name runs on every such op nested in ``A``, in walk order;
- a nested pipeline ``B(...)`` runs on every op named ``B`` directly inside ``A``'s regions
  (``any(...)``: every isolated-from-above op directly inside).

After each pass the op is verified (unless ``verify_each`` is off). The pipeline stops at
the first pass that reports an error, calls ``ctx.fail()``, or leaves invalid IR.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from crane.ir.core import Operation
from crane.ir.diagnostics import Diagnostic, Severity
from crane.ir.traits import IsolatedFromAbove
from crane.ir.verifier import verify
from crane.passes.context import PassContext
from crane.passes.pipeline import ANY, OpPipeline, PassStep


class Instrumentation:
    """Hooks around every pass run (IR printing, timing...). All methods are optional."""

    def before_pass(self, step: PassStep, op: Operation) -> None:
        return None

    def after_pass(self, step: PassStep, op: Operation, failed: bool) -> None:
        return None


@dataclass
class TimingNode:
    """Wall time of one pass or pipeline level, summed over its runs."""

    name: str
    seconds: float = 0.0
    children: dict[str, TimingNode] = field(default_factory=dict)

    def child(self, name: str) -> TimingNode:
        node = self.children.get(name)
        if node is None:
            node = self.children[name] = TimingNode(name)
        return node


class PassManager:
    """Runs one pipeline; reusable across inputs."""

    def __init__(self, pipeline: OpPipeline, *, verify_each: bool = True,
                 instrumentations: Sequence[Instrumentation] = ()) -> None:
        self.pipeline = pipeline
        self.verify_each = verify_each
        self.instrumentations = list(instrumentations)
        self.timing = TimingNode("total")

    def run(self, root: Operation, ctx: PassContext) -> bool:
        """Run on ``root`` (normally the module); True when every pass succeeded."""
        start = time.perf_counter()
        node = self.timing.child(f"'{root.name}' pipeline")
        try:
            return self._run_pipeline(self.pipeline, root, ctx, node)
        finally:
            node.seconds += time.perf_counter() - start
            self.timing.seconds += time.perf_counter() - start

    def _run_pipeline(self, pipeline: OpPipeline, op: Operation, ctx: PassContext,
                      timing: TimingNode) -> bool:
        for step in pipeline.steps:
            if isinstance(step, OpPipeline):
                ok = all(self._run_nested(step, child, ctx, timing)
                         for child in list(_direct_children(op, step.anchor)))
            else:
                ok = all(self._run_pass(step, target, ctx, timing)
                         for target in list(_pass_targets(op, step)))
            if not ok:
                return False
        return True

    def _run_nested(self, pipeline: OpPipeline, op: Operation, ctx: PassContext,
                    timing: TimingNode) -> bool:
        node = timing.child(f"'{op.name}' pipeline")
        start = time.perf_counter()
        try:
            return self._run_pipeline(pipeline, op, ctx, node)
        finally:
            node.seconds += time.perf_counter() - start

    def _run_pass(self, step: PassStep, op: Operation, ctx: PassContext,
                  timing: TimingNode) -> bool:
        for hook in self.instrumentations:
            hook.before_pass(step, op)
        errors_before = ctx.diagnostics.error_count
        ctx.begin_pass(step.name)
        start = time.perf_counter()
        step.pass_.run(op, ctx)
        timing.child(step.name).seconds += time.perf_counter() - start
        failed = ctx.end_pass() or ctx.diagnostics.error_count > errors_before
        if not failed and self.verify_each:
            failed = self._verify_after(step, op, ctx, timing)
        for hook in self.instrumentations:
            hook.after_pass(step, op, failed)
        return not failed

    def _verify_after(self, step: PassStep, op: Operation, ctx: PassContext,
                      timing: TimingNode) -> bool:
        start = time.perf_counter()
        errors = verify(op, allow_unregistered=ctx.ir_context.allow_unregistered)
        timing.child("(V) verifier").seconds += time.perf_counter() - start
        for error in errors:
            error.notes.append(Diagnostic(Severity.NOTE, f"the IR is invalid after pass '{step.name}'"))
            ctx.diagnostics.emit(error)
        return bool(errors)


def _pass_targets(op: Operation, step: PassStep) -> Iterator[Operation]:
    anchor = step.pass_.anchor
    if anchor is None or anchor == op.name:
        yield op
        return
    for nested in op.walk():
        if nested.name == anchor:
            yield nested


def _direct_children(op: Operation, anchor: str) -> Iterator[Operation]:
    for region in op.regions:
        for block in region.blocks:
            for child in block.ops:
                if child.name == anchor or (anchor == ANY and child.has_trait(IsolatedFromAbove)):
                    yield child


def format_timing(root: TimingNode) -> str:
    """The ``--timing`` report: a tree of wall times with percentages."""
    total = root.seconds or 1e-12
    lines = ["===" + "-" * 60 + "===", "  Execution time report", "===" + "-" * 60 + "===",
             f"  Total: {root.seconds * 1000:.3f} ms", "",
             "   ms      %   name"]
    lines.extend(_timing_lines(root, total, 0))
    return "\n".join(lines)


def _timing_lines(node: TimingNode, total: float, depth: int) -> list[str]:
    lines: list[str] = []
    for child in node.children.values():
        share = 100 * child.seconds / total
        lines.append(f"{child.seconds * 1000:8.3f} {share:5.1f}%  {'  ' * depth}{child.name}")
        lines.extend(_timing_lines(child, total, depth + 1))
    return lines


def format_statistics(ctx: PassContext) -> str:
    """The ``--pass-statistics`` report."""
    lines = ["===" + "-" * 60 + "===", "  Pass statistics report", "===" + "-" * 60 + "==="]
    for pass_name, counters in ctx.statistics.items():
        lines.append(pass_name)
        lines.extend(f"  (S) {value:>8} {name}" for name, value in sorted(counters.items()))
    if not ctx.statistics:
        lines.append("(no statistics)")
    return "\n".join(lines)
