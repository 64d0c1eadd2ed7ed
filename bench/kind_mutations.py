"""Mutation run over the layer-kind tables: every fact or registration deleted in turn must
fail a check.

For each table a kind's facts or behaviour live in (the facts each ``LayerKind`` declares
on floor 2, and what the higher floors register against kind names or the kinds' classes),
each entry is deleted in turn, every consumer check of ``tests/unit/kinds/kind_checks.py``
runs on every kind, and the entry is put back. A mutation is *caught* when at least one
check fails. Target: every mutation caught.

Run: ``python bench/kind_mutations.py [--verbose]``; exit status 1 if one survives.
"""

from __future__ import annotations

import argparse
import dataclasses
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator, MutableMapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "unit" / "kinds"))

import kind_checks  # noqa: E402
from kind_samples import Samples, samples  # noqa: E402

from crane.codegen import rules as codegen_rules  # noqa: E402
from crane.dialects import graph, graph_grad  # noqa: E402
from crane.dialects.layers.costs import zero  # noqa: E402
from crane.dialects.layers.definition import LayerKind, Onnx, Tiling  # noqa: E402
from crane.dialects.layers.kinds import LAYER_KINDS  # noqa: E402
from crane.dialects.layers.rules import no_weights  # noqa: E402
from crane.exec import backward, forward  # noqa: E402
from crane.exec.kernels import activation  # noqa: E402
from crane.frontend.onnx import ops_elementwise  # noqa: E402
from crane.frontend.onnx import registry as onnx_registry  # noqa: E402
from crane.highlight import crn_lexer  # noqa: E402
from crane.tiling import chains  # noqa: E402


@dataclass(frozen=True)
class Mutation:
    table: str
    entry: str
    apply: Callable[[], Callable[[], None]]
    """Deletes the entry; returns what puts it back."""


def failing_checks() -> list[str]:
    """``kind: consumer`` for every check that fails on the current tables."""
    found = samples()
    return [f"{kind.name}: {consumer}" for kind in list(LAYER_KINDS.values())
            for consumer, check in kind_checks.CHECKS.items() if _fails(check, kind, found)]


def _fails(check: kind_checks.Check, kind: LayerKind, found: Samples) -> bool:
    try:
        check(kind, found)
    except Exception:  # a missing entry may surface as any error of the consumer
        return True
    return False


def _delete(table: MutableMapping[object, object], key: object) -> Callable[[], Callable[[], None]]:
    def apply() -> Callable[[], None]:
        value = table.pop(key)
        return lambda: table.__setitem__(key, value)
    return apply


def _set_kind(name: str, kind: LayerKind) -> None:
    """Make ``kind`` the definition of ``name`` everywhere a definition is held."""
    LAYER_KINDS[name] = kind  # type: ignore[index]
    graph.LAYER_OPS[name].kind = kind
    for ops in (graph_grad.GRAD_INPUT_OPS, graph_grad.GRAD_WEIGHT_OPS):
        if name in ops:
            ops[name].kind = kind


def _fact(name: str, **changes: object) -> Callable[[], Callable[[], None]]:
    def apply() -> Callable[[], None]:
        original = LAYER_KINDS[name]
        _set_kind(name, dataclasses.replace(original, **changes))  # type: ignore[arg-type]
        return lambda: _set_kind(name, original)
    return apply


def _without_member(owner: object, attribute: str, member: str) -> Callable[[], Callable[[], None]]:
    def apply() -> Callable[[], None]:
        before = getattr(owner, attribute)
        setattr(owner, attribute, before - {member})
        return lambda: setattr(owner, attribute, before)
    return apply


def _one_to_one(op_type: str, index: int) -> Callable[[], Callable[[], None]]:
    def apply() -> Callable[[], None]:
        pairs = ops_elementwise.ONE_TO_ONE[op_type]
        removed = pairs.pop(index)
        return lambda: pairs.insert(index, removed)
    return apply


def _doc_row(name: str) -> Callable[[], Callable[[], None]]:
    def apply() -> Callable[[], None]:
        scratch = Path(tempfile.mkdtemp())
        shutil.copytree(ROOT / "docs", scratch / "docs")
        doc = scratch / "docs" / "crn-language.md"
        doc.write_text("\n".join(line for line in doc.read_text().splitlines()
                                 if not line.startswith(f"| `{name}` |")))
        before = kind_checks.ROOT
        kind_checks.ROOT = scratch
        return lambda: setattr(kind_checks, "ROOT", before)
    return apply


