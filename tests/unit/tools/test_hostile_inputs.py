"""Every hostile input named by issue 24 gets a clear, located error (or works), quickly.

Each case runs a tool's ``main`` in-process and checks the exit status, the first line of
the message (``file:line:col: error: ...`` with the source line and a caret, or one line
naming the flag) and that no traceback is printed.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from crane.limits import MAX_FILE_BYTES, MAX_IR_BYTES
from crane.limits.files import TooLarge, read_bytes
from crane.tools import inputs, opt, run, sim

NET = "network n {{\n  {machine}input x: f32[{batch}, 3, 16, 16];\n  y = conv2d(x, out=4, kernel=3, padding=1);\n}}\n"


def _net(batch: str = "1", machine: str = "") -> str:
    return NET.format(batch=batch, machine=f"machine {machine};\n  " if machine else "")


def _call(main, capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, float]:  # type: ignore[no-untyped-def]
    began = time.perf_counter()
    status = main([str(a) for a in argv])
    seconds = time.perf_counter() - began
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return status, err, seconds


def _write(tmp_path: Path, text: str, name: str = "m.crn") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.mark.parametrize(("source", "where", "message"), [
    ("machine m extends edge { mesh 100000000 x 2; }\n" + _net(machine="m"), "1:31",
     "mesh rows must be from 1 to 64, got 100000000 (the largest mesh is 64 x 64)"),
    ("machine m extends edge { mesh 2 x 0; }\n" + _net(machine="m"), "1:35",
     "mesh columns must be from 1 to 64, got 0"),
    ("network n {\n  batch 2147483648;\n  input x: f32[batch, 4];\n  y = relu(x);\n}\n", "2:9",
     "the batch size must be from 1 to 65536, got 2147483648"),
    ("machine m extends edge { frequency 1e308 GHz; }\n" + _net(machine="m"), "1:36",
     "frequency must be from 1 kHz to 1 THz, got 1.00e+317 Hz"),
    ("machine m extends edge { noc_bandwidth 1e400 GB/s; }\n" + _net(machine="m"), "1:40",
     "number literal out of range"),
    ("let big = 9223372036854775807 * 2;\n" + _net(), "1:31", "arithmetic overflow in '*'"),
    ("let f = 1e308 * 10.0;\n" + _net(), "1:15", "arithmetic overflow in '*': the result is not a finite number"),
    ("let n = " + "9" * 5000 + ";\n" + _net(), "1:9", "number literal out of range"),
    ("machine m extends edge { dram_bandwidth 0 GB/s; }\n" + _net(machine="m"), "1:41",
     "dram_bandwidth must be from 1 KB/s to 1000 TB/s, got 0 B/s"),
    ('import "/dev/zero";\n' + _net(), "1:8", 'cannot import "/dev/zero": not a regular file (a device)'),
    ('import "lib\0x.crn";\n' + _net(), "1:8", "not a file name (it holds a NUL byte)"),
    ("network n {\n  input x: f32[1048576, 1048576, 2];\n  y = relu(x);\n}\n", "2:9",
     "has more than 2^40 elements"),
    ("network n {\n  input x: f32[1, 1048576];\n  y = linear(x, out=2097152);\n}\n", "3:7",
     "has more than 2^40 elements"),
])
def test_crn_limits_are_located_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                       source: str, where: str, message: str) -> None:
    path = _write(tmp_path, source)
    status, err, seconds = _call(opt.main, capsys, path, "-o", tmp_path / "out.mlir")
    first = err.splitlines()[0]
    assert status == 1 and first.startswith(f"{path}:{where}: error: ") and message in first, err
    assert err.splitlines()[2].strip().startswith("^")  # the caret under the value
    assert seconds < 10 and not (tmp_path / "out.mlir").exists()


def test_a_64_by_64_mesh_is_allowed_and_a_32_by_32_mesh_schedules(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    big = _write(tmp_path, "machine m extends edge { mesh 64 x 64; }\n" + _net(machine="m"))
    assert _call(opt.main, capsys, big)[0] == 0
    # 576 tiles and more once overflowed the recursion of the cost model (best_partition).
    mesh = _write(tmp_path, "machine m extends edge { mesh 32 x 32; }\n" + _net(machine="m"), "b.crn")
    status, err, _ = _call(opt.main, capsys, mesh, "-p", "segment,map", "-o", tmp_path / "s.mlir")
    assert status == 0, err


def test_a_16_byte_sram_is_refused_before_codegen_grows(tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, "machine m extends edge { sram 16 byte; }\n" + _net(machine="m"))
    status, err, seconds = _call(opt.main, capsys, path, "-p", "lower-to-tile")
    assert status == 1 and seconds < 20
    assert err.startswith(f"{path}:5:7: error: the tile SRAM of 'm' (16 bytes) is too small to "
                          "lower this network: the smallest step of this op needs 19 bytes"), err
    assert "a tile needs at least 512 bytes" in err.splitlines()[0]


def test_resnet50_on_2_kib_tiles_is_refused_at_once(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    root = Path(__file__).resolve().parents[3] / "examples"
    text = (root / "resnet50.crn").read_text().replace('import "lib/', f'import "{root}/lib/')
    path = _write(tmp_path, "machine m extends edge { sram 2 KiB; }\n" + text.replace("machine edge;", "machine m;"))
    status, err, seconds = _call(opt.main, capsys, path, "-p", "lower-to-tile")
    assert status == 1 and seconds < 60
    assert "is too small to lower this network: its ops read and write" in err
    assert "a tile needs at least 8 KiB" in err


GRAPH = """builtin.module {{
  graph.func @n(%x: tensor<1x3x8x8xf32>, %t: tensor<1x4x8xf32>) -> (tensor<1x4x4x4xf32>, tensor<1x4x8xf32>) attributes {{batch = 1}} {{
    %w = graph.weight {{name = "w"}} : () -> tensor<4x3x3x3xf32>
    %c = graph.conv2d %x, %w {{out = 4, kernel = array<i64: 3, 3>, stride = array<i64: {stride}>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, groups = {groups}, depthwise = false, bias = false}} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>
    %p = graph.max_pool2d %c {{kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>, padding = array<i64: {padding}>, ceil_mode = false}} : (tensor<1x4x8x8xf32>) -> tensor<1x4x4x4xf32>
    %wq = graph.weight {{name = "wq"}} : () -> tensor<8x8xf32>
    %wk = graph.weight {{name = "wk"}} : () -> tensor<8x8xf32>
    %wv = graph.weight {{name = "wv"}} : () -> tensor<8x8xf32>
    %wo = graph.weight {{name = "wo"}} : () -> tensor<8x8xf32>
    %a = graph.attention %t, %wq, %wk, %wv, %wo {{heads = {heads}, causal = false, bias = false}} : (tensor<1x4x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<1x4x8xf32>
    graph.return %p, %a : tensor<1x4x4x4xf32>, tensor<1x4x8xf32>
  }}
}}
"""
GOOD = {"stride": "1, 1", "groups": "1", "padding": "0, 0, 0, 0", "heads": "2"}


@pytest.mark.parametrize(("change", "line", "message"), [
    ({"stride": "0, 1"}, 4, "'graph.conv2d' op attribute 'stride' must be positive, got 0"),
    ({"groups": "0"}, 4, "'graph.conv2d' op attribute 'groups' must be positive, got 0"),
    ({"heads": "0"}, 10, "'graph.attention' op attribute 'heads' must be positive, got 0"),
    ({"padding": "1, 1"}, 5, "'graph.max_pool2d' op attribute 'padding' must be resolved to 4 values"),
])
def test_bad_layer_attributes_are_verifier_diagnostics(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], change: dict[str, str], line: int,
        message: str) -> None:
    good = _write(tmp_path, GRAPH.format(**GOOD), "good.mlir")
    assert _call(opt.main, capsys, good)[0] == 0
    assert _call(run.main, capsys, good)[0] == 0
    path = _write(tmp_path, GRAPH.format(**{**GOOD, **change}), "bad.mlir")
    for main, extra in ((opt.main, ()), (opt.main, ("-p", "lower-to-tile")), (run.main, ())):
        status, err, _ = _call(main, capsys, path, *extra)
        assert status == 1 and err.startswith(f"{path}:{line}:") and message in err.splitlines()[0], err


@pytest.mark.parametrize(("pipeline", "column", "message"), [
    ("segment{objective=bogus}", 19, "option 'objective' of pass 'segment' expects edp, latency, "
     "energy or 'L^p E^q', got 'bogus'"),
    ("autodiff{optimizer=cores}", 20, "option 'optimizer' of pass 'autodiff' expects one of '', "
     "'sgd', 'momentum', 'adam', got 'cores'"),
    ("spatial-tile{memory-cap=x}", 25, "option 'memory-cap' of pass 'spatial-tile' expects a size with a unit"),
    ("segment{time-limit=nan}", 20, "option 'time-limit' of pass 'segment' expects a number above 0"),
    ("alloc{alignment=3}", 17, "option 'alignment' of pass 'alloc' expects a power of two from 1 "
     "to 1048576, got '3'"),
    ("canonicalize{max-iterations=-1}", 29, "expects an integer from 1 to 10000, got '-1'"),
    ("autodiff{lr=inf}", 13, "option 'lr' of pass 'autodiff' expects a number above 0"),
    ("segment{batch=-5}", 15, "option 'batch' of pass 'segment' expects an integer from 0 to 65536, got '-5'"),
    ("segment{batch=2147483648}", 15, "expects an integer from 0 to 65536, got '2147483648'"),
    ("map{search=z3 timeout=nan}", 23, "option 'timeout' of pass 'map' expects a number above 0"),
    ("map{search=z3 timeout=inf}", 23, "option 'timeout' of pass 'map' expects a number above 0"),
    ("spatial-tile{grid=2,0}", 21, "item 2 '0' is not an integer from 1 to 4096"),
])
def test_bad_pass_options_are_usage_errors_in_the_pipeline_text(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], pipeline: str, column: int,
        message: str) -> None:
    path = _write(tmp_path, _net())
    status, err, _ = _call(opt.main, capsys, path, "-p", pipeline)
    lines = err.splitlines()
    assert status == 2 and lines[0].startswith(f"<pass-pipeline>:1:{column}: error: "), err
    assert message in lines[0] and lines[1] == pipeline and lines[2].index("^") == column - 1


@pytest.mark.parametrize(("main", "argv", "message"), [
    (sim.main, ["--seed=-1"], "crane-sim: error: --seed must be a whole number from 0 to 4294967295, got -1"),
    (sim.main, ["--rtol", "nan"], "crane-sim: error: --rtol must be a non-negative number, got nan"),
    (sim.main, ["--show", "-3"], "crane-sim: error: --show must be a whole number from 0 to 1000000, got -3"),
    (run.main, ["--seed", "-1"], "crane-run: error: --seed must be a whole number"),
    (run.main, ["--lr", "inf", "--train"], "crane-run: error: --lr must be a finite number above 0, got inf"),
    (run.main, ["--func", "nope"], "crane-run: error: --func: no graph.func named 'nope'"),
    (run.main, ["--save", "/dev/null/x"], "crane-run: error: --save: cannot write to '/dev/null/x'"),
    (run.main, ["--input", "x=/dev/zero"], "crane-run: error: --input: cannot read input 'x'"),
    (opt.main, ["--machine", "/dev/zero"], "crane-opt: error: --machine: machine file '/dev/zero' "
     "is not a regular file"),
    (opt.main, ["-o", "/dev/null/x"], "crane-opt: error: -o: cannot write '/dev/null/x'"),
])
def test_flag_errors_name_their_flag(tmp_path: Path, capsys: pytest.CaptureFixture[str], main,  # type: ignore[no-untyped-def]
                                     argv: list[str], message: str) -> None:
    path = _write(tmp_path, _net())
    if main is sim.main:
        status, err, _ = _call(opt.main, capsys, path, "--machine", "edge", "-p", "lower-to-tile",
                               "-o", tmp_path / "t.mlir")
        assert status == 0, err
        path = tmp_path / "t.mlir"
    status, err, _ = _call(main, capsys, path, *argv)
    assert status == 2 and err.splitlines()[0].startswith(message), err


@pytest.mark.parametrize("main", [opt.main, run.main, sim.main])
def test_unreadable_inputs_are_usage_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str], main) -> None:  # type: ignore[no-untyped-def]
    tool = {opt.main: "crane-opt", run.main: "crane-run", sim.main: "crane-sim"}[main]
    for path, why in (("/dev/zero", "not a regular file (a device)"), (str(tmp_path), "not a regular file (a directory)")):
        status, err, seconds = _call(main, capsys, path)
        assert status == 2 and seconds < 5
        assert err.strip() == f"{tool}: error: cannot read input file '{path}': {why}", err


def test_reads_stop_at_the_size_cap(tmp_path: Path) -> None:
    path = tmp_path / "big.mlir"
    path.write_bytes(b"x" * 2000)
    assert read_bytes(path, limit=2000) == b"x" * 2000
    with pytest.raises(TooLarge, match="larger than 1000 bytes"):
        read_bytes(path, limit=1000)


def test_ir_reads_to_its_own_cap_and_crn_to_the_text_cap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A tool reads back the tile programs another wrote, past the hand-written text cap."""
    limits: dict[str, int] = {}

    def recording(path: str, limit: int = MAX_FILE_BYTES) -> str:
        limits[Path(path).suffix] = limit
        return ""

    monkeypatch.setattr(inputs, "read_text", recording)
    for suffix in (".mlir", ".crn"):
        name = str(tmp_path / f"m{suffix}")
        inputs.read_source(name, inputs.input_format(name, None))
    assert limits == {".mlir": MAX_IR_BYTES, ".crn": MAX_FILE_BYTES}
    assert MAX_IR_BYTES > MAX_FILE_BYTES


@pytest.mark.parametrize(("module", "main", "tool"), [(run, run.main, "crane-run"), (sim, sim.main, "crane-sim")])
def test_internal_errors_are_one_line_without_debug(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
        module, main, tool: str) -> None:  # type: ignore[no-untyped-def]
    def broken(*args: object) -> int:
        raise RuntimeError("a bug")

    monkeypatch.setattr(module, "run", broken)
    path = _write(tmp_path, _net())
    status, err, _ = _call(main, capsys, path)
    assert status == 3 and err.strip() == (f"{tool}: internal error: RuntimeError: a bug (this is a bug "
                                           "in Crane; rerun with --debug for a traceback)")
    with pytest.raises(RuntimeError, match="a bug"):
        main([str(path), "--debug"])


def test_crane_run_refuses_a_network_bigger_than_its_memory_budget(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, "network n {\n  input x: f32[1, 4096];\n  y = linear(x, out=262144);\n}\n")
    status, err, seconds = _call(run.main, capsys, path)
    assert status == 1 and seconds < 10
    assert err.startswith(f"{path}:1:9: error: the run would hold 4.0 GiB of tensors at f32, more "
                          "than --max-memory 2 GiB"), err
    status, err, _ = _call(run.main, capsys, path, "--max-memory", "nan")
    assert status == 2 and "--max-memory must be a finite number above 0, got nan" in err


TRAIN = ("network n {{\n  input x: f32[2, 4];\n  input t: f32[2, 3];\n  y = linear(x, out=3);\n"
         "  train {{\n    loss mse(y, t);\n    optimizer {optimizer};\n  }}\n}}\n")


@pytest.mark.parametrize(("optimizer", "column", "message"), [
    ("adam(lr=0)", 23, "hyper-parameter 'lr' must be a number above 0 and at most 1000000, got 0"),
    ("adam(beta1=1)", 26, "hyper-parameter 'beta1' must be a number at least 0 and below 1, got 1"),
    ("sgd(lr=1, weight_decay=-1)", 38, "hyper-parameter 'weight_decay' must be a number from 0 to 1000000, got -1"),
])
def test_training_hyper_parameters_out_of_range_are_located(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], optimizer: str, column: int, message: str) -> None:
    path = _write(tmp_path, TRAIN.format(optimizer=optimizer))
    for main, extra in ((opt.main, ("-p", "autodiff")), (run.main, ("--train",))):
        status, err, _ = _call(main, capsys, path, *extra)
        lines = err.splitlines()
        assert status == 1 and lines[0] == f"{path}:7:{column}: error: {message}", err
        assert lines[2].index("^") == column - 1


