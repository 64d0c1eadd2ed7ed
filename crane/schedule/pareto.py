"""Exact L^p E^q optimum of a block MILP from the supported points of its Pareto front.

Latency L and energy E are linear in the MILP's variables, their product is not. But
``L^p E^q`` (p, q >= 0) is quasi-concave and increasing on the positive quadrant, so its
minimum over any finite set of schedules lies on a vertex of the lower-left convex hull of
their (L, E) points (the *supported* Pareto points). The same holds for a whole network:
its (L, E) is a sum of blocks' points, and the hull vertices of a sum are sums of hull
vertices, so each block only needs to deliver its supported points.

They are found by the dichotomic weighted-sum method (Aneja and Nair): the latency-optimal
and energy-optimal points bound the hull; for two neighbouring hull points A and B the
MILP minimises the weighted sum whose level lines are parallel to AB; a point strictly
below AB is a new hull point and splits the segment, otherwise the segment is final.
Every solve either adds a hull vertex or closes a segment, so a front with k supported
points costs 2k - 1 solves (plus one for each pruned-by-bound test that fails). A segment
is skipped when no point below it can beat ``to_beat``: points in the triangle A, B,
(L_A, E_B) have an objective of at least ``L_A^p E_B^q``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from crane.schedule.evaluate import Plan
from crane.schedule.formulate import Formulation
from crane.schedule.objective import Objective
from crane.solve.milp import Expr, Solution, Status

REL_STEP = 1e-7
REL_GAIN = 1e-6
"""A weighted-sum optimum must lie this much (relatively) below a segment to count as new."""


@dataclass(frozen=True, slots=True)
class Point:
    """One schedule on the latency/energy plane."""

    latency: float
    energy: float
    plan: Plan


@dataclass(frozen=True, slots=True)
class SweepResult:
    best: Point | None
    frontier: tuple[Point, ...]
    exact: bool
    solves: int


@dataclass(frozen=True, slots=True)
class _Found:
    point: Point
    values: dict[int, float]


def _point(form: Formulation, sol: Solution) -> Point:
    return Point(form.latency.value(sol.values), form.energy.value(sol.values), form.plan(sol))


def _solve(form: Formulation, expr: Expr, time_limit: float | None,
           start: dict[int, float] | None, cutoff: float | None = None) -> Solution:
    form.model.minimize(expr)
    return form.model.solve(time_limit, start, cutoff)


def _found(form: Formulation, sol: Solution, time_limit: float | None) -> _Found:
    """The solution as a point, its loose continuous variables tightened first."""
    form.model.minimize(form.latency.scaled(1.0 / max(form.latency.value(sol.values), 1e-300))
                        + form.energy.scaled(1.0 / max(form.energy.value(sol.values), 1e-300)))
    tight = form.model.polish(sol.values, time_limit)
    sol = tight if tight.ok else sol
    return _Found(_point(form, sol), {v: float(x) for v, x in enumerate(sol.values)})


def _weighted(form: Formulation, a: Point, b: Point) -> tuple[Expr, float]:
    """The weighted sum with level lines parallel to segment ab (normalised) and its value at a."""
    wl = (a.energy - b.energy) / max(a.energy, 1e-300)
    we = (b.latency - a.latency) / max(b.latency, 1e-300)
    lat, en = 1.0 / max(b.latency, 1e-300), 1.0 / max(a.energy, 1e-300)
    expr = form.latency.scaled(wl * lat) + form.energy.scaled(we * en)
    return expr, wl * lat * a.latency + we * en * a.energy


def sweep(form: Formulation, objective: Objective, time_limit: float | None = None,
          max_points: int = 40, start_plan: Plan | None = None,
          to_beat: float = math.inf, energy_floor: float = 0.0) -> SweepResult:
    """The objective's optimum over the formulation, with the supported points visited.

    ``start_plan`` (same sub-batch size) seeds the first solves as a MIP start; ``to_beat``
    is the objective of a known schedule: segments that cannot beat it are not explored,
    and ``best`` is None when nothing did. ``energy_floor`` is a lower bound of the energy
    of every schedule (e.g. its compute energy): with ``to_beat`` it caps the latency
    worth looking for.
    """
    start = form.start_of(start_plan) if start_plan is not None else None
    cut = None
    if math.isfinite(to_beat) and energy_floor > 0 and objective.p != 0:
        cut = (to_beat / energy_floor ** objective.q) ** (1.0 / objective.p)
    first = _solve(form, form.latency if objective.p != 0 else form.energy, time_limit, start,
                   cut)
    if not first.ok:
        return SweepResult(None, (), first.status is Status.INFEASIBLE, 1)
    if objective.p == 0 or objective.q == 0:
        return _single(form, objective, first, time_limit, to_beat)
    fast = _found(form, first, time_limit)
    # A point beating to_beat needs E^q < to_beat / L_min^p: nothing else is searched for.
    cut = (to_beat / fast.point.latency ** objective.p) ** (1.0 / objective.q) \
        if math.isfinite(to_beat) and fast.point.latency > 0 else None
    frugal_sol = _solve(form, form.energy, time_limit, fast.values, cut)
    proven = first.status is Status.OPTIMAL and frugal_sol.status in (Status.OPTIMAL,
                                                                     Status.INFEASIBLE)
    frugal = _found(form, frugal_sol, time_limit) if frugal_sol.ok else fast
    if frugal.point.latency <= fast.point.latency:
        hull = [frugal]
    elif fast.point.energy <= frugal.point.energy:
        hull = [fast]
    else:
        hull = [fast, frugal]
    solves, capped = 2, False
    todo = [(0, 1)] if len(hull) == 2 else []
    while todo:
        lo, hi = todo.pop()
        a, b = hull[lo], hull[hi]
        bound = objective(a.point.latency, b.point.energy)
        if bound >= min(to_beat, *(objective(h.point.latency, h.point.energy) for h in hull)):
            continue
        if solves >= max_points:
            capped = True
            break
        expr, level = _weighted(form, a.point, b.point)
        seed = a.values if objective(a.point.latency, a.point.energy) <= \
            objective(b.point.latency, b.point.energy) else b.values
        sol = _solve(form, expr, time_limit, seed, level - REL_GAIN * abs(level))
        solves += 1
        if not sol.ok:
            proven = proven and sol.status is Status.INFEASIBLE
            continue
        proven = proven and sol.status is Status.OPTIMAL
        if expr.value(sol.values) >= level - REL_GAIN * abs(level):
            continue
        new = _Found(_point(form, sol), {v: float(x) for v, x in enumerate(sol.values)})
        hull.insert(hi, new)
        todo = [(x + (x >= hi), y + (y >= hi)) for x, y in todo] + [(lo, hi), (hi, hi + 1)]
    points = tuple(h.point for h in hull)
    best = min(points, key=lambda pt: objective(pt.latency, pt.energy))
    best_value = objective(best.latency, best.energy)
    return SweepResult(best if best_value < to_beat else None, points,
                       proven and not capped, solves)


def _single(form: Formulation, objective: Objective, first: Solution,
            time_limit: float | None, to_beat: float) -> SweepResult:
    """Pure latency or pure energy: optimise it, then break ties on the other."""
    on_latency = objective.q == 0
    main = form.latency if on_latency else form.energy
    bound = main.value(first.values)
    row = form.model.constrain(main, ub=bound * (1.0 + REL_STEP) + 1e-9)
    second = _solve(form, form.energy if on_latency else form.latency, time_limit, None)
    form.model.rows.pop(row)
    sol = second if second.ok else first
    pt = _point(form, sol)
    best = pt if objective(pt.latency, pt.energy) < to_beat else None
    return SweepResult(best, (pt,), first.status is Status.OPTIMAL, 2)


def hull_covers(points: list[tuple[float, float]], corner: tuple[float, float]) -> bool:
    """Whether ``corner`` (L, E) lies in the convex hull of ``points`` plus the positive
    quadrant: then no schedule at or beyond the corner can be a supported point, so a
    candidate whose (L, E) lower bound is ``corner`` cannot matter for any L^p E^q."""
    hull: list[tuple[float, float]] = []
    for pt in sorted(points):
        if hull and pt[1] >= hull[-1][1]:
            continue
        while len(hull) >= 2 and (hull[-1][0] - hull[-2][0]) * (pt[1] - hull[-2][1]) \
                - (hull[-1][1] - hull[-2][1]) * (pt[0] - hull[-2][0]) <= 0:
            hull.pop()
        hull.append(pt)
    lat, energy = corner
    if not hull or lat < hull[0][0]:
        return False
    for (l0, e0), (l1, e1) in zip(hull, hull[1:], strict=False):
        if l0 <= lat <= l1:
            return energy >= e0 + (e1 - e0) * (lat - l0) / (l1 - l0)
    return energy >= hull[-1][1]
