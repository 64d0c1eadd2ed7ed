"""Reading an ONNX model: bytes or a path to a checked ``ModelProto``, nodes to :class:`Node`.

Everything a user can get wrong here (an unreadable or corrupt file, a model the ONNX
checker rejects, a missing default-domain opset) becomes a
:class:`crane.ir.diagnostics.DiagnosticError`; nothing else escapes. ``onnx`` is imported
by the functions that need it, so that importing this module stays cheap.

Locations: node ``i`` (0-based, in graph order) is at ``"<file>":i+1:1`` inside a name
location ``"<node name> (<op type>)"``, e.g. ``loc("conv1 (Conv)"("resnet18.onnx":3:1))``;
unnamed nodes are called ``<op type>_<i>``. Messages also name the PyTorch module a node
comes from when the exporter recorded it (the dynamo exporter's ``name_scopes`` metadata):
``node 'node_mean' (ReduceMean) in 'avgpool'``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from crane.ir.diagnostics import DiagnosticError
from crane.ir.location import UNKNOWN, FileLineColLoc, Location, NameLoc

DEFAULT_DOMAINS = frozenset({"", "ai.onnx"})
"""The standard operator set; other domains (``com.microsoft``...) are not supported."""

ELEMENT_TYPES: Mapping[int, str] = {1: "f32", 10: "f16", 16: "bf16", 3: "int8", 6: "int32", 7: "int64"}
"""ONNX ``TensorProto`` element type -> Crane dtype (``FLOAT`` is 1, ``INT64`` is 7...)."""


@dataclass(frozen=True, slots=True)
class Node:
    """One ONNX node as the importer sees it, its attributes decoded to Python values."""

    index: int
    """Position in the graph (0-based); synthetic nodes of a recognised pattern take the
    index of the pattern's last node."""
    name: str
    op_type: str
    domain: str
    inputs: tuple[str, ...]
    """Input tensor names; ``""`` marks an omitted optional input."""
    outputs: tuple[str, ...]
    attrs: Mapping[str, Any]
    """Ints, floats, strings, lists of them, numpy arrays (tensor attributes); subgraphs
    stay protos."""
    location: Location = UNKNOWN
    proto: Any = field(default=None, compare=False, repr=False)
    """The ``NodeProto`` (None for synthetic nodes); constant folding runs it."""
    scope: str = ""
    """The module the node was exported from (``layer1.0.conv1``), when recorded."""

    @property
    def label(self) -> str:
        """``node 'conv1' (Conv)`` for messages, ``... in 'layer1.0'`` with a scope."""
        where = f" in '{self.scope}'" if self.scope else ""
        return f"node '{self.name}' ({self.op_type}){where}"

    def input(self, position: int) -> str:
        """The name of input ``position``, or ``""`` when it is omitted."""
        return self.inputs[position] if position < len(self.inputs) else ""

    def error(self, message: str) -> DiagnosticError:
        """An error at this node, its message naming the node."""
        return DiagnosticError.at(self.location, f"{self.label}: {message}")


def file_error(filename: str, message: str) -> DiagnosticError:
    """An error about the whole model (rendered ``error: <file>: message``)."""
    return DiagnosticError.at(UNKNOWN, f"{filename}: {message}")


def read_model(source: object, filename: str) -> Any:
    """An ``onnx.ModelProto`` from bytes, a path or a ``ModelProto`` (see :func:`check_model`)."""
    import onnx
    from google.protobuf.message import DecodeError

    if isinstance(source, onnx.ModelProto):
        model = source
    else:
        data = _bytes(source, filename)
        try:
            model = onnx.load_model_from_string(data)
        except (DecodeError, ValueError, RuntimeError) as problem:
            raise file_error(filename, f"not a readable ONNX model ({problem})") from None
        _load_external_data(model, source, filename)
    if not model.HasField("graph"):
        raise file_error(filename, "not an ONNX model: it holds no graph")
    bad = first_undecoded_text(model)
    if bad is not None:
        raise file_error(filename, f"the model's {bad} is not UTF-8 text")
    return model


