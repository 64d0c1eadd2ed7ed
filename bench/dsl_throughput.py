"""Throughput of the `.crn` frontend: parse + elaboration (+ lowering to graph IR).

Generates a flat model of N layer lines (default 10,000) cycling through conv2d,
batchnorm, relu, add and max-pool-free shapes, about 15-25 tokens per line like the layer-list
DSL of toolkit-anchors section 6, and prints lines/s for each stage, best of R runs.

    python bench/dsl_throughput.py            # 10,000 lines, best of 3
    python bench/dsl_throughput.py -n 2000 -r 5 --no-lower
    python bench/dsl_throughput.py --cpu      # CPU time of this process instead of wall time

Machines differ (and shared ones are often busy), so the script also times the reference
workload of toolkit-anchors section 6 (a flat layer-list grammar, Lark LALR with an inline
transformer: 13,400 lines/s on the reference machine) and prints our speed relative to it.
"""

from __future__ import annotations

import argparse
import gc
import time
from collections.abc import Callable

from crane.frontend.crn import parse_crn
from crane.frontend.crn.syntax import parse_module, parser


def generate(layers: int) -> str:
    """A valid model with ``layers`` layer lines (plus a few lines of header and footer)."""
    lines = ["network big {", "  machine edge;", "  input x0: f32[batch, 16, 32, 32];"]
    for i in range(1, layers + 1):
        prev = f"x{i - 1}"
        step = i % 4
        if step == 1:
            lines.append(f"  x{i} = conv2d({prev}, out=16, kernel=3, stride=1, padding=1, bias=false);")
        elif step == 2:
            lines.append(f"  x{i} = batchnorm({prev}, eps=0.00001);")
        elif step == 3:
            lines.append(f"  x{i} = relu({prev});")
        else:
            lines.append(f"  x{i} = add({prev}, x{i - 3});  # residual")
    lines += [f"  output x{layers};", "}"]
    return "\n".join(lines) + "\n"


_REFERENCE_GRAMMAR = r"""
start: line*
line: "layer" NAME ":" NAME "(" args ")" "->" shape ";"
args: arg ("," arg)*
?arg: NAME | NAME "=" val -> kw
?val: INT | shape
shape: "[" INT ("," INT)* "]"
NAME: /[A-Za-z_][A-Za-z0-9_]*/
INT: /[0-9]+/
%ignore /[ \t\r\n]+/
"""
REFERENCE_LINES_PER_S = 13_400
"""The reference workload's speed on the machine of toolkit-anchors section 6."""


def reference_parser() -> Callable[[str], object]:
    """The calibration workload: the layer-list DSL of toolkit-anchors section 6."""
    import lark

    @lark.v_args(inline=True)
    class Build(lark.Transformer[lark.Token, object]):
        def line(self, *items: object) -> tuple[object, ...]:
            return items

        def args(self, *items: object) -> tuple[object, ...]:
            return items

        def kw(self, *items: object) -> tuple[object, ...]:
            return items

        def shape(self, *items: object) -> tuple[object, ...]:
            return items

    grammar = lark.Lark(_REFERENCE_GRAMMAR, parser="lalr", transformer=Build())
    return grammar.parse


def reference_text(layers: int) -> str:
    return "\n".join(f"layer l{i}: conv2d(l{i - 1}, k=3, stride=[1,1]) -> [1,64,56,56];"
                     for i in range(1, layers + 1))


def best_of(runs: int, work: Callable[[], object], clock: Callable[[], float] = time.perf_counter) -> float:
    """The fastest of ``runs`` timings of ``work`` (garbage collection paused, as a compiler would)."""
    times = []
    for _ in range(runs):
        gc.collect()
        gc.disable()
        start = clock()
        work()
        times.append(clock() - start)
        gc.enable()
    return min(times)


def main() -> None:
    args = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    args.add_argument("-n", "--layers", type=int, default=10_000)
    args.add_argument("-r", "--runs", type=int, default=3)
    args.add_argument("--no-lower", action="store_true", help="skip the lowering to graph IR")
    args.add_argument("--cpu", action="store_true",
                      help="time with this process's CPU time (steadier on a busy shared machine)")
    opts = args.parse_args()
    clock = time.process_time if opts.cpu else time.perf_counter
    text = generate(opts.layers)
    lines = opts.layers
    start = time.perf_counter()
    parser()
    print(f"grammar load: {1000 * (time.perf_counter() - start):.1f} ms")
    stages: list[tuple[str, Callable[[], object]]] = [
        ("parse", lambda: parse_module(text)),
        ("parse + elaborate", lambda: parse_crn(text, "big.crn")),
    ]
    if not opts.no_lower:
        from crane.frontend.lower import lower_network

        network = parse_crn(text, "big.crn")
        stages.append(("lower only", lambda: lower_network(network)))
        stages.append(("parse + elaborate + lower", lambda: lower_network(parse_crn(text, "big.crn"))))
    print(f"{lines} layer lines, {len(text) / 1e6:.2f} MB, best of {opts.runs}"
          f"{' (CPU time)' if opts.cpu else ''}")
    reference, ref_text = reference_parser(), reference_text(lines)
    ref_speed = lines / best_of(opts.runs, lambda: reference(ref_text), clock)
    scale = REFERENCE_LINES_PER_S / ref_speed
    print(f"  {'reference workload (§6)':28s} {'':8s}     {ref_speed:10,.0f} lines/s "
          f"(this machine is {scale:.2f}x slower than the reference)")
    for name, work in stages:
        speed = lines / best_of(opts.runs, work, clock)
        print(f"  {name:28s} {lines / speed * 1000:8.1f} ms  {speed:10,.0f} lines/s "
              f"(~{speed * scale:,.0f} lines/s on the reference machine)")


if __name__ == "__main__":
    main()
