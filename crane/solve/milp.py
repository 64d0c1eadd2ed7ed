"""A small mixed-integer linear programming front end over HiGHS (``highspy``).

Build a ``Model`` with variables, linear constraints and a linear objective, then ``solve``
it. Expressions are plain ``{var index: coefficient}`` maps plus a constant, so callers need
no solver types. A model can be solved repeatedly with extra constraints added in between,
which is how the scheduler sweeps latency levels for an exact latency x energy optimum.
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum

import highspy
import numpy as np

_banner_silenced = False


SKIPPED_HEURISTICS = ("mip_heuristic_run_feasibility_jump", "mip_heuristic_run_rins",
                      "mip_heuristic_run_rens")
"""HiGHS primal heuristics left off. Crane's models are small (tens of integers) and solved
with a MIP start under a short time limit: these heuristics spent most of it at the root
(ResNet-50 at batch 8 on ``edge``, its 793 solves replayed: 7.1 s in HiGHS with them, 4.7 s
without, and 71 against 30 solves stopped by the time limit; the schedule is the same)."""


def new_highs() -> highspy.Highs:
    """A ``Highs`` instance, without the banner HiGHS prints for the first one in a process.

    highspy writes that banner to file descriptor 1 from C++, before any option can turn
    it off, so it would land in the middle of a tool's output (``crane-opt`` prints IR to
    stdout, also from worker processes). The first instance is made with fd 1 pointed at
    /dev/null.
    """
    global _banner_silenced
    if _banner_silenced:
        return highspy.Highs()
    _banner_silenced = True
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        with open(os.devnull, "w") as sink:
            os.dup2(sink.fileno(), 1)
            return highspy.Highs()
    finally:
        os.dup2(saved, 1)
        os.close(saved)

INF = math.inf


class Status(Enum):
    OPTIMAL = "optimal"
    FEASIBLE = "feasible"
    """A solution exists but the time limit stopped the proof of optimality."""
    INFEASIBLE = "infeasible"
    UNBOUNDED = "unbounded"
    UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True)
class Expr:
    """A linear expression: sum of coefficient * variable, plus a constant."""

    terms: Mapping[int, float] = field(default_factory=dict)
    constant: float = 0.0

    @classmethod
    def of(cls, pairs: Iterable[tuple[int, float]], constant: float = 0.0) -> Expr:
        """Sum duplicate variables' coefficients."""
        terms: dict[int, float] = {}
        for var, coef in pairs:
            terms[var] = terms.get(var, 0.0) + coef
        return cls(terms, constant)

    def __add__(self, other: Expr) -> Expr:
        return Expr.of([*self.terms.items(), *other.terms.items()],
                       self.constant + other.constant)

    def scaled(self, factor: float) -> Expr:
        return Expr({v: c * factor for v, c in self.terms.items()}, self.constant * factor)

    def value(self, values: np.ndarray) -> float:
        return self.constant + sum(c * float(values[v]) for v, c in self.terms.items())


@dataclass(frozen=True, slots=True)
class Solution:
    """Status, objective and variable values (empty when no solution was found)."""

    status: Status
    objective: float
    values: np.ndarray

    @property
    def ok(self) -> bool:
        return self.status in (Status.OPTIMAL, Status.FEASIBLE)

    def __getitem__(self, var: int) -> float:
        return float(self.values[var])


_STATUS = {
    highspy.HighsModelStatus.kOptimal: Status.OPTIMAL,
    highspy.HighsModelStatus.kInfeasible: Status.INFEASIBLE,
    highspy.HighsModelStatus.kUnbounded: Status.UNBOUNDED,
    highspy.HighsModelStatus.kUnboundedOrInfeasible: Status.INFEASIBLE,
}


