"""No `.crn` text, however malformed, makes the frontend raise anything but CrnErrors, or hang.

Three generators: random text over the language's own alphabet, random token soups, and
mutations (deleted, duplicated, swapped or replaced slices) of the real examples.
"""

from __future__ import annotations

import time
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from crane.frontend.crn import parse_crn
from crane.frontend.errors import CrnErrors

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
SOURCES = sorted(p for p in EXAMPLES.rglob("*.crn") if p.stat().st_size < 4000)
TOKENS = [
    "network", "block", "machine", "extends", "input", "output", "return", "repeat", "in", "..",
    "let", "batch", "train", "loss", "optimizer", "import", "mesh", "x", "dram_ports", "edges",
    "{", "}", "(", ")", "[", "]", ",", ";", ":", "=", "+", "-", "*", "/", "//", "%", "true",
    "false", "\"lib/common.crn\"", "0", "1", "3", "64", "1000000", "2.5", "1e-3", "f32", "int32",
    "conv2d", "relu", "linear", "attention", "concat", "reshape", "cross_entropy", "adam", "sgd",
    "kernel", "out", "stride", "padding", "same", "heads", "shape", "GB/s", "MiB", "pJ/bit",
    "edge", "y", "b", "\n", " ", "#c\n",
]

SLOW = 5.0
"""Seconds any single input may take (the budgets in crn/context.py keep it far lower)."""


def _check(text: str, filename: str = str(EXAMPLES / "fuzz.crn")) -> None:
    start = time.perf_counter()
    try:
        parse_crn(text, filename)
    except CrnErrors as errors:
        assert errors.errors
        for error in errors.errors:
            assert error.render().startswith(f"{error.loc.file}:{error.loc.line}:{error.loc.col}: error:")
    assert time.perf_counter() - start < SLOW


FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FUZZ
@given(st.text(alphabet=st.sampled_from(list("abcnxy_019 .,;:=+-*/%()[]{}\"'#\n\t@")), max_size=200))
def test_random_characters(text: str) -> None:
    _check(text)


@FUZZ
@given(st.lists(st.sampled_from(TOKENS), max_size=80))
def test_random_token_soup(tokens: list[str]) -> None:
    _check(" ".join(tokens))


@FUZZ
@given(st.lists(st.sampled_from(TOKENS), max_size=40))
def test_token_soup_inside_a_network(tokens: list[str]) -> None:
    _check("network n {\n  input x: f32[1, 3, 8, 8];\n  " + " ".join(tokens) + "\n}\n")


@st.composite
def _mutated(draw: st.DrawFn) -> tuple[str, str]:
    path = draw(st.sampled_from(SOURCES))
    text = path.read_text()
    for _ in range(draw(st.integers(1, 4))):
        i = draw(st.integers(0, len(text)))
        j = draw(st.integers(i, min(len(text), i + 30)))
        op = draw(st.sampled_from(["delete", "duplicate", "replace", "swap"]))
        if op == "delete":
            text = text[:i] + text[j:]
        elif op == "duplicate":
            text = text[:j] + text[i:j] + text[j:]
        elif op == "replace":
            text = text[:i] + draw(st.sampled_from(TOKENS)) + text[j:]
        else:
            text = text[:i] + text[j : j + (j - i)] + text[i:j] + text[j + (j - i) :]
    return text, str(path)


@FUZZ
@given(_mutated())
def test_mutated_examples(case: tuple[str, str]) -> None:
    _check(*case)


def test_deep_nesting_is_an_error_not_a_crash() -> None:
    _check("network n {\n  let k = " + "(" * 3000 + "1" + ")" * 3000 + ";\n}\n")
    _check("network n {\n  input x: f32[1];\n  y = " + "relu(" * 2000 + "x" + ")" * 2000 + ";\n}\n")


NAMES = ["x", "y", "z", "a", "k", "batch", "b"]
STATEMENTS = [
    "{n} = relu({m});", "{n} = conv2d({m}, out={i}, kernel={i}, stride={i}, padding={p});",
    "{n} = add({m}, {o});", "{n} = concat({m}, {o}, axis={i});", "let {n} = {i} {op} {j};",
    "{n} = b({m}, {i});", "{n} = linear({m}, out={i});", "output {n};", "input {n}: f32[{i}, {j}];",
    "repeat {n} in {i}..{j} {{ {n} = relu({m}); }}", "{n} = reshape({m}, shape=[{i}, -1]);",
    "{n} = attention({m}, heads={i});", "{n} = max_pool2d({m}, kernel={i});", "batch {i};",
    "train {{ loss mse({m}, {o}); optimizer sgd(lr={i}); }}", "{n} = {m};", "machine {n};",
]


@st.composite
def _statement_program(draw: st.DrawFn) -> str:
    lines = ["block b(x, c) {", "  return conv2d(x, out=c, kernel=1);", "}", "network n {",
             "  input x: f32[1, 3, 8, 8];"]
    for _ in range(draw(st.integers(0, 12))):
        template = draw(st.sampled_from(STATEMENTS))
        lines.append("  " + template.format(
            n=draw(st.sampled_from(NAMES)), m=draw(st.sampled_from(NAMES)), o=draw(st.sampled_from(NAMES)),
            i=draw(st.integers(-2, 9)), j=draw(st.integers(-2, 9)), op=draw(st.sampled_from("+-*/%")),
            p=draw(st.sampled_from(["same", "valid", "1", "[1, 2]", "sam", "x"]))))
    return "\n".join([*lines, "}"]) + "\n"


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_statement_program())
def test_random_statement_programs(text: str) -> None:
    _check(text)
