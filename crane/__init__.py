"""Crane: compile DNN inference and training workloads onto tiled accelerators.

The package root imports nothing heavy, so that ``crane-opt --version`` starts fast.
"""

__version__ = "0.1.0"
