"""Small workloads built by hand, so the scheduler can be tested without the frontend.

Shapes follow the usual definitions (ResNet bottlenecks, a pre-norm transformer block);
bytes assume ``elem_bytes`` per element (int8 = 1 on the SET machines).
"""

from __future__ import annotations

from dataclasses import dataclass

from crane.cost.workload import Dims, LayerWork, Workload


@dataclass(frozen=True, slots=True)
class Tensor:
    """A feature map flowing between layers: its producer and its per-sample shape."""

    producer: str | None
    channels: int
    h: int
    w: int

    def bytes(self, elem_bytes: int) -> int:
        return self.channels * self.h * self.w * elem_bytes


class NetBuilder:
    """Accumulates layers in topological order; each helper returns the produced tensor."""

    def __init__(self, elem_bytes: int = 1) -> None:
        self.elem_bytes = elem_bytes
        self.layers: list[LayerWork] = []

    def _inputs(self, *tensors: Tensor) -> tuple[tuple[tuple[str, int], ...], int]:
        named = tuple((t.producer, t.bytes(self.elem_bytes)) for t in tensors if t.producer)
        external = sum(t.bytes(self.elem_bytes) for t in tensors if t.producer is None)
        return named, external

    def conv(self, name: str, x: Tensor, k: int, r: int = 1, stride: int = 1) -> Tensor:
        """A convolution with ``k`` outputs, square kernel ``r``, 'same' padding, fused ReLU."""
        h, w = -(-x.h // stride), -(-x.w // stride)
        named, external = self._inputs(x)
        macs = k * x.channels * h * w * r * r
        self.layers.append(LayerWork.make(
            name, "conv", macs=macs, vector_ops=k * h * w,
            weight_bytes=k * x.channels * r * r * self.elem_bytes,
            output_bytes=k * h * w * self.elem_bytes, dims=Dims.conv(k, x.channels, h, w, r, r),
            inputs=named, external_input_bytes=external))
        return Tensor(name, k, h, w)

    def pool(self, name: str, x: Tensor, r: int, stride: int) -> Tensor:
        """A max/avg pool: vector work only."""
        h, w = -(-x.h // stride), -(-x.w // stride)
        named, external = self._inputs(x)
        self.layers.append(LayerWork.make(
            name, "pool", macs=0, vector_ops=x.channels * h * w * r * r, weight_bytes=0,
            output_bytes=x.channels * h * w * self.elem_bytes,
            dims=Dims.conv(x.channels, 1, h, w), inputs=named, external_input_bytes=external))
        return Tensor(name, x.channels, h, w)

    def add(self, name: str, a: Tensor, b: Tensor) -> Tensor:
        """An elementwise sum (residual merge)."""
        named, external = self._inputs(a, b)
        size = a.channels * a.h * a.w
        self.layers.append(LayerWork.make(
            name, "eltwise", macs=0, vector_ops=size, weight_bytes=0,
            output_bytes=size * self.elem_bytes, dims=Dims.conv(a.channels, 1, a.h, a.w),
            inputs=named, external_input_bytes=external))
        return Tensor(name, a.channels, a.h, a.w)

    def matmul(self, name: str, x: Tensor, n: int, *, weights: bool = True) -> Tensor:
        """``[seq, d] @ [d, n]``; the sequence is carried as ``h`` and the width as channels."""
        named, external = self._inputs(x)
        macs = x.h * x.channels * n
        self.layers.append(LayerWork.make(
            name, "matmul", macs=macs, vector_ops=x.h * n,
            weight_bytes=x.channels * n * self.elem_bytes if weights else 0,
            output_bytes=x.h * n * self.elem_bytes, dims=Dims.matmul(x.h, n, x.channels),
            inputs=named, external_input_bytes=external))
        return Tensor(name, n, x.h, 1)

    def attention(self, name: str, q: Tensor, heads: int) -> Tensor:
        """Scores, softmax and context of multi-head attention over a packed QKV tensor."""
        named, external = self._inputs(q)
        d = q.channels // 3
        seq = q.h
        macs = 2 * seq * seq * d
        self.layers.append(LayerWork.make(
            name, "attention", macs=macs, vector_ops=3 * heads * seq * seq, weight_bytes=0,
            output_bytes=seq * d * self.elem_bytes, dims=Dims.matmul(seq, seq * heads, d // heads),
            inputs=named, external_input_bytes=external))
        return Tensor(name, d, seq, 1)

    def build(self, name: str) -> Workload:
        return Workload.of(name, self.layers, self.elem_bytes)


def chain(n: int = 2, channels: int = 64, size: int = 28, kernel: int = 3) -> Workload:
    """``n`` equal convolutions one after another (the paper's two-layer example for n=2)."""
    net = NetBuilder()
    x = Tensor(None, channels, size, size)
    for i in range(n):
        x = net.conv(f"conv{i + 1}", x, channels, kernel)
    return net.build(f"chain{n}")


def diamond(channels: int = 64, size: int = 28) -> Workload:
    """A fork into two convolution branches of unequal cost, merged by an add."""
    net = NetBuilder()
    x = net.conv("stem", Tensor(None, channels, size, size), channels, 3)
    left = net.conv("left", x, channels, 3)
    right = net.conv("right", x, channels, 1)
    net.add("merge", left, right)
    return net.build("diamond")


def _bottleneck(net: NetBuilder, name: str, x: Tensor, width: int, stride: int) -> Tensor:
    out = 4 * width
    a = net.conv(f"{name}.a", x, width, 1)
    b = net.conv(f"{name}.b", a, width, 3, stride)
    c = net.conv(f"{name}.c", b, out, 1)
    short = x if stride == 1 and x.channels == out else net.conv(f"{name}.proj", x, out, 1, stride)
    return net.add(f"{name}.add", c, short)


def residual_block(width: int = 64, size: int = 56) -> Workload:
    """One ResNet bottleneck with a projection shortcut, fed by a stem convolution."""
    net = NetBuilder()
    x = net.conv("stem", Tensor(None, 64, size, size), 64, 3)
    _bottleneck(net, "res", x, width, 1)
    return net.build("residual")


def resnet50(stages: tuple[int, ...] = (3, 4, 6, 3), image: int = 224) -> Workload:
    """ResNet-50 (stem, 16 bottlenecks, pool, classifier): about 70 layers."""
    net = NetBuilder()
    x = net.conv("conv1", Tensor(None, 3, image, image), 64, 7, 2)
    x = net.pool("pool1", x, 3, 2)
    for stage, blocks in enumerate(stages):
        width = 64 << stage
        for i in range(blocks):
            stride = 2 if stage > 0 and i == 0 else 1
            x = _bottleneck(net, f"s{stage + 1}b{i + 1}", x, width, stride)
    x = net.pool("avgpool", x, x.h, x.h)
    net.matmul("fc", Tensor(x.producer, x.channels, 1, 1), 1000)
    return net.build("resnet50")


def transformer_block(hidden: int = 256, seq: int = 128, heads: int = 4) -> Workload:
    """A transformer encoder block: QKV, attention, projection + residual, FFN + residual."""
    net = NetBuilder()
    x = Tensor(None, hidden, seq, 1)
    embed = net.matmul("embed", x, hidden)
    qkv = net.matmul("qkv", embed, 3 * hidden)
    ctx = net.attention("attn", qkv, heads)
    proj = net.matmul("proj", ctx, hidden)
    res1 = net.add("res1", proj, embed)
    ff1 = net.matmul("ff1", res1, 4 * hidden)
    ff2 = net.matmul("ff2", ff1, hidden)
    net.add("res2", ff2, res1)
    return net.build("transformer")
