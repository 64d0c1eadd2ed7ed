"""A mutation-fuzz campaign over every input Crane reads, as a repeatable tool.

The issue's acceptance: over ``--inputs 10000`` no run exits 3 (an internal error), prints a
Python traceback, takes longer than the time limit (30 s), reports an error without a
location (exit 1 with an ``error:`` line that is neither ``file:line:col: error:``, nor about a
flag, ``crane-opt: error: --cost-report ...``, nor about a whole ONNX model the run was given,
``error: model.onnx: ...``), reports a
usage error without saying which flag or pipeline text (exit 2 without ``crane-X: error:``
or ``<pass-pipeline>:L:C: error:``), or leaves a partial ``-o`` file or a ``.NAME.*.tmp``
behind (also when the run is killed at the time limit). ``crane-sim --check`` exiting 3
because mutated tile programs compute something else is counted apart (``mismatch``): it is
the checker doing its job.

Inputs (``bench/fuzz_cases.py``, ``bench/fuzz_onnx.py``) mutate the bundled examples and
small networks (``.crn``), the IR ``crane-opt`` prints at the graph, segment and tile
levels, pass pipelines and their options, tool flags, and small ONNX models. Each runs in
its own directory, in a worker process that has Crane imported (``crane-opt``,
``crane-run`` and ``crane-sim`` are called through their ``main``), killed and replaced at
the time limit. The table counts outcomes by kind; every bad outcome is saved with its
files, command and stderr under ``--keep`` (default ``fuzz-findings/``) for reproduction.

Run: ``python bench/fuzz.py --inputs 2000 --seed 1 [--jobs 2] [--time-limit 30]``.
Exit status 1 when some run has a bad outcome.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import multiprocessing
import os
import random
import re
import resource
import shutil
import sys
import tempfile
import time
import traceback
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import fuzz_cases  # noqa: E402  (beside this file)
import fuzz_onnx  # noqa: E402
from fuzz_cases import Case, Seeds  # noqa: E402

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
KINDS = ("crn", "graph-ir", "segment-ir", "tile-ir", "pipeline", "options", "onnx")
BAD = ("exit 3", "other exit", "traceback", "timeout", "unlocated", "unclear usage", "leftover", "partial",
       "out of memory")
LOCATED = re.compile(r"^(\S.*?:\d+:\d+: error: |crane-(opt|run|sim|dse): error: --?[a-z])")
"""A diagnostic at ``file:line:col``, or one at a flag of the command line (``--emit=gantt:
the Gantt chart needs a scheduled module``)."""
WHOLE_FILE = re.compile(r"^error: (\S+?\.onnx): ")
"""An error about a whole ONNX model, which has no lines to point at (``error: model.onnx:
not a readable ONNX model``, the form ``docs/onnx.md`` gives them)."""
USAGE = re.compile(r"^(crane-(opt|run|sim|dse): error: |<pass-pipeline>:\d+:\d+: error: )", re.M)
RESTART_EVERY = 150
"""Tasks a worker runs before it is replaced (its caches grow)."""
OUT_OF_MEMORY = "error: out of memory"
"""What the tools say when the host runs out of memory (see ``crane.tools.guard``). A worker
that has run many tasks holds caches and a fragmented heap, so a run that says this runs
again in a fresh worker; only an input that exhausts a fresh worker is a finding."""


@dataclass
class Outcome:
    """What one run did."""

    case: Case
    status: int | str
    stderr: str
    seconds: float
    flags: list[str] = field(default_factory=list)


# ----- the worker process (Crane imported once, tools called through their main)


def _worker(conn: Connection, memory: int) -> None:
    # A run that wants more fails with MemoryError (a finding) instead of crowding the host.
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)  # solvers print at the C level; the run's Python output is captured
    os.dup2(null, 2)
    from crane.tools import opt, run, sim

    mains: dict[str, Callable[[list[str]], int]] = {"crane-opt": opt.main, "crane-run": run.main,
                                                     "crane-sim": sim.main}
    while True:
        task = conn.recv()
        if task is None:
            return
        folder, tool, args = task
        conn.send(_run_in(folder, mains[tool], args))


def _run_in(folder: str, main: Callable[[list[str]], int], args: list[str]) -> tuple[int | str, str, str]:
    os.chdir(folder)
    out, err = io.StringIO(), io.StringIO()
    sys.stdin = io.StringIO("")
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status: int | str = main(args)
        except SystemExit as stop:
            status = stop.code if isinstance(stop.code, int) else 2
        except BaseException:  # noqa: BLE001 - what escapes main is the finding itself
            err.write(traceback.format_exc())
            status = "exception"
    return status, err.getvalue()[-6000:], out.getvalue()[-300:]


class Slot:
    """One worker process and the case it is running."""

    def __init__(self, memory: int) -> None:
        self.memory = memory
        self.process: multiprocessing.process.BaseProcess | None = None
        self.conn: Connection | None = None
        self.case: Case | None = None
        self.folder: Path | None = None
        self.began = 0.0
        self.done = 0

    def start(self) -> None:
        context = multiprocessing.get_context("fork")
        parent, child = context.Pipe()
        self.process = context.Process(target=_worker, args=(child, self.memory), daemon=True)
        self.process.start()
        self.conn, self.done = parent, 0

    def submit(self, case: Case, folder: Path, fresh: bool = False) -> None:
        if self.process is None or self.done >= RESTART_EVERY or (fresh and self.done):
            self.stop()
            self.start()
        assert self.conn is not None
        self.case, self.folder, self.began = case, folder, time.perf_counter()
        self.conn.send((str(folder), case.tool, list(case.args)))

    def kill(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.join()
        self.process = None

    def stop(self) -> None:
        if self.process is not None and self.conn is not None:
            with contextlib.suppress(OSError):
                self.conn.send(None)
            self.process.join(timeout=5)
        self.kill()


# ----- outcomes


def _located(line: str, case: Case) -> bool:
    """Whether an error line says where: at a line and column, a flag, or an ONNX model the
    run was given (as a whole)."""
    whole = WHOLE_FILE.match(line)
    return LOCATED.match(line) is not None or (whole is not None and whole.group(1) in case.files)


def classify(case: Case, status: int | str, stderr: str, stdout: str, folder: Path,
             timed_out: bool) -> list[str]:
    """The bad outcomes of one run (empty: a clean exit 0, 1 or 2, or a mismatch)."""
    flags = []
    if timed_out:
        flags.append("timeout")
    elif status == 3 and case.tool == "crane-sim" and stdout.rstrip().endswith("MISMATCH"):
        flags.append("mismatch")  # crane-sim --check: the (mutated) programs compute otherwise
    elif status == 3:
        flags.append("exit 3")
    elif status not in (0, 1, 2):
        flags.append("other exit")
    if "Traceback (most recent call last)" in stderr:
        flags.append("traceback")
    errors = [line for line in stderr.splitlines() if ": error: " in line or line.startswith("error: ")]
    stripped = any("strip-debuginfo" in arg for arg in case.args)  # the run was asked to drop them
    if status == 1 and not timed_out and not stripped and (not errors or any(not _located(e, case) for e in errors)):
        flags.append("unlocated")
    if status == 2 and not timed_out and not USAGE.search(stderr):
        flags.append("unclear usage")
    names = os.listdir(folder)
    if any(n.endswith(".tmp") for n in names):
        flags.append("leftover")
    if case.output and status != 0 and case.output in names:
        flags.append("partial")
    if OUT_OF_MEMORY in stderr:  # legal but too large for the worker: not an unlocated diagnostic
        flags = [f for f in flags if f != "unlocated"] + ["out of memory"]
    return flags


def table(outcomes: list[Outcome], seconds: float, time_limit: float) -> str:
    """Outcome counts by kind of input."""
    columns = ("runs", "exit 0", "exit 1", "exit 2", "mismatch", *BAD, "max s")
    lines = [f"{'kind':12s}" + "".join(f"{c:>14s}" for c in columns)]
    for kind in (*KINDS, "total"):
        mine = [o for o in outcomes if kind in ("total", o.case.kind)]
        if not mine:
            continue
        counts = Counter(str(o.status) for o in mine if "timeout" not in o.flags)
        flags = Counter(f for o in mine for f in o.flags)
        row = [len(mine), counts["0"], counts["1"], counts["2"], flags["mismatch"], *(flags[b] for b in BAD)]
        cells = "".join(f"{v:>14d}" for v in row) + f"{max(o.seconds for o in mine):>14.1f}"
        lines.append(f"{kind:12s}{cells}")
    lines.append(f"{len(outcomes)} inputs in {seconds:.0f} s (time limit {time_limit:g} s per run)")
    return "\n".join(lines)


def keep(outcome: Outcome, folder: Path, findings: Path, number: int) -> None:
    """Save a bad run's files, command and stderr for reproduction."""
    first = next(f for f in outcome.flags if f in BAD)
    target = findings / f"{number:05d}-{outcome.case.kind}-{first.replace(' ', '-')}"
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(folder, target, symlinks=True)
    (target / "command.txt").write_text(outcome.case.command() + "\n", encoding="utf-8")
    (target / "stderr.txt").write_text(f"status {outcome.status}, {outcome.seconds:.1f} s, "
                                       f"{', '.join(outcome.flags)}\n{outcome.stderr}", encoding="utf-8")


