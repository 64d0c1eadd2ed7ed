"""Check tile programs against the reference interpreter on the graph they came from.

    report = check(module, rtol=1e-5)
    print("\\n".join(report.lines())); assert report.ok

Runs the functional simulator and :func:`crane.exec.interpreter.run_function` (float32,
same seed, same given inputs and weights) on the ``graph.func`` kept in the module, then
compares every interpreter output with the DRAM tensor of the same name: ``y``, ``loss``,
``<weight>.new`` for a training step. An updated weight may instead be written back into
the weight's own tensor: ``<w>.new`` is then compared with the final DRAM ``<w>``
(likewise ``<w>.<state>.new``). An output found in neither place is a mismatch.

The error of one tensor is ``max |sim - ref|`` (``max_abs``) and that divided by
``max |ref|`` (``max_rel``, a norm-wise relative error: element-wise relative errors are
meaningless next to zeros); it matches when ``max_rel <= rtol`` and nothing is NaN.

Some outputs cannot be resolved in float32 at all: the gradient of an attention key bias
is zero in exact arithmetic (softmax ignores a per-row constant), so float32 leaves only
rounding noise, which Adam then scales up to a full step. For an output that fails, the
checker reruns the interpreter in float64 on the same (float32) inputs and weights: when
the float32 interpreter itself is off from float64 by more than ``rtol`` (its ``noise``),
and the simulator is within :data:`NOISE_FACTOR` times that noise of float64, the output
is reported as ``ill-conditioned`` rather than failed. ``strict=True`` (``--strict``)
turns this off.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

import numpy as np

from crane.dialects.graph import FuncOp
from crane.exec.interpreter import InterpreterError, run_function
from crane.exec.tile_sim.functional import Counters, graph_func, initial_dram, simulate
from crane.exec.tile_sim.memory import Array, fail
from crane.ir.core import Operation

NOISE_FACTOR = 4.0
"""How far beyond the float32 interpreter's own error the simulator may be, for outputs
float32 cannot resolve (see the module docstring)."""


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
    noise: float | None = None
    """For an ill-conditioned output: the float32 interpreter's own error against float64."""

    @property
    def status(self) -> str:
        if not self.ok:
            return "FAIL"
        return "ill-conditioned" if self.noise is not None else "ok"


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
        """The largest error among the well-conditioned outputs (and the failed ones)."""
        return max((c.max_abs for c in self.comparisons if c.noise is None), default=0.0)

    @property
    def max_rel(self) -> float:
        return max((c.max_rel for c in self.comparisons if c.noise is None), default=0.0)

    def lines(self) -> list[str]:
        """A table row per output, then the verdict."""
        rows = []
        for c in self.comparisons:
            where = c.tensor if c.tensor else "(missing: no DRAM tensor holds it)"
            shape = "x".join(map(str, c.shape)) or "scalar"
            noise = f"  (float32 interpreter vs float64: {c.noise:.3g})" if c.noise is not None else ""
            rows.append(f"{c.status:4}  {c.name}  {shape}  max_abs={c.max_abs:.3g}  "
                        f"max_rel={c.max_rel:.3g}  <- {where}{noise}")
        verdict = "match" if self.ok else "MISMATCH"
        noisy = sum(1 for c in self.comparisons if c.noise is not None)
        aside = f", {noisy} ill-conditioned in float32 judged against float64" if noisy else ""
        rows.append(f"max error: abs {self.max_abs:.3g}, rel {self.max_rel:.3g} (rtol {self.rtol:g}) "
                    f"over {len(self.comparisons)} output(s){aside}: {verdict}")
        return rows


def _holder(name: str, dram: Mapping[str, Array]) -> str:
    if name in dram:
        return name
    base = name.removesuffix(".new")
    return base if base != name and base in dram else ""


def _errors(got: Array, ref: Array) -> tuple[float, float, bool]:
    """``max_abs``, ``max_rel`` (by ``max |ref|``) and whether anything is NaN."""
    diff = np.abs(np.asarray(got, np.float64) - np.asarray(ref, np.float64))
    max_abs = float(diff.max()) if diff.size else 0.0
    scale = float(np.abs(np.asarray(ref, np.float64)).max()) if ref.size else 0.0
    max_rel = max_abs / scale if scale > 0 else (0.0 if max_abs == 0 else float("inf"))
    return max_abs, max_rel, bool(np.isnan(diff).any())


def compare(name: str, reference: Array, dram: Mapping[str, Array], rtol: float) -> Comparison:
    """The error of the DRAM tensor holding output ``name``."""
    ref = np.asarray(reference)
    tensor = _holder(name, dram)
    if not tensor or dram[tensor].shape != ref.shape:
        return Comparison(name, tensor, tuple(ref.shape), float("inf"), float("inf"), False)
    max_abs, max_rel, nan = _errors(dram[tensor], ref)
    return Comparison(name, tensor, tuple(ref.shape), max_abs, max_rel, not nan and max_rel <= rtol)


def _reference(graph: FuncOp, inputs: Mapping[str, Array], weights: Mapping[str, Array] | None,
               dtype: str, seed: int) -> dict[str, Array]:
    try:
        return run_function(graph, inputs, weights=weights, dtype=dtype, seed=seed)
    except InterpreterError as problem:
        raise fail(problem.op or graph, f"the reference interpreter failed: {problem.message}") from None


def _reconsider(c: Comparison, sim: Array, ref32: Array, ref64: Array, rtol: float) -> Comparison:
    """``c`` (failed) as ill-conditioned when float32 itself cannot resolve the output."""
    _, noise, _ = _errors(ref32, ref64)
    _, vs64, nan = _errors(sim, ref64)
    if nan or noise <= rtol or vs64 > NOISE_FACTOR * noise:
        return c
    return replace(c, ok=True, noise=noise)


def check(module: Operation, *, rtol: float = 1e-5, seed: int = 0,
          inputs: Mapping[str, Array] | None = None, weights: Mapping[str, Array] | None = None,
          func: str | None = None, strict: bool = False) -> CheckReport:
    """Simulate ``module`` and compare with the interpreter (see the module docstring)."""
    graph = graph_func(module, func)
    if graph is None:
        raise fail(module, "keeps no graph.func to check against" if func is None
                   else f"has no graph.func named '{func}'")
    dram, counters = simulate(module, inputs, weights, seed=seed)
    args = {arg.name_hint for arg in graph.body.args}
    given = {k: v for k, v in (inputs or {}).items() if k in args}
    reference = _reference(graph, given, weights, "f32", seed)
    comparisons = [compare(n, a, dram, rtol) for n, a in reference.items()]
    failed = [i for i, c in enumerate(comparisons) if not c.ok and c.tensor and c.max_abs != float("inf")]
    if failed and not strict:
        start = initial_dram(module, inputs, weights, seed)
        exact = {k: v.astype(np.float64) if np.issubdtype(v.dtype, np.floating) else v for k, v in start.items()}
        ref64 = _reference(graph, {k: v for k, v in exact.items() if k in args},
                           {k: v for k, v in exact.items() if k not in args}, "f64", seed)
        for i in failed:
            c = comparisons[i]
            comparisons[i] = _reconsider(c, dram[c.tensor], reference[c.name], ref64[c.name], rtol)
    return CheckReport(tuple(comparisons), rtol, counters)
