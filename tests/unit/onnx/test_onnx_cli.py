"""``crane-opt model.onnx`` with ``--onnx-batch``, ``--onnx-dim``, ``--machine`` and
``--onnx-weights``; ``crane-run`` on an ONNX model; ``crane-sim --check`` with the
model's weights; the tools' error reports."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx_testing import Graph, ort_outputs, tensor

from crane.tools import opt, run, sim


def _cnn() -> onnx.ModelProto:
    """Conv, BatchNormalization, ReLU, max pool, flatten, Gemm on 3x8x8 images."""
    g = Graph("cnn", seed=5)
    c = g.op("Conv", ["x", g.param("W", (8, 3, 3, 3))], name="conv", pads=[1, 1, 1, 1])
    stats = [g.param("gamma", (8,), 0.1), g.param("beta", (8,), 0.1), g.param("mean", (8,), 0.1),
             g.init("var", (0.5 + g.rng.random(8)).astype(np.float32))]
    r = g.op("Relu", [g.op("BatchNormalization", [c, *stats], name="bn")], name="relu")
    f = g.op("Flatten", [g.op("MaxPool", [r], name="pool", kernel_shape=[2, 2], strides=[2, 2])], name="flatten")
    g.op("Gemm", [f, g.param("fc", (10, 128), 0.1), g.param("fcb", (10,), 0.1)], name="y", transB=1)
    return g.model([tensor("x", ["batch", 3, 8, 8])], [tensor("y", ["batch", 10])])


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    model = _cnn()
    onnx.save(model, tmp_path / "cnn.onnx")
    x = np.random.default_rng(0).standard_normal((2, 3, 8, 8)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "ref.npy", ort_outputs(model, {"x": x})["y"])
    return {name: tmp_path / name for name in ("cnn.onnx", "x.npy", "ref.npy")} | {"dir": tmp_path}


def test_crane_opt_imports_and_writes_the_weights(files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    out, weights = files["dir"] / "cnn.mlir", files["dir"] / "w.npz"
    assert opt.main([str(files["cnn.onnx"]), "--onnx-batch=2", "--machine=edge", "--onnx-weights", str(weights),
                     "-o", str(out)]) == 0
    text = out.read_text()
    assert "attributes {crane.machine = @edge}" in text and "hw.machine {sym_name = \"edge\"" in text
    assert "graph.func @cnn(%x: tensor<2x3x8x8xf32>) -> tensor<2x10xf32> attributes {batch = 2}" in text
    names = {line.split('"')[1] for line in text.splitlines() if "graph.weight" in line}
    assert names == {"W.bn", "bn.bias", "fc.T", "fcb"}
    with np.load(weights) as archive:
        assert set(archive.files) == names and archive["fc.T"].shape == (128, 10)
    capsys.readouterr()
    assert run.main([str(out), "--weights", str(weights), "--input", f"x={files['x.npy']}",
                     "--save", str(files["dir"] / "run")]) == 0
    np.testing.assert_allclose(np.load(files["dir"] / "run" / "y.npy"), np.load(files["ref.npy"]), rtol=1e-4, atol=1e-6)


def test_crane_run_takes_an_onnx_model_with_its_weights(files: dict[str, Path]) -> None:
    assert run.main([str(files["cnn.onnx"]), "--onnx-batch", "2", "--input", f"x={files['x.npy']}",
                     "--save", str(files["dir"] / "out")]) == 0
    np.testing.assert_allclose(np.load(files["dir"] / "out" / "y.npy"), np.load(files["ref.npy"]), rtol=1e-4, atol=1e-6)


def test_lowered_programs_check_in_crane_sim_with_the_onnx_weights(files: dict[str, Path],
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    tile, weights = files["dir"] / "cnn.tile.mlir", files["dir"] / "w.npz"
    assert opt.main([str(files["cnn.onnx"]), "--onnx-batch", "2", "--machine", "edge", "--onnx-weights",
                     str(weights), "-p", "lower-to-tile", "-o", str(tile)]) == 0
    assert tile.read_text().count("tile.program") == 16
    capsys.readouterr()
    status = sim.main([str(tile), "--check", "--rtol", "1e-4", "--weights", str(weights), "--input",
                       f"x={files['x.npy']}"])
    printed = capsys.readouterr().out
    assert status == 0 and "ok    y  2x10" in printed and ": match" in printed


def test_onnx_from_standard_input(files: dict[str, Path], monkeypatch: pytest.MonkeyPatch,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(files["cnn.onnx"].read_bytes())))
    assert opt.main(["-", "--input-format", "onnx"]) == 0
    assert "graph.func @cnn(%x: tensor<1x3x8x8xf32>)" in capsys.readouterr().out


def test_errors_are_one_line_reports(files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    bad = files["dir"] / "bad.onnx"
    bad.write_bytes(b"\x00\x01garbage")
    assert opt.main([str(bad)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"error: {bad}: not a readable ONNX model") and "Traceback" not in err
    model = _cnn()
    model.graph.node[2].op_type = "Selu"
    onnx.save(model, bad)
    assert opt.main([str(bad)]) == 1
    assert capsys.readouterr().err.startswith(f"{bad}:3:1: error: node 'relu' (Selu): unsupported ONNX operator 'Selu'")
    assert run.main([str(bad)]) == 1
    assert f"{bad}:3:1: error: node 'relu' (Selu)" in capsys.readouterr().err


@pytest.mark.parametrize("args, message", [
    (["--onnx-batch", "0"], "--onnx-batch must be positive, got 0"),
    (["--onnx-dim", "S"], "--onnx-dim expects NAME=SIZE with a positive size, got 'S'"),
    (["--split-input-file"], "--split-input-file does not apply to binary (ONNX) input"),
])
def test_usage_errors(files: dict[str, Path], capsys: pytest.CaptureFixture[str], args: list[str], message: str) -> None:
    assert opt.main([str(files["cnn.onnx"]), *args]) == 2
    assert capsys.readouterr().err.strip() == f"crane-opt: error: {message}"


def test_onnx_options_need_onnx_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ir = tmp_path / "m.mlir"
    ir.write_text("builtin.module {\n}\n")
    assert opt.main([str(ir), "--onnx-batch", "2"]) == 2
    assert capsys.readouterr().err.strip() == "crane-opt: error: --onnx-batch applies to ONNX input only"
    assert run.main([str(tmp_path / "missing.onnx")]) == 2
    assert "crane-run: error: cannot read input file" in capsys.readouterr().err


def _malformed() -> dict[str, onnx.ModelProto]:
    """Models the tools must reject with exit 1 and located messages, never a traceback."""
    cases: dict[str, onnx.ModelProto] = {}
    no_outputs = _cnn()
    del no_outputs.graph.output[:]
    cases["no outputs"] = no_outputs
    zero = _cnn()
    zero.graph.input[0].type.tensor_type.shape.dim[2].dim_value = 0
    cases["zero dimension"] = zero
    cycle = _cnn()
    cycle.graph.node[0].input[0] = "relu"
    cases["cycle"] = cycle
    unknown = _cnn()
    unknown.graph.node[2].op_type = "Selu"
    unknown.graph.node[3].op_type = "Mish"
    cases["unknown ops"] = unknown
    bad_data = _cnn()
    bad_data.graph.initializer[0].raw_data = b"\0" * 7
    cases["initializer data"] = bad_data
    return cases


@pytest.mark.parametrize("case", list(_malformed()))
def test_malformed_models_exit_1_with_located_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                     case: str) -> None:
    path = tmp_path / "bad.onnx"
    onnx.save(_malformed()[case], path)
    for main in (opt.main, run.main):
        assert main([str(path)]) == 1
        err = capsys.readouterr().err
        assert err.startswith((f"{path}:", f"error: {path}:")) and "Traceback" not in err, err
        assert "internal error" not in err


def test_every_unknown_op_is_reported_by_the_tool(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bad.onnx"
    onnx.save(_malformed()["unknown ops"], path)
    assert opt.main([str(path)]) == 1
    err = capsys.readouterr().err
    assert "node 'relu' (Selu)" in err and "node 'pool' (Mish)" in err


def test_outputs_keep_their_onnx_names_by_the_documented_rule(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    """Legal IR names stay (``output.1``, ``1st``); other characters become ``_``
    (``a/b``); a name of digits only gets a ``v`` (``117``), as docs/onnx.md says."""
    g = Graph("names")
    for name in ("117", "output.1", "a/b", "1st"):
        g.op("Relu", ["x"], name=name)
    model = g.model([tensor("x", [2, 3])], [tensor(n, None) for n in ("117", "output.1", "a/b", "1st")])
    path, saved = tmp_path / "names.onnx", tmp_path / "out"
    onnx.save(model, path)
    assert run.main([str(path), "--save", str(saved)]) == 0
    assert sorted(p.name for p in saved.iterdir()) == ["1st.npy", "a_b.npy", "output.1.npy", "v117.npy"]
    ir = tmp_path / "names.mlir"
    assert opt.main([str(path), "-o", str(ir)]) == 0
    capsys.readouterr()
    assert run.main([str(ir), "--save", str(tmp_path / "again")]) == 0  # the names survive printing
    assert sorted(p.name for p in (tmp_path / "again").iterdir()) == sorted(p.name for p in saved.iterdir())
