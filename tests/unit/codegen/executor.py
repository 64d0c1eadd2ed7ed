"""Test-only executor of codegen's program records (numpy, float32).

Runs every tile's program round-robin until each blocks: a ``recv`` waits for the matching
``send`` (sends are buffered), a barrier for every listed tile. Compute ops run the
reference interpreter's rules on the buffers, so a mismatch against ``run_function``
means codegen split, moved or reduced something wrongly. It exists to test the codegen
library on its own; the functional simulator (crane.exec.tile_sim) is the real one.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from crane.codegen.program import (
    Alloc,
    Barrier,
    Buffer,
    Compute,
    Load,
    Recv,
    Send,
    Store,
    TileModule,
)
from crane.dialects.graph import from_attribute
from crane.exec import kernels as K
from crane.exec.backward import GRAD_INPUT, GRAD_WEIGHT
from crane.exec.forward import FORWARD, Call
from crane.ir.attributes import Attribute, DenseIntsAttr, StringAttr

Array = np.ndarray


def _plain(attrs: Mapping[str, Attribute]) -> dict[str, object]:
    out: dict[str, object] = {}
    for k, v in attrs.items():
        try:
            out[k] = from_attribute(v)
        except Exception:  # noqa: BLE001 - attributes the rules never read
            continue
    return out


def _compute(c: Compute, ins: list[Array], training: bool) -> list[Array]:
    attrs = _plain(c.attrs)
    shape = c.outs[0].shape if c.outs else ()
    if c.op == "slice":
        index = [slice(None)] * ins[0].ndim
        index[int(attrs["axis"])] = slice(int(attrs["start"]), int(attrs["stop"]))  # type: ignore[call-overload]
        return [ins[0][tuple(index)]]
    if c.op == "concat":
        return [np.concatenate(ins, axis=int(attrs["axis"]))]  # type: ignore[call-overload]
    if c.op == "accumulate":
        return [np.sum(ins, axis=0)]
    if c.op == "fill":
        return [np.full(shape, float(attrs["value"]), np.float32)]  # type: ignore[arg-type]
    if c.op in ("sgd", "momentum", "adam"):
        return _update(c.op, attrs, ins)
    key = c.attrs.get("key")
    keyname = key.value if isinstance(key, StringAttr) else ""
    n = len(ins) - c.weights
    if c.op.endswith(("_grad_input", "_grad_weight")):
        kind, _, role = c.op.rpartition("_grad_")
        call = Call(attrs, ins[1:1 + n - 1], ins[n:], ins[0].shape, keyname, 0, training, {"kind": kind})  # type: ignore[arg-type]
        grads = (GRAD_INPUT if role == "input" else GRAD_WEIGHT)[kind](call, ins[0])
        if role == "input":
            wrt = c.attrs.get("wrt")
            grads = [grads[i] for i in (tuple(wrt) if isinstance(wrt, DenseIntsAttr) else ())]
        return [np.asarray(g) for g in grads if g is not None]
    call = Call(attrs, ins[:n], ins[n:], shape, keyname, 0, training, {"kind": c.op})  # type: ignore[arg-type]
    return [FORWARD[c.op](call)]


def _update(op: str, h: dict[str, object], ins: list[Array]) -> list[Array]:
    w, g, *states = ins
    lr, wd = float(h["lr"]), float(h.get("weight_decay", 0.0))  # type: ignore[arg-type]
    if op == "sgd":
        return [K.sgd_update(w, g, lr=lr, weight_decay=wd)]
    if op == "momentum":
        return list(K.momentum_update(w, g, states[0], lr=lr, momentum=float(h["momentum"]),  # type: ignore[arg-type]
                                      nesterov=bool(h.get("nesterov", False)), weight_decay=wd))
    return list(K.adam_update(w, g, states[0], states[1], step=int(h.get("step", 1)), lr=lr,  # type: ignore[call-overload]
                              beta1=float(h["beta1"]), beta2=float(h["beta2"]),  # type: ignore[arg-type]
                              eps=float(h["eps"]), weight_decay=wd))  # type: ignore[arg-type]


def execute(module: TileModule, dram: dict[str, Array], training: bool) -> dict[str, Array]:
    """Run all programs; ``dram`` holds the initial tensors and receives the stores."""
    for t in module.tensors:
        if t.name not in dram:
            dram[t.name] = np.zeros(t.shape, np.float32 if t.dtype.startswith("f") else np.int64)
    sram: dict[int, Array] = {}
    mail: dict[tuple[int, int, int], Array] = {}
    arrived: dict[int, set[int]] = {}
    pcs = [0] * len(module.programs)
    progress = True
    while progress:
        progress = False
        for p in module.programs:
            while pcs[p.tile] < len(p.body):
                ins = p.body[pcs[p.tile]]
                if not _step(ins, p.tile, sram, mail, arrived, dram, training):
                    break
                pcs[p.tile] += 1
                progress = True
    stuck = [p.tile for p in module.programs if pcs[p.tile] < len(p.body)]
    assert not stuck, f"deadlock on tiles {stuck}: {[module.programs[t].body[pcs[t]] for t in stuck][:3]}"
    return dram


def _region(buf: Buffer, offsets: tuple[int, ...]) -> tuple[slice, ...]:
    return tuple(slice(o, o + d) for o, d in zip(offsets, buf.shape, strict=True))


def _step(ins: object, tile: int, sram: dict[int, Array], mail: dict[tuple[int, int, int], Array],
          arrived: dict[int, set[int]], dram: dict[str, Array], training: bool) -> bool:
    if isinstance(ins, Alloc):
        return True
    if isinstance(ins, Load):
        sram[ins.buffer.id] = np.array(dram[ins.tensor][_region(ins.buffer, ins.offsets)])
        assert sram[ins.buffer.id].shape == ins.buffer.shape
        return True
    if isinstance(ins, Store):
        region = _region(ins.buffer, ins.offsets)
        value = sram[ins.buffer.id]
        dram[ins.tensor][region] = dram[ins.tensor][region] + value if ins.accumulate else value
        return True
    if isinstance(ins, Send):
        mail[(tile, ins.peer, ins.tag)] = sram[ins.buffer.id]
        return True
    if isinstance(ins, Recv):
        key = (ins.peer, tile, ins.tag)
        if key not in mail:
            return False
        sram[ins.buffer.id] = mail.pop(key)
        return True
    if isinstance(ins, Barrier):
        group = arrived.setdefault(ins.id, set())
        group.add(tile)
        return group >= set(ins.tiles)
    assert isinstance(ins, Compute)
    results = _compute(ins, [sram[b.id] for b in ins.ins], training)
    for buf, value in zip(ins.outs, results, strict=True):
        value = np.asarray(value, dtype=np.float32)
        assert value.shape == buf.shape, f"{ins.op}: {value.shape} != {buf.shape}"
        sram[buf.id] = value
    return True
