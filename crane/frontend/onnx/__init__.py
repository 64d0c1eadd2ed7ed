"""ONNX models to ``graph``-dialect IR.

    >>> from crane.frontend.onnx import import_onnx_with_weights
    >>> imported = import_onnx_with_weights("resnet18.onnx", batch=8, machine="edge")
    >>> outputs = run_function(imported.func, {"input": x}, weights=imported.weights)

Modules: ``reader`` (reading and checking the file, nodes and locations), ``graph_order``
(node order, undefined tensors, cycles), ``signature`` (inputs and outputs with symbolic
dimensions resolved), ``patterns`` (decomposed GELU, layer norm and SiLU, the softmax NaN
guard), ``fold`` (constant folding), ``gathers`` (the gathers in numpy), ``ops_*`` (one
converter per operator; ``ops_mask`` for boolean attention masks), ``registry`` (dispatch,
and every problem reported at once), ``importer`` (the graph walk), ``translate`` (the
``crane-opt`` input format). ``docs/onnx.md`` lists the operators and how each is imported.

Importing this package does not import ``onnx``; the functions below do.
"""

from __future__ import annotations

from crane.frontend.onnx.api import import_onnx, import_onnx_with_weights, save_weights
from crane.frontend.onnx.importer import OnnxImport, OnnxOptions

__all__ = ["OnnxImport", "OnnxOptions", "import_onnx", "import_onnx_with_weights", "save_weights"]
