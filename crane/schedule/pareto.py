"""Exact L^p E^q optimum of a block MILP by sweeping latency levels (epsilon constraint).

Latency L and energy E are linear in the MILP's variables, their product is not. Sweeping
``min E s.t. L <= lambda`` from the unconstrained energy optimum towards shorter latencies
visits the Pareto front point by point; once ``L_min^p * E^q`` of the current point is no
better than the best product seen, no later point can win (later points have E at least as
large and L at least L_min), so the sweep stops with the exact optimum. A cap on the number
of points bounds the work; a capped sweep reports ``exact=False``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from crane.schedule.evaluate import Plan
from crane.schedule.formulate import Formulation
from crane.schedule.objective import Objective
from crane.solve.milp import Solution, Status

REL_STEP = 1e-7


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


def _point(form: Formulation, sol: Solution) -> Point:
    return Point(form.latency.value(sol.values), form.energy.value(sol.values), form.plan(sol))


def _minimise(form: Formulation, expr_is_latency: bool, time_limit: float | None,
              start: dict[int, float] | None = None) -> Solution:
    form.model.minimize(form.latency if expr_is_latency else form.energy)
    return form.model.solve(time_limit, start)


def sweep(form: Formulation, objective: Objective, time_limit: float | None = None,
          max_points: int = 40, start_plan: Plan | None = None,
          to_beat: float = math.inf) -> SweepResult:
    """The objective's optimum over the formulation, with the Pareto points visited.

    ``start_plan`` (same sub-batch size) seeds every solve as a MIP start; ``to_beat`` is
    the objective of a known schedule: the sweep stops once no remaining point can beat
    it, and ``best`` is None when nothing did.
    """
    start = form.start_of(start_plan) if start_plan is not None else None
    first = _minimise(form, objective.p != 0, time_limit, start)
    if not first.ok:
        return SweepResult(None, (), first.status is Status.INFEASIBLE, 1)
    if objective.p == 0 or objective.q == 0:
        return _single(form, objective, first, time_limit)
    l_min = form.latency.value(first.values)
    row = form.model.constrain(form.latency, ub=math.inf, name="latency_level")
    points: list[Point] = []
    best: Point | None = None
    solves, exact, level = 1, False, math.inf
    proven = first.status is Status.OPTIMAL
    while len(points) < max_points:
        form.model.set_bounds(row, ub=level)
        sol = _minimise(form, False, time_limit, start)
        solves += 1
        if not sol.ok:
            exact = sol.status is Status.INFEASIBLE
            break
        proven = proven and sol.status is Status.OPTIMAL
        pt = _point(form, sol)
        points.append(pt)
        value = objective(pt.latency, pt.energy)
        if value < to_beat:
            best, to_beat = pt, value
        if objective(l_min, pt.energy) >= to_beat:
            exact = True
            break
        level = pt.latency * (1.0 - REL_STEP)
    form.model.rows.pop(row)
    return SweepResult(best, tuple(points), exact and proven, solves)


def _single(form: Formulation, objective: Objective, first: Solution,
            time_limit: float | None) -> SweepResult:
    """Pure latency or pure energy: optimise it, then break ties on the other."""
    on_latency = objective.q == 0
    main = form.latency if on_latency else form.energy
    bound = main.value(first.values)
    row = form.model.constrain(main, ub=bound * (1.0 + REL_STEP) + 1e-9)
    second = _minimise(form, not on_latency, time_limit)
    form.model.rows.pop(row)
    sol = second if second.ok else first
    pt = _point(form, sol)
    return SweepResult(pt, (pt,), True, 2)
