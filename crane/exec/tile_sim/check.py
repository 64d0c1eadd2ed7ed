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

Float32 cannot decide every output to ``rtol`` against another float32 computation: the
simulator adds partial sums in another order than the interpreter (split reductions,
chunked weights), and some outputs are ill-conditioned (an attention key bias has a zero
gradient in exact arithmetic, so float32 leaves only rounding noise, which Adam scales up
to a full step). So an output that fails against the float32 interpreter is judged again
against the exact result: the checker reruns the interpreter in float64 on the same
(float32) inputs and weights, and measures the float32 interpreter's own error against it
(its ``noise``). The output matches when the simulator is within ``rtol`` of float64, or
within :data:`NOISE_FACTOR` times the interpreter's own float32 error of it: as exact as
float32 arithmetic lets the reference be. It is reported ``rounding`` (or
``ill-conditioned`` when the noise alone exceeds ``rtol``), with both errors; a real
mistake is orders of magnitude above either.

A training step amplifies forward rounding (a batchnorm over few values, a max pool whose
two largest inputs differ by less than that rounding routes its whole gradient to either):
its gradients are then judged given the simulator's own forward pass. The float64
interpreter reruns the step with every forward activation the simulation saved in DRAM
*pinned* to the simulated values, and each gradient output still failing is judged against
that run (``own-forward``). The pinned activations are themselves checked against float64
(each within ``rtol``, or :data:`NOISE_FACTOR` times the float32 interpreter's own error
there); one that is not is a failing row of its own, so a wrong forward pass cannot hide
behind this. ``strict=True`` (``--strict``) turns all of this off.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

import numpy as np

from crane.autodiff import is_training_step
from crane.dialects.graph import FuncOp, LayerOp
from crane.dialects.tile import DramOp
from crane.exec.interpreter import InterpreterError, run_function
from crane.exec.tile_sim.functional import (
    Counters,
    graph_func,
    initial_dram,
    module_ops,
    scratch_tensors,
    simulate,
)
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
    """For an output judged against float64: the float32 interpreter's own error there."""
    exact_rel: float | None = None
    """For an output judged against float64: the simulator's error there."""
    rtol: float = 0.0
    own_forward: bool = False
    """Judged against float64 given the simulator's saved forward activations."""

    @property
    def status(self) -> str:
        if not self.ok:
            return "FAIL"
        if self.noise is None:
            return "ok"
        if self.noise > self.rtol:
            return "ill-conditioned"
        return "own-forward" if self.own_forward else "rounding"


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
        return max((c.max_abs for c in self.comparisons if c.status != "ill-conditioned"),
                   default=0.0)

    @property
    def max_rel(self) -> float:
        """The largest error among the well-conditioned outputs, against float64 for the
        ones judged there."""
        return max((c.max_rel if c.exact_rel is None else c.exact_rel
                    for c in self.comparisons if c.status != "ill-conditioned"), default=0.0)

    def lines(self) -> list[str]:
        """A table row per output, then the verdict."""
        rows = []
        for c in self.comparisons:
            where = c.tensor if c.tensor else "(missing: no DRAM tensor holds it)"
            shape = "x".join(map(str, c.shape)) or "scalar"
            noise = (f"  (against float64: simulator {c.exact_rel:.3g}, float32 interpreter "
                     f"{c.noise:.3g})" if c.noise is not None and c.exact_rel is not None else "")
            rows.append(f"{c.status:4}  {c.name}  {shape}  max_abs={c.max_abs:.3g}  "
                        f"max_rel={c.max_rel:.3g}  <- {where}{noise}")
        verdict = "match" if self.ok else "MISMATCH"
        noisy = sum(1 for c in self.comparisons if c.ok and c.noise is not None)
        aside = f", {noisy} judged against float64" if noisy else ""
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
               dtype: str, seed: int, trace: dict[str, Array] | None = None,
               traced: frozenset[str] = frozenset()) -> dict[str, Array]:
    try:
        return run_function(graph, inputs, weights=weights, dtype=dtype, seed=seed, trace=trace,
                            trace_only=traced)
    except InterpreterError as problem:
        raise fail(problem.op or graph, f"the reference interpreter failed: {problem.message}") from None


def _reconsider(c: Comparison, sim: Array, ref32: Array, ref64: Array, rtol: float) -> Comparison:
    """``c`` (failed against float32) judged against float64 (see the module docstring)."""
    _, noise, _ = _errors(ref32, ref64)
    _, vs64, nan = _errors(sim, ref64)
    judged = replace(c, noise=noise, exact_rel=vs64, rtol=rtol)
    if nan or vs64 > max(rtol, NOISE_FACTOR * noise):
        return judged
    return replace(judged, ok=True)


def _saved_names(graph: FuncOp, module: Operation) -> frozenset[str]:
    """The forward activations of a training step that ``module`` keeps in DRAM under their
    (unique) names: the only scratch tensors the check may read."""
    if not is_training_step(graph):
        return frozenset()
    declared = {t.tensor_name: t.shape for t in module_ops(module) if isinstance(t, DramOp)}
    names = [v.name_hint for op in graph.body.ops for v in op.results if v.name_hint]
    unique = {n for n in names if names.count(n) == 1}
    return frozenset(v.name_hint for op in graph.body.ops if isinstance(op, LayerOp)
                     for v in op.results if v.name_hint in unique
                     and declared.get(v.name_hint) == tuple(v.type.shape))  # type: ignore[attr-defined]


