"""Shared convolution test cases (also used by the torch comparison)."""

from dataclasses import dataclass
from typing import TypedDict


class WindowKwargs(TypedDict):
    """Keyword arguments shared by the conv2d kernels."""

    stride: tuple[int, int]
    padding: tuple[int, int, int, int]
    dilation: tuple[int, int]
    groups: int


@dataclass(frozen=True)
class ConvCase:
    """One conv2d configuration: NCHW input, OIHW weight and window parameters."""

    name: str
    x: tuple[int, int, int, int]
    out_channels: int
    kernel: tuple[int, int]
    stride: tuple[int, int] = (1, 1)
    padding: tuple[int, int, int, int] = (0, 0, 0, 0)
    dilation: tuple[int, int] = (1, 1)
    groups: int = 1
    bias: bool = True

    @property
    def weight(self) -> tuple[int, int, int, int]:
        return (self.out_channels, self.x[1] // self.groups, *self.kernel)

    @property
    def kwargs(self) -> WindowKwargs:
        return {
            "stride": self.stride,
            "padding": self.padding,
            "dilation": self.dilation,
            "groups": self.groups,
        }


CONV_CASES = [
    ConvCase("basic_pad1", (2, 3, 5, 5), 4, (3, 3), padding=(1, 1, 1, 1)),
    ConvCase("no_bias_1x1", (2, 3, 4, 3), 2, (1, 1), bias=False),
    ConvCase("stride2_nondivisible", (1, 2, 8, 7), 3, (3, 3), stride=(2, 2)),
    ConvCase(
        "stride_2x3_nondivisible", (2, 2, 9, 10), 2, (2, 3), stride=(2, 3), padding=(1, 0, 0, 1)
    ),
    ConvCase("dilated", (1, 2, 7, 8), 3, (3, 2), dilation=(2, 3)),
    ConvCase("grouped", (2, 4, 5, 5), 6, (3, 3), padding=(1, 1, 1, 1), groups=2),
    ConvCase("depthwise", (2, 3, 6, 5), 3, (3, 3), stride=(2, 1), padding=(1, 1, 1, 1), groups=3),
    ConvCase("depthwise_mult2", (1, 3, 5, 6), 6, (2, 3), padding=(0, 1, 1, 1), groups=3),
    ConvCase("asymmetric_pad", (1, 2, 5, 4), 2, (3, 3), padding=(0, 2, 1, 0)),
    ConvCase(
        "everything",
        (2, 4, 9, 8),
        4,
        (3, 2),
        stride=(2, 3),
        padding=(1, 0, 2, 1),
        dilation=(2, 1),
        groups=2,
    ),
    ConvCase("kernel_exceeds_input", (1, 1, 2, 2), 2, (3, 3), padding=(1, 1, 2, 0)),
]
