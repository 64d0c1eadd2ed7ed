"""Every layer kind, by name: the one table the frontends, the ``graph`` dialect and every
later consumer read.

A kind is defined once, in its family module (:data:`FAMILIES`); what a definition holds is
described in :mod:`crane.dialects.layers.definition`. Adding a kind to a family means one
:class:`LayerKind` entry there (with its rules beside it, if new) plus the behaviour the
higher floors register against its name (its interpreter kernels); a new family module is
added to :data:`FAMILIES`. ``tests/unit/kinds`` walks every kind through every consumer.
"""

from __future__ import annotations

from collections.abc import Mapping

from crane.dialects.layers import activations, data, dense, elementwise, losses, norms, pools
from crane.dialects.layers.definition import DERIVED, INFERENCE, REQUIRED, LayerKind, coerce
from crane.dialects.layers.values import AttrValue

FAMILIES = (dense, pools, norms, activations, elementwise, data, losses)
"""The modules defining layer kinds, each with a ``KINDS`` tuple."""


def _gather() -> dict[str, LayerKind]:
    found: dict[str, LayerKind] = {}
    for kind in (kind for family in FAMILIES for kind in family.KINDS):
        if kind.name in found:
            raise ValueError(f"layer kind '{kind.name}' is defined twice")
        found[kind.name] = kind
    return found


LAYER_KINDS: Mapping[str, LayerKind] = _gather()
"""Every layer kind by name, in a stable order (family by family)."""

DEFAULT_ATTRS: Mapping[str, Mapping[str, AttrValue]] = {
    kind.name: {
        p.name: coerce(p, p.default)  # type: ignore[arg-type]
        for p in kind.params if p.default not in (REQUIRED, DERIVED, INFERENCE)
    }
    for kind in LAYER_KINDS.values()
}
"""The coerced defaults of each kind's optional parameters (computed once)."""
