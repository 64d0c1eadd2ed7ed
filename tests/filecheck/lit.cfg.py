"""lit configuration for Crane's golden tests (``lit tests/filecheck`` or ``pytest tests/test_lit.py``).

RUN lines use two commands:

- ``%crane-opt`` runs the driver of this checkout through the current interpreter
  (``python -m crane.opt``), so nothing has to be on PATH; ``%crane-sim`` likewise runs
  the tile simulator;
- ``filecheck`` (the bare word, as in MLIR and xDSL tests) runs PyPI ``filecheck`` through
  the same interpreter. The substitution only matches the word standing alone, never
  inside a path such as ``tests/filecheck/ir/x.mlir`` or a name like ``filecheck.tmp``.

``%crane-root`` is the repository root (for plugin files under ``examples/``).
Set ``CRANE_LIT_OUTPUT`` to put lit's scratch files somewhere other than
``tests/filecheck/Output`` (git-ignored).
"""

# ruff: noqa: F821  (lit injects ``config`` and ``lit_config``)

from __future__ import annotations

import os
import shutil
import sys

import lit.formats

config.name = "crane"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir", ".crn"]
config.excludes = ["Output", "lit.cfg.py", "README.md"]
config.test_source_root = os.path.dirname(os.path.abspath(__file__))
config.test_exec_root = os.environ.get(
    "CRANE_LIT_OUTPUT", os.path.join(config.test_source_root, "Output")
)

_ROOT = os.path.dirname(os.path.dirname(config.test_source_root))
_PYTHON = sys.executable

# A per-test timeout needs psutil on some hosts; without it, bound each command instead.
_TIMEOUT = 90  # a hang guard: on a loaded 2-core machine the slowest files need over 20 s
_prefix = ""
if lit_config.maxIndividualTestTimeIsSupported[0]:
    config.maxIndividualTestTime = _TIMEOUT
elif shutil.which("timeout"):
    _prefix = f"timeout {_TIMEOUT} "

config.substitutions.append(("%crane-opt", f"{_prefix}{_PYTHON} -m crane.opt"))
config.substitutions.append(("%crane-sim", f"{_prefix}{_PYTHON} -m crane.tools.sim"))
config.substitutions.append(("%crane-root", _ROOT))
# Bare word only: not preceded or followed by a path or name character.
config.substitutions.append((r"(?<![\w./%-])filecheck(?![\w./-])", f"{_prefix}{_PYTHON} -m filecheck"))

# The checkout itself, in case crane is not installed in this interpreter.
config.environment["PYTHONPATH"] = os.pathsep.join(
    p for p in (_ROOT, os.environ.get("PYTHONPATH", "")) if p
)
# filecheck's own MLIR regex extension (\V for SSA names) is not used: plain regexes only.
config.environment.pop("FILECHECK_FEATURE_ENABLE", None)
