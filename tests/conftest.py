"""Suite-wide rule: no test passes without asserting something.

With ``enable_assertion_pass_hook`` (``pyproject.toml``) pytest's assertion rewriting gives
every ``assert`` a branch for when it holds, which first asks
``_check_if_assertion_pass_impl()`` whether to build an explanation for the
``pytest_assertion_pass`` hook. That question is answered here: it counts the assertion for
the running test and says no, so no explanation is ever built (building one for every
passing assert would cost as much as the assert, or more). Test modules, conftests and the
shared helpers registered below are rewritten.

A test that passes with no assertion counted is failed, unless its own source checks
another way (``pytest.raises``/``warns``, ``numpy.testing``, an ``assert_*``/``check_*``
helper). So a loop whose body never runs, or a branch never taken, cannot hide a test that
checks nothing.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from collections.abc import Generator
from functools import cache

import _pytest.assertion.rewrite as rewrite
import pytest

pytest.register_assert_rewrite(
    "codegen", "crn_testing", "dse_testing", "grad_cases", "ir_testing", "kernel_cases",
    "kernel_testing", "onnx_testing", "spatial_tile_testing", "tile_sim_testing", "tiling_testing",
    "training_testing", "viz")

CHECKING_CALLS = ("raises", "warns", "deprecated_call", "fail")
"""Calls by which a test checks without an ``assert`` statement of its own."""
CHECKING_PREFIXES = ("assert_", "check_", "expect_")


class _Asserts:
    """Assertions that held since the running test began."""

    count = 0

    @classmethod
    def held(cls) -> bool:
        cls.count += 1
        return False  # build no explanation: nothing listens to pytest_assertion_pass


assert hasattr(rewrite, "_check_if_assertion_pass_impl"), "pytest changed its assertion rewriting"
rewrite._check_if_assertion_pass_impl = _Asserts.held


def _called_names(node: ast.AST) -> set[str]:
    names: set[str] = set()
    for call in (n for n in ast.walk(node) if isinstance(n, ast.Call)):
        func = call.func
        names.add(func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", ""))
    return names


@cache
def _checks_without_assert(function: object) -> bool:
    """Whether the test's own source calls pytest.raises, numpy.testing or a check helper."""
    try:
        source = textwrap.dedent(inspect.getsource(function))  # type: ignore[arg-type]
    except (OSError, TypeError):
        return False
    names = _called_names(ast.parse(source))
    return any(n in CHECKING_CALLS or n.startswith(CHECKING_PREFIXES) for n in names)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    _Asserts.count = 0
    result = yield
    function = getattr(item, "function", None)
    if _Asserts.count or function is None or _checks_without_assert(function):
        return result
    pytest.fail(f"{item.nodeid} passed without asserting anything (an empty loop or an "
                "untaken branch?)", pytrace=False)