# ----- seeds and the campaign


def prepare_seeds(work: Path, quick: bool) -> Seeds:
    """Examples and small networks; the IR of each level of the small networks; ONNX."""
    from crane.tools import opt

    crn = {p.name: p.read_text(encoding="utf-8") for p in sorted(EXAMPLES.glob("*.crn"))}
    crn.update(fuzz_cases.SMALL_NETS)
    small = tuple(fuzz_cases.SMALL_NETS) + (() if quick else ("tiny_resnet.crn", "tiny_transformer.crn"))
    seed_dir = work / "seeds"
    seed_dir.mkdir(parents=True, exist_ok=True)
    _link_lib(seed_dir)
    for name in small:
        (seed_dir / name).write_text(crn[name], encoding="utf-8")
    levels = {"graph": "", "segment": "autodiff,segment,map", "tile": "lower-to-tile"}
    ir: dict[str, dict[str, str]] = {level: {} for level in levels}
    previous = os.getcwd()
    os.chdir(seed_dir)
    try:
        for name in small:
            for level, pipeline in levels.items():
                out = f"{name}.{level}.mlir"
                args = [name, "-o", out] + (["-p", pipeline] if pipeline else [])
                with contextlib.redirect_stderr(io.StringIO()):
                    status = opt.main(args)
                if status == 0:
                    ir[level][out] = (seed_dir / out).read_text(encoding="utf-8")
    finally:
        os.chdir(previous)
    return Seeds(crn, small, {k: v for k, v in ir.items() if v}, fuzz_onnx.seeds())


