"""The results file: appended records, torn-line repair on resume, locking."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from crane.dse.results import (
    ResultsFile,
    ResultsLocked,
    comparable,
    parse_lines,
    read_records,
)


def record(key: str, latency: float = 1.0, **extra: object) -> dict[str, object]:
    return {"key": key, "status": "ok", "latency_cycles": latency, "schedule_seconds": 0.1,
            "seconds": 0.2, "worker": "w:1", "finished": 1.0, "run": "r", **extra}


def test_records_are_appended_one_line_each_and_read_back(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    with ResultsFile(path) as results:
        results.append(record("a"))
        results.append(record("b", 2.0))
        # Flushed per record: another reader sees both lines before the file is closed.
        assert [r["key"] for r in read_records(path)] == ["a", "b"]
    lines = path.read_text().splitlines()
    assert [json.loads(line)["key"] for line in lines] == ["a", "b"]
    with ResultsFile(path) as again:
        assert set(again.records) == {"a", "b"} and not again.repaired
        again.append(record("c"))
    assert len(path.read_text().splitlines()) == 3


def test_a_torn_last_line_is_cut_and_its_point_forgotten(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    whole = json.dumps(record("a")) + "\n" + json.dumps(record("b")) + "\n"
    path.write_text(whole + json.dumps(record("c"))[:25])
    with ResultsFile(path) as results:
        assert results.repaired
        assert set(results.records) == {"a", "b"}
        results.append(record("c"))
    assert path.read_text() == whole + json.dumps(record("c")) + "\n"


def test_a_whole_last_record_without_newline_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps(record("a")) + "\n" + json.dumps(record("b")))
    with ResultsFile(path) as results:
        assert not results.repaired and set(results.records) == {"a", "b"}
        results.append(record("c"))
    assert [json.loads(x)["key"] for x in path.read_text().splitlines()] == ["a", "b", "c"]


def test_garbage_lines_are_counted_and_kept(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    text = json.dumps(record("a")) + "\nnot json\n[1, 2]\n\n" + json.dumps(record("b")) + "\n"
    path.write_text(text)
    with ResultsFile(path) as results:
        assert results.invalid_lines == 2 and set(results.records) == {"a", "b"}
    assert path.read_text() == text


def test_the_last_record_of_a_key_counts(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    with ResultsFile(path) as results:
        results.append(record("a", status="error"))
        results.append(record("a", 5.0))
        assert results.records["a"]["latency_cycles"] == 5.0
    assert [r["latency_cycles"] for r in read_records(path)] == [5.0]


def test_a_results_file_is_written_by_one_sweep_at_a_time(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    with ResultsFile(path), pytest.raises(ResultsLocked, match="another crane-dse"):
        ResultsFile(path).open()
    with ResultsFile(path) as results:  # the lock went with the first handle
        results.append(record("a"))


def test_comparable_drops_only_run_facts() -> None:
    one, two = record("a"), record("a", worker="w:2", seconds=9.0, run="s", finished=2.0,
                                   schedule_seconds=3.0)
    assert one != two and comparable(one) == comparable(two)
    assert comparable(one) == {"key": "a", "status": "ok", "latency_cycles": 1.0}
    assert comparable(one) != comparable(record("a", 1.5))


def test_parse_lines_ignores_records_without_a_key() -> None:
    records, bad = parse_lines(b'{"key": "a"}\n{"other": 1}\n{"key": 3}\n')
    assert [r["key"] for r in records] == ["a"] and bad == 2
