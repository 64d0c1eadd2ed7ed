"""The ranges a value may declare: pass options in their type (checked by
:mod:`crane.passes.options` when the pipeline is parsed), optimizer hyper-parameters
(:mod:`crane.dialects.optimizers`). On the ground floor, so that every floor can use them.

    max_tiles: Annotated[int, Between(1, 4096)] = 16
    alignment: Annotated[int, PowerOfTwo(2**20)] = 64
    objective: Annotated[str, Checked(parse_objective, "edp, latency, energy or 'L^p E^q'")] = "edp"

Each rule says whether it ``accepts`` a converted value, how it narrows the noun of error
messages (``describe``: "an integer from 1 to 64") and the type ``--list-passes`` shows.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Between:
    """An ``int`` or ``float`` option within ``low..high``; ``open_low`` / ``open_high``
    exclude the bound itself ("a positive number of seconds", "a decay below 1")."""

    low: float
    high: float
    open_low: bool = False
    open_high: bool = False

    def accepts(self, value: object) -> bool:
        if not isinstance(value, int | float) or isinstance(value, bool):
            return False
        above = value > self.low if self.open_low else value >= self.low
        below = value < self.high if self.open_high else value <= self.high
        return above and below

    def describe(self, noun: str, plural: str) -> tuple[str, str]:
        """``noun`` and ``plural`` narrowed to the range: "an integer from 1 to 64"."""
        if self.open_low or self.open_high:
            low = f"above {_number(self.low)}" if self.open_low else f"at least {_number(self.low)}"
            high = f"below {_number(self.high)}" if self.open_high else f"at most {_number(self.high)}"
            return f"{noun} {low} and {high}", f"{plural} {low} and {high}"
        span = f"from {_number(self.low)} to {_number(self.high)}"
        return f"{noun} {span}", f"{plural} {span}"

    def type_text(self, text: str) -> str:
        left, right = "(" if self.open_low else "[", ")" if self.open_high else "]"
        return f"{text} in {left}{_number(self.low)}, {_number(self.high)}{right}"


@dataclass(frozen=True)
class PowerOfTwo:
    """An ``int`` option that is a power of two, at most ``high``."""

    high: int

    def accepts(self, value: object) -> bool:
        return isinstance(value, int) and 0 < value <= self.high and value & (value - 1) == 0

    def describe(self, noun: str, plural: str) -> tuple[str, str]:
        return f"a power of two from 1 to {self.high}", f"powers of two from 1 to {self.high}"

    def type_text(self, text: str) -> str:
        return f"{text} (power of two <= {self.high})"


@dataclass(frozen=True)
class Checked:
    """A ``str`` option that ``check`` accepts (it raises ValueError otherwise); ``what``
    says what is expected. The empty string is accepted when ``empty_ok``."""

    check: Callable[[str], object]
    what: str
    empty_ok: bool = False

    def accepts(self, value: object) -> bool:
        return self.why(value) == ""

    def why(self, value: object) -> str:
        """Empty if ``value`` is accepted, else ``; `` and what ``check`` said of it."""
        if not isinstance(value, str):
            return "; not text"
        if value == "" and self.empty_ok:
            return ""
        try:
            self.check(value)
        except (ValueError, TypeError) as error:
            return f"; {error}"
        return ""

    def describe(self, noun: str, plural: str) -> tuple[str, str]:
        return self.what, self.what

    def type_text(self, text: str) -> str:
        return text


Constraint = Between | PowerOfTwo | Checked


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() and abs(value) < 1e15 else f"{value:g}"
