"""Crane's inter-layer scheduling: workloads, blocks, ScT/MeT tables, search and baselines.

Submodules are imported explicitly (``crane.schedule.workload`` ...) so that the cost model
can depend on the workload description without importing the search.
"""