def first_undecoded_text(message: Any) -> str | None:
    """The first string field of ``message`` (or of a message inside it) that protobuf could
    not decode as UTF-8 and hands over as bytes, named by its path (``graph.name``); None
    when every string is text. Such a name would reach Crane's naming as bytes."""
    from google.protobuf.descriptor import FieldDescriptor

    stack: list[tuple[str, Any]] = [("", message)]
    while stack:
        path, current = stack.pop()
        for described, value in current.ListFields():
            where = f"{path}{described.name}"
            values = value if _repeated(described) else [value]
            if described.type == FieldDescriptor.TYPE_STRING and any(isinstance(v, bytes) for v in values):
                return where
            if described.type == FieldDescriptor.TYPE_MESSAGE:
                stack.extend((f"{where}.", v) for v in values)
    return None


def _repeated(described: Any) -> bool:
    is_repeated = getattr(described, "is_repeated", None)  # protobuf >= 5.28; ``label`` before
    return bool(is_repeated) if is_repeated is not None else described.label == described.LABEL_REPEATED


def check_model(model: Any, filename: str, order: Sequence[int] | None = None) -> None:
    """Run the ONNX checker (node attributes against their schemas, names defined before
    use...). Graph outputs without a declared shape, which the checker rejects but
    runtimes accept, are given an empty one on a copy first; nodes are checked in
    ``order`` (a topological order of a graph that is out of order) when given."""
    import onnx

    bare = [i for i, v in enumerate(model.graph.output)
            if v.type.HasField("tensor_type") and not v.type.tensor_type.HasField("shape")]
    if bare or order is not None:
        model = _checkable_copy(model, bare, order)
    try:
        onnx.checker.check_model(model)
    except (onnx.checker.ValidationError, ValueError) as problem:
        text = " ".join(str(problem).split()) or type(problem).__name__
        raise file_error(filename, f"invalid ONNX model: {text[:400]}") from None


def is_unknown_operator(op_type: str, domain: str, opset: int) -> bool:
    """Whether the standard operator set at ``opset`` lacks ``op_type`` (a node of another
    domain is not judged here)."""
    import onnx.defs

    if domain not in DEFAULT_DOMAINS:
        return False
    try:
        onnx.defs.get_schema(op_type, opset, "")
    except onnx.defs.SchemaError:
        return True
    return False


def _checkable_copy(model: Any, bare: Sequence[int], order: Sequence[int] | None) -> Any:
    """A copy of ``model`` whose ``bare`` outputs have an empty shape and whose nodes are
    in ``order`` (when given)."""
    import onnx

    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    for index in bare:
        copy.graph.output[index].type.tensor_type.shape.SetInParent()
    if order is None:
        return copy
    nodes = [onnx.NodeProto() for _ in order]
    for node, index in zip(nodes, order, strict=True):
        node.CopyFrom(model.graph.node[index])
    copy.graph.ClearField("node")
    copy.graph.node.extend(nodes)
    return copy


def _bytes(source: object, filename: str) -> bytes:
    if isinstance(source, bytes | bytearray | memoryview):
        return bytes(source)
    if isinstance(source, str | Path):
        try:
            return Path(source).read_bytes()
        except OSError as problem:
            raise file_error(filename, f"cannot read the file: {problem.strerror or problem}") from None
    raise TypeError(f"expected bytes, a path or an onnx.ModelProto, got {type(source).__name__}")


def _load_external_data(model: Any, source: object, filename: str) -> None:
    """Tensors stored beside the model (models over 2 GB) are read from its directory."""
    import onnx.external_data_helper as external

    if not any(external.uses_external_data(t) for t in model.graph.initializer):
        return
    base = Path(source).parent if isinstance(source, str | Path) else Path(filename).parent
    try:
        external.load_external_data_for_model(model, str(base))
    except (OSError, ValueError) as problem:
        raise file_error(filename, f"cannot read external tensor data: {problem}") from None


MAX_OPSET = 2**31 - 1
"""The largest operator-set version ONNX's schema registry can be asked about (a C ``int``)."""


