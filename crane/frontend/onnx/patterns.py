"""Recognising decomposed GELU, layer normalisation and SiLU, and the softmax NaN guard,
before conversion.

Exporters below opset 20 (GELU) or 17 (layer norm) write these as chains of primitive
ops that have no ``graph`` counterpart (``Erf``, ``ReduceMean``, ``Pow``, ``Sqrt``...).
Four patterns, matched exactly, are replaced by one synthetic node each:

* GELU, as ``torch.onnx`` and Hugging Face export it::

      x * (1 + Erf(x / sqrt(2))) * 0.5        (or x * 0.5 * (1 + Erf(x * (1 / sqrt(2)))))

  becomes ``Gelu(x)``;
* layer normalisation over one axis::

      d = x - ReduceMean(x);  y = d / Sqrt(ReduceMean(d ^ 2) + eps) [* gamma] [+ beta]

  (``Pow(d, 2)`` or ``Mul(d, d)``) becomes ``LayerNormalization(x, gamma, beta)``;
* SiLU, ``x * Sigmoid(x)``, becomes ``Silu(x)`` (a ``graph.silu``);
* the NaN guard that exporters put after an attention softmax, ``Where(IsNaN(p), 0, p)``
  with ``p = Softmax(z)``, becomes ``SoftmaxNanGuard(p)``, with the attribute ``finite``
  telling whether no constant that ``z`` is computed from is infinite or NaN (then ``z``
  is finite for finite model inputs, ``p`` is never NaN, and the guard is a no-op); see
  ``crane.frontend.onnx.ops_mask.nan_guard``.

Every intermediate tensor must be read only inside the pattern (and be no graph output),
every constant must be an initializer or ``Constant`` output with the expected value
(``sqrt(2)``, ``1``, ``0.5`` and ``2`` to float32 precision), and the two reductions must
share their axes with ``keepdims=1``; otherwise nothing is replaced and the ops are
converted (or rejected) one by one. A synthetic node is located at all the nodes it
replaces (a fused location) and keeps their protos, so that constant folding can still
run them.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from crane.frontend.onnx.reader import Node
from crane.ir.location import FusedLoc


@dataclass
class _Graph:
    """Producers and readers of every tensor, and the known scalar constants."""

    producer: dict[str, Node]
    readers: dict[str, list[Node]]
    outputs: frozenset[str]
    constants: dict[str, np.ndarray]
    nodes: Sequence[Node] = ()
    culprits: dict[str, str] | None = None
    """Tensor -> a non-finite constant it is computed from ("" if none), made on demand."""

    def only_reader(self, name: str) -> Node | None:
        """The single node reading ``name`` (None if several, none, or a graph output)."""
        readers = self.readers.get(name, [])
        if name in self.outputs or len(readers) != 1:
            return None
        return readers[0]

    def scalar(self, name: str) -> float | None:
        array = self.constants.get(name)
        return float(array.reshape(-1)[0]) if array is not None and array.size == 1 else None

    def equals(self, name: str, value: float) -> bool:
        found = self.scalar(name)
        return found is not None and math.isclose(found, value, rel_tol=1e-6)


def _other(node: Node, name: str) -> str:
    """The other input of a binary node."""
    return node.input(1) if node.input(0) == name else node.input(0)


def _binary(node: Node, op_type: str) -> bool:
    return node.op_type == op_type and len(node.inputs) == 2


def _gelu_input(g: _Graph, scaled: Node | None) -> str | None:
    """``x`` of ``x / sqrt(2)`` or ``x * (1 / sqrt(2))``."""
    if scaled is None or len(scaled.inputs) != 2:
        return None
    if scaled.op_type == "Div" and g.equals(scaled.input(1), math.sqrt(2.0)):
        return scaled.input(0)
    if scaled.op_type != "Mul":
        return None
    for x, c in ((scaled.input(0), scaled.input(1)), (scaled.input(1), scaled.input(0))):
        if g.equals(c, 1 / math.sqrt(2.0)):
            return x
    return None


def _gelu(g: _Graph, erf: Node) -> tuple[list[Node], str, str] | None:
    """Matched nodes, the input and the output of a GELU around ``erf``."""
    scaled = g.producer.get(erf.input(0))
    x = _gelu_input(g, scaled)
    plus = g.only_reader(erf.outputs[0])
    if x is None or scaled is None or g.only_reader(erf.input(0)) is not erf or plus is None:
        return None
    if not _binary(plus, "Add") or not g.equals(_other(plus, erf.outputs[0]), 1.0):
        return None
    product = g.only_reader(plus.outputs[0])
    if product is None or not _binary(product, "Mul"):
        return None
    partner = _other(product, plus.outputs[0])
    if partner == x:
        half = g.only_reader(product.outputs[0])
        if half is not None and _binary(half, "Mul") and g.equals(_other(half, product.outputs[0]), 0.5):
            return [scaled, erf, plus, product, half], x, half.outputs[0]
        return None
    half = g.producer.get(partner)
    if (half is not None and _binary(half, "Mul") and g.only_reader(partner) is product
            and x in half.inputs and g.equals(_other(half, x), 0.5)):
        return [half, scaled, erf, plus, product], x, product.outputs[0]
    return None


def _mean(g: _Graph, node: Node | None) -> tuple[int, ...] | None:
    """The axes of a ``ReduceMean`` keeping dims, or None."""
    if node is None or node.op_type != "ReduceMean" or not int(node.attrs.get("keepdims", 1)):
        return None
    if node.input(1):
        array = g.constants.get(node.input(1))
        return None if array is None else tuple(int(a) for a in array.reshape(-1))
    axes = node.attrs.get("axes")
    return None if axes is None else tuple(int(a) for a in axes)


def _layernorm(g: _Graph, mean: Node) -> tuple[list[Node], tuple[str, str, str], int, float, str] | None:
    """Matched nodes, (x, scale, bias), axis, eps and output of a layer norm from ``mean``."""
    core = _normalise(g, mean)
    if core is None:
        return None
    matched, axis, eps, out = core
    scale = bias = ""
    for op_type in ("Mul", "Add"):
        follower = g.only_reader(out)
        if follower is None or not _binary(follower, op_type) or _other(follower, out) not in g.constants:
            continue
        matched.append(follower)
        if op_type == "Mul":
            scale = _other(follower, out)
        else:
            bias = _other(follower, out)
        out = follower.outputs[0]
    return matched, (mean.input(0), scale, bias), axis, eps, out


def _normalise(g: _Graph, mean: Node) -> tuple[list[Node], int, float, str] | None:
    """``(x - mean) / sqrt(var + eps)`` from ``mean``: nodes, axis, eps and output."""
    axes = _mean(g, mean)
    sub = g.only_reader(mean.outputs[0])
    if axes is None or len(axes) != 1 or sub is None or sub.op_type != "Sub":
        return None
    if sub.inputs != (mean.input(0), mean.outputs[0]):
        return None
    d = sub.outputs[0]
    readers = {id(n): n for n in g.readers.get(d, [])}
    square = next((n for n in readers.values() if _squares(g, n, d)), None)
    div = next((n for n in readers.values() if _binary(n, "Div") and n.input(0) == d), None)
    if square is None or div is None or len(readers) != 2 or d in g.outputs:
        return None
    var = g.only_reader(square.outputs[0])
    if var is None or _mean(g, var) != axes:
        return None
    plus = g.only_reader(var.outputs[0])
    eps = g.scalar(_other(plus, var.outputs[0])) if plus is not None and _binary(plus, "Add") else None
    root = g.only_reader(plus.outputs[0]) if plus is not None and eps is not None else None
    if root is None or root.op_type != "Sqrt" or div.input(1) != root.outputs[0]:
        return None
    if g.only_reader(root.outputs[0]) is not div or plus is None or eps is None:
        return None
    return [mean, sub, square, var, plus, root, div], axes[0], eps, div.outputs[0]


def _squares(g: _Graph, node: Node, d: str) -> bool:
    """Whether ``node`` is ``d ^ 2`` or ``d * d``."""
    if _binary(node, "Pow"):
        return node.input(0) == d and g.equals(node.input(1), 2.0)
    return _binary(node, "Mul") and node.inputs == (d, d)


def _synthetic(op_type: str, matched: Sequence[Node], inputs: tuple[str, ...], output: str,
               attrs: dict[str, object]) -> Node:
    """One node for the ``matched`` ones, called ``<first>..<last>`` and placed at the last."""
    ordered = sorted(matched, key=lambda n: n.index)
    first, last = ordered[0], ordered[-1]
    protos = tuple(n.proto for n in ordered) if all(n.proto is not None for n in ordered) else None
    return Node(last.index, f"{first.name}..{last.name}", op_type, "", inputs, (output,), attrs,
                FusedLoc.of(*(n.location for n in ordered)), protos)


def recognise(nodes: Sequence[Node], constants: dict[str, np.ndarray], outputs: Iterable[str]) -> list[Node]:
    """``nodes`` with every recognised pattern replaced (see the module docstring).

    ``constants`` holds the initializers and ``Constant`` outputs that patterns may test."""
    producer = {out: n for n in nodes for out in n.outputs if out}
    readers: dict[str, list[Node]] = defaultdict(list)
    for node in nodes:
        for name in node.inputs:
            if name:
                readers[name].append(node)
    g = _Graph(producer, readers, frozenset(outputs), constants, nodes)
    replacements: dict[int, Node] = {}
    removed: set[int] = set()
    for node in nodes:
        found = _match(g, node)
        if found is None or any(n.index in removed for n in found[0]):
            continue
        matched, synthetic = found
        removed.update(n.index for n in matched)
        replacements[synthetic.index] = synthetic
    return [replacements.get(n.index, n) for n in nodes if n.index not in removed or n.index in replacements]


def _match(g: _Graph, node: Node) -> tuple[list[Node], Node] | None:
    if node.domain not in ("", "ai.onnx"):
        return None
    if node.op_type == "Erf":
        gelu = _gelu(g, node)
        if gelu is not None:
            matched, x, out = gelu
            return matched, _synthetic("Gelu", matched, (x,), out, {})
    if node.op_type == "ReduceMean":
        norm = _layernorm(g, node)
        if norm is not None:
            matched, inputs, axis, eps, out = norm
            return matched, _synthetic("LayerNormalization", matched, inputs, out,
                                       {"axis": axis, "epsilon": eps})
    if node.op_type == "Sigmoid":
        return _silu(g, node)
    if node.op_type == "IsNaN":
        return _nan_guard(g, node)
    return None


def _silu(g: _Graph, sigmoid: Node) -> tuple[list[Node], Node] | None:
    """``x * Sigmoid(x)`` (either operand order) as ``Silu(x)``."""
    x = sigmoid.input(0)
    product = g.only_reader(sigmoid.outputs[0])
    if product is None or not _binary(product, "Mul") or _other(product, sigmoid.outputs[0]) != x:
        return None
    matched = [sigmoid, product]
    return matched, _synthetic("Silu", matched, (x,), product.outputs[0], {})


def _nan_guard(g: _Graph, isnan: Node) -> tuple[list[Node], Node] | None:
    """``Where(IsNaN(p), 0, p)`` with ``p`` a ``Softmax`` output, as ``SoftmaxNanGuard(p)``."""
    p = isnan.input(0)
    softmax = g.producer.get(p)
    select = g.only_reader(isnan.outputs[0])
    if softmax is None or softmax.op_type != "Softmax" or select is None or select.op_type != "Where":
        return None
    if select.inputs != (isnan.outputs[0], select.input(1), p) or not g.equals(select.input(1), 0.0):
        return None
    culprit = _culprit(g, softmax.input(0))
    matched = [isnan, select]
    return matched, _synthetic("SoftmaxNanGuard", matched, (p,), select.outputs[0],
                               {"finite": not culprit, "culprit": culprit})


def _culprit(g: _Graph, name: str) -> str:
    """A constant that tensor ``name`` is computed from and that is infinite or NaN
    (``""`` if there is none): one pass over the graph, in its topological order."""
    if g.culprits is None:
        g.culprits = _culprits(g)
    return g.culprits.get(name, "")


def _culprits(g: _Graph) -> dict[str, str]:
    found: dict[str, str] = {n: n for n, a in g.constants.items()
                             if np.issubdtype(a.dtype, np.floating) and not np.isfinite(a).all()}
    for node in g.nodes:
        blame = next((found[i] for i in node.inputs if found.get(i)), "") or _attribute_culprit(node)
        found.update((out, blame) for out in node.outputs if out not in found)
    return found


def _attribute_culprit(node: Node) -> str:
    """The node's name when a tensor attribute (``ConstantOfShape``'s value...) is not finite."""
    arrays = [v for v in node.attrs.values() if isinstance(v, np.ndarray) and np.issubdtype(v.dtype, np.floating)]
    return node.name if any(not np.isfinite(a).all() for a in arrays) else ""


def constant_values(initializers: dict[str, np.ndarray], nodes: Iterable[Node]) -> dict[str, np.ndarray]:
    """Initializers plus the values of ``Constant`` nodes given as attributes."""
    found = dict(initializers)
    for node in nodes:
        if node.op_type != "Constant" or not node.outputs:
            continue
        for key in ("value", "value_float", "value_floats", "value_int", "value_ints"):
            if key in node.attrs:
                found[node.outputs[0]] = np.asarray(node.attrs[key])
    return found
