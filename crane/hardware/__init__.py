"""Plain descriptions of tiled machines, shared by the frontend, the cost model and the passes."""

from crane.hardware.machine import DramPort, Machine, builtin_machines

__all__ = ["DramPort", "Machine", "builtin_machines"]
