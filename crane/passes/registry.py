"""Which passes and named pipelines exist, loaded lazily.

In-tree passes are listed as ``module:Class`` strings, so ``crane-opt --version`` imports
none of them. Plugins add to the same registry, through the ``crane.plugins`` entry-point
group or ``--load-pass-plugin FILE.py`` (see ``docs/plugins.md``).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from dataclasses import dataclass

from crane.passes.pass_base import Pass

IN_TREE_PASSES: dict[str, str] = {
    "canonicalize": "crane.passes.generic.canonicalize:Canonicalize",
    "cse": "crane.passes.generic.cse:CommonSubexpressionElimination",
    "dce": "crane.passes.generic.dce:DeadCodeElimination",
    "strip-debuginfo": "crane.passes.generic.strip_debuginfo:StripDebugInfo",
    "print-op-stats": "crane.passes.generic.op_stats:PrintOpStats",
    "autodiff": "crane.passes.autodiff:Autodiff",
    "segment": "crane.passes.segment:Segment",
    "map": "crane.passes.map:Map",
    "spatial-tile": "crane.passes.spatial_tile:SpatialTile",
    "alloc": "crane.passes.alloc:Alloc",
    "codegen": "crane.passes.codegen:Codegen",
    "print-training-stats": "crane.passes.training_stats:PrintTrainingStats",
    "expand-attention": "crane.passes.expand:ExpandAttention",
}


@dataclass(frozen=True)
class NamedPipeline:
    """An alias for a pipeline text, e.g. ``cleanup`` = ``canonicalize,cse,dce``."""

    name: str
    text: str
    summary: str = ""


class PassRegistry:
    """Pass names to classes (imported on first use) and named pipelines."""

    def __init__(self) -> None:
        self._targets: dict[str, str | type[Pass]] = {}
        self._pipelines: dict[str, NamedPipeline] = {}

    @classmethod
    def with_in_tree_passes(cls) -> PassRegistry:
        registry = cls()
        for name, target in IN_TREE_PASSES.items():
            registry.register_lazy(name, target)
        registry.register_pipeline("cleanup", "canonicalize,cse,dce",
                                   "canonicalize, then remove common and dead code")
        registry.register_pipeline("lower-to-tile",
                                   "expand-attention,autodiff,segment{sram-account=true},map,codegen,alloc",
                                   "schedule, place, generate and allocate per-tile programs "
                                   "(attention expanded, a training step first when the "
                                   "network trains)")
        return registry

    def _check_new(self, name: str) -> None:
        if name in self._targets or name in self._pipelines:
            raise ValueError(f"a pass or pipeline named '{name}' is already registered")

    def register(self, pass_class: type[Pass]) -> type[Pass]:
        """Register a pass class (usable as a decorator)."""
        if not pass_class.name:
            raise ValueError(f"{pass_class.__name__} has no 'name'")
        self._check_new(pass_class.name)
        self._targets[pass_class.name] = pass_class
        return pass_class

    def register_lazy(self, name: str, target: str) -> None:
        """Register ``module:Class``, imported when the pass is first used."""
        self._check_new(name)
        self._targets[name] = target

    def register_pipeline(self, name: str, text: str, summary: str = "") -> None:
        self._check_new(name)
        self._pipelines[name] = NamedPipeline(name, text, summary)

    def lookup(self, name: str) -> type[Pass] | None:
        target = self._targets.get(name)
        if target is None or isinstance(target, type):
            return target
        module, _, attr = target.partition(":")
        loaded = getattr(importlib.import_module(module), attr)
        self._targets[name] = loaded
        return loaded

    def pipeline(self, name: str) -> NamedPipeline | None:
        return self._pipelines.get(name)

    def names(self) -> list[str]:
        return sorted(set(self._targets) | set(self._pipelines))

    def passes(self) -> Iterator[type[Pass]]:
        for name in sorted(self._targets):
            found = self.lookup(name)
            if found is not None:
                yield found

    def pipelines(self) -> list[NamedPipeline]:
        return [self._pipelines[n] for n in sorted(self._pipelines)]
