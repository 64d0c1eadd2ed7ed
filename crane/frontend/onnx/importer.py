"""One ONNX graph to one ``builtin.module``: the machine (if any) and a ``graph.func``.

The graph's real inputs become the function's arguments (shapes resolved by
``crane.frontend.onnx.signature``), its initializers constants, its nodes (after pattern
recognition, ``crane.frontend.onnx.patterns``) are folded or converted in order
(``crane.frontend.onnx.registry``), and its outputs are returned under their ONNX names.
The function's ``batch`` attribute is the first input's first dimension.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from crane.dialects.builtin import ModuleOp
from crane.dialects.graph import ELEMENT_TYPES, LAYER_OPS, FuncOp, LayerOp, ReturnOp, WeightOp
from crane.dialects.hw import MACHINE_ATTR, MachineOp
from crane.frontend.onnx.graph_order import node_order
from crane.frontend.onnx.patterns import constant_values, recognise
from crane.frontend.onnx.reader import (
    TensorDataError,
    check_model,
    decode_nodes,
    default_opset,
    file_error,
    is_unknown_operator,
    to_array,
)
from crane.frontend.onnx.registry import convert_all, unsupported_nodes
from crane.frontend.onnx.signature import TensorSpec, batch_of, graph_inputs, graph_outputs
from crane.frontend.onnx.state import GraphState, NameTable, shape_of
from crane.hardware.machine import Machine, builtin_machines
from crane.ir.attributes import Attribute, IntAttr, StringAttr, SymbolRefAttr
from crane.ir.core import Operation, Value
from crane.ir.diagnostics import DiagnosticError
from crane.ir.location import Location, NameLoc
from crane.ir.parser import gc_paused
from crane.ir.types import TensorType


@dataclass(frozen=True, slots=True)
class OnnxOptions:
    """How to import: sizes of symbolic dimensions, the machine, the function's name."""

    batch: int | None = None
    """Size of a symbolic first input dimension (default 1)."""
    dims: Mapping[str, int] = field(default_factory=dict)
    """Sizes of named symbolic dimensions (``{"sequence": 128}``)."""
    machine: str | Machine | None = None
    """A built-in machine name (``edge``, ``cloud``, ``mbs``, ``gpu11``) or a Machine."""
    name: str | None = None
    """The module and function name (default: the graph's name, else the file's stem)."""


@dataclass(frozen=True, slots=True)
class OnnxImport:
    """An imported model: the module and the weights its ``graph.weight`` ops name."""

    module: ModuleOp
    weights: dict[str, np.ndarray]
    """Weight name -> array (initializers as given, or derived by a fold), ready for
    ``run_function(func, weights=...)`` and ``crane-run --weights``."""

    @property
    def func(self) -> FuncOp:
        """The module's ``graph.func``."""
        return next(op for op in self.module.regions[0].blocks[0].ops if isinstance(op, FuncOp))


def resolve_machine(machine: str | Machine | None, filename: str) -> Machine | None:
    """A Machine from a built-in name (None stays None)."""
    if machine is None or isinstance(machine, Machine):
        return machine
    known = builtin_machines()
    if machine not in known:
        raise file_error(filename, f"unknown machine '{machine}' (built in: {', '.join(known)})")
    return known[machine]


def import_model(model: Any, filename: str, options: OnnxOptions) -> OnnxImport:
    """Import an ``onnx.ModelProto`` (see the module docstring). The ONNX checker runs
    after the inputs are resolved and the node order is checked, so that a missing input
    shape, an undefined tensor or a cycle gets Crane's message naming it."""
    graph = model.graph
    machine = resolve_machine(options.machine, filename)
    if len(graph.sparse_initializer):
        raise file_error(filename, "sparse initializers are not supported")
    if not len(graph.output):
        raise file_error(filename, "the graph has no outputs; Crane needs at least one computed output")
    inputs = graph_inputs(graph, [t.name for t in graph.initializer], options.batch, options.dims, filename)
    order = node_order(graph, filename)
    opset = default_opset(model, filename)
    if any(is_unknown_operator(n.op_type, n.domain, opset) for n in graph.node):
        # the checker would stop at the first: report every unknown and unsupported node
        nodes = decode_nodes(graph, filename, order)
        found = unsupported_nodes(nodes, {t.name for t in graph.initializer}, opset)
        raise DiagnosticError(*(d for e in found.values() for d in e.diagnostics))
    check_model(model, filename, order)
    initializers = _initializers(graph, filename)
    outputs = graph_outputs(graph, filename)
    nodes = decode_nodes(graph, filename, order)
    nodes = recognise(nodes, constant_values(initializers, nodes), [o.name for o in outputs])
    consumers = Counter(name for n in nodes for name in n.inputs if name)
    consumers.update(o.name for o in outputs)
    state = GraphState(filename, opset, consumers)
    state.names.reserve(o.name for o in outputs)
    state.consts.update(initializers)
    with gc_paused():
        for spec in inputs:
            _argument(state, spec)
        convert_all(state, nodes)
        results = [_output(state, spec) for spec in outputs]
    location = NameLoc(filename)
    name = _symbol(options.name or graph.name or Path(filename).stem)
    state.block.append(ReturnOp.build(results, location))
    func = FuncOp.build(name, state.block, [v.type for v in results],
                        {"batch": IntAttr(batch_of(inputs))}, location)
    return OnnxImport(_module(func, machine, name, location), _used_weights(state, func))


