"""The layer vocabulary of the ``graph`` dialect: kinds, parameters, shape rules, costs.

One table (``kinds.LAYER_KINDS``) defines every layer kind once; the ``graph`` dialect
generates an op per kind from it, and the ``.crn`` frontend checks layer lines against it.
"""
