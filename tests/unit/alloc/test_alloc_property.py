"""Properties of the allocator on random programs: no overlap, aligned, within capacity."""

from hypothesis import given, settings
from hypothesis import strategies as st

from crane.alloc import AllocationError, BufferRequest, align_up, allocate


@st.composite
def programs(draw: st.DrawFn) -> tuple[list[BufferRequest], list[int]]:
    length = draw(st.integers(1, 60))
    count = draw(st.integers(0, 40))
    reqs = []
    for k in range(count):
        first = draw(st.integers(0, length - 1))
        last = draw(st.integers(first, min(length - 1, first + draw(st.integers(0, 20)))))
        reqs.append(BufferRequest(f"%b{k}", draw(st.integers(0, 5000)), first, last,
                                  dma_target=draw(st.booleans()),
                                  dma_source=draw(st.booleans())))
    steps = sorted(set(draw(st.lists(st.integers(0, length - 1), max_size=15))))
    return reqs, steps


@settings(max_examples=120, deadline=None)
@given(program=programs(), alignment=st.sampled_from([1, 8, 64, 256]),
       capacity=st.integers(1000, 60_000), double=st.booleans())
def test_allocation_is_sound(program: tuple[list[BufferRequest], list[int]], alignment: int,
                             capacity: int, double: bool) -> None:
    reqs, steps = program
    try:
        a = allocate(reqs, capacity, compute_steps=steps, alignment=alignment,
                     double_buffer=double, tile=0)
    except AllocationError as error:
        # A failure must point at an instruction where the named buffers are all live.
        assert error.live
        names = {r.name: r for r in reqs}
        assert all(names[n].nbytes == size for n, size in error.live)
        assert "tile 0" in str(error)
        return
    for i, r in enumerate(reqs):
        assert a.offsets[i] % alignment == 0
        assert a.offsets[i] + r.nbytes <= capacity
        drained = double and r.dma_source  # draining may end a range later
        assert a.ranges[i].start <= r.first
        assert a.ranges[i].stop >= r.last if drained else a.ranges[i].stop == r.last
    for i in range(len(reqs)):
        for j in range(i + 1, len(reqs)):
            if not (reqs[i].nbytes and reqs[j].nbytes and a.ranges[i].overlaps(a.ranges[j])):
                continue
            lo_i, hi_i = a.offsets[i], a.offsets[i] + reqs[i].nbytes
            lo_j, hi_j = a.offsets[j], a.offsets[j] + reqs[j].nbytes
            assert hi_i <= lo_j or hi_j <= lo_i, (reqs[i], reqs[j])
    assert a.max_live_bytes <= a.peak_bytes <= capacity
    assert 0.0 <= a.fragmentation < 1.0 or a.peak_bytes == 0


@settings(max_examples=80, deadline=None)
@given(program=programs())
def test_enough_capacity_always_fits(program: tuple[list[BufferRequest], list[int]]) -> None:
    """With room for every buffer side by side, allocation never fails."""
    reqs, steps = program
    room = sum(align_up(r.nbytes, 64) for r in reqs) + 64
    a = allocate(reqs, room, compute_steps=steps)
    assert a.peak_bytes <= room
