"""Helpers for the `.crn` frontend tests."""

from __future__ import annotations

import pytest

from crane.frontend.crn import parse_crn
from crane.frontend.errors import CrnError, CrnErrors
from crane.frontend.model import Network


def errors_of(text: str, filename: str = "t.crn") -> tuple[CrnError, ...]:
    """The errors `text` produces (failing the test if it elaborates)."""
    with pytest.raises(CrnErrors) as info:
        parse_crn(text, filename)
    return info.value.errors


def only_error(text: str, filename: str = "t.crn") -> CrnError:
    """The one error `text` produces."""
    errors = errors_of(text, filename)
    assert len(errors) == 1, "\n\n".join(e.render() for e in errors)
    return errors[0]


def net(body: str, prelude: str = "") -> Network:
    """Elaborate a network whose body is `body`."""
    return parse_crn(f"{prelude}\nnetwork n {{\n{body}\n}}\n", "t.crn")
