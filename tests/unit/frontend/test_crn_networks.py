"""Each example network against its published parameter and MAC counts (within 1%).

MACs count multiply-accumulates of conv, linear, matmul and attention layers, FC included,
at batch 1. Sources of the reference figures are given next to each.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from crane.frontend.accounting import network_stats
from crane.frontend.crn import load_crn

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"

# name: (params, MACs or None, source)
PUBLISHED: dict[str, tuple[float, float | None, str]] = {
    "resnet50": (25.557e6, 4.09e9, "torchvision resnet50 docs: 25,557,032 params, 4.09 GFLOPS (MACs)"),
    "resnet101": (44.549e6, 7.80e9, "torchvision resnet101 docs: 44,549,160 params, 7.80 GFLOPS (MACs)"),
    "vgg16": (138.358e6, 15.47e9, "torchvision vgg16 docs: 138,357,544 params, 15.47 GFLOPS (MACs)"),
    "googlenet": (6.625e6, 1.50e9, "torchvision googlenet docs: 6,624,904 params, 1.50 GFLOPS; "
                  "aux classifiers excluded"),
    "inception_v3": (23.835e6, 5.71e9, "torchvision inception_v3 (aux_logits=False): 23,834,568 "
                     "params; docs 5.71 GFLOPS (MACs)"),
    "mobilenet_v2": (3.505e6, 0.30e9, "torchvision mobilenet_v2 docs: 3,504,872 params, 0.30 GFLOPS "
                     "(MACs); Sandler et al. 2018 Table 4: 3.4 M, 300 M multiply-adds"),
    "darknet19": (20.84e6, 2.79e9, "Darknet-19 of YOLO9000 (papers.md 2.4 layer list) with BN: "
                  "20.8 M params; Redmon & Farhadi 2017 Table 6: 5.58 G FLOPs = 2.79 GMACs"),
    "bert_base": (110e6, None, "Devlin et al. 2019: BERT-Base 110 M parameters (HF count "
                  "109,482,240 incl. pooler)"),
    "opt_6_7b": (6.7e9, None, "Zhang et al. 2022: OPT-6.7B (HF count 6,658,473,984, tied LM head)"),
}


@pytest.fixture(scope="module")
def stats() -> dict[str, object]:
    return {name: network_stats(load_crn(EXAMPLES / f"{name}.crn")) for name in PUBLISHED}


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_published_parameter_count(name: str, stats: dict[str, object]) -> None:
    params, _, source = PUBLISHED[name]
    got = stats[name].params  # type: ignore[attr-defined]
    assert abs(got - params) / params < 0.01, f"{name}: {got} vs {params} ({source})"


@pytest.mark.parametrize("name", sorted(n for n, (_, macs, _) in PUBLISHED.items() if macs))
def test_published_mac_count(name: str, stats: dict[str, object]) -> None:
    _, macs, source = PUBLISHED[name]
    assert macs is not None
    got = stats[name].macs  # type: ignore[attr-defined]
    assert abs(got - macs) / macs < 0.01, f"{name}: {got} vs {macs} ({source})"


def _transformer_params(layers: int, d: int, ffn: int, norms_per_layer: int = 2) -> int:
    """Attention (4 d^2 + 4 d) + FFN (2 d ffn + ffn + d) + layer norms (2 d each)."""
    return layers * (4 * d * d + 4 * d + 2 * d * ffn + ffn + d + norms_per_layer * 2 * d)


def test_transformer_large_matches_the_closed_form() -> None:
    # No published count exists for Crane's Transformer-Large; check the standard formula.
    net = load_crn(EXAMPLES / "transformer_large.crn")
    assert network_stats(net).params == _transformer_params(12, 1024, 4096)
    assert net.layers[-1].out_shape == (1, 512, 1024)


def test_gpt2_matches_the_closed_form() -> None:
    net = load_crn(EXAMPLES / "gpt2.crn")
    embeddings = 50257 * 1024 + 1024 * 1024
    final_norm = 2 * 1024
    assert network_stats(net).params == _transformer_params(16, 1024, 4096) + embeddings + final_norm


def test_attention_macs_follow_the_projection_and_score_formula() -> None:
    net = load_crn(EXAMPLES / "transformer_large.crn")
    stats = network_stats(net)
    attention = [s for s in stats.layers if s.kind == "attention"][0]
    s, d = 512, 1024
    assert attention.macs == 4 * s * d * d + 2 * s * s * d


@pytest.mark.parametrize("name", ["tiny_resnet", "tiny_transformer"])
def test_tiny_models_train(name: str) -> None:
    net = load_crn(EXAMPLES / f"{name}.crn")
    assert net.training is not None
    assert net.layer(net.training.loss).kind == "cross_entropy"
    assert net.batch == net.training.batch
    assert net.inputs[0].shape[0] == net.batch


def test_every_example_elaborates_with_its_machine() -> None:
    for path in sorted(EXAMPLES.glob("*.crn")):
        net = load_crn(path)
        assert net.machine is not None, path.name
        assert net.layers, path.name