@pytest.mark.parametrize(("optimizer", "good", "bad", "message"), [
    ("adam(lr=0.5)", "lr = 0.5", "lr = 0.0", "adam: hyper-parameter 'lr' must be a number above 0"),
    ("adam(lr=0.5)", "beta2 = 0.999", "beta2 = 1.0", "adam: hyper-parameter 'beta2' must be a number at least 0 "
     "and below 1, got 1"),
    ("momentum(lr=0.5)", "momentum = 0.9", "momentum = 2.0", "momentum: hyper-parameter 'momentum' must be a "
     "number from 0 to 1, got 2"),
])
def test_training_attributes_out_of_range_are_located_at_the_function(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], optimizer: str, good: str, bad: str,
        message: str) -> None:
    source = _write(tmp_path, TRAIN.format(optimizer=optimizer))
    status, err, _ = _call(opt.main, capsys, source, "-o", tmp_path / "g.mlir")
    graph = (tmp_path / "g.mlir").read_text()
    assert status == 0 and good in graph, err
    path = _write(tmp_path, graph.replace(good, bad), "bad.mlir")
    for main, extra in ((opt.main, ("-p", "autodiff")), (run.main, ("--train",))):
        status, err, _ = _call(main, capsys, path, *extra)
        assert status == 1 and err.startswith(f"{path}:2:3: error: {message}"), err


