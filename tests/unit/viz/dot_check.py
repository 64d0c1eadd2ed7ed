"""A checker of DOT text: a parser of the DOT grammar subset Crane writes.

``parse_dot`` tokenises (quoted strings with escapes, identifiers, numerals, punctuation,
``->``/``--``) and parses ``[strict] (graph|digraph) ID { stmt_list }`` with node, edge,
attribute and ``subgraph`` statements. It fails on unbalanced braces or brackets, on
unquoted ids containing characters DOT does not allow, on an edge operator that does not
match the graph kind, and (``check_declared``) on edges whose endpoints are not declared as
nodes. When pydot is installed, its parser must accept the text too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

TOKEN = re.compile(r'\s+|//[^\n]*|/\*.*?\*/|#[^\n]*|"(?:\\.|[^"\\])*"|->|--|[{}\[\];,=:]|'
                   r"-?(?:\.\d+|\d+(?:\.\d*)?)|[A-Za-z_\x80-\uffff][\w\x80-\uffff]*", re.S)


@dataclass
class Dot:
    name: str
    directed: bool
    nodes: dict[str, dict[str, str]] = field(default_factory=dict)
    edges: list[tuple[str, str, dict[str, str]]] = field(default_factory=list)
    clusters: dict[str, list[str]] = field(default_factory=dict)
    """Subgraph name -> node ids declared directly or in nested subgraphs."""
    attrs: dict[str, str] = field(default_factory=dict)


def tokens(text: str) -> list[str]:
    out, at = [], 0
    while at < len(text):
        match = TOKEN.match(text, at)
        assert match is not None, f"invalid DOT character at {at}: {text[at: at + 20]!r}"
        at = match.end()
        piece = match.group()
        if not piece.strip() or piece.startswith(("//", "/*", "#")):
            continue
        out.append(piece)
    return out


def unquote(token: str) -> str:
    if token.startswith('"'):
        return re.sub(r'\\(.)', lambda m: "\n" if m.group(1) == "n" else m.group(1), token[1:-1])
    return token


class _Parser:
    def __init__(self, toks: list[str]) -> None:
        self.toks, self.at = toks, 0

    def peek(self) -> str:
        return self.toks[self.at] if self.at < len(self.toks) else ""

    def take(self, expected: str | None = None) -> str:
        token = self.peek()
        assert token, "unexpected end of DOT text (unbalanced braces?)"
        assert expected is None or token == expected, f"expected {expected!r}, got {token!r}"
        self.at += 1
        return token

    def ident(self) -> str:
        token = self.take()
        assert token not in "{}[];,=:" and token not in ("->", "--"), f"expected an id, got {token!r}"
        return unquote(token)

    def attr_list(self) -> dict[str, str]:
        attrs: dict[str, str] = {}
        while self.peek() == "[":
            self.take("[")
            while self.peek() != "]":
                key = self.ident()
                self.take("=")
                attrs[key] = self.ident()
                if self.peek() in (",", ";"):
                    self.take()
            self.take("]")
        return attrs


def parse_dot(text: str) -> Dot:
    """Parse ``text`` (see the module docstring); AssertionError says what is wrong."""
    p = _Parser(tokens(text))
    if p.peek() == "strict":
        p.take()
    kind = p.take()
    assert kind in ("graph", "digraph"), f"a DOT file starts with graph or digraph, not {kind!r}"
    dot = Dot(p.ident() if p.peek() != "{" else "", kind == "digraph")
    _stmts(p, dot, [])
    assert p.at == len(p.toks), f"text after the closing brace: {p.toks[p.at:][:5]}"
    return dot


def _stmts(p: _Parser, dot: Dot, within: list[str]) -> None:
    p.take("{")
    while p.peek() != "}":
        _stmt(p, dot, within)
        if p.peek() == ";":
            p.take()
    p.take("}")


def _stmt(p: _Parser, dot: Dot, within: list[str]) -> None:
    token = p.peek()
    if token == "subgraph":
        p.take()
        name = p.ident() if p.peek() != "{" else f"anonymous{p.at}"
        dot.clusters[name] = []
        _stmts(p, dot, [*within, name])
        return
    if token in ("graph", "node", "edge"):
        p.take()
        p.attr_list()
        return
    first = p.ident()
    if p.peek() == "=":
        p.take()
        value = p.ident()
        if not within:
            dot.attrs[first] = value
        return
    chain = [first]
    while p.peek() in ("->", "--"):
        op = p.take()
        assert op == ("->" if dot.directed else "--"), f"edge operator {op} in the wrong graph kind"
        chain.append(p.ident())
    attrs = p.attr_list()
    if len(chain) == 1:
        dot.nodes.setdefault(first, {}).update(attrs)
        for name in within:
            dot.clusters[name].append(first)
        return
    dot.edges += [(a, b, attrs) for a, b in zip(chain, chain[1:], strict=False)]


def check_dot(text: str, quoted_ids: bool = True) -> Dot:
    """Parse, then check that every edge endpoint is a declared node and (``quoted_ids``)
    that every node id and edge endpoint is written quoted; also parse with pydot when
    it is installed."""
    dot = parse_dot(text)
    for a, b, _ in dot.edges:
        assert a in dot.nodes and b in dot.nodes, f"edge {a} -> {b} has an undeclared end"
    if quoted_ids:
        for line in text.splitlines():
            stripped = line.strip()
            if stripped.startswith(("subgraph", "node", "edge", "}", "digraph", "graph")):
                continue
            if "=" in stripped.split("[")[0]:
                continue  # graph attribute statement
            assert stripped.startswith('"'), f"unquoted id in: {stripped}"
    try:
        import pydot  # type: ignore[import-not-found]
    except ImportError:
        return dot
    assert pydot.graph_from_dot_data(text), "pydot rejects the DOT text"
    return dot
