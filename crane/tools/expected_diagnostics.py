"""``--verify-diagnostics``: check emitted diagnostics against ``expected-*`` comments.

The annotation syntax is MLIR's (``mlir/docs/Diagnostics.md``)::

    // expected-error {{message}}          on this line
    // expected-warning@+1 {{message}}     N lines below (@-N: above, @N: line N)
    // expected-note@above {{message}}     nearest line above that is not an annotation
    // expected-remark@below {{message}}   nearest line below that is not an annotation
    // expected-error@unknown {{message}}  a diagnostic without a location
    // expected-error-re {{a {{[0-9]+}} b}}  '{{...}}' pieces are regexes

A plain message matches any emitted message containing it. Both ``error-re@+1`` (MLIR's
order) and ``error@+1-re`` are accepted. Every expectation must be met by exactly one
diagnostic and every diagnostic must be expected; unlike MLIR, a malformed annotation is
reported rather than silently ignored, since a typo would otherwise pass the test.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

_ANNOTATION = re.compile(r"expected-(error|warning|note|remark)\b")
_DESIGNATOR = re.compile(r"@([+-][0-9]+|[0-9]+|above|below|unknown)(?![A-Za-z0-9_])")
_BAD_DESIGNATOR = re.compile(r"@\S*")
_REGEX_PIECE = re.compile(r"\{\{(.*?)\}\}")
_LINE_BREAK = re.compile(r"\n")


@dataclass(frozen=True)
class Expectation:
    """One ``expected-*`` annotation, resolved to the line it is about."""

    severity: str
    """'error', 'warning', 'note' or 'remark'."""
    line: int | None
    """Absolute line the diagnostic must be reported on; None for ``@unknown``."""
    message: str
    """The text between the outer ``{{`` and ``}}``, as written."""
    annotation_line: int
    annotation_column: int
    regex: str | None = None
    """For ``-re`` annotations, the Python regex the message compiles to."""

    def matches(self, message: str) -> bool:
        """Whether an emitted ``message`` satisfies this expectation's text."""
        if self.regex is None:
            return self.message in message
        return re.search(self.regex, message) is not None

    def accepts(self, diagnostic: EmittedDiagnostic) -> bool:
        """Whether ``diagnostic`` has this expectation's severity, line and text."""
        same_place = diagnostic.severity == self.severity and diagnostic.line == self.line
        return same_place and self.matches(diagnostic.message)


@dataclass(frozen=True)
class ExpectationSyntaxError:
    """A malformed annotation; reported like an error of the test file itself."""

    line: int
    column: int
    message: str

    def render(self, source_name: str = "<input>") -> str:
        """``NAME:LINE:COL: error: MESSAGE``."""
        return f"{source_name}:{self.line}:{self.column}: error: {self.message}"


@dataclass(frozen=True)
class EmittedDiagnostic:
    """A diagnostic the tool produced, as the verifier needs to see it."""

    severity: str
    line: int | None
    """Absolute line; None when the diagnostic has no file location."""
    message: str
    rendered: str
    """The diagnostic as it would have been printed; lines after the first (the source
    snippet and caret) are appended to an "unexpected" failure."""
    column: int | None = None


@dataclass(frozen=True)
class _Annotation:
    """An annotation as written, before @above/@below are resolved to a line."""

    severity: str
    designator: str
    message: str
    regex: str | None
    line: int
    column: int


def parse_expectations(
    text: str, first_line: int = 1
) -> tuple[list[Expectation], list[ExpectationSyntaxError]]:
    """Find the annotations in ``text``, whose first line is line ``first_line`` of its file.

    Lines holding an annotation (even a malformed one) are skipped when resolving
    ``@above`` and ``@below``, so stacked annotations all refer to the same line.
    """
    lines = _LINE_BREAK.split(text)
    found = {index: _ANNOTATION.search(line) for index, line in enumerate(lines)}
    annotations = {index: match for index, match in found.items() if match is not None}
    annotated = set(annotations)
    expectations: list[Expectation] = []
    errors: list[ExpectationSyntaxError] = []
    for index, match in annotations.items():
        parsed = _parse_annotation(lines[index], match, first_line + index)
        if isinstance(parsed, ExpectationSyntaxError):
            errors.append(parsed)
            continue
        target = _resolve_line(parsed, index, lines, annotated, first_line)
        if isinstance(target, ExpectationSyntaxError):
            errors.append(target)
            continue
        expectations.append(
            Expectation(
                parsed.severity,
                target,
                parsed.message,
                parsed.line,
                parsed.column,
                parsed.regex,
            )
        )
    return expectations, errors


