"""Lowering matrix: every bundled network x machine x {inference, training step}.

Each cell is what a user runs, in subprocesses: ``crane-opt examples/NET.crn --machine M
-p PIPELINE -o NET.tile.mlir``, then ``crane-sim NET.tile.mlir --check``. The row prints
the lowering's seconds and peak RSS, the peak SRAM per tile that ``segment`` planned
(``crane.cost`` ``peak_sram_bytes``) and that ``alloc`` placed (``crane.alloc``
``peak_bytes_max``) with their difference, and the check's largest relative error.

* **inference**:
  ``expand-attention,segment{mode=inference sram-account=true},map,codegen,alloc``, at the
  example's batch (``lower-to-tile`` without ``autodiff``);
* **training**: ``lower-to-tile`` for an example with a ``train`` section, else the same
  with ``autodiff{attach-loss=cross_entropy}`` (a loss on the first output).

With ``sram-account`` (as in ``lower-to-tile``), ``segment`` lowers the plan it chooses
to account for SRAM (``crane.codegen.account``), so
the planned peak is the allocated one unless ``map``'s placement differs from the
heuristic's the account assumes.

Targets (issue 19): every cell lowers and checks with ``rel <= RTOL`` unless ``segment``
itself refuses it with a named constraint; planned and allocated peak SRAM agree within
``SRAM_TARGET_PERCENT``. A cell that ``segment`` refuses prints ``refused`` and the
constraint. Outcomes: ``ok``, ``refused`` (segment said why), ``FAIL`` (a later stage
failed), ``MISMATCH``, ``TIMEOUT``.

Run: ``python bench/lowering.py [--quick] [--nets a,b] [--machines edge,gpu11]
[--modes inference,training] [--jobs 2] [--timeout 900] [--no-check]``.
Exit status 1 when a cell fails (not when segment refuses it).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
MACHINES = ("edge", "cloud", "mbs", "gpu11", "mesh2x2")
MACHINE_FILES = {"mesh2x2": EXAMPLES / "machines" / "mesh2x2.crn"}
MODES = ("inference", "training")
RTOL = 1e-4
SRAM_TARGET_PERCENT = 10.0
REDUCED = ROOT / "bench" / "reduced"
"""Real networks at a reduced size (``resnet50_64``, ``gpt2_small``), for the quick slice."""
QUICK = (("tiny_resnet", "edge", "training"), ("tiny_resnet", "gpu11", "inference"),
         ("tiny_transformer", "edge", "training"), ("tiny_transformer", "mesh2x2", "inference"),
         ("resnet50_64", "gpu11", "training"), ("gpt2_small", "mesh2x2", "inference"))
"""The ``--quick`` slice (the test suite runs it): the tiny networks, one real CNN's
training step (ResNet-50 at 64x64 on the one-tile ``gpu11``) and one real transformer at
reduced size (GPT-2's layers, 2 of them, hidden 256, 32 tokens)."""
NO_CHECK = frozenset({"opt_6_7b"})
"""Networks whose functional check would not finish in the bench's time (see the note)."""


@dataclass
class Cell:
    network: str
    machine: str
    mode: str
    outcome: str = ""
    lower_seconds: float = 0.0
    peak_rss_mib: float = 0.0
    planned_sram: float = 0.0
    allocated_sram: float = 0.0
    check_rel: float | None = None
    check_seconds: float = 0.0
    message: str = ""

    @property
    def sram_diff_percent(self) -> float | None:
        if not self.planned_sram or not self.allocated_sram:
            return None
        return 100.0 * (self.planned_sram - self.allocated_sram) / self.allocated_sram


def networks() -> list[str]:
    return sorted(p.stem for p in EXAMPLES.glob("*.crn"))


def source(network: str) -> Path:
    """The ``.crn`` file of a network: ``examples/NAME.crn``, else ``bench/reduced/``."""
    bundled = EXAMPLES / f"{network}.crn"
    return bundled if bundled.exists() else REDUCED / f"{network}.crn"


def trains(network: str) -> bool:
    return re.search(r"^\s*train\s*\{", source(network).read_text(), re.M) is not None


def pipeline(network: str, mode: str) -> str:
    if mode == "inference":
        return "expand-attention,segment{mode=inference sram-account=true},map,codegen,alloc"
    if trains(network):
        return "lower-to-tile"
    return ("expand-attention,autodiff{attach-loss=cross_entropy},segment{sram-account=true},"
            "map,codegen,alloc")


def machine_arg(machine: str) -> str:
    return str(MACHINE_FILES.get(machine, machine))


def run_limited(command: list[str], timeout: float) -> tuple[int | None, float, float, str]:
    """Run ``command``; (exit status or None on timeout, seconds, peak RSS in MiB, its
    standard output and error)."""
    with tempfile.TemporaryFile() as log:
        began = time.perf_counter()
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT)
        status = None
        while True:
            pid, code, usage = os.wait4(process.pid, os.WNOHANG)
            if pid:
                status = os.waitstatus_to_exitcode(code)
                break
            if time.perf_counter() - began > timeout:
                process.kill()
                _, _, usage = os.wait4(process.pid, 0)
                break
            time.sleep(0.05)
        process.returncode = -9 if status is None else status  # reaped by wait4 above
        seconds = time.perf_counter() - began
        log.seek(0)
        return status, seconds, usage.ru_maxrss / 1024, log.read().decode(errors="replace")


