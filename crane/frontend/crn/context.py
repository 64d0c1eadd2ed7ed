"""State shared by one elaboration: sources for error display, the layers built so far,
the blocks and machines in reach, and the budgets that keep a bad file from hanging.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from crane.frontend.crn import ast
from crane.frontend.crn.scope import Scope, Value
from crane.frontend.errors import CrnError, Note
from crane.frontend.model import InputDecl, Layer, SourceLoc
from crane.hardware.machine import Machine

MAX_STEPS = 300_000
"""Statements and loop iterations one elaboration may execute: 30x the 10k-layer benchmark,
and a few seconds of work at most, so a runaway repeat stops quickly."""
MAX_REPEAT = 100_000
"""Iterations of one ``repeat``."""
MAX_DEPTH = 64
"""Nesting of block calls."""
MAX_LAYERS = 20_000
"""Layers one network may have: twice the 10k-layer benchmark and over 20 times the largest
bundled example, so that a repeat count typed one digit too long fails at once rather than
handing every pass a network that takes minutes."""


class Poisoned(Exception):
    """A value whose definition already failed was used; the error is already reported."""


class TooLarge(Exception):
    """The elaboration budget ran out; carries the error that says so."""

    def __init__(self, error: CrnError) -> None:
        super().__init__(error.message)
        self.error = error


@dataclass(frozen=True, slots=True)
class BlockInfo:
    """A block definition and the file it came from (its errors point there)."""

    defn: ast.BlockDef
    file: str


@dataclass(frozen=True, slots=True)
class Frame:
    """Where statements are being executed: file, scope, and how layers get named."""

    file: str
    scope: Scope
    prefix: str = ""
    """Prepended to layer names: ``""`` in a network, ``"layer1."`` inside a block call."""
    suffix: str = ""
    """Appended to names bound in a loop body: ``".2"`` in iteration 2."""
    block: str | None = None
    """The block being elaborated, or None for a network body."""
    stack: tuple[str, ...] = ()
    """Blocks being called, outermost first (for recursion errors)."""

    def loop_iteration(self, index: int) -> Frame:
        """The frame of one iteration of a ``repeat`` body."""
        return Frame(self.file, Scope(self.scope, is_loop=True), self.prefix,
                     f"{self.suffix}.{index}", self.block, self.stack)


BlockExpander = Callable[["Ctx", Frame, ast.Call, BlockInfo, "str | None"], Value]
"""Expands a block call into its layers (``statements.call_block``); an expression that
calls a block reaches it through :attr:`Ctx.expand_block`, so expressions need not import
statements, which evaluate expressions."""


@dataclass
class Ctx:
    """Mutable state of one elaboration (filled statement by statement)."""

    expand_block: BlockExpander
    sources: dict[str, list[str]] = field(default_factory=dict)
    errors: list[CrnError] = field(default_factory=list)
    layers: list[Layer] = field(default_factory=list)
    inputs: list[InputDecl] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    taken: set[str] = field(default_factory=set)
    blocks: dict[str, BlockInfo] = field(default_factory=dict)
    machines: dict[str, tuple[Machine, str, ast.Pos]] = field(default_factory=dict)
    globals: Scope = field(default_factory=Scope)
    net_globals: Scope | None = None
    failed: set[str] = field(default_factory=set)
    """File-level names whose definition failed (already reported; uses stay silent)."""
    steps: int = 0
    trains: bool = False
    """Whether the network has a train section (layers then default to training behaviour)."""

    def loc(self, file: str, pos: ast.Pos) -> SourceLoc:
        return SourceLoc(file, pos[0], pos[1])

    def line(self, file: str, line: int) -> str:
        lines = self.sources.get(file, [])
        return lines[line - 1] if 0 < line <= len(lines) else ""

    def error(self, file: str, pos: ast.Pos, message: str, notes: Iterable[Note] = ()) -> CrnError:
        """A located error (to raise or to record)."""
        return CrnError(self.loc(file, pos), message, tuple(notes), self.line(file, pos[0]), pos[2])

    def note(self, file: str, pos: ast.Pos, message: str) -> Note:
        return Note(message, self.loc(file, pos), self.line(file, pos[0]))

    def step(self, file: str, pos: ast.Pos) -> None:
        """Count one unit of work; a runaway file stops with a clear error, not a hang."""
        self.steps += 1
        if self.steps > MAX_STEPS:
            raise TooLarge(self.error(
                file, pos, f"the model is too large: more than {MAX_STEPS} statements after "
                "expanding blocks and repeats; check the repeat counts"))

    def add_layer(self, layer: Layer, file: str, pos: ast.Pos) -> None:
        """Append ``layer``, unless the network already has :data:`MAX_LAYERS`."""
        if len(self.layers) >= MAX_LAYERS:
            raise TooLarge(self.error(
                file, pos, f"the model is too large: more than {MAX_LAYERS} layers after expanding "
                "blocks and repeats; check the repeat counts"))
        self.layers.append(layer)

    def unique(self, name: str) -> str:
        """``name``, or ``name_1``, ``name_2``... if a layer already has it."""
        candidate, index = name, 0
        while candidate in self.taken:
            index += 1
            candidate = f"{name}_{index}"
        self.taken.add(candidate)
        return candidate
