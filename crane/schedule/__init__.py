"""Crane's inter-layer scheduling: blocks, the search over ScT/MeT tables, baselines.

Its input, the per-sample ``Workload``, lives with the cost model that prices it
(``crane.cost.workload``); the tables live with the ``segment`` dialect that stores and
verifies them (``crane.dialects.segment_tables``). Submodules are imported explicitly.
"""
