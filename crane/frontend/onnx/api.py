"""The Python API of the ONNX importer (re-exported by ``crane.frontend.onnx``)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np

from crane.atomic import atomic_output
from crane.dialects.builtin import ModuleOp
from crane.frontend.onnx.importer import OnnxImport, OnnxOptions, import_model, verify_module
from crane.frontend.onnx.reader import read_model
from crane.hardware.machine import Machine


def import_onnx_with_weights(source: object, *, machine: str | Machine | None = None,
                             batch: int | None = None, dims: Mapping[str, int] | None = None,
                             name: str | None = None, filename: str | None = None) -> OnnxImport:
    """Import an ONNX model; returns the module and its weights by name.

    ``source`` is an ``onnx.ModelProto``, the bytes of one, or a path. ``machine`` names a
    built-in machine (``edge``, ``cloud``...) or is a Machine: the module then holds its
    ``hw.machine`` and can be scheduled. ``batch`` sizes a symbolic first input dimension
    (default 1), ``dims`` other named symbolic dimensions. ``filename`` is what locations
    and messages call the model (default: the path, or ``<onnx>``). Mistakes in the model
    raise :class:`crane.ir.diagnostics.DiagnosticError`.
    """
    label = filename or (str(source) if isinstance(source, str | Path) else "<onnx>")
    model = read_model(source, label)
    options = OnnxOptions(batch=batch, dims=dict(dims or {}), machine=machine, name=name)
    imported = import_model(model, label, options)
    verify_module(imported.module)
    return imported


def import_onnx(source: object, *, machine: str | Machine | None = None, batch: int | None = None,
                dims: Mapping[str, int] | None = None, name: str | None = None,
                filename: str | None = None) -> ModuleOp:
    """The module of an ONNX model (see :func:`import_onnx_with_weights`, which also
    returns the weights the reference interpreter needs to reproduce the model)."""
    return import_onnx_with_weights(source, machine=machine, batch=batch, dims=dims, name=name,
                                    filename=filename).module


def save_weights(weights: Mapping[str, np.ndarray], path: str | Path) -> None:
    """Write ``weights`` as one ``.npz`` archive (keys are weight names), atomically."""
    with atomic_output(path, binary=True) as handle:
        np.savez(handle, **weights)  # type: ignore[arg-type]