def _symbol(name: str) -> str:
    """The module and function name: a clean value name that starts with no digit."""
    text = NameTable.clean(name)
    return f"v{text}" if text[0].isdigit() else text


def _initializers(graph: Any, filename: str) -> dict[str, np.ndarray]:
    """The initializers as arrays; every one whose data disagrees with its type or shape
    is reported at once."""
    arrays: dict[str, np.ndarray] = {}
    problems: list[DiagnosticError] = []
    for tensor in graph.initializer:
        try:
            arrays[tensor.name] = to_array(tensor)
        except TensorDataError as problem:
            problems.append(file_error(filename, f"initializer '{tensor.name}' {problem}"))
    if problems:
        raise DiagnosticError(*(d for p in problems for d in p.diagnostics))
    return arrays


def _argument(state: GraphState, spec: TensorSpec) -> None:
    assert spec.shape is not None and all(d is not None for d in spec.shape)
    shape = tuple(int(d) for d in spec.shape if d is not None)
    arg = state.block.add_argument(TensorType(shape, ELEMENT_TYPES[spec.dtype]), state.names.fresh(spec.name))
    state.bind(spec.name, arg)


def _output(state: GraphState, spec: TensorSpec) -> Value:
    """The value returned as output ``spec``, named after it; its declared shape checked."""
    value = state.values.get(spec.name)
    if value is None:
        raise file_error(state.filename, f"graph output '{spec.name}' is "
                                         f"{'a constant' if spec.name in state.consts else 'never computed'}; "
                                         f"Crane returns computed tensors only")
    if value.name_hint != NameTable.clean(spec.name):
        value = _renamed(state, value, state.names.fresh(spec.name))
    computed = shape_of(value)
    if spec.shape is not None and (len(spec.shape) != len(computed) or any(
            d is not None and d != c for d, c in zip(spec.shape[1:], computed[1:], strict=False))):
        declared = ["?" if d is None else d for d in spec.shape]
        raise file_error(state.filename, f"graph output '{spec.name}' is declared with shape {declared} "
                                         f"but computes to {list(computed)}")
    return value


def _renamed(state: GraphState, value: Value, name: str) -> Value:
    """``value`` under the output's name: a layer result is renamed, unless it already
    bears another output's name; anything else (an argument) is copied by an identity
    reshape."""
    owner = value.owner_op
    if isinstance(owner, LayerOp) and value.name_hint not in state.names.reserved:
        value.name_hint = name
        return value
    assert isinstance(value.type, TensorType)
    copy = LAYER_OPS["reshape"].build([value], [], {"shape": value.type.shape}, value.type,
                                      owner.location if owner is not None else NameLoc(name))
    copy.results[0].name_hint = name
    state.block.append(copy)
    return copy.results[0]


def _module(func: FuncOp, machine: Machine | None, name: str, location: Location) -> ModuleOp:
    top: list[Operation] = []
    attrs: dict[str, Attribute] = {}
    if machine is not None:
        top.append(MachineOp.build(machine, location))
        attrs[MACHINE_ATTR] = SymbolRefAttr(machine.name)
    return ModuleOp.build([*top, func], name=name, attributes=attrs, location=location)


def _used_weights(state: GraphState, func: FuncOp) -> dict[str, np.ndarray]:
    names = [op.attributes["name"] for op in func.body.ops if isinstance(op, WeightOp)]
    return {n.value: state.weights[n.value] for n in names if isinstance(n, StringAttr)}


def verify_module(module: ModuleOp) -> None:
    """Verify the imported module; a problem here is an importer bug, reported located."""
    from crane.ir.verifier import verify

    problems = verify(module)
    if problems:
        raise DiagnosticError(*problems)
