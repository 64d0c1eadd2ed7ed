"""A tiled accelerator: a mesh of tiles (cores with a MAC array and SRAM), a NoC, and DRAM.

Units are fixed so that no caller has to guess: bytes, bytes per second, hertz, picojoules.
The named constructors give the machines of the Crane and SET papers
(``../shared/reference/hardware-constants.md``).
"""

from __future__ import annotations

from dataclasses import Field, asdict, dataclass, field, fields, replace

KIB = 1024
MIB = 1024 * KIB
GIB = 1024 * MIB
GB = 10**9


@dataclass(frozen=True, slots=True)
class DramPort:
    """A DRAM controller attached to the mesh next to tile (row, col)."""

    row: int
    col: int


@dataclass(frozen=True, slots=True)
class Machine:
    """A tiled machine with all cost-model constants in base units."""

    name: str
    rows: int
    cols: int
    macs_per_cycle: int
    """MAC operations per cycle of one tile."""
    sram_bytes: int
    """Local SRAM capacity of one tile."""
    frequency_hz: float
    data_bytes: int = 1
    """Width of one tensor element as the machine stores it (1 for int8)."""
    noc_bandwidth: float = 24 * GB
    """Bytes per second of one NoC link, in each direction."""
    noc_hop_pj_per_byte: float = 5.6
    dram_bandwidth: float = 16 * GB
    """Aggregate DRAM bandwidth in bytes per second, shared by all ports."""
    dram_capacity_bytes: int | None = None
    """None means unconstrained (the inference studies)."""
    dram_pj_per_byte: float = 60.0
    dram_ports: tuple[DramPort, ...] = field(default_factory=tuple)
    mac_pj: float = 0.018
    sram_read_pj_per_byte: float = 1.05
    sram_write_pj_per_byte: float = 1.87
    vector_lanes: int = 64
    """Elementwise/pool/softmax operations per cycle of one tile."""
    vector_op_pj: float = 0.0873

    _hash: int = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        # Machines key the cost model's caches, so they are hashed on every cached call:
        # hash once, from the fields sweeps vary (the ports, up to one per edge tile, only
        # by number); equality still compares every field.
        object.__setattr__(self, "_hash", hash((
            self.name, self.rows, self.cols, self.macs_per_cycle, self.sram_bytes,
            self.frequency_hz, self.noc_bandwidth, self.dram_bandwidth, len(self.dram_ports))))

    def __hash__(self) -> int:
        return self._hash

    @property
    def tiles(self) -> int:
        return self.rows * self.cols

    @property
    def total_macs_per_cycle(self) -> int:
        return self.tiles * self.macs_per_cycle

    def nearest_port(self, tile: int) -> int:
        """The DRAM port a tile's DMA goes through: the nearest one in XY hops (ties go to
        the port declared first); 0 on a machine that declares none."""
        row, col = divmod(tile, self.cols)
        return min(range(len(self.dram_ports)), default=0,
                   key=lambda p: abs(self.dram_ports[p].row - row) + abs(self.dram_ports[p].col - col))

    @staticmethod
    def described_by() -> tuple[Field[object], ...]:
        """The fields that describe a machine (not the cached hash)."""
        return tuple(f for f in fields(Machine) if f.init)

    def as_dict(self) -> dict[str, object]:
        """The describing fields by name (ports as dicts), for keys and records."""
        return {f.name: _plain(getattr(self, f.name)) for f in Machine.described_by()}

    def with_changes(self, **changes: object) -> Machine:
        """A copy with some fields replaced (for design-space sweeps)."""
        return replace(self, **changes)  # type: ignore[arg-type]

    @staticmethod
    def edge_ports(rows: int, cols: int) -> tuple[DramPort, ...]:
        """SET's placement: DRAM ports along the left and right mesh columns."""
        left = tuple(DramPort(r, 0) for r in range(rows))
        right = tuple(DramPort(r, cols - 1) for r in range(rows)) if cols > 1 else ()
        return left + right

    @classmethod
    def edge(cls) -> Machine:
        """Crane/SET edge platform: 4x4 tiles of 1024 MACs, 1 MiB SRAM, 16 GB/s DRAM."""
        return cls(
            name="edge", rows=4, cols=4, macs_per_cycle=1024, sram_bytes=MIB,
            frequency_hz=1e9, dram_bandwidth=16 * GB, dram_ports=cls.edge_ports(4, 4),
        )

    @classmethod
    def cloud(cls) -> Machine:
        """Crane/SET cloud platform: 12x12 tiles, 144 GB/s DRAM, 128 GB for training."""
        return cls(
            name="cloud", rows=12, cols=12, macs_per_cycle=1024, sram_bytes=MIB,
            frequency_hz=1e9, dram_bandwidth=144 * GB, dram_capacity_bytes=128 * GB,
            dram_ports=cls.edge_ports(12, 12),
        )

    @classmethod
    def mbs(cls) -> Machine:
        """The MBS training comparison: 2 tiles of 128x128 MACs, 10 MB SRAM, 32 GB HBM2."""
        return cls(
            name="mbs", rows=1, cols=2, macs_per_cycle=128 * 128, sram_bytes=10 * MIB,
            frequency_hz=1e9, data_bytes=2, noc_bandwidth=100 * GB, dram_bandwidth=300 * GB,
            dram_capacity_bytes=32 * GB, dram_pj_per_byte=3.9 * 8,
            dram_ports=cls.edge_ports(1, 2),
        )

    @classmethod
    def gpu11(cls) -> Machine:
        """One device with 11 GB of memory (RTX 2080 Ti class), for memory-capped training."""
        return cls(
            name="gpu11", rows=1, cols=1, macs_per_cycle=4352 * 2, sram_bytes=6 * MIB,
            frequency_hz=1.35e9, data_bytes=4, noc_bandwidth=616 * GB,
            dram_bandwidth=616 * GB, dram_capacity_bytes=11 * GB,
            dram_ports=(DramPort(0, 0),),
        )


def builtin_machines() -> dict[str, Machine]:
    """The machines every Crane installation knows by name."""
    return {m.name: m for m in (Machine.edge(), Machine.cloud(), Machine.mbs(), Machine.gpu11())}


def _plain(value: object) -> object:
    """A field's value as ``dataclasses.asdict`` gives it (ports as dicts)."""
    if isinstance(value, tuple):
        return tuple(asdict(v) for v in value)
    return value