def test_tools_collect_garbage_rarely_while_they_run_and_restore_it() -> None:
    """The guard raises the collector's thresholds for the tool's run (codegen on a large
    mesh spent a fifth of its CPU in the collector), and puts them back, even on a crash."""
    import gc

    from crane.tools.guard import GC_THRESHOLDS, guarded

    before = gc.get_threshold()
    seen: list[tuple[int, int, int]] = []

    def body() -> int:
        seen.append(gc.get_threshold())
        raise RuntimeError("a bug")

    assert guarded("crane-opt", body, debug=False) == 3
    assert seen == [GC_THRESHOLDS] and gc.get_threshold() == before


@pytest.mark.parametrize("field", ["cols", "sram_bytes", "dram_ports"])
def test_a_machine_missing_a_field_is_reported_at_the_machine(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                              field: str) -> None:
    scheduled = tmp_path / "s.mlir"
    status, err, _ = _call(opt.main, capsys, _write(tmp_path, _net()), "--machine", "edge", "-p", "segment",
                           "-o", scheduled)
    assert status == 0, err
    text = scheduled.read_text()
    cut = re.sub(rf", {field} = (array<[^>]*>|[^,}}]+)", "", text, count=1)
    assert cut != text
    broken = _write(tmp_path, cut, "broken.mlir")
    status, err, _ = _call(opt.main, capsys, broken, "-p", "map,codegen,alloc", "-o", tmp_path / "t.mlir")
    assert status == 1 and f"'hw.machine' op requires attribute '{field}'" in err.splitlines()[0], err
    assert err.startswith(f"{broken}:")


