"""Hand-written tile modules for the timing tests (no tests here): a small machine with round numbers.

The machine runs at 1 GHz, so bandwidths in GB/s are bytes per cycle: every NoC link and
DRAM port moves 16 B/cycle, the DRAM as a whole 64 B/cycle (not a bottleneck unless four
ports stream at once). Elements are one byte (``data_bytes = 1``); the MAC array does 1024
MACs per cycle and the vector unit 8 operations per cycle.
"""

from __future__ import annotations

from crane.dialects import default_context
from crane.ir.core import Operation
from crane.ir.parser import parse_ops

FIELDS = {
    "macs_per_cycle": 1024, "sram_bytes": 65536, "frequency_hz": 1.0e9, "data_bytes": 1,
    "noc_bandwidth": 16.0e9, "noc_hop_pj_per_byte": 5.6, "dram_bandwidth": 64.0e9,
    "dram_pj_per_byte": 60.0, "mac_pj": 0.018, "sram_read_pj_per_byte": 1.05,
    "sram_write_pj_per_byte": 1.87, "vector_lanes": 8, "vector_op_pj": 0.0873,
}


def machine(rows: int, cols: int, ports: list[tuple[int, int]], **changes: float) -> str:
    fields = dict(FIELDS, **changes)
    text = ", ".join(f"{k} = {v}" for k, v in fields.items())
    flat = ", ".join(str(n) for port in ports for n in port)
    return (f'hw.machine {{sym_name = "m", rows = {rows}, cols = {cols}, {text}, '
            f"dram_ports = array<i64: {flat}>}} : () -> ()")


def dram(name: str, shape: tuple[int, ...], role: str = "activation") -> str:
    dims = ", ".join(map(str, shape))
    return (f'tile.dram {{name = "{name}", shape = array<i64: {dims}>, dtype = "f32", '
            f'role = "{role}"}} : () -> ()')


def program(tile: int, cols: int, body: str) -> str:
    row, col = divmod(tile, cols)
    return f"tile.program ({{\n{body}\n}}) {{tile = {tile}, row = {row}, col = {col}}} : () -> ()"


def module(*parts: str) -> Operation:
    text = "builtin.module @t attributes {crane.machine = @m} {\n" + "\n".join(parts) + "\n}\n"
    ops = parse_ops(default_context(), text, "test.mlir")
    assert len(ops) == 1
    return ops[0]


def buf(shape: str) -> str:
    return f"buffer<{shape}xf32, sram>"


def alloc(name: str, shape: str, offset: int = -1) -> str:
    return f"  %{name} = tile.alloc {{offset = {offset}}} : () -> {buf(shape)}"


def load(name: str, shape: str, tensor: str, port: int, offsets: str = "0, 0") -> str:
    return (f'  tile.load %{name} {{tensor = "{tensor}", offsets = array<i64: {offsets}>, '
            f"port = {port}}} : ({buf(shape)}) -> ()")


def store(name: str, shape: str, tensor: str, port: int, offsets: str = "0, 0") -> str:
    return (f'  tile.store %{name} {{tensor = "{tensor}", offsets = array<i64: {offsets}>, '
            f"port = {port}}} : ({buf(shape)}) -> ()")


def relu(out: str, x: str, shape: str) -> str:
    return (f'  tile.compute %{out}, %{x} {{op = "relu", attrs = {{}}}} : '
            f"({buf(shape)}, {buf(shape)}) -> ()")


def send(name: str, shape: str, peer: int, tag: int) -> str:
    return f"  tile.send %{name} {{peer = {peer}, tag = {tag}}} : ({buf(shape)}) -> ()"


def recv(name: str, shape: str, peer: int, tag: int) -> str:
    return f"  tile.recv %{name} {{peer = {peer}, tag = {tag}}} : ({buf(shape)}) -> ()"


def barrier(bid: int, tiles: str) -> str:
    return f"  tile.barrier {{id = {bid}, tiles = array<i64: {tiles}>}} : () -> ()"
