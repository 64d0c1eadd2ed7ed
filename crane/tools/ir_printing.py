"""``--print-ir-before/after...``: dump the IR around passes, as comments-bannered text on stderr.

Banners are IR comments (``// -----// IR Dump After cse //----- //``), so a dump can be
cut out and fed back to ``crane-opt``. The op printed is the one the pass ran on.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import TextIO

from crane.ir.core import Operation
from crane.ir.printer import print_op
from crane.passes.manager import Instrumentation
from crane.passes.pipeline import PassStep


@dataclass
class IRPrintingOptions:
    before: frozenset[str] = frozenset()
    after: frozenset[str] = frozenset()
    before_all: bool = False
    after_all: bool = False
    after_change: bool = False
    after_failure: bool = False
    generic: bool = False
    debuginfo: bool = False

    @property
    def active(self) -> bool:
        return bool(self.before or self.after or self.before_all or self.after_all
                    or self.after_change or self.after_failure)


@dataclass
class IRPrinting(Instrumentation):
    options: IRPrintingOptions
    stream: TextIO = field(default_factory=lambda: sys.stderr)
    _before_text: dict[int, str] = field(default_factory=dict)

    def _dump(self, banner: str, op: Operation) -> None:
        text = print_op(op, generic=self.options.generic, debuginfo=self.options.debuginfo)
        self.stream.write(f"// -----// {banner} //----- //\n{text}\n")

    def before_pass(self, step: PassStep, op: Operation) -> None:
        opts = self.options
        if opts.before_all or step.name in opts.before:
            self._dump(f"IR Dump Before {step.name}", op)
        if opts.after_change:
            self._before_text[id(op)] = print_op(op, generic=True, debuginfo=True)

    def after_pass(self, step: PassStep, op: Operation, failed: bool) -> None:
        opts = self.options
        if failed:
            if opts.after_failure or opts.after_all:
                self._dump(f"IR Dump After {step.name} Failed", op)
            return
        if opts.after_all or step.name in opts.after:
            self._dump(f"IR Dump After {step.name}", op)
            return
        if opts.after_change:
            before = self._before_text.pop(id(op), None)
            if before != print_op(op, generic=True, debuginfo=True):
                self._dump(f"IR Dump After {step.name}", op)
