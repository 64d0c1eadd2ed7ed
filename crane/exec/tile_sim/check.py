"""Check tile programs against the reference interpreter on the graph they came from.

    report = check(module, rtol=1e-5)
    print(report.summary()); assert report.ok

Runs the functional simulator and :func:`crane.exec.interpreter.run_function` (float32,
same seed, same given inputs and weights) on the ``graph.func`` kept in the module, then
compares every interpreter output with the DRAM tensor of the same name: ``y``, ``loss``,
``<weight>.new`` for a training step. An updated weight may instead be written back into
the weight's own tensor: ``<w>.new`` is then compared with the final DRAM ``<w>``
(likewise ``<w>.<state>.new``). An output found in neither place is a mismatch.

The error of one tensor is ``max |sim - ref|`` (``max_abs``) and that divided by
``max |ref|`` (``max_rel``, a norm-wise relative error: element-wise relative errors are
meaningless next to zeros); it matches when ``max_rel <= rtol`` and nothing is NaN.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from crane.exec.interpreter import InterpreterError, run_function
from crane.exec.tile_sim.functional import Counters, graph_func, simulate
from crane.exec.tile_sim.memory import Array, fail
from crane.ir.core import Operation


@dataclass(frozen=True, slots=True)
class Comparison:
    """One interpreter output against the simulated DRAM."""

    name: str
    tensor: str
    """The DRAM tensor compared (``""`` when none holds the output)."""
    shape: tuple[int, ...]
    max_abs: float
    max_rel: float
    ok: bool


@dataclass(frozen=True, slots=True)
class CheckReport:
    comparisons: tuple[Comparison, ...]
    rtol: float
    counters: Counters

    @property
    def ok(self) -> bool:
        return bool(self.comparisons) and all(c.ok for c in self.comparisons)

    @property
    def max_abs(self) -> float:
        return max((c.max_abs for c in self.comparisons), default=0.0)

    @property
    def max_rel(self) -> float:
        return max((c.max_rel for c in self.comparisons), default=0.0)

    def lines(self) -> list[str]:
        """A table row per output, then the verdict."""
        rows = []
        for c in self.comparisons:
            where = c.tensor if c.tensor else "(missing: no DRAM tensor holds it)"
            shape = "x".join(map(str, c.shape)) or "scalar"
            rows.append(f"{'ok  ' if c.ok else 'FAIL'}  {c.name}  {shape}  max_abs={c.max_abs:.3g}  "
                        f"max_rel={c.max_rel:.3g}  <- {where}")
        verdict = "match" if self.ok else "MISMATCH"
        rows.append(f"max error: abs {self.max_abs:.3g}, rel {self.max_rel:.3g} (rtol {self.rtol:g}) "
                    f"over {len(self.comparisons)} output(s): {verdict}")
        return rows


def _holder(name: str, dram: Mapping[str, Array]) -> str:
    if name in dram:
        return name
    base = name.removesuffix(".new")
    return base if base != name and base in dram else ""


def compare(name: str, reference: Array, dram: Mapping[str, Array], rtol: float) -> Comparison:
    """The error of the DRAM tensor holding output ``name``."""
    ref = np.asarray(reference, dtype=np.float64)
    tensor = _holder(name, dram)
    if not tensor:
        return Comparison(name, "", tuple(ref.shape), float("inf"), float("inf"), False)
    got = np.asarray(dram[tensor], dtype=np.float64)
    if got.shape != ref.shape:
        return Comparison(name, tensor, tuple(ref.shape), float("inf"), float("inf"), False)
    diff = np.abs(got - ref)
    max_abs = float(diff.max()) if diff.size else 0.0
    scale = float(np.abs(ref).max()) if ref.size else 0.0
    max_rel = max_abs / scale if scale > 0 else (0.0 if max_abs == 0 else float("inf"))
    ok = not np.isnan(diff).any() and max_rel <= rtol
    return Comparison(name, tensor, tuple(ref.shape), max_abs, max_rel, ok)


def check(module: Operation, *, rtol: float = 1e-5, seed: int = 0,
          inputs: Mapping[str, Array] | None = None, weights: Mapping[str, Array] | None = None,
          func: str | None = None) -> CheckReport:
    """Simulate ``module`` and compare with the interpreter (see the module docstring)."""
    graph = graph_func(module, func)
    if graph is None:
        raise fail(module, "keeps no graph.func to check against" if func is None
                   else f"has no graph.func named '{func}'")
    dram, counters = simulate(module, inputs, weights, seed=seed)
    args = {arg.name_hint for arg in graph.body.args}
    given = {k: v for k, v in (inputs or {}).items() if k in args}
    try:
        reference = run_function(graph, given, weights=weights, dtype="f32", seed=seed)
    except InterpreterError as problem:
        raise fail(problem.op or graph, f"the reference interpreter failed: {problem.message}") from None
    comparisons = tuple(compare(n, a, dram, rtol) for n, a in reference.items())
    return CheckReport(comparisons, rtol, counters)
