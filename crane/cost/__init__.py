"""The analytical cost model of Crane: utilisation, placement, traffic, layer costs, bounds."""

from crane.cost.bounds import LowerBounds, lower_bounds
from crane.cost.layer import WorkCost, layer_cost
from crane.cost.placement import Mesh, TileRun, dram_hops, mean_hops, split_regions
from crane.cost.traffic import Traffic, dram_cycles, noc_cycles, overlapped_latency, traffic_energy
from crane.cost.utilisation import Partition, best_partition, exact_partition

__all__ = [
    "LowerBounds", "Mesh", "Partition", "TileRun", "Traffic", "WorkCost", "best_partition",
    "dram_cycles", "dram_hops", "exact_partition", "layer_cost", "lower_bounds", "mean_hops",
    "noc_cycles", "overlapped_latency", "split_regions", "traffic_energy",
]
