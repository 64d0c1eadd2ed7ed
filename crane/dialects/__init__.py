"""In-tree dialects, registered lazily: a dialect's module is imported on first use."""

from __future__ import annotations

import importlib
from collections.abc import Callable

from crane.ir.context import Context, Dialect

IN_TREE: dict[str, str] = {
    "builtin": "crane.dialects.builtin:BUILTIN",
    "graph": "crane.dialects.graph_grad:GRAPH_WITH_TRAINING",
    "hw": "crane.dialects.hw:HW",
    "segment": "crane.dialects.segment:SEGMENT",
    "test": "crane.dialects.test:TEST",
    "tile": "crane.dialects.tile:TILE",
}
"""Dialect name -> ``module:attribute`` holding its :class:`Dialect`."""


def _loader(target: str) -> Callable[[], Dialect]:
    module, _, attr = target.partition(":")

    def load() -> Dialect:
        dialect = getattr(importlib.import_module(module), attr)
        assert isinstance(dialect, Dialect)
        return dialect

    return load


def register_in_tree(context: Context) -> None:
    for name, target in IN_TREE.items():
        context.register_dialect(name, _loader(target))


def default_context(*, allow_unregistered: bool = False) -> Context:
    """A context that knows every in-tree dialect."""
    context = Context(allow_unregistered=allow_unregistered)
    register_in_tree(context)
    return context
