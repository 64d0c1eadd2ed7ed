"""``crane-opt --emit=...``: pictures from the command line, formats, errors, atomic writes."""

from __future__ import annotations

from pathlib import Path

import pytest

from crane.ir.printer import print_op
from crane.tools.opt import main

from .dot_check import check_dot
from .support import compiled, png_size, svg_ids, svg_root


@pytest.fixture(scope="module")
def graph_ir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("viz") / "tiny.mlir"
    path.write_text(print_op(compiled("")))
    return path


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    rc = main(list(args))
    out, err = capsys.readouterr()
    return rc, out, err


def test_gantt_png_and_svg(graph_ir: Path, tmp_path: Path,
                           capsys: pytest.CaptureFixture[str]) -> None:
    png, svg = tmp_path / "s.png", tmp_path / "s.svg"
    rc, out, err = _run(capsys, str(graph_ir), "-p", "segment,map", "--emit=gantt", "-o", str(png))
    assert (rc, out, err) == (0, "", "")
    assert png_size(png.read_bytes())[0] > 1000
    assert png.stat().st_mode & 0o044  # readable by others, as any output file
    assert _run(capsys, str(graph_ir), "-p", "segment", "--emit=gantt", "-o", str(svg))[0] == 0
    assert svg_ids(svg_root(svg.read_bytes()), "bar-")


def test_formats_from_suffix_option_and_default(graph_ir: Path, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = _run(capsys, str(graph_ir), "--emit=graph")
    assert rc == 0 and check_dot(out).clusters["cluster_f0"]
    target = tmp_path / "blocks.picture"
    rc, _, _ = _run(capsys, str(graph_ir), "-p", "segment", "--emit=segment-graph",
                    "--emit-format=svg", "-o", str(target))
    assert rc == 0 and svg_ids(svg_root(target.read_bytes()), "node-s0.b0.c0")
    mesh = tmp_path / "mesh.dot"
    rc, _, _ = _run(capsys, str(graph_ir), "-p", "segment,map", "--emit=mesh", "-o", str(mesh))
    assert rc == 0 and len(check_dot(mesh.read_text()).nodes) == 16 + 8
    rc, out, _ = _run(capsys, str(graph_ir), "-p", "segment,map", "--emit=mesh")
    assert rc == 0 and svg_ids(svg_root(out.encode()), "tile-0")


@pytest.mark.parametrize(("args", "rc", "message"), [
    (["--emit=gantt"], 1, "the Gantt chart needs a scheduled module: add the 'segment' pass"),
    (["-p", "segment", "--emit=mesh"], 1, "is not placed: add the 'map' pass"),
    (["--emit=gantt", "--emit-format=dot"], 2, "--emit=gantt can be written as svg, png, not dot"),
    (["--emit-format=png"], 2, "--emit-format needs a picture"),
    (["--emit=mesh", "--split-input-file"], 2, "cannot be combined with --split-input-file"),
])
def test_errors_are_one_line_and_leave_files_alone(
        graph_ir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        args: list[str], rc: int, message: str) -> None:
    target = tmp_path / "old.png"
    target.write_bytes(b"old")
    code, out, err = _run(capsys, str(graph_ir), *args, "-o", str(target))
    assert code == rc and out == ""
    assert err.startswith("crane-opt: error: ") and message in err and "Traceback" not in err
    assert target.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old.png"]  # no temporary left


def test_png_goes_to_a_redirected_stdout(graph_ir: Path) -> None:
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "crane.opt", str(graph_ir), "-p", "segment",
                           "--emit=gantt", "--emit-format=png"], capture_output=True, check=False)
    assert done.returncode == 0, done.stderr.decode()
    assert png_size(done.stdout)[0] > 1000


def test_the_driver_does_not_import_matplotlib() -> None:
    import subprocess
    import sys

    code = "import sys, crane.tools.opt_run, crane.viz.picture; print('matplotlib' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
