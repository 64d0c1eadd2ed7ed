"""The layer vocabulary of the ``graph`` dialect: kinds, parameters, rules, costs and the
facts every consumer reads.

One table (``kinds.LAYER_KINDS``) gathers every layer kind, each defined once in its family
module; the ``graph`` dialect generates an op per kind from it, the ``.crn`` frontend checks
layer lines against it, and the higher floors read its facts
(``definition.LayerKind``) or register behaviour against its names. See
``docs/layer-kinds.md``.
"""
