"""Output files are replaced in one step, get ordinary permissions, and devices stay devices."""

from __future__ import annotations

import os
import stat
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
