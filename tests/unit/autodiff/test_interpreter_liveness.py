"""The interpreter frees each value after its last reader, and ``crane-run`` sizes a run by
the values live at once, not by every value of the run."""

from __future__ import annotations

import numpy as np

from crane.dialects import default_context
from crane.dialects.graph import FuncOp
from crane.exec.interpreter import peak_live_elements, run_function
from crane.tools.inputs import translate

CHAIN = """
network chain {
  input x: f32[1, 1000];
  a = relu(x);
  b = relu(a);
  c = relu(b);
  d = relu(c);
  y = add(relu(d), a);
  output y;
}
"""


def _func(source: str) -> FuncOp:
    module = translate("crn", source, "chain.crn", default_context())
    return next(op for op in module.walk() if isinstance(op, FuncOp))


def test_the_peak_counts_only_values_still_to_be_read() -> None:
    # x and a live throughout (a is read by the last add); each relu's input dies after it.
    assert peak_live_elements(_func(CHAIN)) == 4 * 1000


def test_a_value_read_late_survives_the_freeing_of_the_others() -> None:
    x = np.linspace(-1.0, 1.0, 1000, dtype=np.float32).reshape(1, 1000)
    out = run_function(_func(CHAIN), {"x": x}, dtype="f32")
    assert np.array_equal(out["y"], 2 * np.maximum(x, 0))


def test_a_trace_still_sees_every_named_value() -> None:
    trace: dict[str, np.ndarray] = {}
    run_function(_func(CHAIN), dtype="f32", trace=trace)
    assert {"a", "b", "c", "d", "y"} <= set(trace)
