"""The house has floors and no cycles (``docs/floors.md``).

Every package of ``crane`` sits on one level of :data:`LEVELS`. A module may import its own
package and packages on lower levels, never one on its own level or above; and no modules
import each other in a cycle (imports under ``if TYPE_CHECKING:`` are types only and do not
count for cycles, but they do for levels). Imports are read with :mod:`ast`, so a lazy import
inside a function counts like any other.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

CRANE = Path(__file__).resolve().parents[2] / "crane"

LEVELS: tuple[tuple[str, frozenset[str]], ...] = (
    ("1 core: nothing of Crane", frozenset({
        "crane", "crane.ir", "crane.solve", "crane.hardware", "crane.atomic", "crane.limits.files",
        "crane.limits", "crane.limits.ranges"})),
    ("2 dialects", frozenset({"crane.dialects"})),
    ("3a libraries over the IR", frozenset({
        "crane.frontend", "crane.cost", "crane.autodiff", "crane.expand", "crane.alloc",
        "crane.highlight"})),
    ("3b scheduling and execution", frozenset({"crane.schedule", "crane.exec"})),
    ("3c placement, tiling, sweeps", frozenset({"crane.mapping", "crane.tiling", "crane.dse"})),
    ("3d code generation and pictures", frozenset({"crane.codegen", "crane.viz"})),
    ("4 passes", frozenset({"crane.passes"})),
    ("5 tools", frozenset({"crane.tools"})),
    ("6 the `python -m crane.opt` shim", frozenset({"crane.opt"})),
)
"""Levels from the ground up; a package imports only its own and lower levels' packages."""


@dataclass(frozen=True, slots=True)
class Import:
    """``module`` imports ``target`` at ``line``; ``typing_only`` under ``TYPE_CHECKING``."""

    module: str
    target: str
    line: int
    typing_only: bool


def _modules() -> dict[str, Path]:
    found = {}
    for path in CRANE.rglob("*.py"):
        parts = list(path.relative_to(CRANE.parent).with_suffix("").parts)
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


MODULES = _modules()


def _resolve(name: str) -> str:
    """The module ``name`` refers to: itself, or the longest module prefix (an attribute)."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name


def _typing_only(tree: ast.Module) -> set[int]:
    """ids of the import nodes under ``if TYPE_CHECKING:``."""
    nodes: set[int] = set()
    for branch in (n for n in ast.walk(tree) if isinstance(n, ast.If)):
        if "TYPE_CHECKING" in ast.unparse(branch.test):
            nodes.update(id(n) for stmt in branch.body for n in ast.walk(stmt))
    return nodes


def _targets(module: str, path: Path, node: ast.AST) -> list[str]:
    if isinstance(node, ast.Import):
        return [_resolve(a.name) for a in node.names if a.name.split(".")[0] == "crane"]
    if not isinstance(node, ast.ImportFrom):
        return []
    base = module.split(".")[: None if path.name == "__init__.py" else -1]
    source = ".".join(base[: len(base) - node.level + 1] + [node.module or ""]).strip(".") \
        if node.level else (node.module or "")
    if source.split(".")[0] != "crane":
        return []
    return [f"{source}.{a.name}" if f"{source}.{a.name}" in MODULES else _resolve(source)
            for a in node.names]


def imports() -> Iterator[Import]:
    """Every import of a ``crane`` module by a ``crane`` module."""
    for module, path in MODULES.items():
        yield from _imports_of(module, path)


def _imports_of(module: str, path: Path) -> Iterator[Import]:
    tree = ast.parse(path.read_text(), str(path))
    typing = _typing_only(tree)
    for node, target in ((n, t) for n in ast.walk(tree) for t in _targets(module, path, n)):
        if target and target != module:
            yield Import(module, target, node.lineno, id(node) in typing)  # type: ignore[attr-defined]


def package(module: str) -> str:
    """The top-level package a module belongs to (``crane.ir.core`` -> ``crane.ir``)."""
    return ".".join(module.split(".")[:2])


def level(module: str) -> int:
    name = package(module)
    return next(k for k, (_, packages) in enumerate(LEVELS) if name in packages)


def test_every_package_is_on_a_level() -> None:
    placed = {p for _, packages in LEVELS for p in packages}
    assert {package(m) for m in MODULES} <= placed
    assert len(MODULES) > 200  # the walk found the code


def test_no_import_reaches_up_or_sideways() -> None:
    wrong = sorted({f"{i.module}:{i.line} imports {i.target} ({LEVELS[level(i.module)][0]} -> "
                    f"{LEVELS[level(i.target)][0]})"
                    for i in imports() if package(i.module) != package(i.target)
                    and level(i.target) >= level(i.module)})
    assert not wrong, "\n".join(wrong)


def _cycle_through(start: str, graph: dict[str, set[str]]) -> list[str] | None:
    """A path start -> ... -> start, or None."""
    stack: list[tuple[str, list[str]]] = [(start, [start])]
    seen: set[str] = set()
    while stack:
        node, path = stack.pop()
        if start in graph.get(node, ()):
            return [*path, start]
        fresh = sorted(graph.get(node, set()) - seen)
        seen.update(fresh)
        stack += [(nxt, [*path, nxt]) for nxt in fresh]
    return None


def test_no_import_cycles() -> None:
    graph: dict[str, set[str]] = {}
    for i in imports():
        if not i.typing_only:
            graph.setdefault(i.module, set()).add(i.target)
    assert sum(len(v) for v in graph.values()) > 500
    cycles = [cycle for m in sorted(graph) if (cycle := _cycle_through(m, graph))]
    assert not cycles, "\n".join(" -> ".join(c) for c in cycles)


def test_the_checks_see_a_back_arrow_and_a_cycle() -> None:
    """The rules would catch what they forbid: a dialect importing a pass, and a loop."""
    back = Import("crane.dialects.segment", "crane.passes.segment", 1, False)
    assert level(back.target) > level(back.module)
    assert _cycle_through("a", {"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle_through("a", {"a": {"b"}, "b": {"c"}}) is None
