"""The HiGHS wrapper on its own."""

from __future__ import annotations

from crane.solve.milp import Expr, Model, Status


def test_integer_program_and_bounds() -> None:
    m = Model()
    x, y = m.var("x", 0, 10, integer=True), m.var("y", 0, 10, integer=True)
    row = m.constrain(Expr({x: 2.0, y: 3.0}), lb=12.5)
    m.minimize(Expr({x: 3.0, y: 4.0}, constant=1.0))
    sol = m.solve()
    assert sol.status is Status.OPTIMAL
    assert (sol[x], sol[y]) == (2.0, 3.0)
    assert sol.objective == 19.0
    m.set_bounds(row, lb=0.0)
    assert m.solve().objective == 1.0


def test_infeasible_and_start() -> None:
    m = Model()
    b = m.binary("b")
    m.constrain(Expr({b: 1.0}), lb=2.0)
    assert m.solve().status is Status.INFEASIBLE
    ok = Model()
    v = ok.var("v", 0, 5, integer=True)
    ok.minimize(Expr({v: -1.0}))
    assert ok.solve(time_limit=5.0, start={v: 1.0})[v] == 5.0


def test_expression_algebra() -> None:
    e = Expr.of([(0, 1.0), (0, 2.0), (1, -1.0)], 4.0) + Expr({1: 1.0})
    assert e.terms == {0: 3.0, 1: 0.0}
    assert e.scaled(2).value([1.0, 7.0]) == 14.0  # type: ignore[arg-type]
