"""What `.crn` programs mean: blocks, repeat, arithmetic, naming, imports, padding, training."""

from __future__ import annotations

from pathlib import Path

import pytest
from crn_testing import net

from crane.dialects.layers.kinds import LAYER_KINDS
from crane.frontend.accounting import network_stats, render_table
from crane.frontend.crn import load_crn, parse_crn
from crane.hardware import builtin_machines

IMG = "  input x: f32[batch, 3, 8, 8];\n"


def test_integer_arithmetic_on_parameters() -> None:
    n = net("  let c = 7 * 3 + 10 // 3 - 9 % 4;\n  let d = 12 / 4;\n" + IMG +
            "  y = conv2d(x, out=c + d, kernel=1);")
    assert n.layers[0].attrs["out"] == 7 * 3 + 10 // 3 - 9 % 4 + 3


def test_exact_division_stays_integer_and_inexact_becomes_float() -> None:
    n = net("  let a = 6 / 3;\n  let b = 7 / 2;\n" + IMG + "  y = conv2d(x, out=a, kernel=1);\n"
            "  z = dropout(y, rate=b / 10);")
    assert n.layers[0].attrs["out"] == 2
    assert n.layers[1].attrs["rate"] == pytest.approx(0.35)


def test_repeat_carries_outer_names_and_names_layers_by_iteration() -> None:
    n = net(IMG + "  h = x;\n  repeat i in 0..3 {\n    t = relu(h);\n    h = conv2d(t, out=3, kernel=1);\n  }\n  output h;")
    assert [layer.name for layer in n.layers] == ["t.0", "h.0", "t.1", "h.1", "t.2", "h.2"]
    assert n.layers[2].inputs == ("h.0",)
    assert n.outputs == ("h.2",)


def test_loop_variable_is_usable_in_arithmetic() -> None:
    n = net(IMG + "  h = x;\n  repeat i in 1..4 {\n    h = conv2d(h, out=i * 8, kernel=1);\n  }")
    assert [layer.out_shape[1] for layer in n.layers] == [8, 16, 24]


def test_block_calls_prefix_layer_names_and_the_result_takes_the_call_name() -> None:
    prelude = "block cbr(x, c, k=1) {\n  y = conv2d(x, out=c, kernel=k);\n  return relu(batchnorm(y));\n}\n"
    n = net(IMG + "  a = cbr(x, 8, k=3);\n  b = cbr(a, 4);", prelude)
    assert [layer.name for layer in n.layers] == ["a.y", "a.batchnorm", "a", "b.y", "b.batchnorm", "b"]
    assert n.layer("a").kind == "relu"
    assert n.layer("b").inputs == ("b.batchnorm",)


def test_anonymous_nested_calls_get_unique_names() -> None:
    n = net(IMG + "  y = add(relu(x), relu(x));")
    assert [layer.name for layer in n.layers] == ["relu", "relu_1", "y"]


def test_block_defaults_may_be_bare_words_for_layer_parameters() -> None:
    prelude = "block c(x, pad=same) {\n  return conv2d(x, out=3, kernel=3, padding=pad);\n}\n"
    n = net(IMG + "  y = c(x);", prelude)
    assert n.layers[0].attrs["padding"] == (1, 1, 1, 1)


def test_same_padding_is_tf_style_and_asymmetric_when_needed() -> None:
    n = net("  input x: f32[1, 3, 224, 224];\n  y = conv2d(x, out=8, kernel=3, stride=2, padding=same);\n"
            "  z = conv2d(x, out=8, kernel=[1, 7], padding=same);")
    assert n.layers[0].attrs["padding"] == (0, 1, 0, 1)
    assert n.layers[0].out_shape == (1, 8, 112, 112)
    assert n.layers[1].attrs["padding"] == (0, 0, 3, 3)


def test_explicit_padding_forms() -> None:
    n = net(IMG + "  a = conv2d(x, out=3, kernel=3, padding=1);\n  b = conv2d(x, out=3, kernel=3, padding=[1, 0]);\n"
            "  c = conv2d(x, out=3, kernel=3, padding=[0, 1, 2, 3]);\n  d = conv2d(x, out=3, kernel=3, padding=valid);")
    assert [layer.attrs["padding"] for layer in n.layers] == [(1, 1, 1, 1), (1, 1, 0, 0), (0, 1, 2, 3), (0, 0, 0, 0)]
    assert [layer.out_shape[2:] for layer in n.layers] == [(8, 8), (8, 6), (7, 11), (6, 6)]


