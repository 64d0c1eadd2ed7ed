"""The base class of every pass.

A pass is a **frozen dataclass**: its fields are its options, and the attribute docstring
under each field is the help text ``--list-passes`` shows. It runs on one op (its
*anchor*) and reports problems through the :class:`PassContext`, never by raising::

    @dataclass(frozen=True)
    class TileConvs(Pass):
        \"\"\"Split every convolution into patches.\"\"\"

        name = "tile-convs"
        summary = "split convolutions into spatial patches"
        anchor = "graph.func"

        rows: int = 2
        \"\"\"Patches along H.\"\"\"

        def run(self, op: Operation, ctx: PassContext) -> None:
            ...

| pipeline text | field |
|---|---|
| ``tile-convs{rows=3}`` | ``rows: int = 2`` |
| ``p{flag}`` or ``p{flag=false}`` | ``flag: bool = False`` |
| ``p{sizes=1,2,3}`` | ``sizes: tuple[int, ...] = ()`` |
| ``p{mode=fast}`` | ``mode: Literal["fast", "exact"] = "exact"`` |
| ``p{label="a b"}`` | ``label: str = ""`` |
| ``p{limit=none}`` | ``limit: float | None = None`` |

A field's type may declare its range (``Annotated[int, Between(1, 64)]``, see
:mod:`crane.passes.options`); a value outside it is a located error in pipeline text and
an ``OptionValueError`` when the pass is built in Python, so ``run`` never sees one.

Passes keep no state between runs (they are frozen) and touch only their anchor op and
what is nested in it, which is what makes nested pipelines well defined.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from crane.passes.options import check_option_values

if TYPE_CHECKING:
    from crane.ir.core import Operation
    from crane.passes.context import PassContext


@dataclass(frozen=True)
class Pass:
    """Base of all passes; subclasses set ``name``, ``summary``, ``anchor`` and ``run``."""

    name: ClassVar[str] = ""
    """The pipeline name, e.g. ``cse``."""
    summary: ClassVar[str] = ""
    """One line for ``--list-passes``."""
    anchor: ClassVar[str | None] = None
    """The op name this pass runs on; None runs on whatever op the pipeline is at."""

    def __post_init__(self) -> None:
        # Options built in Python meet the ranges pipeline text is held to.
        check_option_values(self)

    def run(self, op: Operation, ctx: PassContext) -> None:
        """Transform ``op`` in place; report problems with ``ctx.emit_error``."""
        raise NotImplementedError(f"pass '{self.name}' does not implement run()")