def _saved_activations(names: frozenset[str], dram: Mapping[str, Array]) -> dict[str, Array]:
    """The simulated values of ``names`` (``_saved_names``), in float64."""
    return {name: np.asarray(dram[name], np.float64) for name in names}


def _float64(graph: FuncOp, module: Operation, args: set[str], inputs: Mapping[str, Array] | None,
             weights: Mapping[str, Array] | None, seed: int,
             pinned: Mapping[str, Array] | None = None,
             trace: dict[str, Array] | None = None, traced: frozenset[str] = frozenset()
             ) -> dict[str, Array]:
    """The interpreter in float64 on the simulation's (float32) starting DRAM."""
    start = initial_dram(module, inputs, weights, seed)
    exact = {k: v.astype(np.float64) if np.issubdtype(v.dtype, np.floating) else v for k, v in start.items()}
    try:
        return run_function(graph, {k: v for k, v in exact.items() if k in args},
                            weights={k: v for k, v in exact.items() if k not in args}, dtype="f64",
                            seed=seed, pinned=pinned, trace=trace, trace_only=traced)
    except InterpreterError as problem:
        raise fail(problem.op or graph, f"the reference interpreter failed: {problem.message}") from None


def _rejudge(comparisons: list[Comparison], failed: list[int], dram: Mapping[str, Array],
             reference: Mapping[str, Array], ref64: Mapping[str, Array], rtol: float,
             own_forward: bool = False) -> None:
    """Judge the ``failed`` comparisons against ``ref64`` (given the simulator's forward
    pass when ``own_forward``: the float32 noise stays the one measured without it)."""
    for i in failed:
        c = comparisons[i]
        judged = _reconsider(c, dram[c.tensor], reference[c.name], ref64[c.name], rtol)
        if not own_forward:
            comparisons[i] = judged
            continue
        noise = c.noise if c.noise is not None else judged.noise or 0.0
        exact = judged.exact_rel if judged.exact_rel is not None else float("inf")
        passed = exact <= max(rtol, NOISE_FACTOR * noise)
        comparisons[i] = replace(judged, noise=noise, ok=passed, own_forward=passed) if passed else c


def _activation_rows(pinned: Mapping[str, Array], trace32: Mapping[str, Array],
                     trace64: Mapping[str, Array], rtol: float) -> list[Comparison]:
    """A failing row for every pinned activation farther from float64 than float32 allows."""
    rows = []
    for name, sim in pinned.items():
        ref32, ref64 = trace32.get(name), trace64.get(name)
        if ref32 is None or ref64 is None:
            continue
        max_abs, exact, nan = _errors(sim, ref64)
        _, noise, _ = _errors(ref32, ref64)
        if nan or exact > max(rtol, NOISE_FACTOR * noise):
            rows.append(Comparison(f"{name} (activation)", name, tuple(sim.shape), max_abs, exact,
                                   False, noise, exact, rtol))
    return rows


def check(module: Operation, *, rtol: float = 1e-5, seed: int = 0,
          inputs: Mapping[str, Array] | None = None, weights: Mapping[str, Array] | None = None,
          func: str | None = None, strict: bool = False) -> CheckReport:
    """Simulate ``module`` and compare with the interpreter (see the module docstring)."""
    graph = graph_func(module, func)
    if graph is None:
        raise fail(module, "keeps no graph.func to check against" if func is None
                   else f"has no graph.func named '{func}'")
    saved = _saved_names(graph, module)
    dram, counters = simulate(module, inputs, weights, seed=seed,
                              release=scratch_tensors(module) - saved)
    args = {arg.name_hint or "" for arg in graph.body.args}
    given = {k: v for k, v in (inputs or {}).items() if k in args}
    reference = _reference(graph, given, weights, "f32", seed)
    comparisons = [compare(n, a, dram, rtol) for n, a in reference.items()]
    failed = [i for i, c in enumerate(comparisons) if not c.ok and c.tensor and c.max_abs != float("inf")]
    if not failed or strict:
        return CheckReport(tuple(comparisons), rtol, counters)
    ref64 = _float64(graph, module, args, inputs, weights, seed)
    _rejudge(comparisons, failed, dram, reference, ref64, rtol)
    failed = [i for i in failed if not comparisons[i].ok]
    pinned = _saved_activations(saved, dram) if failed else {}
    if not pinned:
        return CheckReport(tuple(comparisons), rtol, counters)
    del ref64
    given_forward = _float64(graph, module, args, inputs, weights, seed, pinned=pinned)
    backward = [i for i in failed if comparisons[i].name not in pinned]
    _rejudge(comparisons, backward, dram, reference, given_forward, rtol, own_forward=True)
    del reference, given_forward
    shown = {c.name for c in comparisons}
    unshown = {k: v for k, v in pinned.items() if k not in shown}
    # The traces are rerun here, on the rare path that reads them: kept on every check,
    # they would hold each saved activation twice more (GPT-2's training step: 4 GB each).
    trace32: dict[str, Array] = {}
    _reference(graph, given, weights, "f32", seed, trace32, frozenset(unshown))
    trace64: dict[str, Array] = {}
    _float64(graph, module, args, inputs, weights, seed, trace=trace64, traced=frozenset(unshown))
    comparisons += _activation_rows(unshown, trace32, trace64, rtol)
    return CheckReport(tuple(comparisons), rtol, counters)
