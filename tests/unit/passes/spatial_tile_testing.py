"""Helpers for the ``tile`` pass tests: build networks, tile them, run training steps."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from crane.autodiff import attach_loss, expand_training_step, resolve_training
from crane.dialects import default_context
from crane.dialects.graph import FuncOp, LayerOp, ReturnOp
from crane.dialects.graph_grad import UpdateOp
from crane.exec.interpreter import run_function
from crane.ir.attributes import TypeAttr
from crane.ir.core import Operation
from crane.ir.diagnostics import DiagnosticEngine
from crane.ir.types import FunctionType
from crane.ir.verifier import verify
from crane.passes.context import PassContext
from crane.passes.spatial_tile import SpatialTile
from crane.tools.inputs import translate

Array = np.ndarray
RTOL = 1e-5


def module_of(text: str, filename: str = "case.crn") -> Operation:
    return translate("crn", text, filename, default_context())


def func_of(module: Operation) -> FuncOp:
    funcs = [op for op in module.walk() if isinstance(op, FuncOp)]
    assert len(funcs) == 1
    return funcs[0]


def run_tile(module: Operation, tile: SpatialTile) -> PassContext:
    """Run the pass on every function of ``module``; the context holds its diagnostics."""
    ctx = PassContext(default_context(), DiagnosticEngine())
    ctx.begin_pass(tile.name)
    for func in [op for op in module.walk() if isinstance(op, FuncOp)]:
        tile.run(func, ctx)
    return ctx


def errors(ctx: PassContext) -> list[str]:
    return [d.message for d in ctx.diagnostics.diagnostics if d.severity.name == "ERROR"]


def gradient_step(func: FuncOp) -> FuncOp:
    """``func`` as a training step (mse loss on its output) returning the loss, the network
    output and the gradient of every weight (named ``<weight>.grad``)."""
    attach_loss(func, "mse")
    output = next(op for op in func.body.ops if isinstance(op, LayerOp) and op.kind.name == "mse").operands[0]
    config = resolve_training(None, "sgd", "", {"lr": 1.0, "weight_decay": 0.0}, force=True)
    assert config is not None
    expand_training_step(func, config)
    ret = list(func.body.ops)[-1]
    assert isinstance(ret, ReturnOp)
    updates = [op for op in func.body.ops if isinstance(op, UpdateOp)]
    out = ReturnOp.build([ret.operands[0], output, *(u.operands[1] for u in updates)])
    func.body.append(out)
    ret.erase()
    output.name_hint = "network_output"
    for update in updates:
        update.operands[1].name_hint = f"{update.operands[0].name_hint}.grad"
    inputs = tuple(a.type for a in func.body.args)
    func.attributes["function_type"] = TypeAttr(FunctionType(inputs, tuple(v.type for v in out.operands)))
    problems = verify(func)
    assert not problems, [p.message for p in problems]
    return func


def results(text: str, tile: SpatialTile | None, dtype: str = "f32") -> dict[str, Array]:
    """Loss, output and weight gradients of ``text`` (tiled by ``tile`` unless None)."""
    module = module_of(text)
    if tile is not None:
        ctx = run_tile(module, tile)
        assert not errors(ctx), errors(ctx)
    return run_function(gradient_step(func_of(module)), dtype=dtype)


def assert_same(tiled: dict[str, Array], untiled: dict[str, Array], rtol: float = RTOL,
                exact: dict[str, Array] | None = None, floor: float = 0.0) -> None:
    """Every result equal within ``rtol``, with an absolute floor of ``rtol`` times the tensor's scale.

    ``exact`` (the untiled results in float64) adds the float32 reference's own rounding
    error to the floor: a gradient that is zero in exact arithmetic (a conv bias before
    batch norm) is pure rounding noise in float32, whatever the summation order; ``floor``
    is a further absolute allowance (the same noise in float64).
    """
    assert tiled.keys() == untiled.keys()
    for name, want in untiled.items():
        scale = float(np.abs(want).max()) if want.size else 0.0
        noise = float(np.abs(want - exact[name]).max()) if exact is not None and want.size else 0.0
        np.testing.assert_allclose(tiled[name], want, rtol=rtol, atol=rtol * scale + 2 * noise + floor,
                                   err_msg=name)


def check_tiling(text: str, tile: SpatialTile) -> None:
    """Tiled and untiled training steps agree in float32 (rtol 1e-5) and float64 (1e-9)."""
    exact = results(text, None, "f64")
    assert_same(results(text, tile), results(text, None), exact=exact)
    assert_same(results(text, tile, "f64"), exact, rtol=1e-9, floor=1e-13)


def vgg16_trunk_crn(hw: tuple[int, int], divisor: int = 16) -> str:
    """The SFT VGG-16 trunk (13 bias-free 3x3 convs + ReLU, 5 max-pools), widths / ``divisor``."""
    groups = ((64, 2), (128, 2), (256, 3), (512, 3), (512, 3))
    ops: list[str] = []
    for width, count in groups:
        ops += [f"relu(conv2d(%, out={max(1, width // divisor)}, kernel=3, padding=1, bias=false))"] * count
        ops.append("max_pool2d(%, kernel=2)")
    return _network("vgg16_trunk", hw, ops)


def darknet19_trunk_crn(hw: tuple[int, int], divisor: int = 16) -> str:
    """The SFT Darknet-19 trunk (19 bias-free convs, 3x3 and 1x1, no activations, 5 max-pools)."""
    plan: Sequence[int | str] = (32, "M", 64, "M", 128, -64, 128, "M", 256, -128, 256, "M",
                                 512, -256, 512, -256, 512, "M", 1024, -512, 1024, -512, 1024, -1000)
    ops: list[str] = []
    for item in plan:
        if isinstance(item, str):
            ops.append("max_pool2d(%, kernel=2)")
            continue
        kernel, padding = (1, 0) if item < 0 else (3, 1)
        ops.append(f"conv2d(%, out={max(1, abs(item) // divisor)}, kernel={kernel}, padding={padding}, bias=false)")
    return _network("darknet19_trunk", hw, ops)


def _network(name: str, hw: tuple[int, int], ops: Sequence[str]) -> str:
    """A network applying ``ops`` in turn (``%`` stands for the previous value) to an image."""
    lines = [f"  input image: f32[1, 3, {hw[0]}, {hw[1]}];"]
    previous = "image"
    for index, op in enumerate(ops):
        lines.append(f"  y{index} = {op.replace('%', previous)};")
        previous = f"y{index}"
    return f"network {name} {{\n" + "\n".join(lines) + f"\n  output {previous};\n}}\n"
