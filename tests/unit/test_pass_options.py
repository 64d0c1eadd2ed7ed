"""Binding pipeline options to frozen-dataclass pass fields."""

from __future__ import annotations

import re
import sys
import types
from dataclasses import dataclass, field
from typing import ClassVar, Literal, Optional

import pytest

from crane.passes.options import (
    OptionInfo,
    bind_options,
    closest_match,
    format_option_value,
    option_infos,
)
from crane.passes.pipeline_text import (
    PassEntry,
    PipelineSyntaxError,
    format_pipeline,
    line_and_column,
    parse_pipeline,
    quote_option_value,
)
from crane.passes.registry import PassRegistry


@dataclass(frozen=True)
class Partition:
    """A pass shaped like the ones crane registers."""

    name: ClassVar[str] = "partition"
    max_tiles: int = 16
    """Upper bound on tiles
    per segment."""
    policy: Literal["greedy", "ilp"] = "greedy"
    """Search policy."""
    sizes: tuple[int, ...] = (1, 2)
    ratios: tuple[float, ...] = field(default_factory=tuple)
    tags: tuple[str, ...] = ("a",)
    scale: float | None = None
    """None keeps the machine's scale."""
    verbose: bool = False
    label: str = "x"
    _cache: int = 0
    """Private: not an option."""
    derived: int = field(init=False, default=0)


@dataclass(frozen=True)
class Required:
    count: int
    level: Optional[int] = None  # noqa: UP045 - the typing.Optional spelling must work too
    flag: bool | None = None


@dataclass(frozen=True)
class NoOptions:
    pass


@dataclass(frozen=True)
class Base:
    depth: int = 1
    """Depth from the base."""
    width: int = 2
    """Width from the base."""


@dataclass(frozen=True)
class Derived(Base):
    width: int = 3
    """Width from the subclass."""
    height: int = 4


def entry_of(text: str) -> PassEntry:
    node = parse_pipeline(text)
    element = node.elements[0]
    assert isinstance(element, PassEntry)
    return element


def bind(cls: type, text: str) -> dict[str, object]:
    return bind_options(cls, entry_of(text))


def bind_error(cls: type, text: str) -> tuple[str, str, int]:
    """The message, the text under the error's span, and its 1-based column."""
    with pytest.raises(PipelineSyntaxError) as caught:
        bind(cls, text)
    error = caught.value
    return error.message, text[error.span.start : error.span.end], error.span.start + 1


# --- option_infos ----------------------------------------------------------------------


def test_option_infos_lists_fields_in_order_with_docs() -> None:
    infos = option_infos(Partition)
    assert [info.cli_name for info in infos] == [
        "max-tiles",
        "policy",
        "sizes",
        "ratios",
        "tags",
        "scale",
        "verbose",
        "label",
    ]
    assert infos[0] == OptionInfo(
        "max_tiles", "max-tiles", "int", "16", "Upper bound on tiles\nper segment."
    )
    assert infos[1] == OptionInfo(
        "policy", "policy", "'greedy' | 'ilp'", "greedy", "Search policy."
    )
    assert infos[2].type_text == "tuple[int, ...]" and infos[2].default_text == "1,2"
    assert infos[3].type_text == "tuple[float, ...]" and infos[3].default_text == ""
    assert infos[5] == OptionInfo(
        "scale", "scale", "float | None", "none", "None keeps the machine's scale."
    )
    assert infos[6].doc == "" and infos[6].default_text == "false"
    assert not any(info.required for info in infos)


def test_required_and_optional_spellings() -> None:
    count, level, flag = option_infos(Required)
    assert count.required and count.default_text is None
    assert level.type_text == "int | None" and not level.required
    assert flag.type_text == "bool | None"


def test_docs_are_inherited_and_overridden() -> None:
    docs = {info.cli_name: info.doc for info in option_infos(Derived)}
    assert docs == {
        "depth": "Depth from the base.",
        "width": "Width from the subclass.",
        "height": "",
    }
    assert [info.default_text for info in option_infos(Derived)] == ["1", "3", "4"]


def test_class_defined_in_a_function_gets_docs() -> None:
    @dataclass(frozen=True)
    class Local:
        k: int = 1
        """Local doc."""

    assert option_infos(Local)[0].doc == "Local doc."


