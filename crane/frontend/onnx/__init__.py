"""ONNX models to ``graph``-dialect IR.

    >>> from crane.frontend.onnx import import_onnx_with_weights
    >>> imported = import_onnx_with_weights("resnet18.onnx", batch=8, machine="edge")
    >>> outputs = run_function(imported.func, {"input": x}, weights=imported.weights)

Modules: ``reader`` (reading and checking the file, nodes and locations), ``signature``
(inputs and outputs with symbolic dimensions resolved), ``patterns`` (decomposed GELU and
layer norm), ``fold`` (constant folding), ``ops_*`` (one converter per operator),
``registry`` (dispatch), ``importer`` (the graph walk), ``translate`` (the ``crane-opt``
input format). ``docs/onnx.md`` lists the operators and how each is imported.

Importing this package does not import ``onnx``; the functions below do.
"""

from __future__ import annotations

from crane.frontend.onnx.api import import_onnx, import_onnx_with_weights, save_weights
from crane.frontend.onnx.importer import OnnxImport, OnnxOptions

__all__ = ["OnnxImport", "OnnxOptions", "import_onnx", "import_onnx_with_weights", "save_weights"]
