"""Values and lexical scopes of the elaborator.

A name is bound once per scope. Inside a ``repeat`` body, assigning a name bound outside
the loop (in the same network or block) carries the new value to the next iteration and
past the loop; names first bound in the body are local to one iteration.
"""

from __future__ import annotations

from dataclasses import dataclass

from crane.frontend.crn.ast import Pos
from crane.frontend.model import Shape


@dataclass(frozen=True, slots=True)
class Tensor:
    """A tensor value: the layer or input that produces it, with its type."""

    name: str
    shape: Shape
    dtype: str


@dataclass(frozen=True, slots=True)
class Symbol:
    """A bare word that names nothing (``padding=same``); only some parameters accept it."""

    name: str
    pos: Pos


class _Poison:
    """The value of a name whose definition failed; using it fails silently."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "POISON"


POISON = _Poison()

Value = int | float | bool | str | tuple[object, ...] | Tensor | Symbol | _Poison


class Scope:
    """Bindings of one network, block, loop iteration or the file level.

    Mutable by nature: elaboration binds names one statement at a time.
    """

    __slots__ = ("names", "defs", "parent", "is_loop")

    def __init__(self, parent: Scope | None = None, is_loop: bool = False) -> None:
        self.names: dict[str, Value] = {}
        self.defs: dict[str, tuple[str, Pos]] = {}
        """Where each name was bound: (file, position), for duplicate-name notes."""
        self.parent = parent
        self.is_loop = is_loop

    def lookup(self, name: str) -> Value | None:
        """The value bound to ``name`` here or in an enclosing scope, or None."""
        scope: Scope | None = self
        while scope is not None:
            if name in scope.names:
                return scope.names[name]
            scope = scope.parent
        return None

    def carrier(self, name: str) -> Scope | None:
        """The enclosing scope a loop assignment to ``name`` updates, if it is carried."""
        scope = self
        while scope.is_loop and scope.parent is not None:
            scope = scope.parent
            if name in scope.names:
                return scope
        return None

    def visible(self) -> list[str]:
        """All names visible from here (for "did you mean" hints)."""
        names: list[str] = []
        scope: Scope | None = self
        while scope is not None:
            names.extend(scope.names)
            scope = scope.parent
        return names
