"""Memory and cost model of training a layer chain in segments, each on a grid of tiles.

What is counted is what a PyTorch-style autograd runtime holds (batch 1):

* **Parameters**: weights, their gradients and ``optimizer_states`` extra copies (1 for
  SGD with momentum, 2 for Adam), resident for the whole step.
* **Saved activations**: every op keeps what its backward reads — a conv its input, a
  ReLU its output, a max-pool its input plus int64 argmax indices of its output's size,
  batch norm its input; avg-pool keeps nothing. A tensor saved by two ops is held once.
* **Transients**: an op's input and output while it runs, the gradients of its output and
  input during backward, and a conv workspace (cuDNN's per-call scratch buffer).
* **Runtime reserve**: the framework's context and allocator slack, a fixed amount.

The working set of a tile is computed on its patch sizes (halo included); patches are
copies (a strided slice must be made contiguous for the kernels). For an untiled segment
the boundary tensors *are* the segment input and output, so they are not counted twice.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from crane.tiling.layers import Layer, SpatialOp

MIB = 1024 * 1024


@dataclass(frozen=True, slots=True)
class MemoryModel:
    """Byte sizes and runtime allowances of the memory model."""

    dtype_bytes: int = 4
    index_bytes: int = 8
    """Max-pool argmax indices are int64 in PyTorch."""
    optimizer_states: int = 1
    """Extra per-parameter tensors of the optimizer (SGD momentum = 1, Adam = 2)."""
    conv_workspace_bytes: int = 256 * MIB
    """Scratch buffer of one conv call (cuDNN algorithms ask for up to a few hundred MiB)."""
    reserve_bytes: int = 512 * MIB
    """Framework context and allocator slack that no tensor can use."""
    batch: int = 1
    """Samples per step: every activation (and max-pool index) is this many times larger."""
    explicit_padding_copies: bool = False
    """Convs pad by materialising a padded copy of their input and save that copy (as the
    SFT artifact's ``ConstantPad2d`` + unpadded conv does); off for implicit-padding kernels."""

    @classmethod
    def pytorch_float32(cls) -> MemoryModel:
        """The default: float32 training with SGD+momentum on a CUDA PyTorch runtime."""
        return cls()

    @classmethod
    def sft_artifact(cls) -> MemoryModel:
        """The SFT artifact's tiled runtime, which pads explicitly before every conv."""
        return cls(explicit_padding_copies=True)

    def fixed_bytes(self, layers: Sequence[Layer]) -> int:
        """Resident for the whole step: parameters, their gradients, optimizer state, reserve."""
        count = sum(layer.param_count() for layer in layers)
        return count * self.dtype_bytes * (2 + self.optimizer_states) + self.reserve_bytes


@dataclass(frozen=True, slots=True)
class ChainFootprint:
    """Peaks of one run of a chain (one tile, or a whole untiled segment), in bytes."""

    forward_nograd: int
    """Forward without keeping anything for backward (a checkpointed segment's first pass)."""
    forward_saving: int
    """Forward keeping the saved activations (recompute, or no checkpointing)."""
    backward: int
    """Backward, with the saved activations still held at its start."""

    @property
    def recompute_backward(self) -> int:
        """A checkpointed segment's backward phase: recompute with saving, then backward."""
        return max(self.forward_saving, self.backward)


def chain_footprint(
    layers: Sequence[Layer],
    areas: Sequence[int],
    model: MemoryModel,
    *,
    boundaries_external: bool,
    input_grad: bool,
) -> ChainFootprint:
    """Peak bytes of a chain whose activation ``k`` has ``areas[k]`` pixels (k = 0 is the input).

    ``boundaries_external``: the input/output tensors and their gradients are the segment's
    own boundary tensors, accounted by the caller; otherwise they are patch copies and
    counted here. ``input_grad``: whether the gradient of the chain input is materialised.
    """
    sizes = [area * channels * model.dtype_bytes * model.batch
             for area, channels in zip(areas, _channels(layers), strict=True)]
    last = len(layers)
    external = {0, last} if boundaries_external else set()
    saved_sets = [_saved(layer, index, model) for index, layer in enumerate(layers, start=1)]
    # Tensors an op creates for itself: pool indices (saved) and an explicit padded copy
    # of a conv input (saved, and its gradient is one more buffer in backward).
    pad_copy = [_pad_copy_bytes(layer, sizes[i], model) for i, layer in enumerate(layers)]
    private = [_index_bytes(layer, areas[i + 1], model) + pad_copy[i] for i, layer in enumerate(layers)]

    def held(live: set[int], skip: set[int]) -> int:
        return sum(sizes[k] for k in live - skip)

    fwd_nograd = fwd_saving = 0
    saved: set[int] = set()
    extra = 0
    for i, layer in enumerate(layers, start=1):
        ws = _workspace(layer, model) + pad_copy[i - 1]
        fwd_nograd = max(fwd_nograd, held({i - 1, i}, external) + ws)
        fwd_saving = max(fwd_saving, held(saved | {i - 1, i}, external) + extra + ws)
        saved |= saved_sets[i - 1]
        extra += private[i - 1]
    # In backward the chain input stays external (it is the kept checkpoint), the output not:
    # if an op saved it, it is still held.
    keep_out = {0} if boundaries_external else set()
    grad_skip = external
    # Prefix sums: before op i's backward, ops 1..i still hold what they saved.
    held_before = []
    live_saved: set[int] = set()
    for i in range(1, last + 1):
        live_saved |= saved_sets[i - 1]
        held_before.append(held(live_saved, keep_out) + sum(private[:i]))
    backward = 0
    for i in range(last, 0, -1):
        grads = (0 if i in grad_skip else sizes[i]) + _input_grad(i, sizes, grad_skip, input_grad)
        transient = grads + pad_copy[i - 1] + _workspace(layers[i - 1], model)
        backward = max(backward, held_before[i - 1] + transient)
    return ChainFootprint(fwd_nograd, fwd_saving, backward)


def _input_grad(i: int, sizes: Sequence[int], skip: set[int], input_grad: bool) -> int:
    """Bytes of the gradient op ``i`` produces for its input (none for an image input)."""
    if i - 1 in skip or (i == 1 and not input_grad):
        return 0
    return sizes[i - 1]


def _channels(layers: Sequence[Layer]) -> list[int]:
    return [layers[0].in_channels] + [layer.out_channels for layer in layers]


def _saved(layer: Layer, index: int, model: MemoryModel) -> set[int]:
    """Activation indices op ``index`` (1-based, input ``index - 1``) keeps for backward."""
    if layer.kind is SpatialOp.RELU:
        return {index}
    if layer.kind is SpatialOp.AVG_POOL or _pad_copy_bytes(layer, 1, model):
        return set()
    return {index - 1}


def _pad_copy_bytes(layer: Layer, input_bytes: int, model: MemoryModel) -> int:
    """Bytes of the padded input copy a conv makes under ``explicit_padding_copies``."""
    padded = layer.kind is SpatialOp.CONV and any(layer.window.padding)
    # The copy is slightly larger than the input by its border; the interior dominates.
    return input_bytes if padded and model.explicit_padding_copies else 0


def _index_bytes(layer: Layer, out_area: int, model: MemoryModel) -> int:
    if layer.kind is not SpatialOp.MAX_POOL:
        return 0
    return out_area * layer.out_channels * model.index_bytes * model.batch


def _workspace(layer: Layer, model: MemoryModel) -> int:
    return model.conv_workspace_bytes if layer.kind is SpatialOp.CONV else 0


@dataclass(frozen=True, slots=True)
class CostModel:
    """Predicted time of op executions: roofline of compute and memory traffic plus launches."""

    flops_per_second: float
    bytes_per_second: float
    launch_seconds: float = 5e-6
    """Fixed cost of one kernel launch: what makes many small tiles slow."""
    dtype_bytes: int = 4

    @classmethod
    def of_machine(cls, macs_per_second: float, bandwidth: float) -> CostModel:
        """From a machine's MAC rate (two flops per MAC) and memory bandwidth."""
        return cls(flops_per_second=2.0 * macs_per_second, bytes_per_second=bandwidth)

    def op_seconds(
        self, layer: Layer, in_area: int, out_area: int, *, backward: bool, launches: int = 1
    ) -> float:
        """``launches`` runs of ``layer`` whose patches total the given areas.

        Backward of a conv computes dX and dW, twice the forward flops.
        """
        flops = layer.flops_per_output_pixel() * out_area
        traffic = (in_area * layer.in_channels + out_area * layer.out_channels) * self.dtype_bytes
        if backward:
            factor = 2 if layer.kind is SpatialOp.CONV else 1
            flops *= factor
            # Backward reads the saved input and output gradient and writes the input gradient.
            traffic = traffic * 3 // 2
        roofline = max(flops / self.flops_per_second, traffic / self.bytes_per_second)
        return roofline + launches * self.launch_seconds
