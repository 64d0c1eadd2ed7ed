"""Array type aliases shared by the reference kernels."""

from typing import Any

import numpy as np
from numpy.typing import NDArray

# Kernels are dtype-generic over floating types; tests run them in float64.
Array = NDArray[np.floating[Any]]
IntArray = NDArray[np.integer[Any]]
BoolArray = NDArray[np.bool_]

Pair = tuple[int, int]
# Explicit per-edge image padding: (top, bottom, left, right).
Pad4 = tuple[int, int, int, int]