def _link_lib(folder: Path) -> None:
    link = folder / "lib"
    if not link.exists():
        link.symlink_to(EXAMPLES / "lib", target_is_directory=True)


MAKERS: dict[str, tuple[float, Callable[[Seeds, random.Random], Case]]] = {
    "crn": (0.30, fuzz_cases.crn_case),
    "ir": (0.30, fuzz_cases.ir_case),
    "pipeline": (0.12, fuzz_cases.pipeline_case),
    "options": (0.13, fuzz_cases.options_case),
    "onnx": (0.15, lambda seeds, rng: fuzz_cases.onnx_case(seeds, rng, fuzz_onnx.mutate_model)),
}
"""Families of inputs: how often each is drawn, and how."""


def make_case(seeds: Seeds, rng: random.Random, families: tuple[str, ...]) -> Case:
    weights = [MAKERS[name][0] for name in families]
    maker = MAKERS[rng.choices(families, weights)[0]][1]
    return maker(seeds, rng)


def campaign(cases: list[Case], work: Path, jobs: int, time_limit: float, findings: Path,
             progress: bool, memory: int = 6 * 2**30) -> list[Outcome]:
    """Run every case (each worker within ``memory`` bytes of address space); the outcomes
    in the order the cases were given."""
    slots = [Slot(memory) for _ in range(jobs)]
    todo = list(enumerate(cases))[::-1]
    results: dict[int, Outcome] = {}
    running: dict[Slot, int] = {}
    again: set[int] = set()  # cases that ran out of memory in a used worker, to run in a fresh one
    try:
        while todo or running:
            for slot in slots:
                if slot not in running and todo:
                    index, case = todo.pop()
                    slot.submit(case, _folder(work, index, case), fresh=index in again)
                    running[slot] = index
            for index in _collect(running, results, time_limit, findings, again):
                again.add(index)
                todo.append((index, cases[index]))
            if progress and len(results) % 100 == 0 and results:
                print(f"  {len(results)} of {len(cases)} inputs run", file=sys.stderr, flush=True)
    finally:
        for slot in slots:
            slot.stop()
    return [results[i] for i in range(len(cases))]


