"""``--machine``: a machine by built-in name, by `.crn` file, or by name on a search path.

    resolve_machine("edge")                          # built in
    resolve_machine("examples/machines/mesh2x2.crn") # the machine named like the file
    resolve_machine("machines/lab.crn:small")        # one machine of a file
    resolve_machine("mesh2x2")                       # mesh2x2.crn on CRANE_MACHINE_PATH

A file names the machine its stem names, else the only machine it defines itself; with
several, ``FILE.crn:NAME`` chooses. ``CRANE_MACHINE_PATH`` is a ``:``-separated list of
directories searched for ``NAME.crn`` when NAME is not built in.
"""

from __future__ import annotations

import os
from pathlib import Path

from crane.frontend.crn import CrnErrors, load_machines
from crane.hardware.machine import Machine, builtin_machines

SEARCH_PATH_VARIABLE = "CRANE_MACHINE_PATH"


class MachineNotFound(Exception):
    """The ``--machine`` argument names no machine; the message says what was tried."""


def resolve_machine(spec: str) -> Machine:
    """The machine ``spec`` names (see the module docstring)."""
    known = builtin_machines()
    if spec in known:
        return known[spec]
    path_text, _, wanted = spec.partition(":") if spec.count(":") == 1 and ".crn:" in spec \
        else (spec, "", "")
    path = Path(path_text)
    if path.suffix == ".crn" or os.sep in path_text:
        return _from_file(path, wanted or None)
    for folder in _search_path():
        candidate = folder / f"{spec}.crn"
        if candidate.is_file():
            return _from_file(candidate, spec)
    searched = ", ".join(str(f) for f in _search_path()) or f"{SEARCH_PATH_VARIABLE} is not set"
    raise MachineNotFound(f"unknown machine '{spec}' (built in: {', '.join(known)}; "
                          f"a .crn file path also works; searched: {searched})")


def _search_path() -> list[Path]:
    value = os.environ.get(SEARCH_PATH_VARIABLE, "")
    return [Path(part) for part in value.split(os.pathsep) if part]


def _from_file(path: Path, wanted: str | None) -> Machine:
    if not path.exists():
        raise MachineNotFound(f"machine file '{path}' does not exist")
    if not path.is_file():
        raise MachineNotFound(f"machine file '{path}' is not a regular file")
    try:
        machines = load_machines(path)
    except CrnErrors as problem:
        raise MachineNotFound(f"machine file '{path}' has errors:\n{problem.render()}") from None
    name = wanted or (path.stem if path.stem in machines else None)
    if name is None and len(machines) == 1:
        name = next(iter(machines))
    if name is None or name not in machines:
        listed = ", ".join(machines)
        what = f"no machine '{name}'" if name else "several machines"
        raise MachineNotFound(f"'{path}' defines {what} ({listed}); choose one as {path}:NAME")
    return machines[name]
