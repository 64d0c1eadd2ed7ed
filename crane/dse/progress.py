"""The progress of a sweep: a rich progress bar on a terminal, counts for the summary.

Points already in the results file count as done from the start, so a resumed sweep's bar
starts where the interrupted one stopped; the rate and the time left are measured on the
points computed in this run only.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from types import TracebackType
from typing import IO, Any


class SweepProgress:
    """Counts finished points; draws a bar when ``stream`` is given (a terminal)."""

    def __init__(self, total: int, done: int, stream: IO[str] | None = None) -> None:
        self.total = total
        self.done_before = done
        self.computed = 0
        self.errors = 0
        self.began = time.perf_counter()
        self._stream = stream
        self._bar: Any = None
        self._task: Any = None

    def __enter__(self) -> SweepProgress:
        if self._stream is None:
            return self
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        console = Console(file=self._stream)
        self._bar = Progress(
            TextColumn("[bold]sweep"), BarColumn(), MofNCompleteColumn(),
            TextColumn("points  {task.fields[errors]} failed  {task.fields[rate]}"),
            TimeElapsedColumn(), TextColumn("left"), TimeRemainingColumn(),
            console=console, transient=False,
        )
        self._bar.start()
        self._task = self._bar.add_task("sweep", total=self.total, completed=self.done_before,
                                        errors=0, rate="")
        return self

    def advance(self, record: Mapping[str, Any]) -> None:
        """One more point finished."""
        self.computed += 1
        if record.get("status") != "ok":
            self.errors += 1
        if self._bar is not None:
            self._bar.update(self._task, advance=1, errors=self.errors,
                             rate=f"{self.rate:.2f} points/s")

    @property
    def seconds(self) -> float:
        return time.perf_counter() - self.began

    @property
    def rate(self) -> float:
        """Points computed per second in this run."""
        return self.computed / self.seconds if self.seconds > 0 else 0.0

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 trace: TracebackType | None) -> None:
        if self._bar is not None:
            self._bar.stop()
