"""Codegen: a scheduled, placed ``graph.func`` to one straight-line program per mesh tile.

``lower_func(func, schedule, machine)`` (``crane.codegen.lower``) returns a
:class:`~crane.codegen.program.TileModule` of instruction records; ``crane.codegen.listing``
prints them as flat per-tile listings or JSON, ``crane.codegen.to_ir`` as ``tile`` dialect
ops. The modules, in the order they run: ``ownership`` (which layer runs each op),
``plan`` (phases and items from the schedule and placement), ``rules`` (how one op divides
over tiles), ``emit`` (loads, sends, computes, stores, barriers).
"""