def first_error(stderr: str) -> str:
    for line in stderr.splitlines():
        if "error" in line:
            return line.strip()[:300]
    lines = [line for line in stderr.splitlines() if line.strip()]
    return lines[-1][:300] if lines else ""


def module_figures(path: Path) -> tuple[float, float]:
    """(planned peak SRAM per tile, allocated peak SRAM per tile) from the module's attributes."""
    with path.open() as file:  # only the head: the bench's own memory is inherited by children
        head = file.read(20000)
    planned = re.search(r"peak_sram_bytes = ([0-9.e+]+)", head)
    allocated = re.search(r"peak_bytes_max = ([0-9]+)", head)
    return (float(planned.group(1)) if planned else 0.0,
            float(allocated.group(1)) if allocated else 0.0)


SEGMENT_REFUSALS = ("error: cannot schedule:", "error: the schedule does not fit",
                    "error: training step does not fit in DRAM", "is too small to lower this network")
"""How ``segment`` names the constraint of a plan it refuses (with ``sram-account`` it runs
codegen's step guard and SRAM account before any later pass, so these come from it)."""


def segment_refused(stderr: str) -> bool:
    """Whether the lowering stopped at ``segment``'s refusal of a plan, with its reason."""
    return any(reason in stderr for reason in SEGMENT_REFUSALS)


def run_cell(cell: Cell, timeout: float, check: bool, scratch: Path) -> Cell:
    out = scratch / f"{cell.network}.{cell.machine}.{cell.mode}.tile.mlir"
    command = [sys.executable, "-m", "crane.opt", str(source(cell.network)),
               "--machine", machine_arg(cell.machine), "-p", pipeline(cell.network, cell.mode),
               "-o", str(out)]
    status, cell.lower_seconds, cell.peak_rss_mib, stderr = run_limited(command, timeout)
    if status is None:
        cell.outcome, cell.message = "TIMEOUT", f"lowering over {timeout:.0f} s"
        return cell
    if status != 0:
        cell.outcome = "refused" if segment_refused(stderr) else "FAIL"
        cell.message = first_error(stderr)
        return cell
    cell.planned_sram, cell.allocated_sram = module_figures(out)
    if not check or cell.network in NO_CHECK:
        cell.outcome = "ok" if not check else "ok (no check)"
        out.unlink(missing_ok=True)
        return cell
    sim = [sys.executable, "-m", "crane.tools.sim", str(out), "--check", "--rtol", str(RTOL)]
    status, cell.check_seconds, _, text = run_limited(sim, timeout)
    out.unlink(missing_ok=True)
    if status is None:
        cell.outcome, cell.message = "TIMEOUT", f"check over {timeout:.0f} s"
        return cell
    found = re.search(r"max error: abs \S+, rel ([0-9.e+-]+|nan|inf)", text)
    cell.check_rel = float(found.group(1)) if found else None
    if status == 0:
        cell.outcome = "ok"
    elif status == 3:
        cell.outcome, cell.message = "MISMATCH", first_error(text) or _fails(text)
    else:
        cell.outcome, cell.message = "FAIL", "check: " + (first_error(text) or _ended(status))
    return cell


def _ended(status: int) -> str:
    """How a process ended without an error line: a signal (the kernel's out-of-memory
    killer sends 9) or a bare exit status."""
    if status < 0:
        return f"killed by signal {-status}" + (" (out of memory?)" if status == -9 else "")
    return f"exit status {status}"


def _fails(text: str) -> str:
    bad = [line.strip() for line in text.splitlines() if line.startswith("FAIL")]
    return f"{len(bad)} output(s) fail, first: {bad[0]}" if bad else "mismatch"


