"""The results file of a sweep: JSON Lines, one record per point, appended as points finish.

Each record is one JSON object on one line: the point's ``key``, its parameters
(:meth:`crane.dse.points.Point.params`), ``status`` (``ok`` or ``error``), ``error`` (the
message, or null), the cost report fields (:data:`COST_FIELDS`, null for an error) and a
few facts about the run that differ from run to run (:data:`VOLATILE`).

:class:`ResultsFile` appends one record at a time and flushes it, so that a sweep that is
killed loses at most the points in flight and the line being written. Opening the file
again repairs that: a last line without its newline that is not a whole JSON object is cut
off, and :attr:`ResultsFile.records` tells which keys are done. The file is locked
(``flock``) while a sweep writes to it, so two sweeps cannot interleave their records.
When a key has several records (``--retry-errors`` appends a new one), the last one counts.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, BinaryIO

COST_FIELDS = ("latency_cycles", "energy_pj", "edp", "dram_bytes", "noc_byte_hops",
               "peak_sram_bytes", "peak_dram_bytes", "latency_lower_bound_cycles",
               "energy_lower_bound_pj", "schedule_seconds")
"""The figures of ``crane-opt -p segment --cost-report`` (``crane.cost.report.REPORT_KEYS``)."""

VOLATILE = frozenset({"schedule_seconds", "seconds", "worker", "finished", "run"})
"""Fields that record how a point was computed (wall times, process, run), not its result."""


class ResultsLocked(OSError):
    """Another process is writing this results file."""


def comparable(record: Mapping[str, Any]) -> dict[str, Any]:
    """``record`` without its :data:`VOLATILE` fields: equal for equal results."""
    return {k: v for k, v in record.items() if k not in VOLATILE}


def parse_lines(data: bytes) -> tuple[list[dict[str, Any]], int]:
    """The records of complete lines, and how many lines were not JSON objects."""
    records: list[dict[str, Any]] = []
    bad = 0
    for line in data.splitlines():
        if not line.strip():
            continue
        record = _decode(line)
        if record is None:
            bad += 1
            continue
        records.append(record)
    return records, bad


def _decode(line: bytes) -> dict[str, Any] | None:
    try:
        value = json.loads(line)
    except (ValueError, UnicodeDecodeError):
        return None
    return value if isinstance(value, dict) and isinstance(value.get("key"), str) else None


def read_records(path: str | Path) -> list[dict[str, Any]]:
    """Every whole record of a results file, the last one of each key, in file order.

    Read-only and lock-free (for plotting while a sweep runs); a torn last line is skipped.
    """
    records, _ = parse_lines(Path(path).read_bytes())
    latest = {record["key"]: record for record in records}
    return list(latest.values())


class ResultsFile:
    """A results file opened for a sweep: locked, its torn tail repaired, its keys known."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.records: dict[str, dict[str, Any]] = {}
        """Key -> its last record."""
        self.invalid_lines = 0
        """Lines that were not JSON records (kept in the file, ignored)."""
        self.repaired = False
        """Whether a torn last line (from a killed run) was cut off."""
        self._file: BinaryIO | None = None

    def open(self) -> ResultsFile:
        """Create or open the file, lock it and read it; ResultsLocked if in use."""
        handle: BinaryIO = open(self.path, "a+b")  # noqa: SIM115 (kept open for appends)
        try:
            _lock(handle)
        except OSError:
            handle.close()
            raise ResultsLocked(f"'{self.path}' is being written by another crane-dse") from None
        self._file = handle
        handle.seek(0)
        data = self._repair(handle, handle.read())
        records, self.invalid_lines = parse_lines(data)
        self.records = {record["key"]: record for record in records}
        return self

    def _repair(self, handle: BinaryIO, data: bytes) -> bytes:
        """Cut a torn last line (keep it, newline added, if it is a whole record)."""
        if not data or data.endswith(b"\n"):
            return data
        cut = data.rfind(b"\n") + 1
        if _decode(data[cut:]) is not None:
            handle.write(b"\n")
            handle.flush()
            return data + b"\n"
        handle.truncate(cut)
        self.repaired = True
        return data[:cut]

    def append(self, record: Mapping[str, Any]) -> None:
        """Write one record as one line and flush it to the operating system."""
        assert self._file is not None, "ResultsFile.append before open"
        self._file.write(json.dumps(record).encode("utf-8") + b"\n")
        self._file.flush()
        self.records[str(record["key"])] = dict(record)

    def close(self) -> None:
        """Sync to disk, unlock and close."""
        if self._file is None:
            return
        try:
            os.fsync(self._file.fileno())
        finally:
            self._file.close()  # closing releases the lock
            self._file = None

    def __enter__(self) -> ResultsFile:
        return self.open() if self._file is None else self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _lock(handle: BinaryIO) -> None:
    """An exclusive, non-blocking advisory lock (none where ``fcntl`` does not exist)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        return
    fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
