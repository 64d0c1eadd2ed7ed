"""A thin front end over Z3 for named constraints, unsat cores and bounded optimisation.

Constraints are added under a *name* (any hashable label the caller chooses, e.g. a tuple
``("exclusive", state)``); facts that pin a candidate solution are added the same way, under
names starting with ``"pin"``. :meth:`NamedSolver.violations` first decides the whole set
(pins substituted, so a legal candidate costs almost nothing); when it is unsatisfiable it
finds every rule the pins contradict on its own and returns, for each, the unsat core of
that rule with the pins (shrunk by deletion to a minimal one when small). Callers turn each
core into a readable diagnostic.

Z3 is imported here and in the modules that build expressions; nothing else of Crane is.
"""

from __future__ import annotations

import time
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass, field

import z3

Name = Hashable


@dataclass
class NamedSolver:
    """Z3 assertions grouped under names, checked with the names as assumptions."""

    constraints: dict[Name, z3.BoolRef] = field(default_factory=dict)
    seconds: float = 0.0
    """Wall time spent inside Z3 (checks and core shrinking)."""

    def add(self, name: Name, *facts: z3.BoolRef | bool) -> None:
        """Add ``facts`` (conjoined) under ``name``; adding to a name again extends it."""
        parts = [z3.BoolVal(f) if isinstance(f, bool) else f for f in facts]
        old = self.constraints.get(name)
        self.constraints[name] = z3.And(*([old] if old is not None else []), *parts)

    def _check(self, names: Sequence[Name]) -> tuple[z3.CheckSatResult, list[Name]]:
        """Check ``names`` as assumptions; the unsat core's names when unsatisfiable."""
        solver = z3.Solver()
        flags: dict[str, Name] = {}
        for k, name in enumerate(names):
            flag = z3.Bool(f"c{k}")
            flags[str(flag)] = name
            solver.add(z3.Implies(flag, self.constraints[name]))
        began = time.perf_counter()
        result = solver.check(*(z3.Bool(f"c{k}") for k in range(len(names))))
        self.seconds += time.perf_counter() - began
        core = [flags[str(b)] for b in solver.unsat_core()] if result == z3.unsat else []
        return result, core

    def holds(self, names: Iterable[Name] | None = None) -> bool:
        """Whether the named constraints (all by default) are satisfiable together.

        Asserted as hard facts and simplified first (pins substitute into the rules), so a
        fully pinned candidate is decided almost without search.
        """
        solver = z3.Then("simplify", "propagate-values", "solve-eqs", "simplify",
                         "smt").solver()
        chosen = self.constraints if names is None else names
        solver.add(*(self.constraints[n] for n in chosen))
        began = time.perf_counter()
        result = solver.check()
        self.seconds += time.perf_counter() - began
        return result == z3.sat

    def _shrink(self, core: list[Name]) -> list[Name]:
        """A minimal unsatisfiable subset of ``core`` (deletion-based)."""
        kept = list(core)
        for name in list(core):
            trial = [n for n in kept if n != name]
            if trial and self._check(trial)[0] == z3.unsat:
                kept = trial
        return kept

    def violations(self, limit: int = 20, shrink_below: int = 40) -> list[list[Name]]:
        """For each rule the pins contradict on its own: an unsat core of it and the pins.

        Rules are the names that are not pins (:func:`is_pin`). At most ``limit`` cores;
        cores of fewer than ``shrink_below`` names are shrunk to minimal ones. [] when
        everything holds together.
        """
        if self.holds():
            return []
        pinned = [n for n in self.constraints if is_pin(n)]
        found: list[list[Name]] = []
        for rule in (n for n in self.constraints if not is_pin(n)):
            if len(found) >= limit:
                break
            if self.holds([rule, *pinned]):
                continue
            result, core = self._check([rule, *pinned])
            if result != z3.unsat:
                continue
            found.append(self._shrink(core) if len(core) < shrink_below else core)
        return found


def is_pin(name: Name) -> bool:
    """Names whose first element is ``"pin"`` hold facts of a candidate, not rules."""
    return isinstance(name, tuple) and bool(name) and name[0] == "pin"


def minimize(constraints: Sequence[z3.BoolRef], objective: z3.ArithRef,
             timeout_ms: int) -> tuple[z3.ModelRef | None, float]:
    """The best model found within ``timeout_ms`` for ``objective``, and the seconds spent.

    After a timeout Z3 may hand back an assignment that is not a model; it is returned only
    if it satisfies every constraint (else None).
    """
    opt = z3.Optimize()
    opt.set("timeout", max(1, int(timeout_ms)))
    for c in constraints:
        opt.add(c)
    opt.minimize(objective)
    began = time.perf_counter()
    result = opt.check()
    seconds = time.perf_counter() - began
    if result == z3.unsat:
        return None, seconds
    try:
        model = opt.model()
    except z3.Z3Exception:
        return None, seconds
    holds = all(z3.is_true(model.eval(c, model_completion=True)) for c in constraints)
    return (model if holds else None), seconds
