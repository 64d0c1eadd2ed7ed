"""Policies in one cost model: Crane's own search never loses to a baseline."""

from __future__ import annotations

import math

import pytest

from crane.cost.workload import Workload
from crane.hardware.machine import Machine
from crane.schedule.builders import chain, diamond, residual_block, transformer_block
from crane.schedule.objective import Objective
from crane.schedule.policies import POLICIES, crane_solver, schedule
from crane.schedule.search import reevaluate

EDGE = Machine.edge()
NETS = [chain(4), diamond(), residual_block(width=32, size=28), transformer_block(128, 64, 2)]


@pytest.mark.parametrize("batch", [1, 4])
@pytest.mark.parametrize("net", NETS, ids=lambda n: n.name)
def test_crane_search_never_worse_than_baselines(net: Workload, batch: int) -> None:
    obj = Objective()
    own = schedule(net, batch, EDGE, "crane", obj, time_limit=2.0)
    for policy in POLICIES[1:]:
        rival = schedule(net, batch, EDGE, policy)
        assert own.edp <= rival.edp * (1 + 1e-9), policy
    assert own.cost.latency_cycles >= own.bounds.latency_cycles * (1 - 1e-9)
    assert own.cost.energy_pj >= own.bounds.energy_pj * (1 - 1e-9)


def test_schedule_cost_is_its_blocks_cost() -> None:
    s = schedule(chain(4), 4, EDGE, "set")
    again = reevaluate(s, EDGE)
    assert math.isclose(again.latency_cycles, s.cost.latency_cycles)
    assert math.isclose(again.energy_pj, s.cost.energy_pj)
    assert [c.start for c in s.blocks][0] == 0 and s.blocks[-1].stop == 4


def test_sequential_runs_one_layer_per_block() -> None:
    s = schedule(diamond(), 2, EDGE, "sequential")
    assert all(c.stop - c.start == 1 for c in s.blocks)


def test_unknown_policy_rejected() -> None:
    with pytest.raises(ValueError, match="unknown policy"):
        schedule(chain(2), 1, EDGE, "magic")


def test_objective_parse() -> None:
    assert Objective.parse("L^2 E^1")(3.0, 5.0) == 45.0
    assert Objective.parse("latency")(3.0, 5.0) == 3.0
    assert str(Objective.parse("edp")) == "edp"


def test_refinement_never_worsens_and_can_merge() -> None:
    from crane.schedule.refine import refine

    net = chain(4)
    start = schedule(net, 8, EDGE, "sequential")
    refined = refine(start, net, EDGE, crane_solver(time_limit=2.0), Objective(), max_merged=6)
    assert refined.edp <= start.edp
    assert len(refined.blocks) < len(start.blocks)
    again = reevaluate(refined, EDGE)
    assert math.isclose(again.energy_pj, refined.cost.energy_pj)
    assert [c.start for c in refined.blocks][0] == 0 and refined.blocks[-1].stop == len(net)
