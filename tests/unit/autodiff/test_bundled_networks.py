"""Acceptance (d): the training step of every bundled network (``examples/*.crn``) builds
and verifies, and its backward MACs are about twice its forward MACs (dX + dW per conv or
matmul; only the first layer, whose input needs no gradient, makes it a little less).

Networks without a training section get a cross-entropy loss on their output
(``autodiff{attach-loss=cross_entropy}``). Graph building only, nothing is executed.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from training_testing import load_func

from crane.autodiff import attach_loss, backward_ops, expand_training_step, resolve_training
from crane.autodiff.stats import training_stats
from crane.dialects.graph import LayerOp
from crane.ir.verifier import verify

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
NETWORKS = sorted(p.stem for p in EXAMPLES.glob("*.crn"))


def test_every_bundled_network_is_listed() -> None:
    assert {"opt_6_7b", "resnet50", "tiny_resnet", "tiny_transformer", "vgg16"} <= set(NETWORKS)


@pytest.mark.parametrize("network", NETWORKS)
def test_training_step_verifies_and_backward_is_twice_forward(network: str) -> None:
    path = EXAMPLES / f"{network}.crn"
    func = load_func(path.read_text(), str(path))
    forward_layers = sum(1 for op in func.body.ops if isinstance(op, LayerOp))
    config = resolve_training(func.attributes.get("training"), "", "", {})
    if config is None:
        attach_loss(func, "cross_entropy")
        config = resolve_training(None, "sgd", "", {"lr": 0.01})
    assert config is not None
    expand_training_step(func, config)
    problems = verify(func)
    assert not problems, [p.message for p in problems[:3]]
    assert len(backward_ops(func)) >= forward_layers // 2
    stats = training_stats(func)
    ratio = stats["backward_macs"] / stats["forward_macs"]
    print(f"{network}: backward/forward MACs = {ratio:.3f}")
    assert 1.85 <= ratio <= 2.0 + 1e-9, f"{network}: backward/forward MACs {ratio:.3f}, expected about 2"
    # Weights off the path to the loss (e.g. a second output head) get no gradient.
    assert 0 < stats["gradient_bytes"] <= stats["weight_bytes"]
    assert stats["activation_bytes"] > 0


def test_autodiff_on_opt_6_7b_is_fast() -> None:
    """Acceptance (e) in the suite: the expansion itself (bench/autodiff.py reports it too)."""
    path = EXAMPLES / "opt_6_7b.crn"
    func = load_func(path.read_text(), str(path))
    start = time.perf_counter()
    attach_loss(func, "cross_entropy")
    config = resolve_training(None, "adam", "", {"lr": 1e-4})
    assert config is not None
    expand_training_step(func, config)
    assert time.perf_counter() - start < 2.0
