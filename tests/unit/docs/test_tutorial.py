"""``docs/tutorial.md`` runs as written.

Convention (stated in the tutorial): inside a fenced ```` ```console ```` block, a line
starting with ``$ `` is a command, a command line ending in ``\\`` continues on the next
line, and every other line is output shown to the reader (``...`` marks what was left out).
The session fixture copies ``docs/tutorial/`` to a temporary directory and runs every
command there, in order, each as a fresh process of the Crane tool it names (found through
``[project.scripts]`` of ``pyproject.toml``, so the console scripts need not be on
``PATH``). The tests then check exit statuses, that the output shown in the tutorial still
has the shape of the real output, and the files the commands make: pictures, tile
programs, simulator results, the plugin's annotations, the sweep's records.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
import tomllib
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
TUTORIAL = ROOT / "docs" / "tutorial.md"
FILES = ROOT / "docs" / "tutorial"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
BOOT = ("import importlib, sys; module, func = sys.argv[1].split(':'); sys.argv = sys.argv[2:]; "
        "sys.exit(getattr(importlib.import_module(module), func)())")
"""Run ``module:function`` as a console script named ``sys.argv[2]``."""


@dataclass(frozen=True)
class Step:
    """One ``$`` command of the tutorial and the output shown under it."""

    command: str
    shown: tuple[str, ...]


@dataclass(frozen=True)
class Ran:
    step: Step
    rc: int
    out: str
    err: str
    seconds: float


def console_steps(markdown: str) -> list[Step]:
    """The commands of every ```` ```console ```` block, with the output lines shown."""
    steps: list[Step] = []
    fence: str | None = None
    pending: str | None = None  # a command continued with a trailing backslash
    for line in markdown.splitlines():
        if line.startswith("```"):
            fence = None if fence is not None else line[3:].strip()
            continue
        if fence != "console":
            continue
        if pending is not None:
            pending = f"{pending} {line.strip()}"
        elif line.startswith("$ "):
            pending = line[2:].strip()
        else:
            if steps:
                steps[-1] = Step(steps[-1].command, (*steps[-1].shown, line))
            continue
        if pending.endswith("\\"):
            pending = pending[:-1].rstrip()
            continue
        steps.append(Step(pending, ()))
        pending = None
    return steps


def _scripts() -> dict[str, str]:
    with open(ROOT / "pyproject.toml", "rb") as handle:
        scripts = tomllib.load(handle)["project"]["scripts"]
    return {str(k): str(v) for k, v in scripts.items()}


def argv_of(command: str, scripts: dict[str, str]) -> list[str]:
    """The process to start for a tutorial command: a Crane tool run by this Python."""
    words = shlex.split(command)
    if not words or words[0] not in scripts:
        raise AssertionError(f"tutorial command does not start with a Crane tool "
                             f"({', '.join(sorted(scripts))}): {command!r}")
    return [sys.executable, "-c", BOOT, scripts[words[0]], *words]


def _normalise(line: str) -> str:
    """Numbers may change between runs; the shape of a line should not."""
    return " ".join(re.sub(r"\d[\d,.]*(e[+-]?\d+)?", "#", line).split())