def _size(nbytes: float) -> str:
    if not nbytes:
        return "-"
    for unit, scale in (("MiB", 2**20), ("KiB", 2**10)):
        if nbytes >= scale:
            return f"{nbytes / scale:.2f}{unit}"
    return f"{nbytes:.0f}B"


def row(cell: Cell) -> str:
    diff = cell.sram_diff_percent
    rel = "-" if cell.check_rel is None else f"{cell.check_rel:.1e}"
    text = (f"{cell.network:<18}{cell.machine:<9}{cell.mode:<10}{cell.outcome:<14}"
            f"{cell.lower_seconds:>8.1f}{cell.peak_rss_mib:>8.0f}{_size(cell.planned_sram):>11}"
            f"{_size(cell.allocated_sram):>11}{'-' if diff is None else f'{diff:+.1f}%':>9}{rel:>9}")
    return text + (f"  {cell.message}" if cell.message else "")


HEADER = (f"{'network':<18}{'machine':<9}{'mode':<10}{'outcome':<14}{'lower s':>8}{'RSS MiB':>8}"
          f"{'planned':>11}{'allocated':>11}{'SRAM diff':>9}{'rel err':>9}")


def cells(args: argparse.Namespace) -> list[Cell]:
    if args.quick:
        return [Cell(n, m, mode) for n, m, mode in QUICK]
    nets = args.nets.split(",") if args.nets else networks()
    machines = args.machines.split(",") if args.machines else list(MACHINES)
    modes = args.modes.split(",") if args.modes else list(MODES)
    return [Cell(n, m, mode) for n in nets for m in machines for mode in modes]


def summary(done: list[Cell]) -> list[str]:
    lowered = [c for c in done if c.outcome.startswith("ok")]
    refused = [c for c in done if c.outcome == "refused"]
    failed = [c for c in done if c not in lowered and c not in refused]
    diffs = [abs(d) for c in lowered if (d := c.sram_diff_percent) is not None]
    over = sum(1 for d in diffs if d > SRAM_TARGET_PERCENT)
    return [
        f"cells: {len(done)}; lowered and checked: {len(lowered)}; refused by segment: "
        f"{len(refused)}; failed: {len(failed)} (target 0)",
        f"planned vs allocated peak SRAM per tile: {over} of {len(diffs)} cells over "
        f"{SRAM_TARGET_PERCENT:.0f}% (target 0); largest |diff| "
        f"{max(diffs, default=0.0):.1f}%",
        _check_line(lowered),
    ]


def _check_line(lowered: list[Cell]) -> str:
    """How the checked cells passed: within ``RTOL``, or only by ``--check``'s float32
    judgement (the error within a few times the float32 interpreter's own error against
    float64: the reference is no more exact than that)."""
    checked = [c for c in lowered if c.check_rel is not None]
    beyond = [c for c in checked if c.check_rel is not None and c.check_rel > RTOL]
    line = f"check: {len(checked) - len(beyond)} of {len(checked)} checked cells within rel {RTOL:g} (f32)"
    if not beyond:
        return line
    worst = max(c.check_rel or 0.0 for c in beyond)
    return (line + f"; {len(beyond)} more pass by the float32 judgement (error within the "
            f"float32 reference's own noise; largest rel {worst:.1e}: "
            + ", ".join(f"{c.network}/{c.machine}/{c.mode}" for c in beyond) + ")")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the small slice the tests run")
    parser.add_argument("--nets", default="", help="comma-separated example names")
    parser.add_argument("--machines", default="", help=f"comma-separated, of {', '.join(MACHINES)}")
    parser.add_argument("--modes", default="", help="inference,training")
    parser.add_argument("--jobs", type=int, default=2, help="cells run side by side")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per stage")
    parser.add_argument("--no-check", action="store_true", help="lower only")
    parser.add_argument("--json", default="", help="also write the cells here as JSON")
    args = parser.parse_args()
    todo = cells(args)
    print(HEADER, flush=True)
    done: list[Cell] = []
    with tempfile.TemporaryDirectory() as scratch, ThreadPoolExecutor(args.jobs) as pool:
        futures = [pool.submit(run_cell, cell, args.timeout, not args.no_check, Path(scratch))
                   for cell in todo]
        for future in futures:
            cell = future.result()
            done.append(cell)
            print(row(cell), flush=True)
    for line in summary(done):
        print(line)
    if args.json:
        Path(args.json).write_text(json.dumps([asdict(c) for c in done], indent=1))
    bad = [c for c in done if not c.outcome.startswith("ok") and c.outcome != "refused"]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
