"""The body of ``crane-opt``: set up registries and the pipeline, then process the input."""

from __future__ import annotations

import argparse
import json
import sys

from crane.atomic import write_atomically
from crane.dialects import default_context
from crane.dialects.builtin import ModuleOp
from crane.hardware.machine import Machine
from crane.highlight import color_diagnostics, colorize, use_color
from crane.ir.diagnostics import DiagnosticEngine, render
from crane.limits import MAX_BATCH
from crane.limits.files import describe
from crane.passes.manager import format_statistics, format_timing
from crane.passes.pipeline import OpPipeline, build_pipeline, format_built
from crane.passes.pipeline_text import PipelineSyntaxError
from crane.passes.plugins import (
    PluginError,
    PluginRegistrar,
    load_entry_point_plugins,
    load_plugin_file,
)
from crane.passes.registry import PassRegistry
from crane.tools.exit_codes import EXIT_DIAGNOSTICS, EXIT_OK, EXIT_USAGE, UsageError
from crane.tools.expected_diagnostics import verify_diagnostics
from crane.tools.guard import check_whole
from crane.tools.inputs import input_format, parse_dims, read_source
from crane.tools.ir_printing import IRPrinting, IRPrintingOptions
from crane.tools.list_passes import format_pass_list
from crane.tools.machines import MachineNotFound, resolve_machine
from crane.tools.opt_session import ChunkResult, OptSession, emitted_for_checking
from crane.tools.pictures import PictureRequest, emit_picture, picture_request
from crane.tools.split_input import join_outputs, split_input