def shown_line_found(shown: str, actual: list[str]) -> bool:
    """Whether a shown line (with ``...`` gaps) matches some line of the real output."""
    pieces = [_normalise(p) for p in shown.split("...")]
    for line in map(_normalise, actual):
        at = 0
        for piece in pieces:
            found = line.find(piece, at)
            if found < 0:
                break
            at = found + len(piece)
        else:
            return True
    return False


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, list[Ran]]]:
    """Every command of the tutorial, run in order in a fresh copy of docs/tutorial/."""
    work = tmp_path_factory.mktemp("tutorial")
    shutil.copytree(FILES, work, dirs_exist_ok=True)
    scripts = _scripts()
    env = {**os.environ, "NO_COLOR": "1", "MPLBACKEND": "Agg",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    ran: list[Ran] = []
    for step in console_steps(TUTORIAL.read_text(encoding="utf-8")):
        start = time.perf_counter()
        proc = subprocess.run(argv_of(step.command, scripts), cwd=work, env=env,
                              capture_output=True, text=True, timeout=300)
        ran.append(Ran(step, proc.returncode, proc.stdout, proc.stderr,
                       time.perf_counter() - start))
    yield work, ran


def _by_command(ran: list[Ran], fragment: str) -> Ran:
    matches = [r for r in ran if fragment in r.step.command]
    assert len(matches) == 1, f"expected one command containing {fragment!r}"
    return matches[0]


# ----- the tutorial's text


def test_console_convention() -> None:
    text = ("```console\n$ crane-opt a.crn \\\n    -p 'x{k=1}' -o b\nshown 1\n...\n"
            "$ crane-sim b --check\n```\n```sh\n$ not-a-command\n```\n")
    steps = console_steps(text)
    assert steps == [Step("crane-opt a.crn -p 'x{k=1}' -o b", ("shown 1", "...")),
                     Step("crane-sim b --check", ())]
    assert argv_of(steps[0].command, {"crane-opt": "m:f"})[3:] == [
        "m:f", "crane-opt", "a.crn", "-p", "x{k=1}", "-o", "b"]
    assert shown_line_found("cycles 5,890 (5.890 us), ...", ["cycles 6,001 (6.001 us), energy 1"])
    assert not shown_line_found("max error: ... match", ["max error: abs 1 over 2 output(s)"])


def test_tutorial_shows_the_real_files() -> None:
    text = TUTORIAL.read_text(encoding="utf-8")
    crn = re.search(r"```crn\n(.*?)```", text, re.S)
    assert crn is not None
    assert crn.group(1) == (FILES / "net.crn").read_text(encoding="utf-8")
    for name in ("net.crn", "utilisation.py", "sweep.toml", "images/gantt.png",
                 "images/tile-mesh.png"):
        assert f"tutorial/{name}" in text
        assert (FILES / name).is_file()
    steps = console_steps(text)
    assert len(steps) >= 20
    assert {s.command.split()[0] for s in steps} == {"crane-opt", "crane-sim", "crane-dse"}


# ----- running it


def test_every_command_succeeds(session: tuple[Path, list[Ran]]) -> None:
    _, ran = session
    failed = [f"$ {r.step.command}\n  exit {r.rc}: {r.err.strip()[-500:]}" for r in ran if r.rc]
    assert not failed, "\n".join(failed)
    total = sum(r.seconds for r in ran)
    assert total < 120, f"the tutorial's commands took {total:.0f} s"


def test_shown_output_matches_real_output(session: tuple[Path, list[Ran]]) -> None:
    _, ran = session
    stale: list[str] = []
    for r in ran:
        actual = (r.out + r.err).splitlines()
        for shown in r.step.shown:
            if shown.strip() in ("", "...") or shown_line_found(shown, actual):
                continue
            stale.append(f"$ {r.step.command}\n  shown but not printed: {shown!r}")
    assert not stale, "\n".join(stale)


def test_graph_ir_and_stats(session: tuple[Path, list[Ran]]) -> None:
    _, ran = session
    assert ran[0].step.command == "crane-opt net.crn"
    ir = ran[0].out
    assert ir.count("graph.conv2d ") == 3 and "graph.return %logits" in ir
    stats = _by_command(ran, "print-op-stats").err
    total = next(line for line in stats.splitlines() if line.startswith("total"))
    assert "22,418,432" in total  # MACs: 8 samples x (16*3*9*1024 + 32*16*9*256 + 64*32*9*64 + 640)


def test_crane_is_never_worse_than_a_baseline(session: tuple[Path, list[Ran]]) -> None:
    _, ran = session

    def edp(policy: str) -> float:
        err = _by_command(ran, f"policy={policy} batch=16").err
        line = next(x for x in err.splitlines() if x.startswith("edp"))
        return float(line.split()[1].replace(",", ""))

    crane = edp("crane")
    assert all(crane <= edp(p) * (1 + 1e-9) for p in ("sequential", "tangram", "set"))


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == PNG_SIGNATURE and data[12:16] == b"IHDR", f"{path.name} is not a PNG"
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


def test_pictures(session: tuple[Path, list[Ran]]) -> None:
    work, _ = session
    for name in ("net.gantt.png", "net.blocks.png", "net.mesh.png", "net.tile-mesh.png",
                 "pareto.png"):
        width, height = _png_size(work / name)
        assert width > 200 and height > 200, name
    blocks = (work / "net.map.mlir").read_text().count("segment.block {")
    assert blocks >= 2
    gantt = ET.parse(work / "net.gantt.svg").getroot()
    assert gantt.tag.endswith("svg")
    bars = {e.get("id") for e in gantt.iter() if (e.get("id") or "").startswith("bar-")}
    assert {f"bar-b{b}-s0-c0" for b in range(blocks)} <= bars
    assert ET.parse(work / "net.graph.svg").getroot().tag.endswith("svg")
    dot = (work / "net.graph.dot").read_text()
    assert dot.startswith("digraph") and "@tutorial_cnn" in dot and "%image" in dot
    assert dot.count("->") >= 11  # one edge per SSA use of an activation


def test_tile_programs(session: tuple[Path, list[Ran]]) -> None:
    work, ran = session
    tile_ir = (work / "net.tile.mlir").read_text()
    assert tile_ir.count("tile.program (") == 16  # one per tile of the 4x4 mesh
    assert "offset = -1" not in tile_ir  # alloc placed every buffer
    listing = (work / "net.listing.txt").read_text()
    assert len(re.findall(r"^# tile \d+ \(row \d, col \d\)", listing, re.M)) == 16
    assert re.search(r"^compute conv2d ", listing, re.M)
    timing = _by_command(ran, "--timing -o net.tile.mlir").err
    assert all(p in timing for p in ("segment", "map", "codegen", "alloc"))


def test_simulators(session: tuple[Path, list[Ran]]) -> None:
    work, ran = session
    for tile_file in ("net.tile.mlir", "net.util.tile.mlir", "net.train.tile.mlir"):
        out = _by_command(ran, f"crane-sim {tile_file} --check").out
        assert out.rstrip().endswith(": match"), out
    assert "ok    loss  scalar" in _by_command(ran, "net.train.tile.mlir --check").out
    timing = _by_command(ran, "--trace net.trace.json").out
    assert re.search(r"^cycles [\d,]+ ", timing, re.M)
    trace = json.loads((work / "net.trace.json").read_text())
    events = trace["traceEvents"]
    tiles = {e["args"]["name"] for e in events if e.get("name") == "process_name"}
    assert len(tiles) == 16 and all(t.startswith("tile ") for t in tiles)
    assert sum(e.get("ph") == "X" for e in events) > 100


def test_plugin(session: tuple[Path, list[Ran]]) -> None:
    work, ran = session
    listed = _by_command(ran, "--list-passes").out
    assert re.search(r"^  mac-utilisation +annotate", listed, re.M)
    assert "warn-below: float (default 0.2)" in listed
    err = _by_command(ran, "mac-utilisation{warn-below=0.2}").err
    said = re.findall(r"^net\.crn:\d+:\d+: (warning|remark): block \d+ .* MAC utilisation", err, re.M)
    ir = (work / "net.util.mlir").read_text()
    blocks = [line for line in ir.splitlines() if "segment.block {" in line]
    assert len(said) == len(blocks) >= 2
    assert f"{said.count('warning')} blocks-below-threshold" in err
    # The pass's arithmetic, checked independently: MACs per sample of each layer (by
    # hand from net.crn) times the block's samples, over what 16 tiles of 1024 MACs do
    # in the block's latency.
    macs = {"c1.conv2d": 16 * 3 * 9 * 32 * 32, "c2.conv2d": 32 * 16 * 9 * 16 * 16,
            "c3.conv2d": 64 * 32 * 9 * 8 * 8, "logits": 64 * 10}
    for block in blocks:
        layers = re.findall(r'"([^"]+)"', block.split("]", 1)[0])
        subbatch, subbatches = (int(re.search(rf"\b{k} = (\d+)", block).group(1))  # type: ignore[union-attr]
                                for k in ("subbatch", "subbatches"))
        samples = subbatch * subbatches
        latency = float(re.search(r"latency_cycles = ([\d.e+]+)", block).group(1))  # type: ignore[union-attr]
        annotated = float(re.search(r"tutorial\.mac_utilisation = ([\d.e-]+)", block).group(1))  # type: ignore[union-attr]
        expected = samples * sum(macs.get(n, 0) for n in layers) / (latency * 16 * 1024)
        assert annotated == pytest.approx(expected, abs=1e-4), block


def test_sweep_and_resume(session: tuple[Path, list[Ran]]) -> None:
    work, ran = session
    records = [json.loads(line) for line in (work / "sweep.jsonl").read_text().splitlines()]
    assert len(records) == 4 and all(r["status"] == "ok" for r in records)
    assert {(r["rows"], r["dram_bandwidth"]) for r in records} == {
        (2, 8e9), (2, 16e9), (4, 8e9), (4, 16e9)}
    again = [r for r in ran if r.step.command.startswith("crane-dse run")][-1]
    assert "4 already in 'sweep.jsonl', 0 to run" in again.err