def check_diagnostics(
    expectations: Sequence[Expectation],
    emitted: Sequence[EmittedDiagnostic],
    source_name: str = "<input>",
) -> list[str]:
    """Failure messages, ordered by line; an empty list means the diagnostics match.

    Expectations and diagnostics are paired by a maximum bipartite matching, so the
    order of emission never decides which of two overlapping expectations is met.
    """
    owner = _match(expectations, emitted)
    failures: list[tuple[float, str]] = []
    for index, expectation in enumerate(expectations):
        if index not in owner:
            failures.append((expectation.annotation_line, _missing(expectation, source_name)))
    matched = set(owner.values())
    for index, diagnostic in enumerate(emitted):
        if index not in matched:
            line = math.inf if diagnostic.line is None else diagnostic.line
            failures.append((line, _unexpected(diagnostic, source_name)))
    failures.sort(key=lambda failure: failure[0])
    return [message for _, message in failures]


def verify_diagnostics(
    text: str,
    emitted: Sequence[EmittedDiagnostic],
    source_name: str = "<input>",
    first_line: int = 1,
) -> list[str]:
    """Parse the annotations of ``text`` and check ``emitted`` against them."""
    expectations, errors = parse_expectations(text, first_line)
    syntax = [error.render(source_name) for error in errors]
    return syntax + check_diagnostics(expectations, emitted, source_name)


def _parse_annotation(
    line_text: str, found: re.Match[str], line: int
) -> _Annotation | ExpectationSyntaxError:
    name = found.group()
    pos, is_regex = _optional_suffix(line_text, found.end())
    designated = _parse_designator(line_text, pos, line, name)
    if isinstance(designated, ExpectationSyntaxError):
        return designated
    designator, pos = designated
    pos, regex_after = _optional_suffix(line_text, pos)
    message = _message_of(line_text, pos, line, name)
    if isinstance(message, ExpectationSyntaxError):
        return message
    annotation = _Annotation(found.group(1), designator, message, None, line, found.start() + 1)
    if not (is_regex or regex_after):
        return annotation
    # The message starts right after the '{{' that _message_of found.
    message_column = line_text.index("{{", pos) + 3
    regex = _compile_regex(message, message_column, annotation)
    if isinstance(regex, ExpectationSyntaxError):
        return regex
    return dataclasses.replace(annotation, regex=regex)


def _parse_designator(
    line_text: str, pos: int, line: int, name: str
) -> tuple[str, int] | ExpectationSyntaxError:
    """The ``@...`` location after ``pos`` ('' if absent) and the offset after it."""
    # MLIR allows spaces before the '@' too: 'expected-error @below {{...}}'.
    at = len(line_text) - len(line_text[pos:].lstrip(" \t"))
    if not line_text.startswith("@", at):
        return "", pos
    match = _DESIGNATOR.match(line_text, at)
    if match is None:
        return _bad_designator(line_text, at, line, name)
    return match.group(1), match.end()


def _optional_suffix(line_text: str, pos: int) -> tuple[int, bool]:
    if line_text.startswith("-re", pos):
        return pos + 3, True
    return pos, False


def _bad_designator(line_text: str, pos: int, line: int, name: str) -> ExpectationSyntaxError:
    written = _BAD_DESIGNATOR.match(line_text, pos)
    shown = written.group() if written else "@"
    message = (
        f"invalid location '{shown}' in {name} (expected @+N, @-N, @N, @above, @below or @unknown)"
    )
    return ExpectationSyntaxError(line, pos + 1, message)


def _message_of(line_text: str, pos: int, line: int, name: str) -> str | ExpectationSyntaxError:
    """The text between ``{{`` at ``pos`` (after spaces) and the line's last ``}}``."""
    start = len(line_text) - len(line_text[pos:].lstrip(" \t"))
    if not line_text.startswith("{{", start):
        return ExpectationSyntaxError(line, start + 1, f"expected '{{{{' after {name}")
    close = line_text.rfind("}}")
    if close < start + 2:
        message = f"missing '}}}}' to close the message of {name}"
        return ExpectationSyntaxError(line, start + 1, message)
    if line_text[close + 2 :].strip():
        message = f"unexpected text after the message of {name}"
        return ExpectationSyntaxError(line, close + 3, message)
    return line_text[start + 2 : close]


