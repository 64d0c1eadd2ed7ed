"""Pictures benchmark: render time of every ``crane-opt --emit`` picture against 10 s.

The issue's acceptance: each picture renders for ResNet-50 on ``edge`` in under 10 s. The
IR is produced first (``segment,map`` for the schedule pictures, ``lower-to-tile`` for the
mesh from tile programs; those times are shown but not counted); then each picture is
rendered ``--repeat`` times from that module (``crane.viz.picture.render_picture``, the
step ``--emit`` adds) and the slowest run is compared with the target. The first render
also pays for importing matplotlib, as a fresh ``crane-opt`` run would.

Run: ``python bench/pictures.py [--net resnet50] [--machine edge] [--repeat 3]``.
Exit status 1 when a picture misses the target.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from crane.dialects import default_context
from crane.dialects.builtin import ModuleOp
from crane.ir.diagnostics import DiagnosticEngine
from crane.passes.context import PassContext
from crane.passes.manager import PassManager
from crane.passes.pipeline import build_pipeline
from crane.passes.registry import PassRegistry
from crane.tools.inputs import translate
from crane.viz.picture import render_picture

TARGET_SECONDS = 10.0
EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
CASES = (
    ("gantt", "png", "mapped"), ("gantt", "svg", "mapped"),
    ("mesh", "png", "tiles"), ("mesh", "svg", "tiles"), ("mesh", "dot", "tiles"),
    ("mesh", "png", "mapped"),
    ("graph", "dot", "mapped"), ("graph", "png", "mapped"), ("graph", "svg", "mapped"),
    ("segment-graph", "dot", "mapped"), ("segment-graph", "png", "mapped"),
    ("segment-graph", "svg", "mapped"),
)
"""(picture, format, module): ``mapped`` is after segment,map; ``tiles`` after lower-to-tile."""


def compile_net(net: str, machine: str, pipeline: str) -> tuple[ModuleOp, float]:
    """The example network after ``pipeline``, and the seconds that took."""
    path = EXAMPLES / f"{net}.crn"
    text = path.read_text()
    if machine != "edge":
        text = text.replace("machine edge;", f"machine {machine};")
    began = time.perf_counter()
    context = default_context()
    module = translate("crn", text, str(path), context)
    ctx = PassContext(context, DiagnosticEngine())
    if not PassManager(build_pipeline(pipeline, PassRegistry.with_in_tree_passes(),
                                      context)).run(module, ctx):
        raise SystemExit(f"{pipeline} failed on {net}: "
                         f"{[d.message for d in ctx.diagnostics.diagnostics][:3]}")
    return module, time.perf_counter() - began


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--net", default="resnet50")
    parser.add_argument("--machine", default="edge")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    modules: dict[str, ModuleOp] = {}
    for name, pipeline in (("mapped", "segment,map"), ("tiles", "lower-to-tile")):
        modules[name], seconds = compile_net(args.net, args.machine, pipeline)
        print(f"{args.net} on {args.machine}: {pipeline:<13} {seconds:6.2f} s (not counted)")
    print(f"\n{'picture':<14} {'format':<6} {'from':<7} {'slowest':>8} {'first':>8} "
          f"{'bytes':>10}  vs {TARGET_SECONDS:.0f} s")
    missed = 0
    for kind, fmt, source in CASES:
        times, size = [], 0
        for _ in range(max(1, args.repeat)):
            began = time.perf_counter()
            size = len(render_picture(modules[source], kind, fmt))
            times.append(time.perf_counter() - began)
        slowest = max(times)
        verdict = "ok" if slowest < TARGET_SECONDS else "MISSED"
        missed += slowest >= TARGET_SECONDS
        print(f"{kind:<14} {fmt:<6} {source:<7} {slowest:7.2f}s {times[0]:7.2f}s {size:>10,}  "
              f"{verdict}")
    print(f"\n{len(CASES) - missed} of {len(CASES)} pictures under {TARGET_SECONDS:.0f} s")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
