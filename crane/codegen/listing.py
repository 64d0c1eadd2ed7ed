"""Flat per-tile listings and JSON of a module's ``tile`` programs, for people and simulators.

Both read the ``tile`` ops themselves, so they show whatever the module holds (buffer
offsets are -1 until ``alloc`` has run). Buffers are numbered ``b0, b1, ...`` per program
in allocation order.

Listing, one line per instruction::

    # tile 1 (row 0, col 1): 14 instructions
    alloc   b0 2x16x8x8 f32 2048B @-1
    load    b0 <- image[0, 0, 0, 0] port 1
    compute conv2d b2 <- b0, b1 {out = 8, padding = array<i64: 1, 1, 1, 1>, ...}
    send    b2 -> tile 3 tag 7
    recv    b9[0, 0, 4, 0] 2x8x4x8 <- tile 2 tag 8
    copy    b4[0, 0, 0, 0] <- b3[0, 0, 1, 0] 2x8x4x8
    store   b2 -> y[0, 8, 0, 0] port 1
    barrier 0 tiles 0, 1, 2, 3  # conv1..conv2:state0

JSON (``json.dumps`` of :func:`as_json`): ``{"machine": {"rows", "cols"}, "tensors": [{name,
shape, dtype, role}], "programs": [{"tile", "row", "col", "instructions": [...]}]}`` where
each instruction is an object with ``"op"`` (alloc, load, store, send, recv, copy,
compute, barrier) and its fields: ``buffer`` / ``dst`` / ``src`` / ``outputs`` / ``inputs``
are buffer numbers, ``shape``, ``bytes`` (SRAM footprint), ``offset``, ``tensor``, ``offsets``, ``port``,
``accumulate``, ``peer``, ``tag``, ``src_offsets``, ``dst_offsets``, ``kind`` and ``attrs``
(the compute op and its attributes as text), ``id`` and ``tiles``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

from crane.dialects.hw import machine_of
from crane.dialects.tile import (
    AllocOp,
    BarrierOp,
    ComputeOp,
    CopyOp,
    DramOp,
    LoadOp,
    ProgramOp,
    RecvOp,
    SendOp,
    StoreOp,
)
from crane.ir.core import Operation, Value
from crane.ir.types import BufferType

Record = dict[str, Any]


def _top(module: Operation) -> list[Operation]:
    return list(module.regions[0].blocks[0].ops) if module.regions and module.regions[0].blocks else []


def programs(module: Operation) -> list[ProgramOp]:
    return [op for op in _top(module) if isinstance(op, ProgramOp)]


def _dims(shape: tuple[int, ...]) -> str:
    return "x".join(map(str, shape)) or "scalar"


def _ints(values: tuple[int, ...]) -> str:
    return "[" + ", ".join(map(str, values)) + "]"


def records(program: ProgramOp) -> Iterator[Record]:
    """The program's instructions as plain dictionaries (the JSON form)."""
    names: dict[Value, int] = {}

    def ref(value: Value) -> int:
        return names.setdefault(value, len(names))

    for op in program.instructions:
        record = _record(op, ref)
        if record is not None:
            yield record


def _record(op: Operation, ref: Callable[[Value], int]) -> Record | None:
    """One instruction as a dictionary (None for an op that is no instruction)."""
    if isinstance(op, AllocOp):
        btype = op.buffer.type
        assert isinstance(btype, BufferType)
        return {"op": "alloc", "buffer": ref(op.buffer), "shape": list(btype.shape),
                "dtype": str(btype.element), "bytes": op.byte_size, "offset": op.offset}
    if isinstance(op, LoadOp | StoreOp):
        record: Record = {"op": "load" if isinstance(op, LoadOp) else "store",
                          "buffer": ref(op.buffer), "tensor": op.tensor,
                          "offsets": list(op.offsets), "port": op.port}
        if isinstance(op, StoreOp):
            record["accumulate"] = op.accumulate
        return record
    if isinstance(op, SendOp | RecvOp):
        transfer: Record = {"op": "send" if isinstance(op, SendOp) else "recv",
                            "buffer": ref(op.buffer), "peer": op.peer, "tag": op.tag}
        if op.windowed:
            transfer["offsets"], transfer["shape"] = (list(v) for v in op.window)
        return transfer
    if isinstance(op, CopyOp):
        return {"op": "copy", "dst": ref(op.dst), "src": ref(op.src),
                "src_offsets": list(op.src_offsets), "dst_offsets": list(op.dst_offsets),
                "shape": list(op.box)}
    if isinstance(op, ComputeOp):
        return _compute_record(op, ref)
    if isinstance(op, BarrierOp):
        barrier: Record = {"op": "barrier", "id": op.barrier_id, "tiles": list(op.tiles)}
        if op.label:
            barrier["label"] = op.label
        return barrier
    return None