def test_class_without_source_has_empty_docs() -> None:
    namespace: dict[str, object] = {}
    source = (
        "from dataclasses import dataclass\n"
        "@dataclass(frozen=True)\n"
        "class Dynamic:\n"
        "    k: int = 1\n"
        "    'A doc nobody can read back.'\n"
    )
    exec(compile(source, "<generated>", "exec"), namespace)
    (info,) = option_infos(namespace["Dynamic"])  # type: ignore[arg-type]
    assert (info.cli_name, info.doc) == ("k", "")


def test_slots_dataclass_gets_docs() -> None:
    @dataclass(frozen=True, slots=True)
    class Slotted:
        k: int = 1
        """Slotted doc."""

    assert option_infos(Slotted)[0].doc == "Slotted doc."


def test_not_a_dataclass_is_rejected() -> None:
    with pytest.raises(TypeError, match="not a dataclass"):
        option_infos(int)


def test_unsupported_field_type_is_rejected_with_its_name() -> None:
    @dataclass(frozen=True)
    class Bad:
        table: dict[str, int] = field(default_factory=dict)

    with pytest.raises(TypeError, match=r"option 'Bad.table': unsupported option type"):
        option_infos(Bad)


@pytest.mark.parametrize("annotation", ["tuple[tuple[int, ...], ...]", "tuple[int | None, ...]"])
def test_nested_list_types_are_rejected(annotation: str) -> None:
    namespace: dict[str, object] = {}
    source = f"from dataclasses import dataclass\n@dataclass\nclass P:\n    k: {annotation} = ()\n"
    exec(source, namespace)
    with pytest.raises(TypeError, match="unsupported list item type"):
        option_infos(namespace["P"])  # type: ignore[arg-type]


def test_unresolvable_annotation_is_a_type_error() -> None:
    @dataclass(frozen=True)
    class Forward:
        k: Missing = 1  # type: ignore[name-defined]  # noqa: F821

    with pytest.raises(
        TypeError, match=r"option 'Forward.k': cannot resolve the annotation 'Missing'"
    ):
        option_infos(Forward)


def test_only_option_annotations_are_resolved(monkeypatch: pytest.MonkeyPatch) -> None:
    # A real module, so dataclasses can see that 'ClassVar' is typing's.
    module = types.ModuleType("generated_passes")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    source = (
        "from __future__ import annotations\n"
        "from dataclasses import dataclass\n"
        "from typing import TYPE_CHECKING, ClassVar\n"
        "if TYPE_CHECKING:\n"
        "    from nowhere import Thing\n"
        "@dataclass(frozen=True)\n"
        "class Base:\n"
        "    helper: ClassVar[Thing | None] = None\n"
        "@dataclass(frozen=True)\n"
        "class Child(Base):\n"
        "    k: int = 1\n"
    )
    exec(compile(source, "<generated>", "exec"), module.__dict__)
    child = module.Child
    assert [info.cli_name for info in option_infos(child)] == ["k"]


def test_no_options() -> None:
    assert option_infos(NoOptions) == ()
    assert bind(NoOptions, "noop") == {}


# --- bind_options: values --------------------------------------------------------------


def test_bind_all_types() -> None:
    kwargs = bind(
        Partition,
        'partition{max-tiles=-8 policy=ilp sizes=3,4,5 ratios=0.5,1e-3,-.25 tags="x, y" '
        "scale=2.5 verbose label=^bb0}",
    )
    assert kwargs == {
        "max_tiles": -8,
        "policy": "ilp",
        "sizes": (3, 4, 5),
        "ratios": (0.5, 0.001, -0.25),
        "tags": ("x", "y"),
        "scale": 2.5,
        "verbose": True,
        "label": "^bb0",
    }
    assert Partition(**kwargs).sizes == (3, 4, 5)  # type: ignore[arg-type]


def test_options_not_given_are_left_to_the_defaults() -> None:
    assert bind(Partition, "partition{policy=ilp}") == {"policy": "ilp"}


@pytest.mark.parametrize(
    ("written", "value"),
    [
        ("true", True),
        ("false", False),
        ("1", True),
        ("0", False),
        ("yes", True),
        ("no", False),
        ("TRUE", True),
        ("No", False),
    ],
)
def test_bool_spellings(written: str, value: bool) -> None:
    assert bind(Partition, f"p{{verbose={written}}}") == {"verbose": value}


