"""Output files are replaced in one step, get ordinary permissions, and devices stay devices."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from crane.atomic import atomic_output, write_atomically
from crane.tools.opt import main


def test_text_and_bytes_replace_the_target(tmp_path: Path) -> None:
    target = tmp_path / "out.txt"
    target.write_text("old")
    write_atomically(target, "new text")
    assert target.read_text() == "new text"
    write_atomically(target, b"\x89PNG")
    assert target.read_bytes() == b"\x89PNG"
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]  # no temporary left behind


def test_new_files_get_the_umask_permissions(tmp_path: Path) -> None:
    mask = os.umask(0o022)
    try:
        write_atomically(tmp_path / "f", "x")
    finally:
        os.umask(mask)
    assert stat.S_IMODE((tmp_path / "f").stat().st_mode) == 0o644


def test_a_failure_keeps_the_old_file(tmp_path: Path) -> None:
    target = tmp_path / "keep.txt"
    target.write_text("old")
    with pytest.raises(RuntimeError), atomic_output(target) as handle:
        handle.write("half")
        raise RuntimeError("interrupted")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["keep.txt"]


def test_devices_are_written_in_place(tmp_path: Path) -> None:
    write_atomically("/dev/null", "discarded")
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_crane_opt_output_to_dev_null_leaves_the_device(tmp_path: Path) -> None:
    model = tmp_path / "n.crn"
    model.write_text("network n {\n  input x: f32[1, 2];\n  y = relu(x);\n}\n")
    assert main([str(model), "-o", "/dev/null"]) == 0
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


_KILLED_WRITER = """
import os, signal, sys
import crane.atomic as atomic
if sys.argv[2] == "named":
    atomic._UNNAMED = 0  # as on a file system without unnamed files
with atomic.atomic_output(sys.argv[1]) as handle:
    handle.write("half of the output " * 1000)
    handle.flush()
    os.kill(os.getpid(), signal.SIGKILL)
"""


def _killed_while_writing(target: Path, how: str) -> None:
    done = subprocess.run([sys.executable, "-c", _KILLED_WRITER, str(target), how], timeout=60)
    assert done.returncode == -signal.SIGKILL


@pytest.mark.skipif(not hasattr(os, "O_TMPFILE"), reason="unnamed files are a Linux feature")
def test_sigkill_while_writing_leaves_nothing(tmp_path: Path) -> None:
    target = tmp_path / "out.mlir"
    target.write_text("old")
    _killed_while_writing(target, "unnamed")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.mlir"]
    assert target.read_text() == "old"


def test_a_killed_writers_named_temporary_is_removed_by_the_next_write(tmp_path: Path) -> None:
    target = tmp_path / "out.mlir"
    _killed_while_writing(target, "named")
    left = [p.name for p in tmp_path.iterdir()]
    assert len(left) == 1 and left[0].startswith(".out.mlir.") and left[0].endswith(".tmp")
    alive = tmp_path / f".out.mlir.{os.getpid()}.abc.tmp"  # a writer still at work: kept
    alive.write_text("in progress")
    write_atomically(target, "new")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["out.mlir", alive.name])
    assert target.read_text() == "new"
