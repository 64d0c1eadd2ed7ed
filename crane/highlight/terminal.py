"""Colour on a terminal: highlighted IR and `.crn` text, and coloured diagnostics.

``use_color`` decides (``--color=auto|always|never``), ``colorize`` highlights text with
the Pygments lexers of this package, ``color_diagnostics`` colours rendered diagnostics
(``file:line:col: error: message``, the source line, the caret) the way clang does.

This module imports no Pygments at import time: ``colorize`` imports it when called, so
that a tool that never colours (``crane-opt --version``, output to a pipe) never pays for
it. Colour is only ever added: removing the ANSI escapes (:data:`ANSI_ESCAPE`) from the
result of ``colorize`` or ``color_diagnostics`` gives back the text exactly.
"""

from __future__ import annotations

import io
import os
import re
from collections.abc import Mapping
from typing import Any, Literal, TextIO

Language = Literal["ir", "crn"]
ColorMode = Literal["auto", "always", "never"]

ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;]*m")
"""An SGR escape sequence, as written by ``colorize`` and ``color_diagnostics``."""

_BOLD, _RESET = "\x1b[1m", "\x1b[0m"
_SEVERITY_COLORS = {"error": "\x1b[1;31m", "warning": "\x1b[1;35m", "note": "\x1b[1;36m",
                    "remark": "\x1b[1;34m"}
_CARET_COLOR = "\x1b[1;32m"
_HEADER = re.compile(
    r"(?P<where>.*?:\d+:\d+: |crane-[a-z]+: )?(?P<severity>error|warning|note|remark): (?P<message>.*)"
)
"""The first line of a rendered diagnostic (``crane.ir.diagnostics.render``) or of a
one-line tool error (``crane-opt: error: ...``)."""
_CARET = re.compile(r" *\^~*")


def use_color(mode: str, stream: TextIO, environ: Mapping[str, str] | None = None) -> bool:
    """Whether to colour what goes to ``stream``.

    ``always`` and ``never`` decide alone. ``auto`` colours only a terminal, and not when
    ``NO_COLOR`` is set to a non-empty value (https://no-color.org) or ``TERM`` is ``dumb``.
    """
    if mode != "auto":
        return mode == "always"
    env = os.environ if environ is None else environ
    if env.get("NO_COLOR") or env.get("TERM") == "dumb":
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


def colorize(text: str, language: Language, environ: Mapping[str, str] | None = None) -> str:
    """``text`` highlighted with ANSI colours for a terminal (``language``: ``ir`` or ``crn``).

    The palette suits the background that ``COLORFGBG`` names (dark when unset).
    """
    from pygments.formatters.terminal import TerminalFormatter

    lexer = _lexer(language)
    formatter = TerminalFormatter(colorscheme=_palette(), bg="dark" if _dark(environ) else "light")
    out = io.StringIO()
    # The lexer's own tokens, not ``lexer.get_tokens``: that one rewrites newlines and tabs.
    formatter.format(((token, value) for _, token, value in lexer.get_tokens_unprocessed(text)), out)
    return out.getvalue()


def color_diagnostics(text: str) -> str:
    """Rendered diagnostics with a bold location, coloured severity and a green caret."""
    lines = text.split("\n")
    out: list[str] = []
    index = 0
    while index < len(lines):
        header = _HEADER.fullmatch(lines[index])
        if header is None:
            out.append(lines[index])
            index += 1
            continue
        out.append(_color_header(header))
        index += 1
        # A source line and its caret follow a header; the source line stays as it is.
        if index + 1 < len(lines) and _CARET.fullmatch(lines[index + 1]):
            out += [lines[index], _CARET_COLOR + lines[index + 1] + _RESET]
            index += 2
    return "\n".join(out)


def strip_ansi(text: str) -> str:
    """``text`` without its ANSI colour escapes."""
    return ANSI_ESCAPE.sub("", text)


def _color_header(header: re.Match[str]) -> str:
    where, severity, message = header.group("where") or "", header.group("severity"), header.group("message")
    located = f"{_BOLD}{where}{_RESET}" if where else ""
    return f"{located}{_SEVERITY_COLORS[severity]}{severity}:{_RESET} {_BOLD}{message}{_RESET}"


def _lexer(language: Language) -> Any:
    if language == "crn":
        from crane.highlight.crn_lexer import CrnLexer

        return CrnLexer()
    from crane.highlight.ir_lexer import CraneIRLexer

    return CraneIRLexer()


def _dark(environ: Mapping[str, str] | None) -> bool:
    """Whether the terminal background is dark: ``COLORFGBG`` is ``fg;bg``, bg 7 or 15 is light."""
    env = os.environ if environ is None else environ
    background = env.get("COLORFGBG", "").rpartition(";")[2]
    return background not in ("7", "15")


def _palette() -> dict[Any, tuple[str, str]]:
    """Token type -> (colour on a light background, on a dark one), in Pygments' notation
    (``*x*`` is bold, ``_x_`` underlined). Whitespace gets no colour: no escapes around
    indentation."""
    from pygments.token import (
        Comment,
        Error,
        Keyword,
        Name,
        Number,
        Operator,
        String,
        Token,
        Whitespace,
    )

    return {
        Token: ("", ""),
        Whitespace: ("", ""),
        Comment: ("gray", "brightblack"),
        Keyword: ("*magenta*", "*brightmagenta*"),
        Keyword.Type: ("green", "brightgreen"),
        Keyword.Constant: ("magenta", "brightmagenta"),
        Keyword.Pseudo: ("gray", "brightblack"),
        Operator.Word: ("magenta", "brightmagenta"),
        Name.Builtin: ("*blue*", "*brightblue*"),
        Name.Function: ("*green*", "*brightgreen*"),
        Name.Class: ("*green*", "*brightgreen*"),
        Name.Variable: ("cyan", "brightcyan"),
        Name.Label: ("*magenta*", "*brightmagenta*"),
        Name.Constant: ("magenta", "brightmagenta"),
        Number: ("magenta", "brightmagenta"),
        String: ("red", "brightyellow"),
        String.Escape: ("*red*", "*brightyellow*"),
        Error: ("_red_", "_brightred_"),
    }