class Invocation:
    """One command line, from arguments to exit status."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.input_text: str | None = None
        self.context = default_context(allow_unregistered=args.allow_unregistered_dialect)
        self.registry = PassRegistry.with_in_tree_passes()
        self.registrar = PluginRegistrar(self.registry, self.context)
        self._entry_points_loaded = False
        self.picture: PictureRequest | None = None
        self.context.on_unknown_dialect = self._load_entry_points

    # ----- setup

    def _load_entry_points(self) -> None:
        if not self._entry_points_loaded:
            self._entry_points_loaded = True
            load_entry_point_plugins(self.registrar)

    def _build_pipeline(self, text: str) -> OpPipeline:
        try:
            return build_pipeline(text, self.registry, self.context)
        except PipelineSyntaxError:
            if self._entry_points_loaded:
                raise
            self._load_entry_points()  # maybe an installed plugin knows the name
            return build_pipeline(text, self.registry, self.context)

    def run(self) -> int:
        try:
            return self._run()
        except UsageError as exc:
            self._print_error(f"crane-opt: error: {exc}")
            return EXIT_USAGE
        except PluginError as exc:
            self._print_error(f"crane-opt: error: {exc}")
            return EXIT_USAGE

    def _print_error(self, text: str) -> None:
        """Diagnostics to stderr, coloured on a terminal (``--color``)."""
        print(color_diagnostics(text) if use_color(self.args.color, sys.stderr) else text, file=sys.stderr)

    def _run(self) -> int:
        for plugin in self.args.load_pass_plugin:
            load_plugin_file(plugin, self.registrar)
        if self.args.list_passes:
            self._load_entry_points()
            print(format_pass_list(self.registry))
            return EXIT_OK
        pipeline = None
        if self.args.pipeline is not None:
            try:
                pipeline = self._build_pipeline(self.args.pipeline)
            except PipelineSyntaxError as exc:
                self._print_error(exc.render(self.args.pipeline, "<pass-pipeline>"))
                return EXIT_USAGE
            if self.args.dump_pass_pipeline:
                print(format_built(pipeline), file=sys.stderr)
        try:
            self.picture = picture_request(self.args)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        return self._process(pipeline)

    # ----- processing

    def _read_input(self) -> tuple[str | bytes, str]:
        name = self.args.input
        fmt = input_format("<stdin>" if name == "-" else name, self.args.input_format)
        try:
            return read_source(name, fmt), "<stdin>" if name == "-" else name
        except FileNotFoundError as exc:
            raise UsageError(f"cannot open input file '{name}': no such file") from exc
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"cannot read input file '{name}': {describe(exc)}") from exc

    def _session(self, pipeline: OpPipeline | None, filename: str) -> OptSession:
        args = self.args
        printing = IRPrintingOptions(
            before=args.print_ir_before, after=args.print_ir_after,
            before_all=args.print_ir_before_all, after_all=args.print_ir_after_all,
            after_change=args.print_ir_after_change, after_failure=args.print_ir_after_failure,
            generic=args.print_op_generic, debuginfo=args.print_debuginfo,
        )
        return OptSession(
            self.context, pipeline, verify_each=args.verify_each, generic=args.print_op_generic,
            debuginfo=args.print_debuginfo,
            input_format=input_format(filename, args.input_format),
            instrumentations=[IRPrinting(printing)] if printing.active else [],
            frontend_options=self._frontend_options(input_format(filename, args.input_format)),
            machine=self._machine(),
        )

    def _machine(self) -> Machine | None:
        """``--machine``: the machine every input is retargeted to (``crane.tools.machines``)."""
        spec = self.args.machine
        if spec is None:
            return None
        try:
            return resolve_machine(spec)
        except MachineNotFound as exc:
            raise UsageError(f"--machine: {exc}") from None

    def _frontend_options(self, fmt: str) -> dict[str, object]:
        """``--onnx-*``, for the ONNX frontend only (``--machine`` retargets any input)."""
        args = self.args
        try:
            dims = parse_dims(args.onnx_dim)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        if args.onnx_batch is not None and args.onnx_batch <= 0:
            raise UsageError(f"--onnx-batch must be positive, got {args.onnx_batch}")
        check_whole("--onnx-batch", args.onnx_batch, 1, MAX_BATCH)
        given = {"batch": args.onnx_batch, "dims": dims or None, "weights": args.onnx_weights}
        options = {key: value for key, value in given.items() if value is not None}
        if options and fmt != "onnx":
            flag = {"batch": "--onnx-batch", "dims": "--onnx-dim",
                    "weights": "--onnx-weights"}[next(iter(options))]
            raise UsageError(f"{flag} applies to ONNX input only")
        if fmt == "onnx" and args.machine is not None:
            options["machine"] = self._machine()
        return options

    def _process(self, pipeline: OpPipeline | None) -> int:
        text, filename = self._read_input()
        session = self._session(pipeline, filename)
        if isinstance(text, bytes):
            if self.args.split_input_file:
                raise UsageError("--split-input-file does not apply to binary (ONNX) input")
            pieces: list[tuple[str | bytes, int, str]] = [(text, 1, "")]
            chunks = None
        else:
            self.input_text = text
            chunks = split_input(text) if self.args.split_input_file else None
            pieces = [(c.padded_text(), c.first_line, c.text) for c in chunks] if chunks else [(text, 1, text)]
        outputs: list[str] = []
        failed = False
        for padded, first_line, raw in pieces:
            result = session.run_chunk(padded, filename)
            failed |= self._report(result, raw, first_line, filename)
            if result.output is not None:
                outputs.append(result.output)
            self._report_pass_info(session, result)
        if failed:
            return EXIT_DIAGNOSTICS
        if self.args.cost_report is not None and not self._cost_report(session.last_module):
            return EXIT_DIAGNOSTICS
        if self.picture is not None:
            return emit_picture(session.last_module, self.picture)
        self._write_output(join_outputs(outputs) if chunks else "".join(outputs))
        return EXIT_OK

    def _cost_report(self, module: ModuleOp | None) -> bool:
        """``--cost-report``: JSON to a file (atomically), or a table to stderr for '-'."""
        from crane.cost.report import cost_report_of, format_cost_table

        report = None if module is None else cost_report_of(module)
        if report is None:
            print("crane-opt: error: --cost-report needs a scheduled module: add the 'segment' "
                  "pass to the pipeline", file=sys.stderr)
            return False
        if self.args.cost_report == "-":
            print(format_cost_table(report), file=sys.stderr)
            return True
        self._write_atomically(self.args.cost_report, json.dumps(report, indent=2) + "\n", "--cost-report")
        return True

    def _report(self, result: ChunkResult, raw: str, first_line: int, filename: str) -> bool:
        """Print or check the chunk's diagnostics; True if the run counts as failed."""
        engine = DiagnosticEngine()
        engine.sources.add(filename, "\n" * (first_line - 1) + raw)
        if self.args.verify_diagnostics:
            emitted = emitted_for_checking(result.diagnostics, engine, filename)
            failures = verify_diagnostics(raw, emitted, filename, first_line)
            for failure in failures:
                print(failure, file=sys.stderr)
            return bool(failures)
        for diag in result.diagnostics:
            self._print_error(render(diag, engine.sources))
        return result.output is None

    def _report_pass_info(self, session: OptSession, result: ChunkResult) -> None:
        if self.args.timing and session.managers:
            print(format_timing(session.managers[-1].timing), file=sys.stderr)
        if self.args.pass_statistics and result.pass_context is not None:
            print(format_statistics(result.pass_context), file=sys.stderr)

    def _write_output(self, text: str) -> None:
        target = self.args.output
        if target is None or target == "-":
            sys.stdout.write(colorize(text, "ir") if use_color(self.args.color, sys.stdout) else text)
            return
        self._write_atomically(target, text, "-o")

    @staticmethod
    def _write_atomically(target: str, text: str, flag: str) -> None:
        try:
            write_atomically(target, text)
        except OSError as exc:
            raise UsageError(f"{flag}: cannot write '{target}': {exc.strerror or exc}") from exc

    def write_crash_reproducer(self) -> None:
        """Input plus pipeline, so that the crash can be replayed (``--crash-reproducer``)."""
        target = self.args.crash_reproducer
        if target is None or self.input_text is None:
            return
        pipeline = self.args.pipeline or ""
        header = (f"// crane-opt crash reproducer\n// RUN: crane-opt %s -p '{pipeline}'"
                  f"{' --split-input-file' if self.args.split_input_file else ''}\n")
        try:
            write_atomically(target, header + self.input_text)
        except OSError as exc:
            print(f"crane-opt: error: --crash-reproducer: cannot write '{target}': "
                  f"{exc.strerror or exc}", file=sys.stderr)
            return
        print(f"crane-opt: wrote a crash reproducer to {target}", file=sys.stderr)