def test_none_and_empty_lists() -> None:
    assert bind(Partition, 'p{scale=none sizes="" tags=""}') == {
        "scale": None,
        "sizes": (),
        "tags": (),
    }
    assert bind(Required, "r{count=1 level=none flag}") == {"count": 1, "level": None, "flag": True}
    assert bind(Required, "r{count=1 level=7 flag=no}") == {"count": 1, "level": 7, "flag": False}


def test_float_accepts_integers_and_specials() -> None:
    assert bind(Partition, "p{scale=3}") == {"scale": 3.0}
    assert bind(Partition, "p{ratios=inf,-inf}") == {"ratios": (float("inf"), float("-inf"))}


def test_quoted_and_braced_strings() -> None:
    assert bind(Partition, 'p{label="a \\"b\\" c"}') == {"label": 'a "b" c'}
    assert bind(Partition, "p{label={x=1 y={2}}}") == {"label": "{x=1 y={2}}"}


def test_literal_with_non_string_choices() -> None:
    @dataclass(frozen=True)
    class Mixed:
        mode: Literal[1, 2, "auto"] = "auto"
        items: tuple[Literal["a", "b"], ...] = ()

    assert bind(Mixed, "m{mode=2 items=a,b,a}") == {"mode": 2, "items": ("a", "b", "a")}
    assert option_infos(Mixed)[0].type_text == "1 | 2 | 'auto'"
    message, _, _ = bind_error(Mixed, "m{items=a,c}")
    assert message == (
        "option 'items' of pass 'm' expects a comma-separated list of values among 'a', 'b'; "
        "item 2 'c' is not one of 'a', 'b'"
    )


# --- bind_options: errors --------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "message", "under", "column"),
    [
        (
            "partition{max-tile=3}",
            "unknown option 'max-tile' for pass 'partition'; did you mean 'max-tiles'? "
            "(valid options: max-tiles, policy, sizes, ratios, tags, scale, verbose, label)",
            "max-tile",
            11,
        ),
        (
            "partition{verbose max_tiles=3}",
            "unknown option 'max_tiles' for pass 'partition'; did you mean 'max-tiles'? "
            "(valid options: max-tiles, policy, sizes, ratios, tags, scale, verbose, label)",
            "max_tiles",
            19,
        ),
        (
            "partition{zzz}",
            "unknown option 'zzz' for pass 'partition' "
            "(valid options: max-tiles, policy, sizes, ratios, tags, scale, verbose, label)",
            "zzz",
            11,
        ),
        (
            "partition{max-tiles=abc}",
            "option 'max-tiles' of pass 'partition' expects an integer, got 'abc'",
            "abc",
            21,
        ),
        (
            "partition{max-tiles=1.5}",
            "option 'max-tiles' of pass 'partition' expects an integer, got '1.5'",
            "1.5",
            21,
        ),
        (
            "partition{max-tiles=1_000}",
            "option 'max-tiles' of pass 'partition' expects an integer, got '1_000'",
            "1_000",
            21,
        ),
        (
            'partition{max-tiles=""}',
            "option 'max-tiles' of pass 'partition' expects an integer, got ''",
            '""',
            21,
        ),
        (
            "partition{policy=gredy}",
            "option 'policy' of pass 'partition' expects one of 'greedy', 'ilp', got 'gredy'; "
            "did you mean 'greedy'?",
            "gredy",
            18,
        ),
        (
            "partition{policy=random}",
            "option 'policy' of pass 'partition' expects one of 'greedy', 'ilp', got 'random'",
            "random",
            18,
        ),
        (
            "partition{max-tiles}",
            "option 'max-tiles' of pass 'partition' requires a value (an integer)",
            "max-tiles",
            11,
        ),
        (
            "partition{policy}",
            "option 'policy' of pass 'partition' requires a value (one of 'greedy', 'ilp')",
            "policy",
            11,
        ),
        (
            "partition{verbose=maybe}",
            "option 'verbose' of pass 'partition' expects a boolean (true/false, yes/no, 1/0), "
            "got 'maybe'",
            "maybe",
            19,
        ),
        (
            "partition{scale=big}",
            "option 'scale' of pass 'partition' expects a number or 'none', got 'big'",
            "big",
            17,
        ),
        (
            "partition{sizes=1,x,3}",
            "option 'sizes' of pass 'partition' expects a comma-separated list of integers; "
            "item 2 'x' is not an integer",
            "x",
            19,
        ),
        (
            "partition{sizes=1,2,,4}",
            "option 'sizes' of pass 'partition' expects a comma-separated list of integers; "
            "item 3 '' is not an integer",
            "",
            21,
        ),
        (
            'partition{sizes="1, x"}',
            "option 'sizes' of pass 'partition' expects a comma-separated list of integers; "
            "item 2 'x' is not an integer",
            '"1, x"',
            17,
        ),
        (
            "noop{k=1}",
            "unknown option 'k': pass 'noop' takes no options",
            "k",
            6,
        ),
    ],
)
def test_bind_errors(text: str, message: str, under: str, column: int) -> None:
    cls = NoOptions if text.startswith("noop") else Partition
    assert bind_error(cls, text) == (message, under, column)


