"""One ``crane-opt`` run over one input: parse or translate, verify, run the pipeline, print.

Kept apart from argument parsing so that tests and other tools can drive it in-process.
Every user mistake becomes a diagnostic in ``self.diagnostics``; only genuine bugs
escape as exceptions (the command line turns those into a one-line internal error).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from crane.dialects.builtin import ModuleOp
from crane.dialects.hw import retarget
from crane.hardware.machine import Machine
from crane.ir.context import Context
from crane.ir.diagnostics import Diagnostic, DiagnosticEngine, DiagnosticError, Severity, render
from crane.ir.printer import print_op
from crane.ir.verifier import verify
from crane.passes.context import PassContext
from crane.passes.manager import Instrumentation, PassManager
from crane.passes.pipeline import OpPipeline
from crane.tools.expected_diagnostics import EmittedDiagnostic
from crane.tools.inputs import translate


@dataclass
class ChunkResult:
    """The outcome for one input (or one split chunk)."""

    output: str | None
    """The printed IR, or None when the run failed."""
    diagnostics: list[Diagnostic]
    pass_context: PassContext | None = None


@dataclass
class OptSession:
    """Settings shared by all chunks of one invocation."""

    context: Context
    pipeline: OpPipeline | None = None
    verify_each: bool = True
    generic: bool = False
    debuginfo: bool = False
    input_format: str = "ir"
    instrumentations: list[Instrumentation] = field(default_factory=list)
    frontend_options: Mapping[str, object] = field(default_factory=dict)
    """Options of the input's frontend (``--onnx-batch``...), passed to it when given."""
    machine: Machine | None = None
    """Retarget every input to this machine (``--machine``)."""
    managers: list[PassManager] = field(default_factory=list)
    last_module: ModuleOp | None = None
    """The module of the last chunk that succeeded."""

    def run_chunk(self, text: str | bytes, filename: str) -> ChunkResult:
        engine = DiagnosticEngine()
        engine.sources.add(filename, text if isinstance(text, str) else "")
        try:
            module = translate(self.input_format, text, filename, self.context, self.frontend_options)
        except DiagnosticError as exc:
            for diag in exc.diagnostics:
                engine.emit(diag)
            return ChunkResult(None, engine.diagnostics)
        if self.machine is not None:
            retarget(module, self.machine)
        errors = verify(module, allow_unregistered=self.context.allow_unregistered)
        if errors:
            for error in errors:
                engine.emit(error)
            return ChunkResult(None, engine.diagnostics)
        ctx = PassContext(self.context, engine)
        if self.pipeline is not None and not self._run_pipeline(module, ctx):
            return ChunkResult(None, engine.diagnostics, ctx)
        if engine.error_count:
            return ChunkResult(None, engine.diagnostics, ctx)
        self.last_module = module
        return ChunkResult(print_op(module, generic=self.generic, debuginfo=self.debuginfo),
                           engine.diagnostics, ctx)

    def _run_pipeline(self, module: ModuleOp, ctx: PassContext) -> bool:
        assert self.pipeline is not None
        manager = PassManager(self.pipeline, verify_each=self.verify_each,
                              instrumentations=self.instrumentations)
        self.managers.append(manager)
        ok = manager.run(module, ctx)
        if not ok and not ctx.diagnostics.error_count:
            ctx.diagnostics.emit(Diagnostic(Severity.ERROR, "pass pipeline failed", module.location))
        return ok


def emitted_for_checking(diagnostics: list[Diagnostic], engine_render: DiagnosticEngine,
                         filename: str) -> list[EmittedDiagnostic]:
    """Flatten diagnostics and their notes into what ``--verify-diagnostics`` compares."""
    flat: list[EmittedDiagnostic] = []
    for diag in diagnostics:
        for item in [diag, *diag.notes]:
            pos = item.location.file_line_col()
            line = pos.line if pos is not None and pos.file == filename else None
            column = pos.col if pos is not None and pos.file == filename else None
            single = Diagnostic(item.severity, item.message, item.location, item.length)
            flat.append(EmittedDiagnostic(item.severity.value, line, item.message,
                                          render(single, engine_render.sources), column))
    return flat