def _compute_record(op: ComputeOp, ref: Callable[[Value], int]) -> Record:
    attrs = op.attributes.get("attrs")
    compute: Record = {"op": "compute", "kind": op.op, "outputs": [ref(v) for v in op.outputs],
                       "inputs": [ref(v) for v in op.inputs], "attrs": str(attrs) if attrs else "{}"}
    if op.window is not None:
        compute["out_offsets"], compute["out_shape"] = (list(v) for v in op.window)
    if any(w is not None for w in op.input_windows):
        compute["in_windows"] = [None if w is None else [list(w[0]), list(w[1])]
                                 for w in op.input_windows]
    return compute


def _line(r: Record) -> str:
    op = r["op"]
    if op == "alloc":
        return f"alloc   b{r['buffer']} {_dims(tuple(r['shape']))} {r['dtype']} {r['bytes']}B @{r['offset']}"
    if op in ("load", "store"):
        arrow = "<-" if op == "load" else "->"
        extra = " accumulate" if r.get("accumulate") else ""
        return f"{op:<7} b{r['buffer']} {arrow} {r['tensor']}{_ints(tuple(r['offsets']))} port {r['port']}{extra}"
    if op in ("send", "recv"):
        arrow = "->" if op == "send" else "<-"
        window = (f"{_ints(tuple(r['offsets']))} {_dims(tuple(r['shape']))}" if "shape" in r else "")
        return f"{op:<7} b{r['buffer']}{window} {arrow} tile {r['peer']} tag {r['tag']}"
    if op == "copy":
        return (f"copy    b{r['dst']}{_ints(tuple(r['dst_offsets']))} <- b{r['src']}"
                f"{_ints(tuple(r['src_offsets']))} {_dims(tuple(r['shape']))}")
    if op == "compute":
        outs = ", ".join(f"b{b}" for b in r["outputs"])
        if "out_shape" in r:
            outs += f"{_ints(tuple(r['out_offsets']))} {_dims(tuple(r['out_shape']))}"
        windows = r.get("in_windows") or [None] * len(r["inputs"])
        ins = ", ".join(f"b{b}" + ("" if w is None else f"{_ints(tuple(w[0]))} {_dims(tuple(w[1]))}")
                        for b, w in zip(r["inputs"], windows, strict=False))
        return f"compute {r['kind']} {outs} <- {ins} {r['attrs']}".rstrip()
    label = f"  # {r['label']}" if r.get("label") else ""
    return f"barrier {r['id']} tiles {', '.join(map(str, r['tiles']))}{label}"


def listing(module: Operation) -> str:
    """Every program of ``module`` as a flat text listing (see the module docstring)."""
    lines: list[str] = []
    for program in programs(module):
        body = list(records(program))
        row, col = program.attributes.get("row"), program.attributes.get("col")
        lines.append(f"# tile {program.tile} (row {getattr(row, 'value', '?')}, "
                     f"col {getattr(col, 'value', '?')}): {len(body)} instructions")
        lines += [_line(r) for r in body]
    return "\n".join(lines) + "\n"


def as_json(module: Operation) -> Record:
    """The programs and DRAM tensors of ``module`` as JSON-ready data."""
    machine = machine_of(module)
    tensors = [{"name": t.tensor_name, "shape": list(t.shape), "dtype": t.dtype, "role": t.role}
               for t in _top(module) if isinstance(t, DramOp)]
    progs = []
    for program in programs(module):
        row, col = program.attributes.get("row"), program.attributes.get("col")
        progs.append({"tile": program.tile, "row": getattr(row, "value", 0),
                      "col": getattr(col, "value", 0), "instructions": list(records(program))})
    mesh = {"rows": machine.rows, "cols": machine.cols} if machine is not None else {}
    return {"machine": mesh, "tensors": tensors, "programs": progs}


def json_text(module: Operation) -> str:
    return json.dumps(as_json(module), indent=1) + "\n"
