"""Refresh the numbers in the output that ``docs/tutorial.md`` shows.

``test_tutorial.py`` checks that every output line the tutorial shows still has the shape
of the real output (numbers may differ). When the cost model or code generation changes,
the numbers drift; this script runs the tutorial's commands (as the test does) and lists
each shown line whose numbers changed, with the line printed now:

    python tests/unit/docs/refresh_tutorial.py           # list the differences
    python tests/unit/docs/refresh_tutorial.py --write   # also rewrite docs/tutorial.md

``--write`` replaces whole shown lines only; lines shortened with ``...`` are listed for a
manual update, and so are numbers quoted in the prose and tables, which it cannot see.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from test_tutorial import (  # noqa: E402  (the directory is not a package)
    FILES,
    TUTORIAL,
    _normalise,
    _scripts,
    argv_of,
    console_steps,
    shown_line_found,
)


def _real_outputs(work: Path, text: str) -> list[tuple[tuple[str, ...], list[str]]]:
    """(shown lines, printed lines) of every command, run in order in ``work``."""
    env = {**os.environ, "NO_COLOR": "1", "MPLBACKEND": "Agg"}
    scripts = _scripts()
    found = []
    for step in console_steps(text):
        proc = subprocess.run(argv_of(step.command, scripts), cwd=work, env=env,
                              capture_output=True, text=True, timeout=300)
        found.append((step.shown, (proc.stdout + proc.stderr).splitlines()))
    return found


def _literally_there(shown: str, printed: list[str]) -> bool:
    """Whether the pieces of a shown line (split at ``...``) appear, in order, in one line."""
    pieces = shown.split("...")
    for line in printed:
        at = 0
        for piece in pieces:
            at = line.find(piece, at)
            if at < 0:
                break
            at += len(piece)
        else:
            return True
    return False


def _updates(outputs: list[tuple[tuple[str, ...], list[str]]]) -> dict[str, str]:
    """Shown line -> the printed line of the same shape, where the numbers differ."""
    updates: dict[str, str] = {}
    for shown_lines, printed in outputs:
        for shown in shown_lines:
            if not shown.strip() or _literally_there(shown, printed):
                continue
            same = [p for p in printed if _normalise(p) == _normalise(shown)]
            if "..." in shown or not same:
                like = [p for p in printed if shown_line_found(shown, [p])]
                print(f"by hand: {shown!r}\n    now: {like[0] if like else '(no line of this shape)'!r}")
                continue
            # Rows of one table share a shape: take the one that starts most like it.
            updates[shown] = max(same, key=lambda p: len(os.path.commonprefix([p, shown])))
    return updates


def main() -> int:
    text = TUTORIAL.read_text(encoding="utf-8")
    with tempfile.TemporaryDirectory() as temp:
        work = Path(temp) / "tutorial"
        shutil.copytree(FILES, work)
        updates = _updates(_real_outputs(work, text))
    for old, new in updates.items():
        print(f"- {old}\n+ {new}")
    if "--write" not in sys.argv[1:]:
        return 0
    lines, fence = [], ""
    for line in text.split("\n"):
        if line.startswith("```"):
            fence = "" if fence else line[3:].strip()
        lines.append(updates.get(line, line) if fence == "console" else line)
    TUTORIAL.write_text("\n".join(lines), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
