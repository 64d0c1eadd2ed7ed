"""The order nodes are imported in: the graph's own when it is topological, else a
topological one; a node reading a tensor nothing defines, or a cycle, is an error naming
the nodes.

ONNX requires nodes in topological order, and its checker rejects any other with a
message that does not say which nodes are at fault. Checked here first, a graph that is
merely out of order is imported in a sorted order (as runtimes do), and the errors name
what is wrong: ``node 'n1' (Add) reads 'b', which no graph input, initializer or node
defines``, or ``nodes 'n1' (Add) -> 'n2' (Relu) -> 'n1' (Add) form a cycle``.
"""

from __future__ import annotations

from collections import defaultdict, deque
from typing import Any

from crane.frontend.onnx.reader import node_location
from crane.ir.diagnostics import DiagnosticError


def _label(proto: Any, index: int) -> str:
    return f"'{proto.name or f'{proto.op_type}_{index}'}' ({proto.op_type})"


def node_order(graph: Any, filename: str) -> list[int] | None:
    """None when the graph's nodes are in topological order, else a topological order
    (node indices); raises for undefined inputs and cycles."""
    defined = {v.name for v in graph.input} | {t.name for t in graph.initializer} | {""}
    producer: dict[str, int] = {}
    for index, proto in enumerate(graph.node):
        for name in proto.output:
            producer.setdefault(name, index)
    _undefined(graph, defined, producer, filename)
    sorted_already = True
    seen = set(defined)
    for proto in graph.node:
        sorted_already = sorted_already and all(name in seen for name in proto.input)
        seen.update(proto.output)
    if sorted_already:
        return None
    return _kahn(graph, defined, producer, filename)


def _undefined(graph: Any, defined: set[str], producer: dict[str, int], filename: str) -> None:
    """Every node input that nothing defines, reported at once."""
    missing = [(index, proto, name) for index, proto in enumerate(graph.node) for name in proto.input
               if name not in defined and name not in producer]
    problems = [DiagnosticError.at(node_location(filename, index, proto.name or f"{proto.op_type}_{index}",
                                                 proto.op_type),
                                   f"node {_label(proto, index)} reads '{name}', which no graph input, "
                                   f"initializer or node defines")
                for index, proto, name in missing]
    if problems:
        raise DiagnosticError(*(d for p in problems for d in p.diagnostics))


def _kahn(graph: Any, defined: set[str], producer: dict[str, int], filename: str) -> list[int]:
    computed = [{name for name in proto.input if name not in defined} for proto in graph.node]
    waiting = [len(names) for names in computed]
    readers: dict[int, list[int]] = defaultdict(list)
    for index, names in enumerate(computed):
        for name in names:
            readers[producer[name]].append(index)
    ready = deque(i for i, count in enumerate(waiting) if count == 0)
    order: list[int] = []
    while ready:
        index = ready.popleft()
        order.append(index)
        for reader in readers[index]:
            waiting[reader] -= 1
        ready.extend(sorted({r for r in readers[index] if waiting[r] == 0}))
    if len(order) == len(graph.node):
        return order
    raise _cycle(graph, defined, producer, set(order), filename)


def _cycle(graph: Any, defined: set[str], producer: dict[str, int], done: set[int],
           filename: str) -> DiagnosticError:
    """An error naming the nodes of one cycle among the nodes never ready."""
    start = min(set(range(len(graph.node))) - done)
    path: list[int] = []
    index = start
    while index not in path:
        path.append(index)
        index = next(producer[name] for name in graph.node[index].input
                     if name not in defined and producer[name] not in done)
    cycle = path[path.index(index):][::-1]  # in the direction data flows
    first_at = cycle.index(min(cycle))
    cycle = cycle[first_at:] + cycle[:first_at]
    first = graph.node[cycle[0]]
    location = node_location(filename, cycle[0], first.name or f"{first.op_type}_{cycle[0]}", first.op_type)
    if len(cycle) == 1:
        return DiagnosticError.at(location, f"node {_label(first, cycle[0])} reads its own output: a cycle")
    names = " -> ".join(_label(graph.node[i], i) for i in [*cycle, cycle[0]])
    return DiagnosticError.at(location, f"nodes {names} form a cycle")
