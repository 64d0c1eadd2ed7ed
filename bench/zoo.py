"""Model zoo: torchvision and Hugging Face models through both of PyTorch's ONNX
exporters, then through Crane as a user runs it.

For every (model, exporter) pair, each stage a subprocess with a time limit:

* **export** at the model's full input size (224x224 images, 299 for Inception-V3, 128
  tokens with an attention mask whose last quarter is padding), with random weights
  (``bench/zoo_models.py``);
* **import**: ``crane-opt model.onnx --onnx-batch 1 --machine edge -o model.mlir
  --onnx-weights model.npz``;
* **run**: ``crane-run model.mlir --weights model.npz --input ... --save DIR``, compared
  with onnxruntime on the same inputs: the largest ``max|crane - ort| / max|ort|`` over
  the outputs (target ``<= RTOL``);
* **segment**: ``crane-opt model.mlir -p segment`` on ``edge``, and its seconds;
* **lower**: the model exported again at a reduced size (64x64 images, 80 for
  Inception-V3, the full 224 for AlexNet and VGG-11, whose adaptive pools would
  otherwise upsample; 32 tokens; a failure there shows as ``lower FAIL`` with a
  ``reduced export:`` error), then ``crane-opt small.onnx ... -p lower-to-tile``;
* **check**: ``crane-sim small.tile.mlir --check --weights ... --input ...`` and its
  largest relative error.

A stage that fails prints the first error line of its output, and the stages that need
its result are skipped (``-``). Needs the ``torch`` extra (``pip install -e '.[torch]'``).

Run: ``python bench/zoo.py [--quick] [--models a,b] [--exporters torchscript,dynamo]
[--jobs 2] [--timeout 1200] [--json out.json] [--keep DIR]``. ``--quick`` is the slice the
test suite runs (:data:`QUICK`, at the reduced size only). Exit status 1 when any stage
fails.
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

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from zoo_models import EXPORTERS, MODELS, Spec  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
RTOL = 1e-4
"""Target for the interpreter against onnxruntime."""
CHECK_RTOL = 1e-4
"""Tolerance given to ``crane-sim --check``."""
QUICK = ("squeezenet1_1", "resnet18", "bert")
"""The ``--quick`` slice (the test suite runs it, at the reduced input size only)."""
STAGES = ("export", "import", "run", "segment", "reduced export", "lower", "check")


@dataclass
class Row:
    """One (model, exporter) pair: each stage's outcome and figures."""

    model: str
    exporter: str
    status: dict[str, str]
    """Stage -> ``ok``, ``FAIL``, ``TIMEOUT``, ``MISMATCH``, ``-`` (skipped) or ``n/a``."""
    run_rel: float | None = None
    segment_seconds: float | None = None
    check_rel: float | None = None
    error: str = ""
    """The first error line of the first stage that failed."""
    seconds: dict[str, float] | None = None
    """Stage -> seconds it took (both exports summed)."""

    @property
    def ok(self) -> bool:
        return all(v in ("ok", "n/a") for v in self.status.values()) and (self.run_rel or 0.0) <= RTOL


def tool(name: str) -> list[str]:
    """The command of a Crane tool, run by this Python as a user's console script would."""
    module = {"crane-opt": "crane.opt", "crane-run": "crane.tools.run", "crane-sim": "crane.tools.sim"}[name]
    return [sys.executable, "-m", module]


def run_limited(command: list[str], timeout: float) -> tuple[int | None, float, str]:
    """(exit status or None on a timeout, seconds, standard output and error together)."""
    began = time.perf_counter()
    with tempfile.TemporaryFile() as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT,
                                   env={**os.environ, "PYTHONWARNINGS": "ignore"})
        try:
            status: int | None = process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            status = None
        log.seek(0)
        return status, time.perf_counter() - began, log.read().decode(errors="replace")


def first_error(text: str) -> str:
    """The line a user would read first: a traceback's last line (the exception), else
    the first line mentioning an error, else the last line."""
    lines = [line for line in text.splitlines() if line.strip()]
    if "Traceback (most recent call last)" in text and lines:
        raised = [line for line in lines if re.match(r"[\w.]+(Error|Exception)\b.*:", line)]
        return (raised or lines)[-1].strip()[:400]
    for line in lines:
        if re.search(r"error|Error|MISMATCH|FAIL", line):
            return line.strip()[:400]
    return lines[-1].strip()[:400] if lines else ""


