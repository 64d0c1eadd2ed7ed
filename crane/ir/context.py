"""Dialects and the context that knows them.

A :class:`Dialect` is a namespace of op classes and enumerations. A :class:`Context` maps
dialect names to *factories*, so that a dialect's module is imported only when its first
op is met: start-up stays fast however many dialects are installed.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from crane.ir.core import Operation


@dataclass(frozen=True)
class Dialect:
    """A named group of ops (and enumerations usable as ``#dialect.enum<case>``)."""

    name: str
    ops: tuple[type[Operation], ...] = ()
    enums: dict[str, tuple[str, ...]] = field(default_factory=dict)
    summary: str = ""

    def op_names(self) -> list[str]:
        return [op.spec.name for op in self.ops if op.spec is not None]


class Context:
    """Registered dialects (lazily loaded) and parsing policy."""

    def __init__(self, *, allow_unregistered: bool = False) -> None:
        self.allow_unregistered = allow_unregistered
        self._factories: dict[str, Callable[[], Dialect]] = {}
        self._loaded: dict[str, Dialect] = {}
        self._ops: dict[str, type[Operation]] = {}
        self.on_unknown_dialect: Callable[[], None] | None = None
        """Called once when an op of an unknown dialect is met (e.g. to load plugins)."""

    def register_dialect(self, name: str, factory: Callable[[], Dialect]) -> None:
        """Make a dialect known; ``factory`` runs on first use."""
        if name in self._factories or name in self._loaded:
            raise ValueError(f"dialect '{name}' is already registered")
        self._factories[name] = factory

    def load_dialect(self, dialect: Dialect) -> None:
        """Register and load a dialect object at once (for tests and plugins)."""
        self._factories.pop(dialect.name, None)
        self._loaded[dialect.name] = dialect
        for op in dialect.ops:
            if op.spec is not None:
                self._ops[op.spec.name] = op

    def get_dialect(self, name: str) -> Dialect | None:
        if name in self._loaded:
            return self._loaded[name]
        factory = self._factories.get(name)
        if factory is None:
            return None
        self.load_dialect(factory())
        return self._loaded[name]

    def lookup_op(self, name: str) -> type[Operation] | None:
        """The op class for a full op name, loading its dialect if needed."""
        found = self._ops.get(name)
        if found is not None:
            return found
        dialect = name.partition(".")[0]
        if dialect not in self._factories and dialect not in self._loaded \
                and self.on_unknown_dialect is not None:
            hook, self.on_unknown_dialect = self.on_unknown_dialect, None
            hook()
        if dialect in self._factories:
            self.get_dialect(dialect)
        return self._ops.get(name)

    def dialect_names(self) -> list[str]:
        return sorted(set(self._factories) | set(self._loaded))

    def enum_cases(self, enum: str) -> tuple[str, ...] | None:
        dialect = self.get_dialect(enum.partition(".")[0])
        return None if dialect is None else dialect.enums.get(enum)

    def suggest_op(self, name: str) -> str | None:
        """The registered op name closest to a misspelt one, if any is close."""
        dialect = self.get_dialect(name.partition(".")[0])
        candidates: Iterable[str] = dialect.op_names() if dialect is not None else self._all_op_names()
        matches = difflib.get_close_matches(name, list(candidates), n=1, cutoff=0.75)
        return matches[0] if matches else None

    def _all_op_names(self) -> list[str]:
        for name in list(self._factories):
            self.get_dialect(name)
        return list(self._ops)