FORWARD_PART_IN_PADDING = (
    "machine small extends edge { mesh 2 x 2; sram 256 KiB; }\nnetwork n {\n  machine small;\n"
    "  input x: f32[1, 3, 16, 16];\n  c = relu(conv2d(x, out=8, kernel=3, padding=64));\n"
    "  d = conv2d(max_pool2d(c, kernel=2), out=8, kernel=3, stride=2, padding=same);\n"
    "  y = linear(flatten(global_avg_pool(d)), out=10);\n  output y;\n}\n")
GRADIENT_PART_IN_PADDING = (
    "network n {\n  machine edge;\n  input x: f32[batch, 3, 8, 8];\n  input labels: int32[batch];\n"
    "  c = relu(batchnorm(conv2d(x, out=4, kernel=3, padding=3)));\n"
    "  logits = linear(flatten(avg_pool2d(c, kernel=2)), out=5);\n  output logits;\n"
    "  train {\n    loss cross_entropy(logits, labels);\n    optimizer sgd(lr=0.1);\n    batch 2;\n  }\n}\n")


@pytest.mark.parametrize(("source", "where"), [(FORWARD_PART_IN_PADDING, "5:12"), (GRADIENT_PART_IN_PADDING, "5:22")],
                         ids=["forward", "weight-gradient"])
def test_a_part_reading_only_padding_is_refused_at_its_op(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                          source: str, where: str) -> None:
    # Legal (the interpreter runs it), but a tile whose output rows all lie in the padding
    # would load an empty buffer: codegen refuses it at the op, as spatial-tile does.
    path = _write(tmp_path, source)
    status, err, _ = _call(opt.main, capsys, path, "-p", "lower-to-tile", "-o", tmp_path / "t.mlir")
    assert status == 1 and err.startswith(f"{path}:{where}: error: the schedule cannot be lowered: "), err
    assert "reads only padding" in err.splitlines()[0] and not (tmp_path / "t.mlir").exists()
    if source is FORWARD_PART_IN_PADDING:
        status, err, _ = _call(run.main, capsys, path)
        assert status == 0, err
