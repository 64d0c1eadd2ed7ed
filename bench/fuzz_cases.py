"""The inputs of the fuzz campaign (``bench/fuzz.py``): seeds, mutations and commands.

A :class:`Case` is one command line of a Crane tool with the files it reads. Cases come in
kinds, each from its own seeds:

- ``crn``: a bundled example (``examples/*.crn``) or a small network, mutated;
- ``graph-ir`` / ``segment-ir`` / ``tile-ir``: the IR ``crane-opt`` prints at each level
  of lowering for the small networks, mutated, run through the next passes or the
  simulator;
- ``pipeline``: a pass pipeline built from the registry's passes and options (hostile
  values included), or a known pipeline with its text mutated;
- ``options``: a tool's flags with hostile values;
- ``onnx``: a small ONNX model with a mutated field, or mutated bytes.

Everything is drawn from one ``random.Random``, so a seed names a campaign exactly.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

HOSTILE_NUMBERS = ("0", "-1", "1", "2", "3", "7", "64", "65", "4096", "65537", "2147483647",
                   "2147483648", "9223372036854775808", "100000000", "1e308", "1e400", "0.5",
                   "-0.0", "1e-320", "99999999999999999999999")
HOSTILE_WORDS = ("nan", "inf", "-inf", "none", "", "x", "true", "-", "\"\"", "{}", "1,2,3")

SMALL_NETS: Mapping[str, str] = {
    "mlp.crn": "network mlp {\n  machine edge;\n  batch 2;\n  input x: f32[batch, 16];\n"
               "  h = relu(linear(x, out=32));\n  y = linear(h, out=4);\n  output y;\n}\n",
    "cnn.crn": "machine small extends edge {\n  mesh 2 x 2;\n  sram 256 KiB;\n}\n\n"
               "network cnn {\n  machine small;\n  input x: f32[1, 3, 16, 16];\n"
               "  c = relu(conv2d(x, out=8, kernel=3, padding=1));\n  p = max_pool2d(c, kernel=2);\n"
               "  d = conv2d(p, out=8, kernel=3, stride=2, padding=same);\n"
               "  y = linear(flatten(global_avg_pool(d)), out=10);\n  output y;\n}\n",
    "att.crn": "network att {\n  machine edge;\n  input t: f32[1, 8, 16];\n"
               "  a = attention(t, heads=4, causal=true);\n  n = layernorm(add(a, t));\n"
               "  y = softmax(linear(n, out=8));\n  output y;\n}\n",
    "train.crn": "network train {\n  machine edge;\n  input x: f32[batch, 3, 8, 8];\n"
                 "  input labels: int32[batch];\n  c = relu(batchnorm(conv2d(x, out=4, kernel=3, padding=1)));\n"
                 "  logits = linear(flatten(avg_pool2d(c, kernel=2)), out=5);\n  output logits;\n"
                 "  train {\n    loss cross_entropy(logits, labels);\n    optimizer sgd(lr=0.1);\n"
                 "    batch 2;\n  }\n}\n",
}
"""Networks small enough to lower and simulate in a second or two."""

SNIPPETS = (
    'import "/dev/zero";\n', 'import "lib";\n', 'import "missing.crn";\n',
    "machine huge extends edge { mesh 100000000 x 2; }\n",
    "machine tiny extends edge { sram 16 byte; }\n",
    "machine hot extends edge { frequency 1e308 GHz; }\n",
    "let big = 9223372036854775807 * 2;\n", "let f = 1e308 * 10.0;\n",
)
"""File-level lines spliced into `.crn` inputs."""

STATEMENTS = ("  batch 2147483648;\n", "  batch 0;\n", "  machine tiny;\n", "  machine huge;\n",
              "  machine hot;\n", "  z = conv2d(x, out=0, kernel=3);\n",
              "  z = attention(x, heads=0);\n", "  z = max_pool2d(x, kernel=2, padding=[1, 1]);\n",
              "  repeat i in 0..2147483647 { x = relu(x); }\n")
"""Statements spliced into a network body."""

PASSES = ("cse", "dce", "canonicalize", "segment", "map", "codegen", "alloc", "autodiff",
          "spatial-tile", "expand-attention", "print-op-stats", "strip-debuginfo",
          "print-training-stats", "cleanup", "lower-to-tile", "bogus")
OPTIONS: Mapping[str, tuple[str, ...]] = {
    "segment": ("policy", "objective", "batch", "time-limit", "max-block", "groups", "recompute", "mode"),
    "map": ("search", "timeout"),
    "alloc": ("alignment", "double-buffer"),
    "canonicalize": ("max-iterations",),
    "autodiff": ("optimizer", "loss", "lr", "momentum", "weight-decay", "beta1", "beta2", "eps",
                 "nesterov", "step", "attach-loss"),
    "spatial-tile": ("grid", "segments", "memory-cap", "optimizer-states", "recompute"),
    "codegen": ("emit", "fit-sram"),
}
GOOD_PIPELINES = ("segment", "segment,map", "lower-to-tile", "cse,canonicalize,dce", "autodiff",
                  "print-op-stats", "spatial-tile{grid=2,2}", "segment{policy=set batch=4}",
                  "builtin.module(graph.func(cse),segment)")


@dataclass(frozen=True)
class Case:
    """One command: ``tool`` with ``args`` run in a fresh directory holding ``files``."""

    kind: str
    tool: str
    args: tuple[str, ...]
    files: Mapping[str, bytes] = field(default_factory=dict)
    output: str | None = None
    """The ``-o`` file the run may write (checked for partial or leftover files)."""

    def command(self) -> str:
        return " ".join([self.tool, *(_quote(a) for a in self.args)])


def _quote(arg: str) -> str:
    return arg if re.fullmatch(r"[\w./=,:+-]+", arg) else "'" + arg.replace("'", "'\\''") + "'"


@dataclass
class Seeds:
    """What mutations start from: texts by name, the IR of each level, ONNX models."""

    crn: dict[str, str]
    """Every bundled example and small network, by file name."""
    small: tuple[str, ...]
    """Names in ``crn`` cheap enough for the heavy pipelines."""
    ir: dict[str, dict[str, str]]
    """Level (graph, segment, tile) -> file name -> IR text."""
    onnx: dict[str, bytes]


_TOKEN = re.compile(r"-?\d+\.\d+(?:[eE][-+]?\d+)?|-?\d+(?:[eE][-+]?\d+)?|\w+|\S")


def mutate(text: str, rng: random.Random, extra: tuple[str, ...] = ()) -> str:
    """``text`` with one random edit (sometimes two or three)."""
    for _ in range(rng.choice((1, 1, 1, 1, 1, 1, 1, 2, 2, 3))):
        text = rng.choice(_EDITS)(text, rng, extra)
    return text


def _number(text: str, rng: random.Random, extra: tuple[str, ...]) -> str:
    spans = [m.span() for m in re.finditer(r"(?<![\w.])\d+(?:\.\d+)?(?:[eE][-+]?\d+)?", text)]
    if not spans:
        return text
    start, end = rng.choice(spans)
    return text[:start] + rng.choice(HOSTILE_NUMBERS) + text[end:]


def _token(text: str, rng: random.Random, extra: tuple[str, ...]) -> str:
    spans = [m.span() for m in _TOKEN.finditer(text)]
    if not spans:
        return text
    start, end = rng.choice(spans)
    choice = rng.random()
    if choice < 0.4:
        return text[:start] + text[end:]
    if choice < 0.7:
        return text[:start] + text[start:end] * 2 + text[end:]
    other = text[slice(*rng.choice(spans))]
    return text[:start] + (rng.choice(HOSTILE_WORDS) if choice < 0.85 else other) + text[end:]


def _line(text: str, rng: random.Random, extra: tuple[str, ...]) -> str:
    lines = text.split("\n")
    index = rng.randrange(len(lines))
    choice = rng.random()
    if choice < 0.35:
        del lines[index]
    elif choice < 0.65:
        lines.insert(index, lines[rng.randrange(len(lines))])
    elif choice < 0.85 or not extra:
        other = rng.randrange(len(lines))
        lines[index], lines[other] = lines[other], lines[index]
    else:
        lines.insert(index, rng.choice(extra).rstrip("\n"))
    return "\n".join(lines)


def _bytes(text: str, rng: random.Random, extra: tuple[str, ...]) -> str:
    if not text:
        return text
    if rng.random() < 0.5:
        return text[: rng.randrange(len(text))]
    at = rng.randrange(len(text))
    return text[:at] + rng.choice("{}()[]<>;,:=\"%@#^\x00\t\n\\é") + text[at + 1:]


_EDITS: tuple[Callable[[str, random.Random, tuple[str, ...]], str], ...] = (
    _number, _number, _number, _number, _number, _number, _token, _token, _line, _line, _bytes)
"""Numbers most often: an edited number keeps the input well formed and reaches the limits."""


def crn_case(seeds: Seeds, rng: random.Random) -> Case:
    name = rng.choice(sorted(seeds.crn)) if rng.random() < 0.5 else rng.choice(seeds.small)
    text = seeds.crn[name]
    if rng.random() < 0.25:
        text = rng.choice(SNIPPETS) + text
    text = mutate(text, rng, STATEMENTS)
    files = {name: text.encode("utf-8", "surrogatepass")}
    if name not in seeds.small:
        args = (name, *rng.choice(((), (), ("-p", "print-op-stats"), ("-p", "cse,canonicalize"))))
        return _with_output(Case("crn", "crane-opt", args, files), rng)
    if rng.random() < 0.2:
        return Case("crn", "crane-run", (name, *rng.choice(((), ("--train",)))), files)
    pipeline = rng.choice(("", "segment", "segment,map", "lower-to-tile", "autodiff", "spatial-tile"))
    args = (name, "-p", pipeline) if pipeline else (name,)
    return _with_output(Case("crn", "crane-opt", args, files), rng)


NEXT_STEPS: Mapping[str, tuple[tuple[str, tuple[str, ...]], ...]] = {
    "graph": (("crane-opt", ()), ("crane-opt", ("-p", "segment")), ("crane-opt", ("-p", "cse,canonicalize")),
              ("crane-opt", ("-p", "autodiff,segment,map")), ("crane-run", ())),
    "segment": (("crane-opt", ()), ("crane-opt", ("-p", "map")), ("crane-opt", ("-p", "codegen")),
                ("crane-opt", ("-p", "map,codegen,alloc"))),
    "tile": (("crane-sim", ()), ("crane-sim", ("--check",)), ("crane-sim", ("--timing",)),
             ("crane-opt", ("-p", "alloc"))),
}


def ir_case(seeds: Seeds, rng: random.Random) -> Case:
    level = rng.choice(sorted(seeds.ir))
    name = rng.choice(sorted(seeds.ir[level]))
    text = mutate(seeds.ir[level][name], rng)
    tool, extra = rng.choice(NEXT_STEPS[level])
    case = Case(f"{level}-ir", tool, (name, *extra), {name: text.encode("utf-8", "surrogatepass")})
    return _with_output(case, rng) if tool == "crane-opt" else case


def pipeline_case(seeds: Seeds, rng: random.Random) -> Case:
    name = rng.choice(seeds.small)
    if rng.random() < 0.4:
        text = mutate(rng.choice(GOOD_PIPELINES), rng)
    else:
        text = ",".join(_pass_text(rng) for _ in range(rng.randint(1, 3)))
    case = Case("pipeline", "crane-opt", (name, "-p", text), {name: seeds.crn[name].encode()})
    return _with_output(case, rng)


def _pass_text(rng: random.Random) -> str:
    name = rng.choice(PASSES)
    keys = OPTIONS.get(name, ())
    if not keys or rng.random() < 0.3:
        return name
    chosen = rng.sample(keys, rng.randint(1, min(2, len(keys))))
    values = [f"{key}={rng.choice((*HOSTILE_NUMBERS, *HOSTILE_WORDS, 'crane', 'z3', 'edp'))}" for key in chosen]
    return f"{name}{{{' '.join(values)}}}"


FLAGS: Mapping[str, tuple[str, ...]] = {
    "crane-opt": ("--onnx-batch", "--onnx-dim", "--machine", "--emit", "--emit-format",
                  "--cost-report", "--print-ir-after", "--color", "--input-format"),
    "crane-run": ("--seed", "--show", "--lr", "--optimizer", "--func", "--dtype", "--input",
                  "--weights", "--onnx-batch", "--save"),
    "crane-sim": ("--seed", "--show", "--rtol", "--func", "--input", "--weights", "--trace"),
}
FLAG_VALUES = (*HOSTILE_NUMBERS, *HOSTILE_WORDS, "edge", "cloud", "/dev/zero", ".", "x=1",
               "a=/dev/null", "gantt", "png", "nonexistent.npz", "out/x")


def options_case(seeds: Seeds, rng: random.Random) -> Case:
    tool = rng.choice(sorted(FLAGS))
    if tool == "crane-sim" and "tile" in seeds.ir:
        name = rng.choice(sorted(seeds.ir["tile"]))
        files = {name: seeds.ir["tile"][name].encode()}
    else:
        name = rng.choice(seeds.small)
        files = {name: seeds.crn[name].encode()}
    args: list[str] = [name]
    for flag in rng.sample(FLAGS[tool], rng.randint(1, 2)):
        args += [flag, rng.choice(FLAG_VALUES)]
    if tool == "crane-opt" and rng.random() < 0.5:
        args += ["-p", "segment"]
    return Case("options", tool, tuple(args), files)


def onnx_case(seeds: Seeds, rng: random.Random, mutate_model: Callable[[bytes, random.Random], bytes]) -> Case:
    name = rng.choice(sorted(seeds.onnx))
    data = mutate_model(seeds.onnx[name], rng)
    tool = rng.choice(("crane-opt", "crane-opt", "crane-run"))
    extra = rng.choice(((), ("--onnx-batch", rng.choice(HOSTILE_NUMBERS)), ("-p", "segment")))
    if tool == "crane-run" and "-p" in extra:
        extra = ()
    return Case("onnx", tool, (name, *extra), {name: data})


def _with_output(case: Case, rng: random.Random) -> Case:
    """Sometimes write the result with ``-o`` (to check for partial or leftover files)."""
    if case.tool != "crane-opt" or rng.random() < 0.6:
        return case
    return Case(case.kind, case.tool, (*case.args, "-o", "out.mlir"), case.files, "out.mlir")
