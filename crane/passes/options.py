"""Bind parsed pipeline options to the fields of a frozen-dataclass pass.

A pass declares its options as typed dataclass fields, each optionally followed by an
attribute docstring (the string literal right after the field), which becomes its help
text in ``--list-passes``::

    @dataclass(frozen=True)
    class Partition(Pass):
        max_tiles: int = 16
        \"\"\"Upper bound on tiles per segment.\"\"\"
        policy: Literal["greedy", "ilp"] = "greedy"

is written ``partition{max-tiles=8 policy=ilp}``: field names are spelled with dashes.
Errors are ``PipelineSyntaxError`` located at the offending key or value, so the driver
renders them against the pipeline text exactly like syntax errors.

A field's range is declared in its type with ``Annotated`` (the rules of
:mod:`crane.limits.ranges`), so that one rule checks every
pass when the pipeline is parsed (and :func:`check_option_values` when a pass is built
in Python)::

    max_tiles: Annotated[int, Between(1, 4096)] = 16
    alignment: Annotated[int, PowerOfTwo(2**20)] = 64
    objective: Annotated[str, Checked(parse_objective, "edp, latency, energy or 'L^p E^q'")] = "edp"

``nan`` is refused for every float option; a declared range also refuses ``inf``.
"""

from __future__ import annotations

import ast
import dataclasses
import difflib
import inspect
import math
import re
import sys
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from crane.limits.ranges import Between, Checked, PowerOfTwo
from crane.passes.pipeline_text import PassEntry, PassOption, PipelineSyntaxError, Span

_INT = re.compile(r"[+-]?[0-9]+")
_FLOAT = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|[+-]?(?:inf|nan)", re.I)
_BOOLS = {"true": True, "yes": True, "1": True, "false": False, "no": False, "0": False}
_NONE = "none"


class OptionValueError(ValueError):
    """A pass built in Python with an option value outside its declared range."""


@dataclass(frozen=True)
class OptionInfo:
    """What ``--list-passes`` shows about one option of a pass."""

    field_name: str
    cli_name: str
    """The name written in a pipeline: the field name with '_' spelled '-'."""
    type_text: str
    """E.g. ``int``, ``tuple[int, ...]``, ``'greedy' | 'ilp'``, ``float | None``."""
    default_text: str | None
    """The default as it would be written in a pipeline; None if the option is required."""
    doc: str
    """The field's attribute docstring, cleaned; empty if absent or source is unavailable."""

    @property
    def required(self) -> bool:
        """Whether the pipeline must give this option."""
        return self.default_text is None


class _Rejected(Exception):
    """A value that does not convert.

    ``hint`` is appended to the error ("; did you mean 'x'?"); ``detail`` replaces the
    generic "got 'text'" for list items, which ``offset``/``length`` locate in the value.
    """

    def __init__(
        self, hint: str = "", detail: str = "", offset: int = 0, length: int | None = None
    ) -> None:
        super().__init__(detail or hint)
        self.hint = hint
        self.detail = detail
        self.offset = offset
        self.length = length


@dataclass(frozen=True)
class _Converter:
    """Turns the text of one option value into the Python value of one field type."""

    type_text: str
    noun: str
    """How an error names the expected value: 'an integer'."""
    plural: str
    """How a list error names its items: 'integers'."""
    convert: Callable[[str], object]
    """Raises ``_Rejected`` for text that is not a value of this type."""
    takes_flag: bool = False
    """Whether a bare key (no '=') is accepted, meaning true."""

    @classmethod
    def scalar(
        cls, type_text: str, noun: str, plural: str, convert: Callable[[str], object]
    ) -> _Converter:
        """A converter for a plain type; only ``bool`` accepts a bare key."""
        return cls(type_text, noun, plural, convert, takes_flag=type_text == "bool")


@dataclass(frozen=True)
class _OptionSpec:
    """One bindable field: its names and how to convert and describe its values."""

    field_name: str
    cli_name: str
    converter: _Converter
    default_text: str | None


def option_infos(cls: type) -> tuple[OptionInfo, ...]:
    """The options of pass class ``cls``, in field order, with docs from its source.

    Raises ``TypeError`` if ``cls`` is not a dataclass or a field has a type that cannot
    be written in a pipeline, so that a badly declared pass fails at registration.
    """
    docs = _attribute_docs(cls)
    return tuple(
        OptionInfo(
            spec.field_name,
            spec.cli_name,
            spec.converter.type_text,
            spec.default_text,
            docs.get(spec.field_name, ""),
        )
        for spec in _option_specs(cls)
    )