def mutations() -> Iterator[Mutation]:
    keyed_by_kind: dict[str, MutableMapping[object, object]] = {
        "graph op (LAYER_OPS)": graph.LAYER_OPS,  # type: ignore[dict-item]
        "input-gradient op (GRAD_INPUT_OPS)": graph_grad.GRAD_INPUT_OPS,  # type: ignore[dict-item]
        "weight-gradient op (GRAD_WEIGHT_OPS)": graph_grad.GRAD_WEIGHT_OPS,  # type: ignore[dict-item]
        "interpreter forward rule (FORWARD)": forward.FORWARD,  # type: ignore[dict-item]
        "interpreter input gradient (GRAD_INPUT)": backward.GRAD_INPUT,  # type: ignore[dict-item]
        "interpreter weight gradient (GRAD_WEIGHT)": backward.GRAD_WEIGHT,  # type: ignore[dict-item]
        "activation kernels (ACTIVATIONS)": activation.ACTIVATIONS,  # type: ignore[dict-item]
    }
    for table, mapping in keyed_by_kind.items():
        for key in list(mapping):
            yield Mutation(table, str(key), _delete(mapping, key))
    keyed_by_class: dict[str, MutableMapping[object, object]] = {
        "codegen split rule per lowering class (NEEDS)": codegen_rules.NEEDS,  # type: ignore[dict-item]
        "tiling model per spatial role (SPATIAL_OPS)": chains.SPATIAL_OPS,  # type: ignore[dict-item]
    }
    for table, mapping in keyed_by_class.items():
        for key in list(mapping):
            yield Mutation(table, str(key), _delete(mapping, key))
    declared = {t for kind in LAYER_KINDS.values() for t in kind.onnx.op_types}
    for op_type in sorted(declared):  # the converters making no layer are no kind's fact
        yield Mutation("ONNX converter of a declared operator (CONVERTERS)", op_type,
                       _delete(onnx_registry.CONVERTERS, op_type))  # type: ignore[arg-type]
    for op_type, pairs in ops_elementwise.ONE_TO_ONE.items():
        for index, (_, made) in enumerate(pairs):
            yield Mutation("ONNX one-to-one import (ONE_TO_ONE)", f"{op_type} -> {made}",
                           _one_to_one(op_type, index))
    for name, kind in LAYER_KINDS.items():
        yield from _fact_mutations(name, kind)
        yield Mutation("highlighted kind (crn_lexer.LAYER_KINDS)", name,
                       _without_member(crn_lexer, "LAYER_KINDS", name))
        yield Mutation("language reference row (docs/crn-language.md)", name, _doc_row(name))


def _fact_mutations(name: str, kind: LayerKind) -> Iterator[Mutation]:
    facts: dict[str, dict[str, object]] = {
        "lowering": {"lowering": None}, "tiling": {"tiling": Tiling(None)},
        "work": {"work": None}, "onnx": {"onnx": Onnx()},
    }
    if kind.flops is not zero:
        facts["flops"] = {"flops": zero}
    if kind.macs is not zero:
        facts["macs"] = {"macs": zero}
    if kind.has_weights:
        facts["weights"] = {"weights": no_weights}
    if kind.traits:
        facts["traits"] = {"traits": frozenset()}
    for fact, change in facts.items():
        yield Mutation(f"declared fact: {fact}", name, _fact(name, **change))


@contextmanager
def applied(mutation: Mutation) -> Iterator[None]:
    undo = mutation.apply()
    try:
        yield
    finally:
        undo()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--verbose", action="store_true", help="list the checks each mutation fails")
    verbose = parser.parse_args().verbose
    baseline = failing_checks()
    if baseline:
        print("checks fail before any mutation:", *baseline, sep="\n  ")
        return 1
    totals: dict[str, list[int]] = {}
    survivors = []
    for mutation in mutations():
        with applied(mutation):
            failed = failing_checks()
        counts = totals.setdefault(mutation.table, [0, 0])
        counts[0] += 1
        counts[1] += bool(failed)
        if not failed:
            survivors.append(f"{mutation.table}: {mutation.entry}")
        if verbose:
            print(f"{mutation.table}: {mutation.entry}: {len(failed)} failing, e.g. {failed[:2]}")
    assert failing_checks() == [], "a mutation was not undone"
    print(f"{'table':58} {'deleted':>8} {'caught':>7}")
    for table, (made, caught) in totals.items():
        print(f"{table:58} {made:8} {caught:7}")
    made = sum(c[0] for c in totals.values())
    caught = sum(c[1] for c in totals.values())
    print(f"{'total':58} {made:8} {caught:7}")
    for survivor in survivors:
        print(f"survived: {survivor}")
    return 1 if survivors else 0


if __name__ == "__main__":
    sys.exit(main())
