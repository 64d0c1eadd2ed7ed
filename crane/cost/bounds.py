"""Lower bounds that no schedule can beat, used to report how close a schedule gets.

* Latency: every MAC on every tile busy every cycle (total MACs / total MACs per cycle),
  and no faster than the compulsory DRAM traffic allows.
* Energy: every MAC once at full utilisation, every vector op once, and the compulsory
  DRAM traffic (network inputs read, weights read, network outputs written, once each; in
  training also the weight gradients written) with no NoC or SRAM energy at all.
"""

from __future__ import annotations

from dataclasses import dataclass

from crane.cost.traffic import dram_cycles
from crane.cost.workload import Workload
from crane.hardware.machine import Machine


@dataclass(frozen=True, slots=True)
class LowerBounds:
    """Latency in cycles and energy in picojoules no schedule can go below."""

    latency_cycles: float
    energy_pj: float
    compulsory_dram_bytes: float


def compulsory_dram_bytes(workload: Workload, batch: int, training: bool = False) -> float:
    """Bytes that must cross the DRAM interface at least once."""
    outputs = set(workload.outputs())
    io = sum(layer.external_input_bytes for layer in workload.layers)
    io += sum(workload.layer(name).output_bytes for name in outputs)
    weights = workload.total_weight_bytes
    return io * batch + weights * (2 if training else 1)


def lower_bounds(workload: Workload, batch: int, machine: Machine,
                 training: bool = False) -> LowerBounds:
    """Compute-bound latency and compulsory-traffic energy of a workload at a batch size."""
    macs = workload.total_macs + (workload.total_backward_macs if training else 0)
    vec = sum(layer.vector_ops + (layer.backward_vector_ops if training else 0)
              for layer in workload.layers)
    dram = compulsory_dram_bytes(workload, batch, training)
    latency = max(macs * batch / machine.total_macs_per_cycle, dram_cycles(dram, machine))
    energy = (macs * batch * machine.mac_pj + vec * batch * machine.vector_op_pj
              + dram * machine.dram_pj_per_byte)
    return LowerBounds(latency, energy, dram)