def test_conv_weights_are_oihw_and_depthwise_sets_groups() -> None:
    n = net(IMG + "  a = conv2d(x, out=6, kernel=[3, 5], groups=3, bias=false);\n  b = conv2d(x, kernel=3, depthwise=true);")
    assert [(w.name, w.shape) for w in n.layers[0].weights] == [("weight", (6, 1, 3, 5))]
    assert n.layers[1].attrs["groups"] == 3
    assert [(w.name, w.shape) for w in n.layers[1].weights] == [("weight", (3, 1, 3, 3)), ("bias", (3,))]


def test_dilation_enlarges_the_kernel_extent() -> None:
    n = net(IMG + "  a = conv2d(x, out=3, kernel=3, dilation=2);")
    assert n.layers[0].out_shape == (1, 3, 4, 4)


def test_linear_matmul_and_attention_shapes_and_weights() -> None:
    n = net("  input s: f32[2, 10, 16];\n  a = linear(s, out=32);\n  b = matmul(s, s, transpose_b=true);\n"
            "  c = attention(s, heads=4, causal=true);")
    assert n.layers[0].out_shape == (2, 10, 32)
    assert [w.shape for w in n.layers[0].weights] == [(16, 32), (32,)]
    assert n.layers[1].out_shape == (2, 10, 10)
    assert [w.name for w in n.layers[2].weights] == ["wq", "wk", "wv", "wo", "bq", "bk", "bv", "bo"]
    assert n.layers[2].attrs["causal"] is True


def test_broadcasting_elementwise_ops() -> None:
    n = net("  input a: f32[2, 1, 5];\n  input b: f32[3, 1];\n  y = mul(a, b);")
    assert n.layers[0].out_shape == (2, 3, 5)


def test_concat_reshape_flatten_transpose_slice() -> None:
    n = net(IMG + "  c = concat(x, x, x, axis=1);\n  r = reshape(c, shape=[-1, 9, 64]);\n  f = flatten(r);\n"
            "  t = transpose(r, perm=[0, 2, 1]);\n  s = slice(t, axis=1, start=2, stop=5);")
    assert [layer.out_shape for layer in n.layers] == [(1, 9, 8, 8), (1, 9, 64), (1, 576), (1, 64, 9), (1, 3, 9)]


def test_embedding_and_losses() -> None:
    n = net("  input ids: int32[2, 7];\n  e = embedding(ids, vocab=100, dim=8, dtype=bf16);\n"
            "  l = linear(e, out=100);\n  loss = cross_entropy(l, ids);\n  m = mse(e, e);")
    assert n.layers[0].out_shape == (2, 7, 8) and n.layers[0].dtype == "bf16"
    assert n.layers[2].out_shape == () and n.layers[3].out_shape == ()
    assert n.outputs == ("l",)


def test_batch_statement_sets_the_batch_name() -> None:
    n = net("  batch 8;\n" + IMG + "  y = relu(x);")
    assert n.batch == 8 and n.inputs[0].shape == (8, 3, 8, 8)


def test_training_section() -> None:
    n = net(IMG + "  input t: f32[batch, 3, 8, 8];\n  y = relu(x);\n  train {\n    loss mse(y, t);\n"
            "    optimizer adam(lr=0.01, beta1=0.8);\n    batch 16;\n  }")
    assert n.training is not None
    assert n.training.loss == "loss" and n.layer("loss").kind == "mse"
    assert dict(n.training.optimizer.hyper) == {"lr": 0.01, "beta1": 0.8, "beta2": 0.999, "eps": 1e-8, "weight_decay": 0.0}
    assert n.batch == 16 and n.inputs[0].shape[0] == 16


def test_inference_model_has_no_training() -> None:
    assert net(IMG + "  y = relu(x);").training is None


def test_machine_by_name_inline_and_extended() -> None:
    prelude = "machine big extends edge {\n  mesh 8 x 8;\n  sram 2 MiB;\n}\n"
    n = net("  machine big;\n" + IMG + "  y = relu(x);", prelude)
    assert n.machine is not None
    assert (n.machine.rows, n.machine.cols, n.machine.sram_bytes) == (8, 8, 2 * 2**20)
    assert n.machine.dram_ports == n.machine.edge_ports(8, 8)
    assert n.machine.macs_per_cycle == builtin_machines()["edge"].macs_per_cycle


