"""The plain values layer rules speak in: shapes, attribute values and dtype widths."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping

Shape = tuple[int, ...]
AttrValue = int | float | str | bool | tuple[int, ...]

DTYPE_BYTES: Mapping[str, int] = {
    "f32": 4,
    "bf16": 2,
    "f16": 2,
    "int8": 1,
    "int32": 4,
    "int64": 8,
}
"""Element widths of the dtypes a network may use."""

INTEGER_DTYPES = frozenset({"int8", "int32", "int64"})


def numel(shape: Shape) -> int:
    """Number of elements of a tensor of this shape (1 for a scalar)."""
    count = 1
    for dim in shape:
        count *= dim
    return count


def did_you_mean(word: str, candidates: Iterable[str]) -> str:
    """``; did you mean 'x'?`` for the closest candidate, or an empty string."""
    close = difflib.get_close_matches(word, list(candidates), n=1, cutoff=0.6)
    return f"; did you mean '{close[0]}'?" if close else ""
