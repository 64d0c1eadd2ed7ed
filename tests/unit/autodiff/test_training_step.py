"""Acceptance (b): one SGD step of the bundled tiny ResNet and tiny transformer, built by
``autodiff`` and run by ``crane-run --train``, updates every weight to
``w - lr * (g + wd * w)`` where ``g`` is the finite-difference gradient of the loss
(checked at sampled elements of every weight, and for the transformer along a random
direction of every weight, rtol 1e-6)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from training_testing import StepCheck, load_func

from crane.autodiff import expand_training_step, resolve_training
from crane.tools.run import main as crane_run

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
LR = 0.1


@pytest.mark.parametrize(("network", "samples", "directions"), [("tiny_resnet", 2, False), ("tiny_transformer", 2, True)])
def test_sgd_step_through_crane_run_matches_finite_differences(
        network: str, samples: int, directions: bool, tmp_path: Path) -> None:
    path = EXAMPLES / f"{network}.crn"
    status = crane_run([str(path), "--train", "--optimizer", "sgd", "--lr", str(LR), "--dtype", "f64",
                        "--seed", "0", "--save", str(tmp_path)])
    assert status == 0
    func = load_func(path.read_text(), str(path))
    config = resolve_training(func.attributes.get("training"), "sgd", "", {"lr": LR})
    assert config is not None
    decay = float(config.hyper["weight_decay"])
    expand_training_step(func, config)
    check = StepCheck(func, samples=samples, directions=directions)
    assert len(check.weights) >= 20
    for name, w in check.weights.items():
        updated = np.load(tmp_path / f"{name}.new.npy")
        check.grads[name] = (w - updated) / LR - decay * w
    assert not check.mismatches(), "\n".join(map(str, check.mismatches()))
    assert np.isfinite(np.load(tmp_path / "loss.npy"))


def test_crane_run_momentum_and_adam_steps_return_state(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = str(EXAMPLES / "tiny_transformer.crn")
    assert crane_run([path, "--train", "--save", str(tmp_path)]) == 0
    assert (tmp_path / "logits.weight.m.new.npy").exists()
    assert (tmp_path / "logits.weight.v.new.npy").exists()
    assert "loss  scalar" in capsys.readouterr().out
    assert crane_run([path, "--train", "--optimizer", "momentum", "--lr", "0.01", "--save", str(tmp_path / "m")]) == 0
    assert (tmp_path / "m" / "logits.weight.velocity.new.npy").exists()
