"""The ``--quick`` slice of ``bench/zoo.py``: three zoo models through both PyTorch
exporters and every Crane stage, as a user runs them (skipped without the torch extra)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

pytest.importorskip("torch")
pytest.importorskip("torchvision")
pytest.importorskip("transformers")
pytest.importorskip("onnxscript")

BENCH = Path(__file__).resolve().parents[3] / "bench" / "zoo.py"
CNNS = ("squeezenet1_1", "resnet18")


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_zoo", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_zoo"] = module
    spec.loader.exec_module(module)
    return module


def test_quick_zoo_slice(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bench = _bench()
    bench.main(["--quick", "--jobs", "2", "--timeout", "600", "--json", str(tmp_path / "rows.json")])
    table = capsys.readouterr().out
    rows = {(r["model"], r["exporter"]): r for r in json.loads((tmp_path / "rows.json").read_text())}
    assert set(rows) == {(m, e) for m in bench.QUICK for e in ("torchscript", "dynamo")}, table
    for (model, exporter), row in rows.items():
        status = row["status"]
        assert [status[s] for s in ("export", "import", "run", "segment")] == ["ok"] * 4, (model, exporter, row)
        assert row["run_rel"] <= bench.RTOL and row["segment_seconds"] > 0, (model, exporter, row)
        if model in CNNS:
            assert status["lower"] == status["check"] == "ok", (model, exporter, row)
            assert row["check_rel"] <= bench.CHECK_RTOL, (model, exporter, row)
    assert "interpreter vs onnxruntime: largest relative error" in table