def _compile_regex(
    message: str, message_column: int, annotation: _Annotation
) -> str | ExpectationSyntaxError:
    """Escape the literal parts of a ``-re`` message and keep its ``{{...}}`` pieces.

    Each piece is compiled on its own first, so an error names the piece and its column
    instead of an offset into a regex the user never wrote.
    """
    pieces: list[str] = []
    pos = 0
    name = f"expected-{annotation.severity}-re"
    for piece in _REGEX_PIECE.finditer(message):
        problem = _regex_problem(piece.group(1))
        if problem:
            column = message_column + piece.start(1)
            text = f"invalid regex '{piece.group(1)}' in {name}: {problem}"
            return ExpectationSyntaxError(annotation.line, column, text)
        pieces.extend([re.escape(message[pos : piece.start()]), f"(?:{piece.group(1)})"])
        pos = piece.end()
    pieces.append(re.escape(message[pos:]))
    regex = "".join(pieces)
    problem = _regex_problem(regex)
    if problem:
        text = f"invalid regex in {name}: {problem}"
        return ExpectationSyntaxError(annotation.line, annotation.column, text)
    return regex


def _regex_problem(regex: str) -> str:
    try:
        re.compile(regex)
    except re.error as error:
        return error.msg
    return ""


def _resolve_line(
    annotation: _Annotation, index: int, lines: list[str], annotated: set[int], first_line: int
) -> int | None | ExpectationSyntaxError:
    """The absolute line an annotation is about, from its 0-based ``index`` in the chunk."""
    designator = annotation.designator
    if designator == "unknown":
        return None
    if designator in ("above", "below"):
        step = -1 if designator == "above" else 1
        target = _nearest_plain_line(index, step, len(lines), annotated)
        if target is None:
            return _designator_error(annotation, f"there is no line {designator} it")
        return first_line + target
    line = _designated_line(annotation)
    if line < 1:
        return _designator_error(annotation, f"it refers to line {line}, before the file")
    return line


def _designated_line(annotation: _Annotation) -> int:
    designator = annotation.designator
    if not designator:
        return annotation.line
    if designator[0] in "+-":
        return annotation.line + int(designator)
    return int(designator)


def _nearest_plain_line(index: int, step: int, count: int, annotated: set[int]) -> int | None:
    candidate = index + step
    while 0 <= candidate < count and candidate in annotated:
        candidate += step
    return candidate if 0 <= candidate < count else None


def _designator_error(annotation: _Annotation, why: str) -> ExpectationSyntaxError:
    message = f"expected-{annotation.severity}@{annotation.designator} is misplaced: {why}"
    return ExpectationSyntaxError(annotation.line, annotation.column, message)


def _match(
    expectations: Sequence[Expectation], emitted: Sequence[EmittedDiagnostic]
) -> dict[int, int]:
    """Maximum matching (Kuhn's algorithm): expectation index -> diagnostic index."""
    candidates = [
        [index for index, expectation in enumerate(expectations) if expectation.accepts(d)]
        for d in emitted
    ]
    owner: dict[int, int] = {}
    for diagnostic in range(len(emitted)):
        _augment(diagnostic, candidates, owner, set())
    return owner


def _augment(
    diagnostic: int, candidates: list[list[int]], owner: dict[int, int], visited: set[int]
) -> bool:
    for expectation in candidates[diagnostic]:
        if expectation in visited:
            continue
        visited.add(expectation)
        if expectation not in owner or _augment(owner[expectation], candidates, owner, visited):
            owner[expectation] = diagnostic
            return True
    return False


def _missing(expectation: Expectation, source_name: str) -> str:
    return (
        f"{source_name}:{expectation.annotation_line}: error: "
        f'expected {expectation.severity} "{expectation.message}" was not produced'
    )


def _unexpected(diagnostic: EmittedDiagnostic, source_name: str) -> str:
    location = source_name
    if diagnostic.line is not None:
        location += f":{diagnostic.line}"
    if diagnostic.line is not None and diagnostic.column is not None:
        location += f":{diagnostic.column}"
    header = f"{location}: error: unexpected {diagnostic.severity}: {diagnostic.message}"
    snippet = diagnostic.rendered.split("\n")[1:]
    return "\n".join([header, *(line for line in snippet if line.strip())])
