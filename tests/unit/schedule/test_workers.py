"""The search's worker processes: how many, and that they do not change the schedule."""

from __future__ import annotations

import multiprocessing
from types import SimpleNamespace

import pytest

import crane.schedule.search as search_module
from crane.hardware.machine import Machine
from crane.schedule.builders import chain, residual_block
from crane.schedule.policies import schedule
from crane.schedule.search import MAX_WORKERS, usable_workers


def test_requested_workers_are_kept_and_zero_means_the_usable_cpus() -> None:
    assert usable_workers(3) == 3
    assert 1 <= usable_workers(0) <= MAX_WORKERS


def test_a_daemon_process_solves_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(multiprocessing, "current_process", lambda: SimpleNamespace(daemon=True))
    assert usable_workers(0) == 1
    assert usable_workers(4) == 1


@pytest.mark.parametrize("make", [lambda: chain(6), lambda: residual_block()])
def test_parallel_blocks_give_the_same_schedule(monkeypatch: pytest.MonkeyPatch, make) -> None:
    alone = schedule(make(), 4, Machine.edge(), time_limit=None, workers=1)
    monkeypatch.setattr(search_module, "PARALLEL_BLOCKS", 2)  # small enough to fork here
    solved = schedule(make(), 4, Machine.edge(), time_limit=None, workers=2)
    assert [(c.start, c.stop, c.plan, c.repeat) for c in solved.blocks] == \
        [(c.start, c.stop, c.plan, c.repeat) for c in alone.blocks]
    assert solved.cost == alone.cost
