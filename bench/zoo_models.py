"""The models of ``bench/zoo.py``: built with random weights, exported with either of
PyTorch's ONNX exporters.

Run as a script it exports one model, as the bench's ``export`` stage does::

    python bench/zoo_models.py resnet18 dynamo 224 OUT_DIR

writing ``OUT_DIR/model.onnx`` (and its external data, if the exporter writes any) and
one ``OUT_DIR/<input>.npy`` per graph input. Needs the ``torch`` extra
(``pip install -e '.[torch]'``); nothing is downloaded: torchvision models are built
without weights and Hugging Face models from their configs.

Weights are random, and more random than each library's own initialisation: that makes
BatchNorm and LayerNorm the identity (unit scale, zero shift, zero mean and unit variance
statistics), zeroes ViT's classifier head and biases, and starts ConvNeXt's layer scale
at 1e-6, all of which would hide import bugs. So every float parameter whose elements are
all equal is redrawn (uniform in 0.5..1.5 when it was non-zero, else in -0.2..0.2), and
BatchNorm's running statistics are drawn too (mean in -0.2..0.2, variance in 0.5..1.5).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

EXPORTERS = ("torchscript", "dynamo")
"""``torch.onnx.export(dynamo=False)`` and the default (``dynamo=True``)."""


@dataclass(frozen=True, slots=True)
class Spec:
    """A zoo model: its name, family, and the input size of its full and reduced runs
    (pixels of a square image, or tokens)."""

    name: str
    family: str
    """``torchvision``, ``hf-text`` or ``hf-vision``."""
    full: int
    reduced: int


_TORCHVISION = (
    "resnet18", "resnet50", "resnext50_32x4d", "wide_resnet50_2", "regnet_x_400mf", "regnet_y_400mf",
    "mobilenet_v2", "mobilenet_v3_small", "mobilenet_v3_large", "efficientnet_b0", "shufflenet_v2_x1_0",
    "squeezenet1_1", "densenet121", "googlenet", "inception_v3", "mnasnet0_5", "alexnet", "vgg11",
    "convnext_tiny", "vit_b_16", "swin_t",
)
_SIZES = {"inception_v3": (299, 80), "alexnet": (224, 224), "vgg11": (224, 224)}
"""Inception-V3 is built for 299x299 and needs at least 75x75. AlexNet's and VGG's
``AdaptiveAvgPool2d`` (to 6x6, 7x7) would upsample a smaller image's features, which the
TorchScript exporter refuses and the dynamo exporter writes as a ``GatherND`` Crane cannot
import: they are lowered at their full size."""

MODELS: dict[str, Spec] = {
    **{n: Spec(n, "torchvision", *_SIZES.get(n, (224, 64))) for n in _TORCHVISION},
    "bert": Spec("bert", "hf-text", 128, 32),
    "gpt2": Spec("gpt2", "hf-text", 128, 32),
    "distilbert": Spec("distilbert", "hf-text", 128, 32),
    "hf_vit": Spec("hf_vit", "hf-vision", 224, 64),
}
"""Every zoo model by name, in the bench's order."""


def randomise(module: Any, seed: int) -> None:
    """Redraw constant parameters and BatchNorm statistics (see the module docstring)."""
    import torch

    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for sub in module.modules():
            if isinstance(sub, torch.nn.modules.batchnorm._BatchNorm) and sub.running_mean is not None:
                sub.running_mean.uniform_(-0.2, 0.2, generator=generator)
                sub.running_var.uniform_(0.5, 1.5, generator=generator)
        for param in module.parameters():
            if not param.is_floating_point() or param.numel() == 0:
                continue
            first = param.reshape(-1)[0]
            if bool((param == first).all()):
                low, high = (0.5, 1.5) if float(first) != 0.0 else (-0.2, 0.2)
                param.uniform_(low, high, generator=generator)