def test_missing_required_option_points_at_the_pass_name() -> None:
    text = "builtin.module(count-things{level=1})"
    node = parse_pipeline(text)
    element = node.elements[0]
    assert isinstance(element, PassEntry)
    with pytest.raises(PipelineSyntaxError) as caught:
        bind_options(Required, element)
    assert caught.value.message == "pass 'count-things' requires option 'count'"
    assert text[caught.value.span.start : caught.value.span.end] == "count-things"


def test_bind_error_renders_against_the_pipeline() -> None:
    text = "builtin.module(partition{sizes=1,2,x})"
    node = parse_pipeline(text)
    element = node.elements[0]
    assert isinstance(element, PassEntry)
    with pytest.raises(PipelineSyntaxError) as caught:
        bind_options(Partition, element)
    assert caught.value.render(text).splitlines() == [
        "<pipeline>:1:36: error: option 'sizes' of pass 'partition' expects a comma-separated "
        "list of integers; item 3 'x' is not an integer",
        text,
        " " * 35 + "^",
    ]
    assert line_and_column(text, caught.value.span.start) == (1, 36)


def test_duplicate_in_a_hand_built_entry() -> None:
    from crane.passes.pipeline_text import PassOption

    entry = PassEntry.make("p", (PassOption.make("label", "a"), PassOption.make("label", "b")))
    with pytest.raises(PipelineSyntaxError, match="duplicate option 'label'"):
        bind_options(Partition, entry)


# --- printing --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (True, "true"),
        (False, "false"),
        (None, "none"),
        (3, "3"),
        (-2, "-2"),
        (0.5, "0.5"),
        (1e-05, "1e-05"),
        ("greedy", "greedy"),
        ((1, 2, 3), "1,2,3"),
        ((), ""),
        ((0.5, True), "0.5,true"),
    ],
)
def test_format_option_value(value: object, text: str) -> None:
    assert format_option_value(value) == text


def test_bound_values_print_back_to_the_same_binding() -> None:
    """Binding, printing the values, and binding again is the identity."""
    text = 'partition{max-tiles=8 ratios="" tags="x y,z" scale=0.1 verbose=false label=""}'
    kwargs = bind(Partition, text)
    infos = {info.field_name: info.cli_name for info in option_infos(Partition)}
    printed = " ".join(
        f"{infos[name]}={quote_option_value(format_option_value(value))}"
        for name, value in kwargs.items()
    )
    again = bind(Partition, "partition{" + printed + "}")
    assert again == kwargs
    assert format_pipeline(parse_pipeline("partition{" + printed + "}")).startswith("partition{")


def test_closest_match() -> None:
    assert closest_match("max_tiles", ["max-tiles", "max-tile-count"]) == "max-tiles"
    assert closest_match("polcy", ["policy", "verbose"]) == "policy"
    assert closest_match("zzz", ["policy", "verbose"]) is None
    assert closest_match("x", []) is None


def test_every_number_option_of_every_pass_declares_its_range() -> None:
    """One rule for every pass (issue 24): an int or float option says its range in its type
    (``crane.limits.ranges``), so the pipeline parser refuses what the pass cannot take."""
    registry = PassRegistry.with_in_tree_passes()
    passes = [(name, registry.lookup(name)) for name in registry.names()]
    options = [(name, info) for name, cls in passes if cls is not None for info in option_infos(cls)]
    unbounded = [f"{name}{{{info.cli_name}}}: {info.type_text}" for name, info in options
                 if re.search(r"\b(int|float)\b(?! in [\[(]| \(power of two)", info.type_text)]
    assert not unbounded, unbounded
    assert len(registry.names()) > 10