def test_machine_units_are_converted_exactly() -> None:
    prelude = ("machine m {\n  mesh 2 x 3;\n  macs 256;\n  sram 512 KiB;\n  frequency 800 MHz;\n"
               "  noc_bandwidth 1.5 GB/s;\n  noc_hop_energy 2 pJ/byte;\n  dram_energy 0.5 nJ/bit;\n"
               "  mac_energy 20 fJ/op;\n  dram_capacity 4 GiB;\n  dram_ports [0, 0], [1, 2];\n}\n")
    m = net("  machine m;", prelude).machine
    assert m is not None
    assert (m.rows, m.cols, m.macs_per_cycle, m.sram_bytes) == (2, 3, 256, 512 * 1024)
    assert m.frequency_hz == 800e6 and m.noc_bandwidth == 1.5e9
    assert m.noc_hop_pj_per_byte == 2.0 and m.dram_pj_per_byte == 4000.0 and m.mac_pj == 0.02
    assert m.dram_capacity_bytes == 4 * 2**30
    assert [(p.row, p.col) for p in m.dram_ports] == [(0, 0), (1, 2)]


@pytest.mark.parametrize("name", ["edge", "cloud", "mbs", "gpu11"])
def test_machine_files_match_the_builtin_machines(name: str) -> None:
    examples = Path(__file__).resolve().parents[3] / "examples"
    text = f'import "machines/{name}.crn";\nnetwork n {{\n  machine {name};\n}}\n'
    assert parse_crn(text, str(examples / "probe.crn")).machine == builtin_machines()[name]


def test_imports_are_relative_and_loaded_once(tmp_path: Path) -> None:
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "a.crn").write_text('import "b.crn";\nblock a(x) {\n  return b(x);\n}\n')
    (tmp_path / "lib" / "b.crn").write_text("let width = 5;\nblock b(x) {\n  return conv2d(x, out=width, kernel=1);\n}\n")
    (tmp_path / "m.crn").write_text('import "lib/a.crn";\nimport "lib/b.crn";\n'
                                    "network n {\n  input x: f32[1, 3, 4, 4];\n  y = a(x);\n}\n")
    n = load_crn(tmp_path / "m.crn")
    assert n.layers[0].out_shape == (1, 5, 4, 4)
    assert n.layers[0].loc.file == str(tmp_path / "lib" / "b.crn")


def test_layer_locations_point_at_the_call() -> None:
    n = net(IMG + "  y = relu(x);")
    assert (n.layers[0].loc.line, n.layers[0].loc.col) == (4, 7)


def test_accounting_table_lists_layers_and_totals() -> None:
    n = net(IMG + "  y = conv2d(x, out=4, kernel=3, padding=1);\n  z = relu(y);")
    stats = network_stats(n)
    assert stats.layers[0].macs == 4 * 8 * 8 * 3 * 9
    assert stats.params == 4 * 3 * 9 + 4
    assert stats.activation_bytes == 2 * 4 * 8 * 8 * 4
    table = render_table(stats)
    assert "conv2d" in table and table.splitlines()[-1].startswith("total (2 layers)")


def test_layer_kind_table_is_complete_and_documented() -> None:
    wanted = {"conv2d", "max_pool2d", "avg_pool2d", "global_avg_pool", "linear", "matmul", "batchnorm",
              "layernorm", "relu", "gelu", "silu", "sigmoid", "tanh", "softmax", "add", "mul", "concat",
              "reshape", "flatten", "transpose", "embedding", "attention", "dropout", "cross_entropy", "mse"}
    assert wanted <= set(LAYER_KINDS)
    for kind in LAYER_KINDS.values():
        assert kind.summary and kind.inputs
        assert len({p.name for p in kind.params}) == len(kind.params)
        assert all(p.doc for p in kind.params)


def test_parsing_does_not_import_numpy() -> None:
    import subprocess
    import sys

    code = ("import sys\nfrom crane.frontend.crn import parse_crn\n"
            "parse_crn('network n {\\n  input x: f32[1, 3, 4, 4];\\n  y = relu(x);\\n}\\n', 't.crn')\n"
            "print('numpy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_block_returning_a_name_gives_its_layer_the_call_name() -> None:
    prelude = ("block two(x) {\n  a = relu(x);\n  b = tanh(a);\n  return b;\n}\n"
               "block ident(x) {\n  return x;\n}\n")
    n = net(IMG + "  t = two(x);\n  r = relu(t);\n  i = ident(r);\n  s = add(r, i);", prelude)
    assert [layer.name for layer in n.layers] == ["t.a", "t", "r", "s"]
    assert n.layer("s").inputs == ("r", "r")


def test_the_language_reference_example_elaborates() -> None:
    import re

    root = Path(__file__).resolve().parents[3]
    doc = (root / "docs" / "crn-language.md").read_text()
    match = re.search(r"```\n(# tiny\.crn.*?)```", doc, re.S)
    assert match is not None
    n = parse_crn(match.group(1), str(root / "examples" / "tiny.crn"))
    assert n.name == "tiny" and n.batch == 8 and n.training is not None
    assert n.machine is not None and (n.machine.rows, n.machine.sram_bytes) == (2, 512 * 1024)
