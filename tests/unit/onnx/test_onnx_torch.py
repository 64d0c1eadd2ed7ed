"""Small PyTorch models exported with ``torch.onnx.export`` import and agree with
onnxruntime and PyTorch (skipped where torch is not installed)."""

from __future__ import annotations

import inspect
import math
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx_testing import compare

from crane.exec.interpreter import run_function
from crane.frontend.onnx import import_onnx_with_weights

torch = pytest.importorskip("torch")
nn = torch.nn


class SmallCnn(nn.Module):  # type: ignore[misc]
    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8), nn.ReLU())
        self.down = nn.Sequential(nn.Conv2d(8, 16, 3, stride=2, padding=1), nn.BatchNorm2d(16), nn.ReLU())
        self.pool = nn.MaxPool2d(2)
        self.head = nn.Linear(16, 10)

    def forward(self, x: Any) -> Any:
        y = self.pool(self.down(self.stem(x)))
        return self.head(torch.flatten(nn.functional.adaptive_avg_pool2d(y, 1), 1))


class Attention(nn.Module):  # type: ignore[misc]
    def __init__(self, d: int, heads: int) -> None:
        super().__init__()
        self.heads, self.dh = heads, d // heads
        self.q, self.k, self.v, self.o = (nn.Linear(d, d) for _ in range(4))

    def forward(self, x: Any) -> Any:
        b, s, d = x.shape
        def split(t: Any) -> Any:
            return t.view(b, s, self.heads, self.dh).transpose(1, 2)
        q, k, v = split(self.q(x)), split(self.k(x)), split(self.v(x))
        probs = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(self.dh), dim=-1)
        return self.o((probs @ v).transpose(1, 2).reshape(b, s, d))


class TinyEncoder(nn.Module):  # type: ignore[misc]
    def __init__(self, vocab: int = 50, d: int = 32, heads: int = 4, seq: int = 8) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.pos = nn.Parameter(torch.randn(1, seq, d) * 0.1)
        self.attn = Attention(d, heads)
        self.norm1, self.norm2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.ffn = nn.Sequential(nn.Linear(d, 64), nn.GELU(), nn.Linear(64, d))
        self.head = nn.Linear(d, 5)

    def forward(self, tokens: Any) -> Any:
        h = self.embed(tokens) + self.pos
        h = self.norm1(h + self.attn(h))
        h = self.norm2(h + self.ffn(h))
        return self.head(h[:, 0])


def _export(module: Any, example: Any, name: str, path: Path) -> onnx.ModelProto:
    kwargs: dict[str, Any] = {"input_names": [name], "output_names": ["y"], "opset_version": 17,
                              "dynamic_axes": {name: {0: "batch"}, "y": {0: "batch"}}}
    if "dynamo" in inspect.signature(torch.onnx.export).parameters:
        kwargs["dynamo"] = False
    torch.onnx.export(module.eval(), (example,), str(path), **kwargs)
    return onnx.load(str(path))


def _interpret(imported: Any, x: np.ndarray, name: str) -> np.ndarray:
    return run_function(imported.func, {name: x}, weights=imported.weights, dtype="f32")["y"]


def test_exported_cnn(tmp_path: Path) -> None:
    torch.manual_seed(0)
    module = SmallCnn()
    for bn in (module.stem[1], module.down[1]):  # non-trivial running statistics
        bn.running_mean.uniform_(-0.2, 0.2)
        bn.running_var.uniform_(0.5, 1.5)
    x = torch.randn(2, 3, 16, 16)
    model = _export(module, x, "image", tmp_path / "cnn.onnx")
    imported = import_onnx_with_weights(tmp_path / "cnn.onnx", batch=2, machine="edge")
    errors = compare(imported, model, {"image": x.numpy()})
    assert errors["y"] < 1e-5
    with torch.no_grad():
        expected = module(x).numpy()
    np.testing.assert_allclose(_interpret(imported, x.numpy(), "image"), expected, rtol=1e-4, atol=1e-5)


def test_exported_transformer(tmp_path: Path) -> None:
    torch.manual_seed(0)
    module = TinyEncoder()
    tokens = torch.randint(0, 50, (3, 8))
    model = _export(module, tokens, "tokens", tmp_path / "encoder.onnx")
    imported = import_onnx_with_weights(model, batch=3, machine="edge")
    errors = compare(imported, model, {"tokens": tokens.numpy()})
    assert errors["y"] < 1e-5
    with torch.no_grad():
        expected = module(tokens).numpy()
    np.testing.assert_allclose(_interpret(imported, tokens.numpy(), "tokens"), expected, rtol=1e-4, atol=1e-5)