def bind_options(cls: type, entry: PassEntry) -> dict[str, object]:
    """Constructor keyword arguments for ``cls`` from the options of ``entry``.

    Options not given are left out, so the dataclass defaults apply.
    """
    specs = {spec.cli_name: spec for spec in _option_specs(cls)}
    kwargs: dict[str, object] = {}
    for option in entry.options:
        spec = specs.get(option.key)
        if spec is None:
            raise _unknown_option(entry, option, tuple(specs))
        if spec.field_name in kwargs:
            raise PipelineSyntaxError(f"duplicate option '{option.key}'", option.key_span)
        kwargs[spec.field_name] = _convert_option(entry, option, spec.converter)
    missing = [
        spec.cli_name
        for spec in specs.values()
        if spec.default_text is None and spec.field_name not in kwargs
    ]
    if missing:
        listing = ", ".join(f"'{name}'" for name in missing)
        noun = "option" if len(missing) == 1 else "options"
        raise PipelineSyntaxError(f"pass '{entry.name}' requires {noun} {listing}", entry.name_span)
    return kwargs


def check_option_values(instance: Any) -> None:
    """Raise :class:`OptionValueError` if a field of a pass built in Python is outside the
    range its type declares (the same rule as pipeline text, applied to the value's text)."""
    cls = type(instance)
    try:
        specs = _option_specs(cls)
    except TypeError:
        return  # fields no pipeline can spell: such a pass is never registered
    for spec in specs:
        value = getattr(instance, spec.field_name)
        if value is None:
            continue
        text = format_option_value(value)
        try:
            spec.converter.convert(text)
        except _Rejected as rejected:
            subject = f"option '{spec.cli_name}' of pass '{getattr(cls, 'name', cls.__name__)}'"
            raise OptionValueError(_rejection_message(subject, spec.converter, text, rejected)) from None


def format_option_value(value: object) -> str:
    """``value`` as option text: ``true``, ``3``, ``0.5``, ``1,2,3``, ``none``.

    The result is unquoted; ``quote_option_value`` adds quotes where a pipeline needs
    them. Strings containing ',' inside a tuple do not survive a round trip.
    """
    if value is None:
        return _NONE
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, tuple | list):
        return ",".join(format_option_value(item) for item in value)
    return str(value)


def closest_match(word: str, candidates: typing.Iterable[str]) -> str | None:
    """The candidate a typo most likely meant, for "did you mean" hints."""
    choices = list(candidates)
    # Python spellings of dashed names are the most common slip, and difflib's ratio
    # can rank another candidate above them.
    if word.replace("_", "-") in choices:
        return word.replace("_", "-")
    matches = difflib.get_close_matches(word, choices, n=1, cutoff=0.6)
    return matches[0] if matches else None


_SPECS: dict[type, list[_OptionSpec]] = {}
"""Each pass class's option specs, built once (annotations are evaluated to build them)."""


def _option_specs(cls: type) -> list[_OptionSpec]:
    known = _SPECS.get(cls)
    if known is None:
        known = _SPECS[cls] = _build_option_specs(cls)
    return known


def _build_option_specs(cls: type) -> list[_OptionSpec]:
    if not (isinstance(cls, type) and dataclasses.is_dataclass(cls)):
        raise TypeError(f"{cls!r} is not a dataclass, so it has no options")
    specs = []
    for f in dataclasses.fields(cls):
        if not f.init or f.name.startswith("_"):
            continue
        try:
            converter = _converter_for(_resolve_annotation(cls, f))
        except TypeError as error:
            raise TypeError(f"option '{cls.__name__}.{f.name}': {error}") from None
        specs.append(_OptionSpec(f.name, f.name.replace("_", "-"), converter, _default_text(f)))
    return specs


def _resolve_annotation(cls: type, f: dataclasses.Field[object]) -> object:
    """The field's type, evaluating a string annotation (``from __future__ import annotations``).

    Only this field's annotation is evaluated, unlike ``typing.get_type_hints``, so a
    base class annotated with names imported under ``TYPE_CHECKING`` does not break
    its subclasses' options.
    """
    if not isinstance(f.type, str):
        return f.type
    owner = next(
        (klass for klass in cls.__mro__ if f.name in vars(klass).get("__annotations__", {})),
        cls,
    )
    module = sys.modules.get(owner.__module__)
    namespace = dict(vars(module)) if module is not None else {}
    try:
        # The same evaluation inspect.get_annotations(eval_str=True) performs.
        return eval(f.type, namespace, dict(vars(owner)))
    except NameError as error:
        raise TypeError(f"cannot resolve the annotation '{f.type}': {error}") from None


