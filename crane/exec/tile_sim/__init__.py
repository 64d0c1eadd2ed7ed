"""Simulators of ``tile`` dialect programs.

- :mod:`crane.exec.tile_sim.functional`: executes every ``tile.program`` with numpy and
  returns the final DRAM tensors (``run_programs``); detects deadlock, out-of-bounds
  accesses and overlapping SRAM allocations.
- :mod:`crane.exec.tile_sim.check`: compares those results with the reference interpreter
  on the ``graph.func`` kept in the module (``crane-sim --check``).
- :mod:`crane.exec.tile_sim.timing`: the event-driven timing simulator.
"""