def _folder(work: Path, index: int, case: Case) -> Path:
    folder = work / "runs" / f"{index:05d}"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    _link_lib(folder)
    for name, data in case.files.items():
        (folder / name).write_bytes(data)
    return folder


def _collect(running: dict[Slot, int], results: dict[int, Outcome], time_limit: float,
             findings: Path, again: set[int]) -> list[int]:
    """Record the runs that ended; the cases to run again in a fresh worker."""
    retry = []
    now = time.perf_counter()
    deadline = min(slot.began + time_limit for slot in running) - now
    ready = wait([slot.conn for slot in running if slot.conn is not None], timeout=max(0.01, deadline))
    for slot in list(running):
        timed_out = slot.conn not in ready and time.perf_counter() - slot.began > time_limit
        if slot.conn not in ready and not timed_out:
            continue
        status: int | str = "timeout"
        stderr = stdout = ""
        if timed_out:
            slot.kill()  # SIGKILL, as a user's timeout would: the -o checks apply after it
        else:
            assert slot.conn is not None
            try:
                status, stderr, stdout = slot.conn.recv()
            except EOFError:  # the worker died (a crash of the interpreter itself)
                status, stderr, stdout = "died", "", ""
                slot.kill()
            slot.done += 1
        index = running.pop(slot)
        if OUT_OF_MEMORY in stderr and index not in again and slot.done > 1:
            retry.append(index)
            continue
        _finish(slot, index, (status, stderr, stdout), timed_out, results, findings)
    return retry


def _finish(slot: Slot, index: int, said: tuple[int | str, str, str], timed_out: bool,
            results: dict[int, Outcome], findings: Path) -> None:
    status, stderr, stdout = said
    assert slot.case is not None and slot.folder is not None
    seconds = time.perf_counter() - slot.began
    flags = classify(slot.case, status, stderr, stdout, slot.folder, timed_out)
    outcome = Outcome(slot.case, status, stderr or stdout, seconds, flags)
    results[index] = outcome
    if set(flags) & set(BAD):
        keep(outcome, slot.folder, findings, index)
    shutil.rmtree(slot.folder, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inputs", type=int, default=200, help="how many inputs to run (default 200)")
    parser.add_argument("--seed", type=int, default=1, help="the campaign's random seed (default 1)")
    parser.add_argument("--jobs", type=int, default=2, help="worker processes (default 2)")
    parser.add_argument("--time-limit", type=float, default=30.0, help="seconds per run (default 30)")
    parser.add_argument("--keep", default="fuzz-findings", help="where bad runs are saved")
    parser.add_argument("--memory", type=float, default=6.0, metavar="GIB",
                        help="address space of each worker (default 6 GiB)")
    parser.add_argument("--quick", action="store_true", help="IR seeds from the smallest networks only")
    parser.add_argument("--progress", action="store_true", help="report progress on stderr")
    parser.add_argument("--families", default=",".join(MAKERS),
                        help=f"comma-separated input families (default: all of {', '.join(MAKERS)})")
    args = parser.parse_args(argv)
    began = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="crane-fuzz-") as scratch:
        work = Path(scratch)
        seeds = prepare_seeds(work, args.quick)
        rng = random.Random(args.seed)
        families = tuple(f for f in args.families.split(",") if f in MAKERS) or tuple(MAKERS)
        cases = [make_case(seeds, rng, families) for _ in range(args.inputs)]
        findings = Path(args.keep).resolve()
        outcomes = campaign(cases, work, max(1, args.jobs), args.time_limit, findings, args.progress,
                            int(args.memory * 2**30))
    print(table(outcomes, time.perf_counter() - began, args.time_limit))
    bad = [o for o in outcomes if set(o.flags) & set(BAD)]
    for outcome in bad[:20]:
        first = next((line for line in outcome.stderr.splitlines() if line.strip()), "")
        print(f"  [{', '.join(outcome.flags)}] {outcome.case.command()}\n      {first[:200]}")
    if bad:
        print(f"{len(bad)} bad runs saved under {Path(args.keep).resolve()}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
