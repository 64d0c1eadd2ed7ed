"""The SRAM allocator on hand-made tiles: reuse, alignment, double buffering, overflow."""

import pytest

from crane.alloc import AllocationError, BufferRequest, allocate, double_buffered_start, live_ranges
from crane.alloc.liveness import drained_stop


def test_disjoint_ranges_share_bytes() -> None:
    a = allocate([BufferRequest("%a", 1000, 0, 1), BufferRequest("%b", 1000, 2, 3)], 4096)
    assert a.offsets == (0, 0)
    assert a.peak_bytes == 1000 and a.max_live_bytes == 1000 and a.fragmentation == 0.0


def test_overlapping_ranges_get_aligned_disjoint_bytes() -> None:
    a = allocate([BufferRequest("%a", 100, 0, 2), BufferRequest("%b", 100, 1, 3)], 4096)
    assert sorted(a.offsets) == [0, 128]
    assert a.peak_bytes == 228 and a.max_live_bytes == 200
    assert a.fragmentation == pytest.approx(1 - 200 / 228)


def test_alignment_option() -> None:
    a = allocate([BufferRequest("%a", 100, 0, 2), BufferRequest("%b", 100, 1, 3)], 4096,
                 alignment=256)
    assert sorted(a.offsets) == [0, 256]
    with pytest.raises(ValueError, match="alignment"):
        allocate([], 4096, alignment=0)


def test_best_fit_takes_the_smallest_hole() -> None:
    # %big1 [0,4096) and %big2 live over the whole program with a 512-byte hole and a
    # 2048-byte hole left free between them; the 400-byte buffer goes into the small hole.
    reqs = [BufferRequest("%big1", 4096, 0, 9), BufferRequest("%gap1", 512, 0, 1),
            BufferRequest("%big2", 4096, 0, 9), BufferRequest("%gap2", 2048, 0, 1),
            BufferRequest("%big3", 1024, 0, 9), BufferRequest("%small", 400, 5, 6)]
    a = allocate(reqs, 4096 + 512 + 4096 + 2048 + 1024)
    hole_of_gap1 = a.offsets[1]
    assert a.offsets[5] == hole_of_gap1


def test_double_buffering_moves_a_load_before_the_previous_compute() -> None:
    # 0 load %x0, 1 compute(%x0 -> %y0), 2 load %x1, 3 compute(%x1 -> %y1)
    reqs = [BufferRequest("%x0", 1024, 0, 1, dma_target=True), BufferRequest("%y0", 64, 1, 1),
            BufferRequest("%x1", 1024, 2, 3, dma_target=True), BufferRequest("%y1", 64, 3, 3)]
    plain = allocate(reqs, 1 << 20, compute_steps=(1, 3), double_buffer=False)
    assert plain.offsets[0] == plain.offsets[2]          # %x1 reuses %x0's bytes
    double = allocate(reqs, 1 << 20, compute_steps=(1, 3))
    assert double.ranges[2].start == 1
    assert double.offsets[0] != double.offsets[2]        # the next load may overlap compute
    assert double.max_live_bytes == 1024 + 64 + 1024


def test_double_buffered_start_without_earlier_compute() -> None:
    assert double_buffered_start(0, (3, 5)) == 0
    assert double_buffered_start(4, (3, 5)) == 3
    assert double_buffered_start(9, (3, 5)) == 5
    ranges = live_ranges([BufferRequest("%w", 8, 2, 4, dma_target=True)], (), True)
    assert ranges[0].start == 2


def test_draining_keeps_a_stored_result_until_the_next_compute() -> None:
    # 0 compute(-> %y0), 1 store %y0, 2 compute(-> %y1), 3 store %y1
    reqs = [BufferRequest("%y0", 1024, 0, 1, dma_source=True),
            BufferRequest("%y1", 1024, 2, 3, dma_source=True)]
    plain = allocate(reqs, 1 << 20, compute_steps=(0, 2), double_buffer=False)
    assert plain.offsets[0] == plain.offsets[1]  # compute 2 would wait for store 1
    drained = allocate(reqs, 1 << 20, compute_steps=(0, 2))
    assert drained.ranges[0].stop == 2
    assert drained.offsets[0] != drained.offsets[1]  # store 1 runs beside compute 2
    assert allocate(reqs, 1 << 20, compute_steps=(0, 2), drain=False).offsets[0] == 0 == \
        allocate(reqs, 1 << 20, compute_steps=(0, 2), drain=False).offsets[1]
    assert drained_stop(3, (0, 2)) == 3  # no compute after the last store


def test_overflow_names_tile_instruction_and_live_buffers() -> None:
    reqs = [BufferRequest("%a", 3000, 0, 5), BufferRequest("%b", 2000, 3, 4),
            BufferRequest("%c", 100, 6, 7)]
    with pytest.raises(AllocationError) as info:
        allocate(reqs, 4096, tile=7)
    error = info.value
    assert error.tile == 7 and error.instruction == 3
    assert error.live == (("%a", 3000), ("%b", 2000))
    assert "tile 7" in str(error) and "instruction 3" in str(error)
    assert "%a (3,000 B)" in str(error) and "%b (2,000 B)" in str(error)


def test_single_buffer_larger_than_sram() -> None:
    with pytest.raises(AllocationError, match="instruction 2"):
        allocate([BufferRequest("%huge", 10_000, 2, 3)], 4096, tile=0)


def test_fragmentation_failure_is_reported() -> None:
    # Live bytes fit (3 x 64 of 192) but alignment 128 leaves no aligned hole for %c.
    reqs = [BufferRequest("%a", 64, 0, 3), BufferRequest("%b", 64, 0, 3),
            BufferRequest("%c", 64, 0, 3)]
    with pytest.raises(AllocationError, match="fragmented") as info:
        allocate(reqs, 192, alignment=128, tile=1)
    assert {name for name, _ in info.value.live} == {"%a", "%b", "%c"}


def test_zero_byte_buffers_and_empty_programs() -> None:
    a = allocate([BufferRequest("%e", 0, 0, 3), BufferRequest("%a", 64, 0, 3)], 64)
    assert a.offsets == (0, 0) and a.peak_bytes == 64
    empty = allocate([], 64)
    assert empty.offsets == () and empty.peak_bytes == 0 and empty.fragmentation == 0.0


def test_bad_requests() -> None:
    with pytest.raises(ValueError, match="negative"):
        BufferRequest("%a", -1, 0, 1)
    with pytest.raises(ValueError, match="before it is defined"):
        BufferRequest("%a", 1, 3, 1)


def test_long_overflow_messages_name_the_largest_buffers() -> None:
    reqs = [BufferRequest(f"%b{k}", 100 + k, 0, 1) for k in range(10)]
    with pytest.raises(AllocationError) as info:
        allocate(reqs, 500, tile=2)
    text = str(info.value)
    assert "%b9 (109 B), %b8 (108 B)" in text and "%b4 (104 B) and 4 more (406 B)" in text
    assert len(info.value.live) == 10