class Model:
    """A MILP under construction: ``var`` adds columns, ``constrain`` adds rows."""

    def __init__(self, name: str = "milp") -> None:
        self.name = name
        self.lower: list[float] = []
        self.upper: list[float] = []
        self.integer: list[bool] = []
        self.names: list[str] = []
        self.rows: list[tuple[Expr, float, float, str]] = []
        self.objective = Expr()
        self._edits = 0
        """Bumped by ``constrain`` and ``set_bounds``: with ``len(rows)`` it tells whether
        the packed rows of the last solve still hold (``_packed_rows``)."""
        self._packed: tuple[tuple[int, int], tuple[np.ndarray, ...]] | None = None

    @property
    def num_vars(self) -> int:
        return len(self.lower)

    def var(self, name: str, lb: float = 0.0, ub: float = INF, integer: bool = False) -> int:
        """Add a variable; returns its index, usable in ``Expr`` terms."""
        self.lower.append(lb)
        self.upper.append(ub)
        self.integer.append(integer)
        self.names.append(name)
        return len(self.lower) - 1

    def binary(self, name: str) -> int:
        return self.var(name, 0.0, 1.0, integer=True)

    def constrain(self, expr: Expr, lb: float = -INF, ub: float = INF, name: str = "") -> int:
        """Add ``lb <= expr <= ub`` (the expression's constant moves to the bounds)."""
        self.rows.append((expr, lb - expr.constant, ub - expr.constant, name))
        self._edits += 1
        return len(self.rows) - 1

    def set_bounds(self, row: int, lb: float = -INF, ub: float = INF) -> None:
        """Change the bounds of an existing constraint (its expression is kept)."""
        expr, _, _, name = self.rows[row]
        self.rows[row] = (expr, lb - expr.constant, ub - expr.constant, name)
        self._edits += 1

    def minimize(self, expr: Expr) -> None:
        self.objective = expr

    def _highs(self, time_limit: float | None) -> highspy.Highs:
        h = new_highs()
        h.setOptionValue("output_flag", False)
        h.setOptionValue("threads", 1)
        for heuristic in SKIPPED_HEURISTICS:
            h.setOptionValue(heuristic, False)
        if time_limit is not None:
            h.setOptionValue("time_limit", float(time_limit))
        n = self.num_vars
        cost = np.zeros(n)
        for var, coef in self.objective.terms.items():
            cost[var] = coef
        h.addVars(n, np.array(self.lower), np.array(self.upper))
        h.changeColsCost(n, np.arange(n, dtype=np.int32), cost)
        ints = np.array([i for i, flag in enumerate(self.integer) if flag], dtype=np.int32)
        if len(ints):
            kinds = np.full(len(ints), highspy.HighsVarType.kInteger)
            h.changeColsIntegrality(len(ints), ints, kinds)
        if self.rows:
            self._add_rows(h)
        return h

    def _add_rows(self, h: highspy.Highs) -> None:
        """Every constraint in one call (compressed rows, in order): the model HiGHS gets is
        the one row-by-row ``addRow`` calls would build."""
        lower, upper, starts, index, value = self._packed_rows()
        h.addRows(len(self.rows), lower, upper, len(index), starts, index, value)

    def _packed_rows(self) -> tuple[np.ndarray, ...]:
        """The rows as HiGHS arrays, packed again only when a row was added, re-bounded or
        removed since the last solve: a sweep solves one model many times with other
        objectives. Rows change through ``constrain`` and ``set_bounds``, or by removing
        the last one (``rows.pop()``), which changes their number."""
        key = (self._edits, len(self.rows))
        if self._packed is not None and self._packed[0] == key:
            return self._packed[1]
        lower = np.array([lb for _, lb, _, _ in self.rows], dtype=np.float64)
        upper = np.array([ub for _, _, ub, _ in self.rows], dtype=np.float64)
        lengths = [len(expr.terms) for expr, _, _, _ in self.rows]
        starts = np.zeros(len(self.rows), dtype=np.int32)
        np.cumsum(lengths[:-1], out=starts[1:])
        index = np.fromiter((var for expr, _, _, _ in self.rows for var in expr.terms),
                            dtype=np.int32, count=sum(lengths))
        value = np.fromiter((coef for expr, _, _, _ in self.rows for coef in expr.terms.values()),
                            dtype=np.float64, count=sum(lengths))
        packed = (lower, upper, starts, index, value)
        self._packed = (key, packed)
        return packed

    def polish(self, values: np.ndarray, time_limit: float | None = None) -> Solution:
        """Re-solve with every integer variable fixed at its value in ``values`` (an LP).

        Continuous variables that the objective left loose (epigraph and routing
        variables whose cost is in the other criterion) settle at their tight values
        when the current objective charges all of them.
        """
        saved = list(self.lower), list(self.upper)
        for var, integral in enumerate(self.integer):
            if integral:
                self.lower[var] = self.upper[var] = float(round(values[var]))
        try:
            return self.solve(time_limit)
        finally:
            self.lower, self.upper = saved

    def solve(self, time_limit: float | None = None,
              start: Mapping[int, float] | None = None,
              cutoff: float | None = None) -> Solution:
        """Minimise the objective; the status says whether optimality was proven.

        ``start`` gives values of some variables of a known solution; HiGHS completes it
        and uses it as the first incumbent, so a time-limited solve is never worse.
        With ``cutoff`` only solutions whose objective is below it count: the status is
        ``INFEASIBLE`` when the solver proves there is none.
        """
        h = self._highs(time_limit)
        if cutoff is not None:
            h.setOptionValue("objective_bound", float(cutoff))
        if start:
            idx = np.array(list(start.keys()), dtype=np.int32)
            h.setSolution(len(idx), idx, np.array(list(start.values()), dtype=np.float64))
        h.run()
        raw = h.getModelStatus()
        status = _STATUS.get(raw, Status.UNKNOWN)
        has_point = h.getInfo().primal_solution_status == 2
        if status is Status.UNKNOWN and has_point:
            status = Status.FEASIBLE
        if status not in (Status.OPTIMAL, Status.FEASIBLE):
            return Solution(status, INF, np.zeros(0))
        values = np.array(h.getSolution().col_value)
        return Solution(status, self.objective.value(values), values)
