"""Traffic and its price: byte counts turned into energy and into transfer time.

A ``Traffic`` is additive and scalable so the scheduler can build a state's traffic as a
linear combination of per-sub-batch pieces (which is what lets the MILP stay linear).
"""

from __future__ import annotations

from dataclasses import dataclass

from crane.hardware.machine import Machine


@dataclass(frozen=True, slots=True)
class Traffic:
    """Data movement: DRAM bytes, NoC byte-hops, SRAM bytes read and written, and the bytes
    the busiest mesh link carries."""

    dram_bytes: float = 0.0
    noc_byte_hops: float = 0.0
    sram_read_bytes: float = 0.0
    sram_write_bytes: float = 0.0
    noc_link_bytes: float = 0.0
    """Bytes on the busiest mesh link, summed over the transfers (each transfer's busiest
    link, ``crane.cost.placement.link_share``): a bound on how fast the NoC can move them."""

    def __add__(self, other: Traffic) -> Traffic:
        return Traffic(
            self.dram_bytes + other.dram_bytes,
            self.noc_byte_hops + other.noc_byte_hops,
            self.sram_read_bytes + other.sram_read_bytes,
            self.sram_write_bytes + other.sram_write_bytes,
            self.noc_link_bytes + other.noc_link_bytes,
        )

    def scaled(self, factor: float) -> Traffic:
        return Traffic(
            self.dram_bytes * factor, self.noc_byte_hops * factor,
            self.sram_read_bytes * factor, self.sram_write_bytes * factor,
            self.noc_link_bytes * factor,
        )

    @classmethod
    def dram_read(cls, nbytes: float, hops: float) -> Traffic:
        """Read from DRAM into tiles: through a port, across ``hops`` links, into SRAM."""
        return cls(dram_bytes=nbytes, noc_byte_hops=nbytes * hops, sram_write_bytes=nbytes)

    @classmethod
    def dram_write(cls, nbytes: float, hops: float) -> Traffic:
        """Write back from tiles' SRAM to DRAM through the nearest port."""
        return cls(dram_bytes=nbytes, noc_byte_hops=nbytes * hops, sram_read_bytes=nbytes)

    @classmethod
    def on_chip(cls, nbytes: float, hops: float, share: float = 0.0) -> Traffic:
        """Move data between tiles: read from one SRAM, cross the mesh, write another;
        ``share`` of the bytes cross the busiest link."""
        return cls(noc_byte_hops=nbytes * hops, sram_read_bytes=nbytes, sram_write_bytes=nbytes,
                   noc_link_bytes=nbytes * share)


def traffic_energy(traffic: Traffic, machine: Machine) -> float:
    """Picojoules spent by a traffic (Crane Eq. 21 plus SRAM access energy)."""
    return (
        traffic.dram_bytes * machine.dram_pj_per_byte
        + traffic.noc_byte_hops * machine.noc_hop_pj_per_byte
        + traffic.sram_read_bytes * machine.sram_read_pj_per_byte
        + traffic.sram_write_bytes * machine.sram_write_pj_per_byte
    )


def dram_cycles(nbytes: float, machine: Machine) -> float:
    """Cycles to move ``nbytes`` through DRAM: the slower of the memory and its ports."""
    ports = max(1, len(machine.dram_ports))
    bandwidth = min(machine.dram_bandwidth, ports * machine.noc_bandwidth)
    return nbytes / bandwidth * machine.frequency_hz


def link_cycles(link_bytes: float, machine: Machine) -> float:
    """Cycles the busiest mesh link needs for ``link_bytes``."""
    return link_bytes / machine.noc_bandwidth * machine.frequency_hz


def noc_time(traffic: Traffic, tiles: int, machine: Machine) -> float:
    """Cycles the NoC needs for a traffic: the busier of the whole region's links on
    average and the busiest single link."""
    return max(noc_cycles(traffic.noc_byte_hops, tiles, machine),
               link_cycles(traffic.noc_link_bytes, machine))


def noc_cycles(byte_hops: float, tiles: int, machine: Machine) -> float:
    """Cycles for a byte-hop volume spread over the links of a ``tiles``-tile region.

    A mesh region of T tiles has about 4T directed links; all-to-all patterns load them
    unevenly, so the model counts half of them as usable (2T links).
    """
    links = max(1, 2 * tiles)
    return byte_hops / (links * machine.noc_bandwidth) * machine.frequency_hz


def overlapped_latency(compute: float, traffic: Traffic, tiles: int, machine: Machine) -> float:
    """Compute, NoC and DRAM run concurrently; the slowest of the three sets the time."""
    return max(compute, noc_time(traffic, tiles, machine), dram_cycles(traffic.dram_bytes, machine))