class Pair:
    """The stages of one (model, exporter) pair, in a scratch directory."""

    def __init__(self, spec: Spec, exporter: str, scratch: Path, timeout: float, quick: bool) -> None:
        self.spec, self.exporter, self.timeout, self.quick = spec, exporter, timeout, quick
        self.full = scratch / f"{spec.name}.{exporter}"
        self.small = self.full if quick else self.full / "small"
        self.row = Row(spec.name, exporter, dict.fromkeys(STAGES, "-"))
        if quick:
            self.row.status["reduced export"] = "n/a"  # the one export is at the reduced size

    def stage(self, name: str, command: list[str]) -> tuple[bool, float, str]:
        """Run one stage; record its outcome (and the first error of the first failure)."""
        status, seconds, text = run_limited(command, self.timeout)
        self.row.seconds = self.row.seconds or {}
        self.row.seconds[name] = self.row.seconds.get(name, 0.0) + seconds
        ok = status == 0
        self.row.status[name] = "ok" if ok else ("TIMEOUT" if status is None else "FAIL")
        if not ok and not self.row.error:
            self.row.error = f"{name}: " + (f"over {self.timeout:.0f} s" if status is None else first_error(text))
        return ok, seconds, text

    def export(self, size: int, where: Path, stage: str = "export") -> bool:
        command = [sys.executable, str(ROOT / "bench" / "zoo_models.py"), self.spec.name, self.exporter,
                   str(size), str(where)]
        return self.stage(stage, command)[0]

    def inputs(self, where: Path) -> list[str]:
        return [f"{p.stem}={p}" for p in sorted(where.glob("*.npy"))]

    def go(self) -> Row:
        if not self.export(self.spec.reduced if self.quick else self.spec.full, self.full):
            return self.row
        if not self.import_and_run():
            return self.row
        if self.quick or self.export(self.spec.reduced, self.small, "reduced export"):
            self.lower_and_check()
        elif self.row.status["reduced export"] != "ok":
            self.row.status["lower"] = "FAIL"
        return self.row

    def import_and_run(self) -> bool:
        model, weights = self.full / "model.mlir", self.full / "model.npz"
        if not self.stage("import", [*tool("crane-opt"), str(self.full / "model.onnx"), "--onnx-batch", "1",
                                     "--machine", "edge", "-o", str(model), "--onnx-weights", str(weights)])[0]:
            return False
        saved = self.full / "crane"
        command = [*tool("crane-run"), str(model), "--weights", str(weights), "--save", str(saved)]
        for spec in self.inputs(self.full):
            command += ["--input", spec]
        if self.stage("run", command)[0]:
            self.compare(saved)
        ok, seconds, _ = self.stage("segment", [*tool("crane-opt"), str(model), "-p", "segment",
                                                "-o", str(self.full / "segment.mlir")])
        self.row.segment_seconds = seconds if ok else None
        return True

    def compare(self, saved: Path) -> None:
        """The interpreter's outputs against onnxruntime's."""
        import onnxruntime as ort

        from crane.frontend.onnx.state import NameTable

        session = ort.InferenceSession(str(self.full / "model.onnx"), providers=["CPUExecutionProvider"])
        feed = {i.name: np.load(self.full / f"{i.name}.npy") for i in session.get_inputs()}
        names = [o.name for o in session.get_outputs()]
        worst = 0.0
        for name, expected in zip(names, session.run(names, feed), strict=True):
            path = saved / f"{NameTable.clean(name)}.npy"
            if not path.exists():
                self.row.status["run"] = "FAIL"
                self.row.error = self.row.error or f"run: no output '{name}' saved as {path.name}"
                return
            got = np.load(path).astype(np.float64)
            scale = float(np.max(np.abs(expected))) or 1.0
            worst = max(worst, float(np.max(np.abs(got - expected))) / scale)
        self.row.run_rel = worst
        if worst > RTOL:
            self.row.status["run"] = "MISMATCH"
            self.row.error = self.row.error or f"run: max relative error {worst:.2e} > {RTOL:g}"

    def lower_and_check(self) -> None:
        tile, weights = self.small / "tile.mlir", self.small / "small.npz"
        if not self.stage("lower", [*tool("crane-opt"), str(self.small / "model.onnx"), "--onnx-batch", "1",
                                    "--machine", "edge", "-p", "lower-to-tile", "-o", str(tile),
                                    "--onnx-weights", str(weights)])[0]:
            return
        command = [*tool("crane-sim"), str(tile), "--check", "--rtol", str(CHECK_RTOL), "--weights", str(weights)]
        for spec in self.inputs(self.small):
            command += ["--input", spec]
        status, seconds, text = run_limited(command, self.timeout)
        self.row.seconds = {**(self.row.seconds or {}), "check": seconds}
        found = re.search(r"max error: abs \S+, rel ([0-9.e+-]+|nan|inf)", text)
        self.row.check_rel = float(found.group(1)) if found else None
        self.row.status["check"] = {0: "ok", 3: "MISMATCH", None: "TIMEOUT"}.get(status, "FAIL")
        if status != 0 and not self.row.error:
            self.row.error = "check: " + (f"over {self.timeout:.0f} s" if status is None else first_error(text))


