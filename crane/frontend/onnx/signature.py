"""The graph's inputs and outputs with concrete shapes: symbolic dimensions resolved.

ONNX models usually leave the batch dimension symbolic (``N``, ``batch_size``) and
sometimes others (``sequence``). Crane's IR has static shapes only, so every symbolic
dimension gets a size here:

* a dimension whose name is in ``dims`` takes that size;
* otherwise a symbolic *first* dimension is the batch: ``batch`` if given, else 1;
* any other symbolic dimension is an error that says how to give its size.

A static first dimension is kept; asking for another batch size is then an error (the
model's reshapes may have that size baked in). Graph inputs that are also initializers
(models of IR version < 4 list them) are weights, not inputs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from crane.frontend.onnx.reader import ELEMENT_TYPES, file_error
from crane.limits import MAX_BATCH, MAX_TENSOR_ELEMENTS


@dataclass(frozen=True, slots=True)
class TensorSpec:
    """A graph input or output: name, shape and dtype.

    Inputs have concrete shapes. A declared output's unknown dimensions are None, and its
    shape is None when the model declares none."""

    name: str
    shape: tuple[int | None, ...] | None
    dtype: str


def _element(value: Any, what: str, filename: str) -> str:
    from onnx import TensorProto

    if not value.type.HasField("tensor_type"):
        raise file_error(filename, f"{what} is not a tensor")
    elem = value.type.tensor_type.elem_type
    dtype = ELEMENT_TYPES.get(elem)
    if dtype is None:
        kind = TensorProto.DataType.Name(elem) if elem in TensorProto.DataType.values() else str(elem)
        raise file_error(filename, f"{what} has element type {kind}; Crane supports FLOAT, FLOAT16, "
                                   f"BFLOAT16, INT8, INT32 and INT64")
    return dtype


def _dims(value: Any) -> list[Any] | None:
    tensor = value.type.tensor_type
    return list(tensor.shape.dim) if tensor.HasField("shape") else None


def _input_shape(value: Any, batch: int | None, sizes: Mapping[str, int], filename: str) -> tuple[int, ...]:
    dims = _dims(value)
    what = f"graph input '{value.name}'"
    if dims is None:
        raise file_error(filename, f"{what} has no shape information; Crane needs the rank and "
                                   f"every dimension (export the model with input shapes)")
    shape: list[int] = []
    for axis, dim in enumerate(dims):
        param = dim.dim_param if dim.HasField("dim_param") else ""
        if dim.HasField("dim_value") and dim.dim_value <= 0:
            raise file_error(filename, f"dimension {axis} of {what} has size {dim.dim_value}; Crane needs "
                                       f"every dimension to be at least 1")
        if param and param in sizes:
            shape.append(sizes[param])
        elif dim.HasField("dim_value"):
            if axis == 0 and batch is not None and dim.dim_value != batch:
                raise file_error(filename, f"{what} has a fixed batch dimension {dim.dim_value}; "
                                           f"it cannot be imported with batch {batch}")
            shape.append(dim.dim_value)
        elif axis == 0:
            shape.append(1 if batch is None else batch)
        elif param:
            raise file_error(filename, f"dimension {axis} of {what} is symbolic ('{param}'); give its size "
                                       f"with --onnx-dim {param}=N (dims={{'{param}': N}})")
        else:
            raise file_error(filename, f"dimension {axis} of {what} has neither a size nor a name; export "
                                       f"the model with static shapes")
    return _within_limits(tuple(shape), what, filename)


def _within_limits(shape: tuple[int, ...], what: str, filename: str) -> tuple[int, ...]:
    """``shape``, unless its batch or its element count is beyond what Crane handles (the
    limits a ``.crn`` input meets too, see ``crane.limits``)."""
    if shape and shape[0] > MAX_BATCH:
        raise file_error(filename, f"{what} has batch dimension {shape[0]}; Crane handles batches of 1 to "
                                   f"{MAX_BATCH}")
    elements = 1
    for size in shape:
        elements *= size
    if elements > MAX_TENSOR_ELEMENTS:
        raise file_error(filename, f"{what} of shape {list(shape)} has more than 2^40 elements, the most "
                                   f"Crane handles in one tensor")
    return shape


def graph_inputs(graph: Any, constants: Iterable[str], batch: int | None, sizes: Mapping[str, int],
                 filename: str) -> list[TensorSpec]:
    """The graph's real inputs (not initializers) with concrete shapes."""
    if batch is not None and batch <= 0:
        raise file_error(filename, f"the batch size must be positive, got {batch}")
    for name, size in sizes.items():
        if size <= 0:
            raise file_error(filename, f"dimension '{name}' must have a positive size, got {size}")
    skip = set(constants)
    return [TensorSpec(v.name, _input_shape(v, batch, sizes, filename),
                       _element(v, f"graph input '{v.name}'", filename))
            for v in graph.input if v.name not in skip]


def graph_outputs(graph: Any, filename: str) -> list[TensorSpec]:
    """The graph's outputs as declared (dimensions that are not static numbers are None);
    a declared size below 1 is an error."""
    specs = []
    for value in graph.output:
        dims = _dims(value) if value.type.HasField("tensor_type") else None
        bad = [(k, d.dim_value) for k, d in enumerate(dims or ()) if d.HasField("dim_value") and d.dim_value <= 0]
        if bad:
            raise file_error(filename, f"dimension {bad[0][0]} of graph output '{value.name}' has size "
                                       f"{bad[0][1]}; Crane needs every dimension to be at least 1")
        shape = tuple(d.dim_value if d.HasField("dim_value") and d.dim_value > 0 else None
                      for d in dims or ())
        dtype = ELEMENT_TYPES.get(value.type.tensor_type.elem_type, "") if dims is not None else ""
        specs.append(TensorSpec(value.name, shape if dims is not None else None, dtype))
    return specs


def batch_of(inputs: list[TensorSpec]) -> int:
    """The batch size of the imported function: the first input's first dimension."""
    for spec in inputs:
        if spec.shape and spec.shape[0] is not None:
            return spec.shape[0]
    return 1
