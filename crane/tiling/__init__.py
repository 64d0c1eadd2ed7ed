"""Segmented fused-tiled (SFT) execution: spatial tiling with halos, in-segment recomputation,
and the automatic choice of segment cuts and tile grids under a memory cap.

The ``spatial-tile`` pass of :mod:`crane.passes` is meant to be a thin wrapper over this library.
"""

from crane.tiling.cores import CoreWork, SplitDim, backward_on_cores, forward_on_cores, split_layer
from crane.tiling.execute import (
    Segment,
    segmented_backward,
    segmented_forward,
    tiled_backward,
    tiled_forward,
    untiled_backward,
    untiled_forward,
)
from crane.tiling.layers import Layer, SpatialOp, Window, darknet19_trunk, vgg16_trunk
from crane.tiling.memory import CostModel, MemoryModel
from crane.tiling.plan import NoPlanFitsError, Plan, Planner
from crane.tiling.regions import (
    Interval,
    OpRegion,
    Rect,
    chain_regions,
    grid_from_cuts,
    split_grid,
)

__all__ = [
    "CoreWork",
    "SplitDim",
    "backward_on_cores",
    "forward_on_cores",
    "split_layer",
    "CostModel",
    "Interval",
    "Layer",
    "SpatialOp",
    "MemoryModel",
    "NoPlanFitsError",
    "OpRegion",
    "Plan",
    "Planner",
    "Rect",
    "Segment",
    "Window",
    "chain_regions",
    "darknet19_trunk",
    "grid_from_cuts",
    "segmented_backward",
    "segmented_forward",
    "split_grid",
    "tiled_backward",
    "tiled_forward",
    "untiled_backward",
    "untiled_forward",
    "vgg16_trunk",
]
