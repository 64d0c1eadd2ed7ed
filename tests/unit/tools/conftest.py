"""Run ``crane-opt`` in-process (``crane.tools.opt.main``) and capture what it prints."""

from __future__ import annotations

import io
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pytest

from crane.tools.opt import main


@dataclass
class OptResult:
    rc: int
    out: str
    err: str


OptRunner = Callable[..., OptResult]


@pytest.fixture
def opt(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> OptRunner:
    """``opt(args, stdin=None)`` -> exit status, stdout and stderr of one in-process run."""

    def run(args: Sequence[str], stdin: str | None = None) -> OptResult:
        capsys.readouterr()
        if stdin is not None:
            monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
        rc = main(list(args))
        captured = capsys.readouterr()
        return OptResult(rc, captured.out, captured.err)

    return run
