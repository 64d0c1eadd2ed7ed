"""The sweep file format: parsing, located errors, points and their keys."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from dse_testing import SWEEP64, SweepWriter, load

from crane.dse.points import HARDWARE, SchedulerOptions, derive_machine, point_key
from crane.dse.sweep import read_sweep
from crane.hardware.machine import GB, MIB, DramPort, Machine
from crane.ir.diagnostics import DiagnosticError, SourceManager, render
from crane.passes.segment import Segment


def rendered(path: Path) -> str:
    """The first diagnostic of reading ``path`` as ``crane-dse`` prints it."""
    with pytest.raises(DiagnosticError) as caught:
        load(path)
    sources = SourceManager()
    sources.add(str(path), path.read_text())
    return render(caught.value.diagnostics[0], sources)


def test_sweep64_expands_to_64_distinct_points() -> None:
    sweep, points = load(SWEEP64)
    assert sweep.size == len(points) == 64
    assert len({p.key for p in points}) == 64
    # Workloads outermost, then the axes in file order (batch first, policy last).
    assert [p.workload for p in points[:32]] == ["tiny_cnn.crn"] * 32
    assert [p.scheduler.policy for p in points[:4]] == ["crane", "set", "crane", "set"]
    assert {(p.machine.rows, p.machine.cols) for p in points} == {(2, 2), (4, 4)}
    assert {p.machine.sram_bytes for p in points} == {256, MIB}
    assert {p.machine.dram_bandwidth for p in points} == {8e9, 16e9}
    assert {p.batch for p in points} == {1, 4}
    assert all(p.scheduler.time_limit == 5.0 for p in points)


def test_keys_are_stable_and_follow_every_parameter() -> None:
    _, first = load(SWEEP64)
    _, again = load(SWEEP64)
    assert [p.key for p in first] == [p.key for p in again]
    point = first[0]
    base = dict(workload=point.workload, digest="d", batch=point.batch, machine=point.machine,
                scheduler=point.scheduler)
    key = point_key(**base)  # type: ignore[arg-type]
    changed = [dict(base, batch=7), dict(base, digest="e"), dict(base, workload="x.crn"),
               dict(base, machine=point.machine.with_changes(noc_bandwidth=1.0)),
               dict(base, scheduler=SchedulerOptions(policy="set"))]
    assert all(point_key(**c) != key for c in changed)  # type: ignore[arg-type]


def test_a_changed_workload_file_gets_new_keys(write_sweep: SweepWriter) -> None:
    sweep = write_sweep('workloads = ["tiny_mlp.crn"]\nbatch = [1, 2]\n')
    _, before = load(sweep)
    crn = sweep.parent / "tiny_mlp.crn"
    crn.write_text(crn.read_text().replace("out=128", "out=96"))
    _, after = load(sweep)
    assert not {p.key for p in before} & {p.key for p in after}


def test_records_show_hardware_and_the_swept_fields() -> None:
    _, points = load(SWEEP64)
    params = points[0].params()
    assert list(params)[:3] == ["workload", "batch", "machine"]
    assert all(name in params for name in HARDWARE)
    assert params["noc_bandwidth"] == 24e9 and isinstance(params["noc_bandwidth"], float)
    assert {k: params[k] for k in ("policy", "objective", "time_limit", "max_block")} == {
        "policy": "crane", "objective": "edp", "time_limit": 5.0, "max_block": 12}


def test_scheduler_defaults_are_the_segment_pass_defaults() -> None:
    mine = dataclasses.asdict(SchedulerOptions())
    theirs = {f.name: f.default for f in dataclasses.fields(Segment) if f.name in mine}
    assert mine == theirs


def test_defaults_come_from_the_workload(write_sweep: SweepWriter) -> None:
    _, points = load(write_sweep('workloads = ["tiny_*.crn"]\n'))
    assert [p.workload for p in points] == ["tiny_cnn.crn", "tiny_mlp.crn", "tiny_train.crn"]
    assert [p.batch for p in points] == [4, 4, 4]  # `batch 4;` of each network
    assert all(p.machine == Machine.edge().with_changes(noc_bandwidth=24e9, dram_bandwidth=16e9)
               for p in points)


def test_a_new_mesh_moves_the_edge_ports_and_keeps_other_layouts() -> None:
    edge = Machine.edge()
    moved = derive_machine(edge, {"rows": 2, "cols": 3})
    assert moved.dram_ports == Machine.edge_ports(2, 3)
    corner = edge.with_changes(dram_ports=(DramPort(0, 0),))
    assert derive_machine(corner, {"rows": 2, "cols": 2}).dram_ports == (DramPort(0, 0),)
    far = edge.with_changes(dram_ports=(DramPort(3, 3),))
    with pytest.raises(ValueError, match=r"DRAM port at \[3, 3\], outside the 2 x 2 mesh"):
        derive_machine(far, {"rows": 2, "cols": 2})


def test_units_and_plain_numbers(write_sweep: SweepWriter) -> None:
    _, points = load(write_sweep(
        'workloads = ["tiny_mlp.crn"]\n[machine]\nbase = "cloud"\nsram = "0.5 MiB"\n'
        'macs = 256\nnoc_bandwidth = "0.5 GB/s"\nnoc_hop_energy = "0.7 pJ/bit"\n'
        'rows = [2, 3]\ncols = 5\n'))
    assert [(p.machine.rows, p.machine.cols) for p in points] == [(2, 5), (3, 5)]
    machine = points[0].machine
    assert machine.name == "cloud" and machine.sram_bytes == MIB // 2
    assert machine.macs_per_cycle == 256 and machine.noc_bandwidth == 0.5 * GB
    assert machine.noc_hop_pj_per_byte == pytest.approx(5.6)


BAD = [
    ('workloads = ["tiny_cnn.crn"]\n[machine]\nsram = ["256 B", "1 Mib"]\n',
     "sweep.toml:3:18: error: sram: unknown unit 'Mib'; did you mean 'MiB'?"),
    ('workloads = ["tiny_cnn.crn", "gone.crn"]\n',
     "sweep.toml:1:30: error: workload 'gone.crn' not found"),
    ('workloads = ["tiny\\u0000cnn.crn"]\n',
     "sweep.toml:1:1: error: a workload path holds a NUL byte, which no file name can"),
    ('workloads = ["tiny_cnn.crn"]\n\n[machine]\ndram_bandwith = "16 GB/s"\n',
     "sweep.toml:4:1: error: unknown [machine] key 'dram_bandwith'; did you mean "
     "'dram_bandwidth'?"),
    ('workloads = ["tiny_cnn.crn"]\n[machine]\nnoc_bandwidth = [24, "48 GB/s"]\n',
     "sweep.toml:3:18: error: noc_bandwidth: 24 needs a unit: noc_bandwidth is a bandwidth"),
    ('workloads = ["tiny_cnn.crn"\nbatch = 1\n', "sweep.toml:2:1: error: invalid TOML"),
    ('workloads = ["tiny_cnn.crn"]\n[scheduler]\npolicy = ["crane", "tangrm"]\n',
     "sweep.toml:3:20: error: policy: unknown policy 'tangrm'; did you mean 'tangram'?"),
    ('workloads = ["tiny_cnn.crn"]\n[scheduler]\nobjective = "fast"\n',
     "sweep.toml:3:13: error: objective: unknown objective 'fast'"),
    ('workloads = ["tiny_cnn.crn"]\n[machine]\nmesh = ["2x2", "4 by 4"]\n',
     "sweep.toml:3:16: error: mesh: a mesh is written \"ROWSxCOLS\""),
    ('workloads = ["tiny_cnn.crn"]\n[machine]\nsram = "16 GB/s"\n',
     "sweep.toml:3:8: error: sram: sram wants a size (bytes)"),
    ('workloads = ["tiny_cnn.crn"]\nbatch = [1, 4, 1]\n',
     "sweep.toml:2:10: error: batch: value 1 is listed twice"),
    ('workloads = ["tiny_cnn.crn"]\nbatch = [0]\n',
     "sweep.toml:2:10: error: batch: a batch size must be positive, got 0"),
    ('workloads = ["tiny_cnn.crn"]\n[machine]\nbase = "egde"\n',
     "sweep.toml:3:8: error: unknown base machine 'egde'; did you mean 'edge'?"),
    ('workloads = ["tiny_cnn.crn"]\n[machine]\nmesh = "2x2"\nrows = 2\n',
     "sweep.toml:4:1: error: 'rows' and 'mesh' both set the mesh size"),
    ('workloads = ["tiny_cnn.crn"]\nmachine = 3\n',
     "sweep.toml:2:1: error: 'machine' must be a table"),
    ('workloads = []\n', "sweep.toml:1:1: error: 'workloads' is empty"),
    ('workloads = ["tiny_cnn.crn"]\n[machine]\nmesh = ["2x2", "100000000x2"]\n',
     "sweep.toml:3:16: error: mesh: mesh rows must be from 1 to 64, got 100000000"),
    ('workloads = ["tiny_cnn.crn"]\nbatch = [2147483648]\n',
     "sweep.toml:2:10: error: batch: a batch size must be from 1 to 65536, got 2147483648"),
    ('workloads = ["tiny_cnn.crn"]\n[machine]\nfrequency = "1e308 GHz"\n',
     "sweep.toml:3:13: error: frequency: frequency must be from 1 kHz to 1 THz"),
    ('workloads = ["tiny_cnn.crn"]\n[scheduler]\ntime_limit = inf\n',
     "sweep.toml:3:14: error: time_limit: time_limit is a positive number of seconds (at most 3600)"),
    ('workloads = ["nets/*.crn"]\n', "sweep.toml:1:14: error: no file matches 'nets/*.crn'"),
]


@pytest.mark.parametrize(("text", "expected"), BAD, ids=[b[1].split("error: ")[1][:30]
                                                         for b in BAD])
def test_mistakes_are_located(write_sweep: SweepWriter, text: str, expected: str) -> None:
    path = write_sweep(text)
    message = rendered(path)
    first = message.splitlines()[0]
    assert first.startswith(str(path.parent) + "/" + expected), message
    assert "^" in message.splitlines()[-1]


def test_unlocatable_keys_are_named(write_sweep: SweepWriter) -> None:
    path = write_sweep('workloads = ["tiny_cnn.crn"]\nmachine = { sram = "lots" }\n')
    message = rendered(path)
    assert message == (f"error: {path}: [machine] sram: expected a number and a unit like "
                       "\"1 MiB\", got 'lots'")
    missing = write_sweep("batch = 4\n", "other.toml")
    with pytest.raises(DiagnosticError, match="other.toml: missing 'workloads'"):
        read_sweep(missing)


def test_a_workload_with_an_error_is_located_in_its_file(write_sweep: SweepWriter) -> None:
    path = write_sweep('workloads = ["broken.crn"]\n')
    (path.parent / "broken.crn").write_text("network broken {\n  input x: f32[1, 4];\n"
                                            "  y = relu(x)\n  output y;\n}\n")
    with pytest.raises(DiagnosticError) as caught:
        load(path)
    position = caught.value.diagnostics[0].location.file_line_col()
    assert position is not None and position.file.endswith("broken.crn")
    assert position.line == 3