def default_opset(model: Any, filename: str) -> int:
    """The version of the standard operator set the model imports."""
    for entry in model.opset_import:
        if entry.domain not in DEFAULT_DOMAINS:
            continue
        if not 1 <= entry.version <= MAX_OPSET:
            raise file_error(filename, f"the default operator set's version {entry.version} is outside "
                                       f"1..{MAX_OPSET}")
        return int(entry.version)
    raise file_error(filename, "the model imports no version of the default ONNX operator set")


class TensorDataError(ValueError):
    """A ``TensorProto`` whose data disagrees with its ``data_type`` or shape."""


def to_array(tensor: Any) -> np.ndarray:
    """A ``TensorProto`` as a numpy array (a copy the importer may keep); raises
    :class:`TensorDataError` when its data cannot be what its type and shape say."""
    from onnx import TensorProto, numpy_helper

    kind = tensor.data_type
    known = kind in TensorProto.DataType.values()
    type_name = TensorProto.DataType.Name(kind) if known else str(kind)
    shape = [int(d) for d in tensor.dims]
    if not known or kind == TensorProto.UNDEFINED:
        raise TensorDataError(f"has data_type {type_name}, which is no ONNX element type")
    if min(shape, default=0) < 0:
        raise TensorDataError(f"has a negative dimension in its shape {shape}")
    try:
        array = np.array(numpy_helper.to_array(tensor))
    except (ValueError, TypeError, KeyError) as problem:
        raise TensorDataError(f"({type_name}, shape {shape}) holds data that does not match its type "
                              f"and shape: {problem}") from None
    if list(array.shape) != shape:
        raise TensorDataError(f"({type_name}) holds {array.size} values for its shape {shape}")
    return array


def _attribute(proto: Any) -> Any:
    from onnx import helper

    try:
        value = helper.get_attribute_value(proto)
    except ValueError as problem:
        raise TensorDataError(f"attribute '{proto.name}' cannot be read: {problem}") from None
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    if type(value).__name__ == "TensorProto":
        try:
            return to_array(value)
        except TensorDataError as problem:
            raise TensorDataError(f"the tensor of attribute '{proto.name}' {problem}") from None
    if isinstance(value, list):
        return [v.decode("utf-8", errors="replace") if isinstance(v, bytes) else v for v in value]
    return value


def node_location(filename: str, index: int, name: str, op_type: str) -> Location:
    """Where node ``index`` is: its name and op type, its position in ``filename``."""
    return NameLoc(f"{name} ({op_type})", FileLineColLoc(filename, index + 1, 1))


def decode_nodes(graph: Any, filename: str, order: Sequence[int] | None = None) -> list[Node]:
    """The graph's nodes in ``order`` (default: the graph's), attributes decoded, each
    located at its place in the file; every node whose attributes cannot be decoded is
    reported at once."""
    nodes: list[Node] = []
    problems: list[DiagnosticError] = []
    for index, where in enumerate(range(len(graph.node)) if order is None else order):
        proto = graph.node[where]
        name = proto.name or f"{proto.op_type}_{where}"
        location = node_location(filename, where, name, proto.op_type)
        node = Node(index, name, proto.op_type, proto.domain, tuple(proto.input), tuple(proto.output),
                    {}, location, proto, module_scope(proto))
        try:
            attrs = {a.name: _attribute(a) for a in proto.attribute}
        except TensorDataError as problem:
            problems.append(node.error(str(problem)))
            continue
        nodes.append(replace(node, attrs=attrs))
    if problems:
        raise DiagnosticError(*(d for p in problems for d in p.diagnostics))
    return nodes


def module_scope(proto: Any) -> str:
    """The PyTorch module a node was exported from, from the dynamo exporter's
    ``pkg.torch.onnx.name_scopes`` metadata (``['', 'layer1', 'layer1.0', 'relu']`` is in
    ``layer1.0``); ``""`` when not recorded or at the top level."""
    for entry in getattr(proto, "metadata_props", ()):
        if entry.key != "pkg.torch.onnx.name_scopes":
            continue
        scopes = [s.strip().strip("'\"") for s in entry.value.strip("[]").split(",")]
        modules = [s for s in scopes[:-1] if s]
        return modules[-1] if modules else ""
    return ""
