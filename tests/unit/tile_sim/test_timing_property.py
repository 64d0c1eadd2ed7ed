"""Properties of the timing simulator's parts: the byte scoreboard against a byte-by-byte
reference, and max-min fair rates (feasible, and every flow limited by a saturated link)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from crane.exec.tile_sim.timing_deps import ByteMap
from crane.exec.tile_sim.timing_flows import fair_rates

accesses = st.lists(st.tuples(st.booleans(), st.integers(0, 60), st.integers(1, 30),
                              st.sampled_from(["compute", "load", "store"])),
                    min_size=1, max_size=40)


@settings(max_examples=150, deadline=None)
@given(accesses)
def test_bytemap_matches_a_byte_by_byte_reference(ops: list[tuple[bool, int, int, str]]) -> None:
    bytes_ = ByteMap()
    writer: dict[int, int] = {}
    readers: dict[int, dict[str, int]] = {}
    for index, (is_write, lo, size, unit) in enumerate(ops):
        span = range(lo, lo + size)
        expected: set[int] = set()
        for b in span:
            if b in writer:
                expected.add(writer[b])
            if is_write:
                expected.update(readers.get(b, {}).values())
        got: set[int] = set()
        if is_write:
            bytes_.write((lo, lo + size), index, got)
            for b in span:
                writer[b] = index
                readers[b] = {}
        else:
            bytes_.read((lo, lo + size), unit, index, got)
            for b in span:
                readers.setdefault(b, {})[unit] = index
        expected.discard(index)
        got.discard(index)
        assert got == expected
    assert bytes_.starts == sorted(set(bytes_.starts))


flows = st.dictionaries(st.integers(0, 12), st.sets(st.integers(0, 5), min_size=1, max_size=4)
                        .map(lambda s: tuple(sorted(s))), min_size=1, max_size=12)
capacities = st.lists(st.floats(0.5, 100.0), min_size=6, max_size=6)


@settings(max_examples=150, deadline=None)
@given(flows, capacities)
def test_fair_rates_are_feasible_and_max_min(paths: dict[int, tuple[int, ...]],
                                            caps: list[float]) -> None:
    capacity = dict(enumerate(caps))
    rates = fair_rates(paths, capacity)  # type: ignore[arg-type]
    assert set(rates) == set(paths)
    load = {r: 0.0 for r in capacity}
    for key, resources in paths.items():
        assert rates[key] > 0
        for r in resources:
            load[r] += rates[key]
    assert all(load[r] <= capacity[r] * (1 + 1e-9) for r in capacity)
    # Max-min: every flow crosses a saturated resource on which no flow gets more than it.
    for key, resources in paths.items():
        assert any(load[r] >= capacity[r] * (1 - 1e-9)
                   and all(rates[k] <= rates[key] * (1 + 1e-9)
                           for k, res in paths.items() if r in res)
                   for r in resources), (key, rates)
