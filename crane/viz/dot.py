"""A small model of Graphviz DOT graphs and its writer.

Every id and attribute value is written as a quoted string (``"..."``, with ``"`` and
``\\`` escaped and line breaks as ``\\n``), so any layer name is a valid id. Clusters
(subgraphs named ``cluster_...``) may nest. The text is deterministic: nodes, edges and
clusters come out in the order they were added.
"""

from __future__ import annotations

from dataclasses import dataclass, field


def quote(text: str) -> str:
    """``text`` as a DOT quoted string."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


def _attrs(attrs: dict[str, str]) -> str:
    if not attrs:
        return ""
    return " [" + ", ".join(f"{key}={quote(value)}" for key, value in attrs.items()) + "]"


@dataclass
class DotNode:
    id: str
    attrs: dict[str, str] = field(default_factory=dict)


@dataclass
class DotEdge:
    src: str
    dst: str
    attrs: dict[str, str] = field(default_factory=dict)


@dataclass
class DotCluster:
    """A ``subgraph cluster_<id>``: a box around its nodes and inner clusters."""

    id: str
    attrs: dict[str, str] = field(default_factory=dict)
    nodes: list[DotNode] = field(default_factory=list)
    clusters: list[DotCluster] = field(default_factory=list)

    def all_nodes(self) -> list[DotNode]:
        return self.nodes + [n for c in self.clusters for n in c.all_nodes()]


@dataclass
class DotGraph:
    """A whole graph: attributes, defaults, top-level nodes, clusters and edges."""

    name: str
    directed: bool = True
    attrs: dict[str, str] = field(default_factory=dict)
    node_defaults: dict[str, str] = field(default_factory=dict)
    edge_defaults: dict[str, str] = field(default_factory=dict)
    nodes: list[DotNode] = field(default_factory=list)
    clusters: list[DotCluster] = field(default_factory=list)
    edges: list[DotEdge] = field(default_factory=list)

    def all_nodes(self) -> list[DotNode]:
        return self.nodes + [n for c in self.clusters for n in c.all_nodes()]

    def render(self) -> str:
        """The DOT text."""
        lines = [f"{'digraph' if self.directed else 'graph'} {quote(self.name)} {{"]
        lines += [f"  {key}={quote(value)};" for key, value in self.attrs.items()]
        if self.node_defaults:
            lines.append(f"  node{_attrs(self.node_defaults)};")
        if self.edge_defaults:
            lines.append(f"  edge{_attrs(self.edge_defaults)};")
        lines += [f"  {quote(n.id)}{_attrs(n.attrs)};" for n in self.nodes]
        for cluster in self.clusters:
            lines += _cluster_lines(cluster, "  ")
        arrow = "->" if self.directed else "--"
        lines += [f"  {quote(e.src)} {arrow} {quote(e.dst)}{_attrs(e.attrs)};" for e in self.edges]
        lines.append("}")
        return "\n".join(lines) + "\n"


def _cluster_lines(cluster: DotCluster, indent: str) -> list[str]:
    lines = [f"{indent}subgraph {quote('cluster_' + cluster.id)} {{"]
    inner = indent + "  "
    lines += [f"{inner}{key}={quote(value)};" for key, value in cluster.attrs.items()]
    lines += [f"{inner}{quote(n.id)}{_attrs(n.attrs)};" for n in cluster.nodes]
    for child in cluster.clusters:
        lines += _cluster_lines(child, inner)
    lines.append(f"{indent}}}")
    return lines
