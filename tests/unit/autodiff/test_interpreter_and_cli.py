"""The interpreter API, ``crane-run`` and the ``autodiff`` pass options."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from grad_cases import CASES
from training_testing import initial_weights, load_func, sgd_step

from crane.autodiff import TrainingConfigError, resolve_training
from crane.exec.interpreter import InterpreterError, init_weight, run_function
from crane.tools.run import main as crane_run

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
NET = str(EXAMPLES / "tiny_resnet.crn")


def _opt(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "crane.opt", *args], capture_output=True, text=True, check=False)


def test_runs_are_deterministic_and_seeded() -> None:
    func = load_func(CASES["layernorm_gelu_mse"])
    first = run_function(func, seed=3)
    again = run_function(func, seed=3)
    other = run_function(func, seed=4)
    assert set(first) == {"y"}
    assert np.array_equal(first["y"], again["y"])
    assert not np.allclose(first["y"], other["y"])


def test_given_inputs_and_dtype() -> None:
    func = load_func(CASES["softmax_cross_entropy_sequence"])
    x = np.ones((2, 5, 6))
    out = run_function(func, {"x": x}, dtype="f32")
    assert out["logits"].dtype == np.float32
    weights = initial_weights(func)
    expected = x @ weights["logits.weight"] + weights["logits.bias"]
    assert np.allclose(out["logits"], expected, rtol=1e-6)


def test_weight_init_scale() -> None:
    conv = init_weight("c.weight", (64, 32, 3, 3), np.float64, 0)
    assert abs(conv.std() - np.sqrt(2 / (32 * 9))) < 0.01
    assert abs(init_weight("n.scale", (512,)).mean() - 1.0) < 0.05
    assert np.array_equal(init_weight("a", (3, 4)), init_weight("a", (3, 4)))


def test_integer_inputs_are_drawn_in_range() -> None:
    func = load_func((EXAMPLES / "tiny_transformer.crn").read_text(), str(EXAMPLES / "tiny_transformer.crn"))
    step = sgd_step(func)
    out = run_function(step, seed=5)
    assert np.isfinite(out["loss"])


@pytest.mark.parametrize(("inputs", "message"), [
    ({"x": np.zeros((3, 3))}, "input 'x' has shape (3, 3)"),
    ({"nope": np.zeros(2)}, "no function argument named 'nope'"),
    ({"labels": np.zeros((2, 5))}, "input 'labels' has dtype float64"),
])
def test_bad_inputs_are_reported(inputs: dict[str, np.ndarray], message: str) -> None:
    func = load_func(CASES["softmax_cross_entropy_sequence"])
    with pytest.raises(InterpreterError, match=message.replace("(", r"\(").replace(")", r"\)")):
        run_function(func, inputs)


def test_out_of_range_labels_name_the_op() -> None:
    func = load_func(CASES["softmax_cross_entropy_sequence"])
    with pytest.raises(InterpreterError) as caught:
        run_function(func, {"labels": np.full((2, 5), 99)})
    assert caught.value.op is not None and caught.value.op.name == "graph.cross_entropy"


def test_crane_run_prints_summaries_and_saves(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    np.save(tmp_path / "image.npy", np.zeros((8, 3, 32, 32), dtype=np.float32))
    assert crane_run([NET, "--input", f"image={tmp_path / 'image.npy'}", "--save", str(tmp_path / "out")]) == 0
    line = capsys.readouterr().out.strip()
    assert line.startswith("logits  8x10  mean=")
    assert np.load(tmp_path / "out" / "logits.npy").shape == (8, 10)


@pytest.mark.parametrize(("args", "status", "message"), [
    (["missing.crn"], 2, "crane-run: error: cannot read input file 'missing.crn'"),
    ([NET, "--input", "image"], 2, "--input expects NAME=FILE.npy"),
    ([NET, "--input", "image=/nonexistent.npy"], 2, "cannot read input 'image'"),
    ([NET, "--train", "--optimizer", "rmsprop"], 1, "unknown optimizer 'rmsprop'"),
    ([NET, "--func", "other"], 2, "no graph.func named 'other'"),
])
def test_crane_run_errors_are_one_line(args: list[str], status: int, message: str,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    assert crane_run(args) == status
    err = capsys.readouterr().err
    assert message in err
    assert "Traceback" not in err


def test_crane_run_training_without_loss_is_located(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "plain.crn"
    source.write_text("network plain {\n  input x: f32[2, 4];\n  y = linear(x, out=3);\n  output y;\n}\n")
    assert crane_run([str(source), "--train"]) == 1
    assert f"{source}:1:9: error: training needs a loss" in capsys.readouterr().err


def test_bad_npy_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "junk.npy").write_text("not numpy")
    assert crane_run([NET, "--input", f"image={tmp_path / 'junk.npy'}"]) == 2
    assert "cannot read input 'image'" in capsys.readouterr().err


def test_pass_options_override_the_training_section() -> None:
    result = _opt(NET, "-p", "autodiff{optimizer=adam lr=0.001 weight-decay=0.01}")
    assert result.returncode == 0, result.stderr
    assert "graph.adam" in result.stdout and "graph.momentum" not in result.stdout
    assert "lr = 0.001" in result.stdout and "weight_decay = 0.01" in result.stdout
    assert "graph.momentum" in _opt(NET, "-p", "autodiff").stdout


def test_expansion_runs_once() -> None:
    first = _opt(NET, "-p", "autodiff").stdout
    twice = _opt(NET, "-p", "autodiff,autodiff").stdout
    assert first == twice


def test_resolve_training_defaults_and_errors() -> None:
    assert resolve_training(None) is None
    config = resolve_training(None, "momentum")
    assert config is not None and config.hyper["lr"] == 0.01 and config.hyper["momentum"] == 0.9
    with pytest.raises(TrainingConfigError, match="sgd: hyper-parameter 'lr' must be a number above 0 and at most 1000000, got -1"):
        resolve_training(None, "sgd", "", {"lr": -1.0})


def test_printed_training_step_runs_like_the_built_one(tmp_path: Path) -> None:
    """The training IR printed by crane-opt (dropout keys included) runs to the same step."""
    path = str(EXAMPLES / "tiny_transformer.crn")
    printed = _opt(path, "-p", "autodiff{optimizer=sgd lr=0.1}")
    assert printed.returncode == 0, printed.stderr
    ir = tmp_path / "step.mlir"
    ir.write_text(printed.stdout)
    assert crane_run([str(ir), "--dtype", "f64", "--save", str(tmp_path / "a")]) == 0
    assert crane_run([path, "--train", "--optimizer", "sgd", "--lr", "0.1", "--dtype", "f64",
                      "--save", str(tmp_path / "b")]) == 0
    for saved in (tmp_path / "a").glob("*.npy"):
        assert np.array_equal(np.load(saved), np.load(tmp_path / "b" / saved.name)), saved.name


def test_crane_run_reads_ir_and_crn_from_stdin(monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    source = "network tiny {\n  input x: f32[2, 4];\n  y = linear(x, out=3);\n  output y;\n}\n"
    monkeypatch.setattr(sys, "stdin", io.StringIO(source))
    assert crane_run(["-", "--input-format", "crn"]) == 0
    assert capsys.readouterr().out.startswith("y  2x3  mean=")
    monkeypatch.setattr(sys, "stdin", io.StringIO("junk %%\n"))
    assert crane_run(["-"]) == 1
    assert "<stdin>:1:1: error: unregistered operation 'junk'" in capsys.readouterr().err
