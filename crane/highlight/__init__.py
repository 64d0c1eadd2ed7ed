"""Syntax highlighting for `.crn` and Crane IR: Pygments lexers and terminal colour.

- :class:`crane.highlight.crn_lexer.CrnLexer` (``pygmentize -l crn``) and
  :class:`crane.highlight.ir_lexer.CraneIRLexer` (``pygmentize -l crane-ir``), registered
  as Pygments plugins (entry point group ``pygments.lexers``), so that Sphinx, MkDocs and
  ``pygmentize`` find them by name or file suffix (``docs/highlighting.md``).
- :func:`colorize` highlights text for a terminal; :func:`color_diagnostics` colours
  ``file:line:col: error: ...`` diagnostics; :func:`use_color` implements
  ``--color=auto|always|never``.

Importing this package does not import Pygments (``crane-opt`` imports it and must start
fast); the lexer modules do, and :func:`colorize` imports them when it is called.
"""

from crane.highlight.terminal import (
    ANSI_ESCAPE,
    ColorMode,
    Language,
    color_diagnostics,
    colorize,
    strip_ansi,
    use_color,
)

__all__ = ["ANSI_ESCAPE", "ColorMode", "Language", "color_diagnostics", "colorize",
           "strip_ansi", "use_color"]