def _default_text(f: dataclasses.Field[object]) -> str | None:
    if f.default is not dataclasses.MISSING:
        return format_option_value(f.default)
    if f.default_factory is not dataclasses.MISSING:
        return format_option_value(f.default_factory())
    return None


def _converter_for(annotation: object) -> _Converter:
    scalar = _SCALARS.get(annotation)
    if scalar is not None:
        return scalar
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Annotated:
        return _constrained(_converter_for(args[0]), args[1:])
    if origin is typing.Literal:
        return _literal_converter(args)
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        return _list_converter(_item_converter(args[0]))
    if origin in (typing.Union, types.UnionType) and len(args) == 2 and type(None) in args:
        inner = args[0] if args[1] is type(None) else args[1]
        return _optional_converter(_converter_for(inner))
    raise TypeError(f"unsupported option type {annotation!r}")


def _constrained(inner: _Converter, metadata: tuple[object, ...]) -> _Converter:
    """``inner`` narrowed by the ``Between`` / ``PowerOfTwo`` / ``Checked`` in ``metadata``."""
    rules = [m for m in metadata if isinstance(m, Between | PowerOfTwo | Checked)]
    noun, plural, type_text = inner.noun, inner.plural, inner.type_text
    for rule in rules:
        (noun, plural), type_text = rule.describe(noun, plural), rule.type_text(type_text)

    def convert(text: str) -> object:
        value = inner.convert(text)
        for rule in rules:
            if not rule.accepts(value):
                raise _Rejected(hint=rule.why(value) if isinstance(rule, Checked) else "")
        return value

    return _Converter(type_text, noun, plural, convert, inner.takes_flag)


def _item_converter(annotation: object) -> _Converter:
    # Nested lists and 'none' items have no unambiguous comma-separated spelling.
    if typing.get_origin(annotation) in (tuple, typing.Union, types.UnionType):
        raise TypeError(f"unsupported list item type {annotation!r}")
    return _converter_for(annotation)


def _convert_int(text: str) -> object:
    if _INT.fullmatch(text) is None:
        raise _Rejected()
    return int(text)


def _convert_float(text: str) -> object:
    if _FLOAT.fullmatch(text) is None:
        raise _Rejected()
    value = float(text)
    if math.isnan(value):  # no option means anything by it; a declared range also refuses inf
        raise _Rejected(hint=" (nan is not a number an option can take)")
    return value


def _convert_bool(text: str) -> object:
    value = _BOOLS.get(text.lower())
    if value is None:
        raise _Rejected()
    return value


def _convert_str(text: str) -> object:
    return text


_SCALARS: dict[object, _Converter] = {
    int: _Converter.scalar("int", "an integer", "integers", _convert_int),
    float: _Converter.scalar("float", "a number", "numbers", _convert_float),
    bool: _Converter.scalar(
        "bool", "a boolean (true/false, yes/no, 1/0)", "booleans", _convert_bool
    ),
    str: _Converter.scalar("str", "a string", "strings", _convert_str),
}


def _literal_converter(choices: tuple[object, ...]) -> _Converter:
    by_text = {format_option_value(choice): choice for choice in choices}
    listing = ", ".join(f"'{text}'" for text in by_text)

    def convert(text: str) -> object:
        if text in by_text:
            return by_text[text]
        guess = closest_match(text, by_text)
        raise _Rejected(hint=f"; did you mean '{guess}'?" if guess else "")

    type_text = " | ".join(
        f"'{text}'" if isinstance(choice, str) else text for text, choice in by_text.items()
    )
    return _Converter(type_text, f"one of {listing}", f"values among {listing}", convert)


def _list_converter(item: _Converter) -> _Converter:
    def convert(text: str) -> object:
        if not text.strip():
            return ()
        values, offset = [], 0
        for index, piece in enumerate(text.split(",")):
            values.append(_convert_item(item, piece, index, offset))
            offset += len(piece) + 1
        return tuple(values)

    noun = f"a comma-separated list of {item.plural}"
    return _Converter(f"tuple[{item.type_text}, ...]", noun, f"lists of {item.plural}", convert)


