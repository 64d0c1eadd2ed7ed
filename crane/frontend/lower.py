"""Lowering an elaborated :class:`Network` to ``graph``-dialect IR.

One ``builtin.module`` per network holding the ``hw.machine`` it targets (if it names one)
and a ``graph.func``: network inputs become block arguments, every layer one
``graph.<kind>`` op preceded by a ``graph.weight`` op per weight, all carrying the `.crn`
location of the layer's call. Result values are named after the layers (``%layer1.y``).
"""

from __future__ import annotations

from crane.dialects.builtin import ModuleOp
from crane.dialects.graph import ELEMENT_TYPES, LAYER_OPS, FuncOp, ReturnOp, WeightOp
from crane.dialects.hw import MACHINE_ATTR, MachineOp
from crane.frontend.model import Network, SourceLoc, Training
from crane.ir.attributes import (
    Attribute,
    BoolAttr,
    DictAttr,
    FloatAttr,
    IntAttr,
    StringAttr,
    SymbolRefAttr,
)
from crane.ir.core import Block, Operation, Value
from crane.ir.location import UNKNOWN, FileLineColLoc, Location
from crane.ir.types import TensorType


def _loc(loc: SourceLoc | None) -> Location:
    return UNKNOWN if loc is None else FileLineColLoc(loc.file, loc.line, loc.col)


def _tensor(shape: tuple[int, ...], dtype: str) -> TensorType:
    return TensorType(shape, ELEMENT_TYPES[dtype])


class _Types(dict[tuple[tuple[int, ...], str], TensorType]):
    """Tensor types by (shape, dtype), built once each: types are immutable values, and a
    network repeats a few shapes over thousands of layers."""

    def __missing__(self, key: tuple[tuple[int, ...], str]) -> TensorType:
        made = self[key] = _tensor(*key)
        return made


def lower_network(network: Network) -> ModuleOp:
    """The module for ``network``: its machine (if any) and one ``graph.func``."""
    types = _Types()
    body = Block([types[d.shape, d.dtype] for d in network.inputs])
    values: dict[str, Value] = {}
    for arg, decl in zip(body.args, network.inputs, strict=True):
        arg.name_hint = decl.name
        values[decl.name] = arg
    ops: list[Operation] = []
    for layer in network.layers:
        loc = _loc(layer.loc)
        weights = []
        for weight in layer.weights:
            name = f"{layer.name}.{weight.name}"
            weight_op = WeightOp.build(name, types[weight.shape, weight.dtype], loc)
            weight_op.results[0].name_hint = name
            ops.append(weight_op)
            weights.append(weight_op.results[0])
        inputs = [values[name] for name in layer.inputs]
        op = LAYER_OPS[layer.kind].build(inputs, weights, layer.attrs, types[layer.out_shape, layer.dtype], loc)
        op.results[0].name_hint = layer.name
        values[layer.name] = op.results[0]
        ops.append(op)
    outputs = [values[name] for name in network.outputs]
    ops.append(ReturnOp.build(outputs, _loc(network.loc)))
    body.extend(ops)
    func = FuncOp.build(network.name, body, [v.type for v in outputs], _func_attrs(network), _loc(network.loc))
    top: list[Operation] = []
    module_attrs: dict[str, Attribute] = {}
    if network.machine is not None:
        top.append(MachineOp.build(network.machine, _loc(network.loc)))
        module_attrs[MACHINE_ATTR] = SymbolRefAttr(network.machine.name)
    return ModuleOp.build([*top, func], name=network.name, attributes=module_attrs, location=_loc(network.loc))


def _func_attrs(network: Network) -> dict[str, Attribute]:
    attrs: dict[str, Attribute] = {"batch": IntAttr(network.batch)}
    if network.training is not None:
        attrs["training"] = _training_attr(network.training)
    return attrs


def _training_attr(training: Training) -> DictAttr:
    hyper = {name: BoolAttr(v) if isinstance(v, bool) else FloatAttr(v)
             for name, v in training.optimizer.hyper.items()}
    return DictAttr.of({
        "loss": StringAttr(training.loss),
        "optimizer": StringAttr(training.optimizer.kind),
        "hyper": DictAttr.of(hyper),
        "batch": IntAttr(training.batch),
    })