class _Outputs:
    """Wraps a Hugging Face model so that it takes its inputs by position and returns a
    tuple of named fields of its output (what both exporters take)."""

    @staticmethod
    def make(model: Any, inputs: tuple[str, ...], fields: tuple[str, ...]) -> Any:
        import torch

        class Wrapped(torch.nn.Module):  # type: ignore[misc]
            def __init__(self) -> None:
                super().__init__()
                self.model = model

            def forward(self, *args: Any) -> tuple[Any, ...]:
                out = self.model(**dict(zip(inputs, args, strict=True)))
                return tuple(getattr(out, f) for f in fields)

        return Wrapped()


def _hf_text(name: str) -> tuple[Any, tuple[str, ...]]:
    import transformers as hf

    if name == "bert":
        return hf.BertModel(hf.BertConfig(num_hidden_layers=2)), ("last_hidden_state", "pooler_output")
    if name == "gpt2":
        return hf.GPT2Model(hf.GPT2Config(n_layer=2, use_cache=False)), ("last_hidden_state",)
    return hf.DistilBertModel(hf.DistilBertConfig()), ("last_hidden_state",)


def _text_inputs(tokens: int, vocab: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Random token ids and an attention mask whose last quarter is padding."""
    mask = np.ones((1, tokens), np.int64)
    mask[:, tokens - tokens // 4:] = 0
    return {"input_ids": rng.integers(0, vocab, (1, tokens)).astype(np.int64), "attention_mask": mask}


def build(spec: Spec, size: int) -> tuple[Any, dict[str, np.ndarray], tuple[str, ...]]:
    """The model at input ``size`` in eval mode, example inputs by name, output names."""
    import torch

    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    if spec.family == "torchvision":
        import torchvision

        extra = {"image_size": size} if spec.name == "vit_b_16" else {}
        model = torchvision.models.get_model(spec.name, weights=None, **extra)
        image = rng.standard_normal((1, 3, size, size)).astype(np.float32)
        return _finish(model), {"image": image}, ("logits",)
    if spec.family == "hf-vision":
        import transformers as hf

        model = hf.ViTModel(hf.ViTConfig(image_size=size))
        fields = ("last_hidden_state", "pooler_output")
        image = rng.standard_normal((1, 3, size, size)).astype(np.float32)
        return _finish(_Outputs.make(model, ("pixel_values",), fields)), {"pixel_values": image}, fields
    model, fields = _hf_text(spec.name)
    inputs = _text_inputs(size, int(model.config.vocab_size), rng)
    return _finish(_Outputs.make(model, tuple(inputs), fields)), inputs, fields


def _finish(model: Any) -> Any:
    randomise(model, seed=1)
    return model.eval()


def export(spec: Spec, exporter: str, size: int, out_dir: Path) -> None:
    """Export the model to ``out_dir/model.onnx`` and its inputs as ``<name>.npy``."""
    import torch

    model, inputs, outputs = build(spec, size)
    args = tuple(torch.from_numpy(a) for a in inputs.values())
    out_dir.mkdir(parents=True, exist_ok=True)
    for name, array in inputs.items():
        np.save(out_dir / f"{name}.npy", array)
    path = str(out_dir / "model.onnx")
    options: dict[str, Any] = {"input_names": list(inputs), "output_names": list(outputs)}
    # not under torch.no_grad(): that makes nn.MultiheadAttention take its fused fast
    # path, which the TorchScript exporter cannot export
    torch.onnx.export(model, args, path, dynamo=exporter == "dynamo", **options)


def main(argv: list[str]) -> int:
    if len(argv) != 4 or argv[0] not in MODELS or argv[1] not in EXPORTERS:
        print(f"usage: zoo_models.py MODEL {{{','.join(EXPORTERS)}}} SIZE OUT_DIR "
              f"(models: {', '.join(MODELS)})", file=sys.stderr)
        return 2
    export(MODELS[argv[0]], argv[1], int(argv[2]), Path(argv[3]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