def _convert_item(item: _Converter, piece: str, index: int, offset: int) -> object:
    try:
        return item.convert(piece.strip())
    except _Rejected as rejected:
        detail = f"item {index + 1} '{piece.strip()}' is not {item.noun}{rejected.hint}"
        raise _Rejected(detail=detail, offset=offset, length=len(piece)) from None


def _optional_converter(inner: _Converter) -> _Converter:
    def convert(text: str) -> object:
        if text == _NONE:
            return None
        return inner.convert(text)

    return _Converter(
        f"{inner.type_text} | None",
        f"{inner.noun} or 'none'",
        f"{inner.plural} or 'none'",
        convert,
        takes_flag=inner.takes_flag,
    )


def _convert_option(entry: PassEntry, option: PassOption, converter: _Converter) -> object:
    subject = f"option '{option.key}' of pass '{entry.name}'"
    if option.value is None:
        if converter.takes_flag:
            return True
        raise PipelineSyntaxError(f"{subject} requires a value ({converter.noun})", option.key_span)
    try:
        return converter.convert(option.value)
    except _Rejected as rejected:
        raise PipelineSyntaxError(
            _rejection_message(subject, converter, option.value, rejected),
            _rejection_span(option, rejected),
        ) from None


def _rejection_message(subject: str, converter: _Converter, value: str, rejected: _Rejected) -> str:
    if rejected.detail:
        return f"{subject} expects {converter.noun}; {rejected.detail}"
    return f"{subject} expects {converter.noun}, got '{value}'{rejected.hint}"


def _rejection_span(option: PassOption, rejected: _Rejected) -> Span:
    """Narrow to the rejected item when the value was written bare, so offsets agree."""
    span = option.value_span or option.key_span
    bare = option.value is not None and span.end - span.start == len(option.value)
    if rejected.length is None or not bare:
        return span
    start = span.start + rejected.offset
    return Span(start, start + rejected.length)


def _unknown_option(
    entry: PassEntry, option: PassOption, valid: tuple[str, ...]
) -> PipelineSyntaxError:
    if not valid:
        message = f"unknown option '{option.key}': pass '{entry.name}' takes no options"
        return PipelineSyntaxError(message, option.key_span)
    guess = closest_match(option.key, valid)
    hint = f"; did you mean '{guess}'?" if guess else ""
    message = (
        f"unknown option '{option.key}' for pass '{entry.name}'{hint} "
        f"(valid options: {', '.join(valid)})"
    )
    return PipelineSyntaxError(message, option.key_span)


def _attribute_docs(cls: type) -> dict[str, str]:
    """Attribute docstrings of ``cls`` and its bases; a subclass's doc wins."""
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__[:-1]):
        docs.update(_class_attribute_docs(klass))
    return docs


def _class_attribute_docs(klass: type) -> dict[str, str]:
    try:
        source = inspect.getsource(klass)
        tree = ast.parse(_dedent(source))
    except (OSError, TypeError, SyntaxError):
        # Classes built in a REPL, by exec, or in C have no retrievable source.
        return {}
    classdef = next((node for node in tree.body if isinstance(node, ast.ClassDef)), None)
    if classdef is None:
        return {}
    return dict(_documented_fields(classdef.body))


def _documented_fields(body: list[ast.stmt]) -> typing.Iterator[tuple[str, str]]:
    for statement, following in zip(body, body[1:], strict=False):
        doc = _string_statement(following)
        if doc is None or not isinstance(statement, ast.AnnAssign):
            continue
        if isinstance(statement.target, ast.Name):
            yield statement.target.id, inspect.cleandoc(doc)


def _string_statement(statement: ast.stmt) -> str | None:
    if not (isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant)):
        return None
    value = statement.value.value
    return value if isinstance(value, str) else None


def _dedent(source: str) -> str:
    """Remove the class line's indentation, so a class nested in a function parses.

    Lines indented less than that are continuation lines of a string literal and are
    left alone, which keeps the literal's text intact.
    """
    first = source.split("\n", 1)[0]
    indent = first[: len(first) - len(first.lstrip())]
    if not indent:
        return source
    lines = source.split("\n")
    return "\n".join(line[len(indent) :] if line.startswith(indent) else line for line in lines)
