"""The ``onnx`` input format of the tools: the bytes of a model to a ``builtin.module``.

Listed in ``crane/tools/inputs.py`` (suffix ``.onnx``). The options come from the command
line: ``batch`` (``--onnx-batch``), ``dims`` (``--onnx-dim NAME=SIZE``), ``machine``
(``--machine``: a built-in name or the Machine ``crane-opt`` resolved), and ``weights`` (``--onnx-weights FILE.npz``: where to write the weights
the module's ``graph.weight`` ops name, for ``crane-run`` / ``crane-sim --weights``).
"""

from __future__ import annotations

from collections.abc import Mapping

from crane.dialects.builtin import ModuleOp
from crane.frontend.onnx.api import import_onnx_with_weights, save_weights
from crane.hardware.machine import Machine
from crane.ir.context import Context
from crane.ir.diagnostics import DiagnosticError
from crane.ir.location import NameLoc


def onnx_to_module(data: str | bytes, filename: str, context: Context,
                   options: Mapping[str, object] | None = None) -> ModuleOp:
    """Import the model in ``data`` (see the module docstring for ``options``)."""
    opts = dict(options or {})
    if isinstance(data, str):
        data = data.encode("utf-8", errors="surrogateescape")
    batch, dims, machine = opts.get("batch"), opts.get("dims") or {}, opts.get("machine")
    assert batch is None or isinstance(batch, int)
    assert isinstance(dims, dict) and (machine is None or isinstance(machine, str | Machine))
    imported = import_onnx_with_weights(data, machine=machine, batch=batch, dims=dims, filename=filename)
    target = opts.get("weights")
    if isinstance(target, str) and target:
        try:
            save_weights(imported.weights, target)
        except OSError as problem:
            raise DiagnosticError.at(NameLoc(filename), f"cannot write the weights to '{target}': "
                                                        f"{problem.strerror or problem}") from None
    return imported.module