def _figure(value: float | None, form: str) -> str:
    return "-" if value is None else format(value, form)


HEADER = (f"{'model':<20}{'exporter':<13}{'export':<8}{'import':<8}{'run rel':>10}  {'segment s':>10}  "
          f"{'lower':<9}{'check rel':>10}  first error")


def line(row: Row) -> str:
    """One row of the table."""
    run = row.status["run"] if row.run_rel is None else _figure(row.run_rel, ".1e")
    seg = row.status["segment"] if row.segment_seconds is None else _figure(row.segment_seconds, ".1f")
    check = row.status["check"] if row.check_rel is None else _figure(row.check_rel, ".1e")
    if row.status["check"] not in ("ok", "-"):
        check = f"{row.status['check']} {check}" if row.check_rel is not None else row.status["check"]
    return (f"{row.model:<20}{row.exporter:<13}{row.status['export']:<8}{row.status['import']:<8}{run:>10}  "
            f"{seg:>10}  {row.status['lower']:<9}{check:>10}  {row.error}")


def summary(rows: list[Row]) -> list[str]:
    counts = {stage: sum(1 for r in rows if r.status[stage] == "ok") for stage in STAGES}
    rels = [r.run_rel for r in rows if r.run_rel is not None]
    return [
        f"pairs: {len(rows)}; passing every stage: {sum(1 for r in rows if r.ok)}",
        "stages ok: " + ", ".join(f"{stage} {counts[stage]}" for stage in STAGES),
        f"interpreter vs onnxruntime: largest relative error {max(rels, default=0.0):.1e} "
        f"(target <= {RTOL:g}) over {len(rels)} runs",
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the slice the tests run, at the reduced size")
    parser.add_argument("--models", default="", help=f"comma-separated, of {', '.join(MODELS)}")
    parser.add_argument("--exporters", default=",".join(EXPORTERS), help="torchscript,dynamo")
    parser.add_argument("--jobs", type=int, default=1, help="pairs run side by side")
    parser.add_argument("--timeout", type=float, default=1200.0, help="seconds per stage")
    parser.add_argument("--json", default="", help="also write the rows here as JSON")
    parser.add_argument("--keep", default="", help="keep the exported models and outputs in this directory")
    args = parser.parse_args(argv)
    names = list(QUICK) if args.quick and not args.models else (args.models.split(",") if args.models else list(MODELS))
    unknown = [n for n in names if n not in MODELS] + [e for e in args.exporters.split(",") if e not in EXPORTERS]
    if unknown:
        parser.error(f"unknown model or exporter: {', '.join(unknown)}")
    print(HEADER, flush=True)
    rows: list[Row] = []
    with tempfile.TemporaryDirectory() as temporary, ThreadPoolExecutor(max(1, args.jobs)) as pool:
        scratch = Path(args.keep or temporary)
        pairs = [Pair(MODELS[n], e, scratch, args.timeout, args.quick) for n in names for e in args.exporters.split(",")]
        for row in pool.map(lambda p: p.go(), pairs):
            rows.append(row)
            print(line(row), flush=True)
    for text in summary(rows):
        print(text)
    if args.json:
        Path(args.json).write_text(json.dumps([asdict(r) for r in rows], indent=1))
    return 0 if all(r.ok for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
