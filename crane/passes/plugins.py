"""Out-of-tree passes, pipelines and dialects.

A plugin is a Python module with a function ``register(registrar: PluginRegistrar)``.
Crane finds plugins two ways:

- ``crane-opt --load-pass-plugin my_passes.py`` imports that file;
- an installed package declares an entry point in the ``crane.plugins`` group::

      [project.entry-points."crane.plugins"]
      my-passes = "my_package.crane_plugin:register"

Entry points are only read when a name is not found in-tree or when everything is
listed, so they cost nothing at start-up. See ``docs/plugins.md`` and
``examples/custom_pass/``.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path

from crane.ir.context import Context, Dialect
from crane.passes.pass_base import Pass
from crane.passes.registry import PassRegistry

ENTRY_POINT_GROUP = "crane.plugins"


class PluginError(Exception):
    """A plugin could not be found, imported or registered."""


class PluginRegistrar:
    """What a plugin's ``register`` function receives."""

    def __init__(self, passes: PassRegistry, context: Context) -> None:
        self.passes = passes
        self.context = context

    def register_pass(self, pass_class: type[Pass]) -> type[Pass]:
        return self.passes.register(pass_class)

    def register_pipeline(self, name: str, text: str, summary: str = "") -> None:
        self.passes.register_pipeline(name, text, summary)

    def register_dialect(self, dialect: Dialect | Callable[[], Dialect], name: str | None = None) -> None:
        """Register a dialect object, or a factory (then ``name`` is required)."""
        if isinstance(dialect, Dialect):
            self.context.register_dialect(dialect.name, lambda: dialect)
            return
        if name is None:
            raise PluginError("a dialect factory needs a name")
        self.context.register_dialect(name, dialect)


def load_plugin_file(path: str, registrar: PluginRegistrar) -> None:
    """Import ``path`` and call its ``register(registrar)``."""
    file = Path(path)
    if not file.is_file():
        raise PluginError(f"pass plugin '{path}' does not exist")
    module_name = f"crane_plugin_{file.stem}_{abs(hash(str(file.resolve())))}"
    spec = importlib.util.spec_from_file_location(module_name, file)
    if spec is None or spec.loader is None:
        raise PluginError(f"pass plugin '{path}' is not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # the plugin's own bug: report it, do not crash the tool
        raise PluginError(f"pass plugin '{path}' failed to import: {type(exc).__name__}: {exc}") from exc
    _call_register(getattr(module, "register", None), registrar, f"pass plugin '{path}'")


def load_entry_point_plugins(registrar: PluginRegistrar) -> None:
    """Call every installed ``crane.plugins`` entry point."""
    from importlib.metadata import entry_points

    for entry in entry_points(group=ENTRY_POINT_GROUP):
        try:
            register = entry.load()
        except Exception as exc:
            raise PluginError(f"plugin '{entry.name}' ({entry.value}) failed to load: {exc}") from exc
        _call_register(register, registrar, f"plugin '{entry.name}'")


def _call_register(register: object, registrar: PluginRegistrar, what: str) -> None:
    if not callable(register):
        raise PluginError(f"{what} has no function 'register(registrar)'")
    try:
        register(registrar)
    except (ValueError, PluginError) as exc:
        raise PluginError(f"{what} could not register: {exc}") from exc
