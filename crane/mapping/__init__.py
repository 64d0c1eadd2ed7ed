"""Placement of a schedule on concrete mesh tiles, with legality proved by Z3.

``problem`` (what a block needs), ``from_schedule`` (the problem of a ``segment.block``),
``hops`` (XY routes and hop-bytes), ``heuristic`` (the fast placer), ``search`` (Z3
optimisation for small meshes) and ``legality`` (the Z3 checker and its diagnostics).
The ``map`` pass (``crane.passes.map``) is a thin layer over these.
"""
