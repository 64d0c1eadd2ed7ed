"""SRAM buffer allocation for tile programs (pure library; the ``alloc`` pass wraps it).

Give :func:`allocate` the buffers of one tile as :class:`BufferRequest` (name, bytes, first
definition and last use as instruction indices, whether a DMA load fills it) and the SRAM
capacity; get back aligned byte offsets such that no two buffers live at the same
instruction share a byte, with the peak use and fragmentation, or an
:class:`AllocationError` naming the tile, the instruction and the live buffers::

    from crane.alloc import BufferRequest, allocate
    a = allocate([BufferRequest("%x", 4096, 0, 3, dma_target=True),
                  BufferRequest("%y", 2048, 2, 5)], capacity=1 << 20, compute_steps=(2, 4))
    a.offsets, a.peak_bytes, a.fragmentation

The liveness rules (including double buffering) are in :mod:`crane.alloc.liveness`, the
placement heuristic in :mod:`crane.alloc.assign`.
"""

from crane.alloc.assign import DEFAULT_ALIGNMENT, Allocation, AllocationError, align_up, allocate
from crane.alloc.liveness import (
    BufferRequest,
    LiveRange,
    Pressure,
    double_buffered_start,
    live_ranges,
    peak_pressure,
)

__all__ = [
    "DEFAULT_ALIGNMENT",
    "Allocation",
    "AllocationError",
    "BufferRequest",
    "LiveRange",
    "Pressure",
    "align_up",
    "allocate",
    "double_buffered_start",
    "live_ranges",
    "peak_pressure",
]
