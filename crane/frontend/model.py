"""The elaborated network model: what a `.crn` file means, before any IR exists.

Everything here is a plain frozen dataclass, so later stages (lowering to the ``graph``
dialect, accounting, tests) can read a network without knowing the language.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from crane.dialects.layers.values import DTYPE_BYTES, INTEGER_DTYPES, AttrValue, Shape, numel
from crane.hardware.machine import Machine

__all__ = ["DTYPE_BYTES", "INTEGER_DTYPES", "AttrValue", "Shape", "numel"]


@dataclass(frozen=True, slots=True)
class SourceLoc:
    """A position in a `.crn` file; line and column count from 1."""

    file: str
    line: int
    col: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


@dataclass(frozen=True, slots=True)
class InputDecl:
    """A named network input (``input image: f32[batch, 3, 224, 224];``)."""

    name: str
    shape: Shape
    dtype: str
    loc: SourceLoc


@dataclass(frozen=True, slots=True)
class WeightDecl:
    """A trainable tensor a layer owns (conv kernel, bias, embedding table...)."""

    name: str
    shape: Shape
    dtype: str

    @property
    def numel(self) -> int:
        return numel(self.shape)


@dataclass(frozen=True, slots=True)
class Layer:
    """One operation of the network, with its attributes resolved and its shape inferred.

    ``kind`` is a name from :data:`crane.dialects.layers.kinds.LAYER_KINDS`; ``inputs`` name
    earlier layers or network inputs.
    """

    name: str
    kind: str
    inputs: tuple[str, ...]
    attrs: Mapping[str, AttrValue]
    weights: tuple[WeightDecl, ...]
    out_shape: Shape
    dtype: str
    loc: SourceLoc


@dataclass(frozen=True, slots=True)
class Optimizer:
    """An optimizer and its hyper-parameters (``adam(lr=1e-3, beta1=0.9)``)."""

    kind: str
    hyper: Mapping[str, float | bool]


@dataclass(frozen=True, slots=True)
class Training:
    """The training section: which layer is the loss, the optimizer, the batch size."""

    loss: str
    optimizer: Optimizer
    batch: int
    loc: SourceLoc


@dataclass(frozen=True, slots=True)
class Network:
    """An elaborated, shape-checked network: inputs, layers in topological order, outputs."""

    name: str
    inputs: tuple[InputDecl, ...]
    layers: tuple[Layer, ...]
    outputs: tuple[str, ...]
    training: Training | None
    machine: Machine | None
    batch: int
    loc: SourceLoc | None = None
    _by_name: dict[str, Layer] = field(default_factory=dict, compare=False, repr=False)

    def layer(self, name: str) -> Layer:
        """The layer called ``name`` (KeyError if there is none)."""
        if not self._by_name:
            self._by_name.update((layer.name, layer) for layer in self.layers)
        return self._by_name[name]

    def shape_of(self, name: str) -> Shape:
        """The shape of a layer result or network input."""
        for decl in self.inputs:
            if decl.name == name:
                return decl.shape
        return self.layer(name).out_shape

