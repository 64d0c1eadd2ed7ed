"""Pipeline text: parsing, spans, located errors, canonical printing and round trips."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crane.passes.pipeline_text import (
    PassEntry,
    PassOption,
    PipelineNode,
    PipelineSyntaxError,
    Span,
    format_pipeline,
    is_valid_name,
    line_and_column,
    parse_pass_list,
    parse_pipeline,
    quote_option_value,
)


def entry(pass_name: str, /, **options: str | None) -> PassEntry:
    return PassEntry.make(pass_name, tuple(PassOption.make(k, v) for k, v in options.items()))


def error_of(text: str) -> PipelineSyntaxError:
    with pytest.raises(PipelineSyntaxError) as caught:
        parse_pipeline(text)
    return caught.value


def column_of(text: str) -> int:
    return line_and_column(text, error_of(text).span.start)[1]


# --- structure -------------------------------------------------------------------------


def test_nested_pipeline_structure() -> None:
    node = parse_pipeline('builtin.module(graph.func(cse,foo{k=3 name="x"}),bar)')
    assert node == PipelineNode.anchored(
        "builtin.module",
        (
            PipelineNode.anchored("graph.func", (entry("cse"), entry("foo", k="3", name="x"))),
            entry("bar"),
        ),
    )


def test_flat_list_has_no_anchor() -> None:
    node = parse_pipeline("a,b{k=v}")
    assert node.anchor is None
    assert node == PipelineNode.flat((entry("a"), entry("b", k="v")))


def test_single_pass_is_a_flat_list() -> None:
    assert parse_pipeline("cse") == PipelineNode.flat((entry("cse"),))


def test_parse_pass_list_always_wraps() -> None:
    nested = parse_pipeline("builtin.module(cse)")
    assert parse_pass_list("builtin.module(cse)") == PipelineNode.flat((nested,))


def test_flat_list_may_mix_nested_pipelines() -> None:
    node = parse_pipeline("graph.func(cse),dce")
    assert node.anchor is None
    assert node.elements == (PipelineNode.anchored("graph.func", (entry("cse"),)), entry("dce"))


@pytest.mark.parametrize("text", ["builtin.module()", "builtin.module( )", " builtin.module ( ) "])
def test_empty_anchor(text: str) -> None:
    node = parse_pipeline(text)
    assert node == PipelineNode.anchored("builtin.module", ())
    assert text[node.span.start : node.span.end].replace(" ", "") == "builtin.module()"


@pytest.mark.parametrize("text", ["", "   ", "\n\t"])
def test_empty_text_is_an_empty_flat_list(text: str) -> None:
    assert parse_pipeline(text) == PipelineNode.flat(())


def test_whitespace_between_all_tokens() -> None:
    spaced = ' m ( f ( a , b { k = 1  s = "x" flag } ) , c ) '
    assert parse_pipeline(spaced) == parse_pipeline('m(f(a,b{k=1 s="x" flag}),c)')


def test_names_may_hold_dots_dashes_digits_underscores() -> None:
    node = parse_pipeline("_x.y-z9(a-b_c.d)")
    assert node.anchor == "_x.y-z9"
    assert node.elements == (entry("a-b_c.d"),)


def test_empty_options_mean_no_options() -> None:
    assert parse_pipeline("foo{}") == parse_pipeline("foo") == parse_pipeline("foo{ }")


def test_bare_key_has_no_value() -> None:
    (option,) = parse_pipeline("foo{verbose}").elements[0].options  # type: ignore[union-attr]
    assert option.value is None
    assert option.value_span is None


@pytest.mark.parametrize(
    ("written", "value"),
    [
        ("1,2,3", "1,2,3"),
        ("-0.5", "-0.5"),
        ("^bb0", "^bb0"),
        ("a.b.c", "a.b.c"),
        ("x=y", "x=y"),
        ('"with space"', "with space"),
        ('"esc \\" quote"', 'esc " quote'),
        ('"back \\\\ slash"', "back \\ slash"),
        ('"keep \\n"', "keep \\n"),
        ('""', ""),
        ('"a}b)c(d{"', "a}b)c(d{"),
        ("{a=1 b={c}}", "{a=1 b={c}}"),
        ('{s="}"}', '{s="}"}'),
    ],
)
def test_option_values(written: str, value: str) -> None:
    text = f"foo{{k={written}}}"
    option = parse_pipeline(text).elements[0].options[0]  # type: ignore[union-attr]
    assert option.value == value
    assert option.value_span is not None
    assert text[option.value_span.start : option.value_span.end] == written


# --- spans -----------------------------------------------------------------------------


def test_spans_point_into_the_text() -> None:
    text = 'builtin.module(graph.func(cse, foo{k=3 name="x y"}))'
    node = parse_pipeline(text)
    inner = node.elements[0]
    assert isinstance(inner, PipelineNode)
    cse, foo = inner.elements
    assert isinstance(cse, PassEntry) and isinstance(foo, PassEntry)
    assert (node.span.start, node.span.end) == (0, len(text))
    assert text[inner.span.start : inner.span.end] == 'graph.func(cse, foo{k=3 name="x y"})'
    assert inner.anchor_span == Span(15, 25)
    assert text[cse.span.start : cse.span.end] == "cse"
    assert text[foo.span.start : foo.span.end] == 'foo{k=3 name="x y"}'
    assert text[foo.name_span.start : foo.name_span.end] == "foo"
    key, name = foo.options
    assert (key.key_span, key.value_span) == (Span(35, 36), Span(37, 38))
    assert text[name.value_span.start : name.value_span.end] == '"x y"'  # type: ignore[union-attr]


def test_spans_do_not_affect_equality() -> None:
    assert parse_pipeline("a,b") == parse_pipeline("  a ,   b")
    assert hash(parse_pipeline("a{k=1}")) == hash(parse_pipeline("a{ k = 1 }"))


def test_option_lookup() -> None:
    foo = parse_pipeline("foo{a=1 b}").elements[0]
    assert isinstance(foo, PassEntry)
    assert foo.option("a") == PassOption.make("a", "1")
    assert foo.option("b") == PassOption.make("b")
    assert foo.option("c") is None


# --- errors ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "column", "message"),
    [
        ("a,b,", 4, "trailing ',': expected a pass name after it"),
        ("m(a, )", 4, "trailing ',' before ')'"),
        ("m(a", 2, "missing ')' to close 'm('"),
        ("m(f(a)", 2, "missing ')' to close 'm('"),
        ("m(f(a", 4, "missing ')' to close 'f('"),
        ("m(", 2, "missing ')' to close 'm('"),
        ("a)", 2, "unmatched ')'"),
        ("m(a))", 5, "unmatched ')'"),
        ("m(a})", 4, "unmatched '}'"),
        ("}", 1, "unmatched '}'"),
        ("a,,b", 3, "expected a pass name, got ','"),
        (",a", 1, "expected a pass name, got ','"),
        ("m(,a)", 3, "expected a pass name, got ','"),
        ("(cse)", 1, "expected an anchor name before '('"),
        ("{k=1}", 1, "expected a pass name before '{'"),
        ("1cse", 1, "invalid pass name '1cse': names start with a letter or '_'"),
        ("a b", 3, "expected ',' after 'a', got 'b'"),
        ("a;b", 2, "expected ',' after 'a', got ';'"),
        ("f{k=1}(x)", 7, "unexpected '(' after the options of 'f': an anchor takes no options"),
        ("m(a){k}", 5, "unexpected '{' after 'm(...)': options belong to a pass, not an anchor"),
        ("foo{k=1", 4, "missing '}' to close the options of 'foo'"),
        ("m(foo{k=1)", 10, "expected '}' to close the options of 'foo', got ')'"),
        ("foo{)", 5, "expected '}' to close the options of 'foo', got ')'"),
        ("foo{k=1 k=2}", 9, "duplicate option 'k' (first given at column 5)"),
        ("foo{a k=1 b k}", 13, "duplicate option 'k' (first given at column 7)"),
        ('foo{k="abc}', 7, "unterminated string"),
        ('foo{k="abc\\"}', 7, "unterminated string"),
        ("foo{k={a b}", 4, "missing '}' to close the options of 'foo'"),
        ("foo{k={a", 7, "missing '}' to close '{' in the value of option 'k'"),
        ("foo{=1}", 5, "expected an option name before '='"),
        ("foo{k=}", 6, "expected a value after '=' for option 'k'"),
        ("foo{k= }", 6, "expected a value after '=' for option 'k'"),
        ("foo{k=", 6, "expected a value after '=' for option 'k'"),
        ("foo{k=(1)}", 7, "expected a value for option 'k', got '('"),
        (
            "foo{a=1, b=2}",
            8,
            "trailing ',' in the value of option 'a' (options are separated by spaces)",
        ),
        ("foo{a,b}", 6, "options are separated by spaces, not ','"),
        ("foo{,a}", 5, "options are separated by spaces, not ','"),
        ('foo{k=a"b"}', 8, "expected a space or '}' after option 'k', got '\"'"),
        ("foo{k={x}y}", 10, "expected a space or '}' after option 'k', got 'y'"),
        ("foo{9k=1}", 5, "invalid option name '9k': names start with a letter or '_'"),
        ("foo{k=1 ;}", 9, "expected an option name, got ';'"),
    ],
)
def test_located_errors(text: str, column: int, message: str) -> None:
    error = error_of(text)
    assert error.message == message
    assert line_and_column(text, error.span.start)[1] == column
    assert str(error) == message


def test_duplicate_key_is_located_at_the_second_key() -> None:
    text = "m(foo{alpha=1 beta alpha=2})"
    error = error_of(text)
    assert text[error.span.start : error.span.end] == "alpha"
    assert error.span.start == text.rindex("alpha")
    assert error.message == "duplicate option 'alpha' (first given at column 7)"


def test_unterminated_string_spans_to_the_end() -> None:
    text = 'foo{k="abc def}'
    error = error_of(text)
    assert error.span == Span(6, len(text))


def test_render_with_caret_under_the_span() -> None:
    text = "builtin.module(foo{max-tiles=1 max-tiles=2})"
    assert error_of(text).render(text) == (
        "<pipeline>:1:32: error: duplicate option 'max-tiles' (first given at column 20)\n"
        "builtin.module(foo{max-tiles=1 max-tiles=2})\n"
        "                               ^~~~~~~~~"
    )


def test_render_source_name_and_single_caret() -> None:
    text = "a,b,"
    assert error_of(text).render(text, source_name="--pass-pipeline") == (
        "--pass-pipeline:1:4: error: trailing ',': expected a pass name after it\na,b,\n   ^"
    )


def test_render_at_end_of_text_still_shows_a_caret() -> None:
    error = PipelineSyntaxError("expected more", Span(3, 3))
    assert error.render("abc").splitlines()[1:] == ["abc", "   ^"]


def test_render_multiline_text_picks_the_right_line() -> None:
    text = "m(a,\n  b{k=1\n  k=2})"
    rendered = error_of(text).render(text)
    assert rendered.splitlines() == [
        "<pipeline>:3:3: error: duplicate option 'k' (first given at column 5)",
        "  k=2})",
        "  ^",
    ]


def test_render_keeps_tabs_for_alignment() -> None:
    text = "a,\tb c"
    lines = error_of(text).render(text).splitlines()
    assert lines[2] == "  \t  ^"


def test_error_survives_pickling() -> None:
    import pickle

    error = error_of("a,")
    copy = pickle.loads(pickle.dumps(error))
    assert (copy.message, copy.span) == (error.message, error.span)


# --- printing --------------------------------------------------------------------------


def test_format_canonical_text() -> None:
    text = ' builtin.module( graph.func( cse ,foo{ k = 3  name = "x" } ) ) '
    assert (
        format_pipeline(parse_pipeline(text)) == "builtin.module(graph.func(cse,foo{k=3 name=x}))"
    )


def test_format_quotes_only_when_needed() -> None:
    node = PipelineNode.flat(
        (
            entry(
                "foo",
                a="plain",
                b="two words",
                c='say "hi"',
                d="",
                e="1,2,",
                f="{a b}",
                g="{a",
                h="f(x)",
                i=None,
            ),
        )
    )
    assert format_pipeline(node) == (
        'foo{a=plain b="two words" c="say \\"hi\\"" d="" e="1,2," f={a b} g="{a" h="f(x)" i}'
    )


@pytest.mark.parametrize(
    ("value", "written"),
    [
        ("1,2,3", "1,2,3"),
        ("back\\slash", "back\\slash"),
        ("sp ace", '"sp ace"'),
        ("back\\ slash", '"back\\\\ slash"'),
        ("{x}{y}", '"{x}{y}"'),
        ('{"}"}', '{"}"}'),
    ],
)
def test_quote_option_value(value: str, written: str) -> None:
    assert quote_option_value(value) == written
    reparsed = parse_pipeline(f"p{{k={written}}}").elements[0].options[0]  # type: ignore[union-attr]
    assert reparsed.value == value


def test_format_empty_options_and_pipelines() -> None:
    assert format_pipeline(PipelineNode.anchored("m", ())) == "m()"
    assert format_pipeline(PipelineNode.flat(())) == ""
    assert format_pipeline(PipelineNode.flat((entry("a"), entry("b")))) == "a,b"


def test_is_valid_name() -> None:
    assert is_valid_name("graph.func")
    assert is_valid_name("_a-b.9")
    assert not is_valid_name("9a")
    assert not is_valid_name("a b")
    assert not is_valid_name("")


# --- round trip property ---------------------------------------------------------------

_FIRST = "abcxyzABZ_"
_REST = _FIRST + "0189.-"
# Built from alphabets rather than st.from_regex, which is several times slower.
_names = st.builds(
    lambda head, tail: head + tail,
    st.sampled_from(_FIRST),
    st.text(alphabet=_REST, max_size=8),
)
_values = st.one_of(
    st.none(),
    st.text(max_size=12),
    st.text(alphabet='abc{}" \\,=()-.^1', max_size=10),
    st.lists(st.integers(-999, 999), min_size=1, max_size=4).map(
        lambda items: ",".join(map(str, items))
    ),
)


@st.composite
def _entries(draw: st.DrawFn) -> PassEntry:
    keys = draw(st.lists(_names, max_size=4, unique=True))
    options = tuple(PassOption.make(key, draw(_values)) for key in keys)
    return PassEntry.make(draw(_names), options)


def _pipelines(max_leaves: int = 8) -> st.SearchStrategy[PipelineNode]:
    elements = st.recursive(
        _entries(),
        lambda inner: st.builds(
            PipelineNode.anchored, _names, st.lists(inner, max_size=4).map(tuple)
        ),
        max_leaves=max_leaves,
    )
    return st.builds(PipelineNode.anchored, _names, st.lists(elements, max_size=4).map(tuple))


@settings(max_examples=100, deadline=None)
@given(_pipelines())
def test_round_trip_nested(node: PipelineNode) -> None:
    text = format_pipeline(node)
    parsed = parse_pipeline(text)
    assert parsed == node
    assert format_pipeline(parsed) == text
    _check_spans(parsed, text)


@settings(max_examples=100, deadline=None)
@given(st.lists(_entries(), min_size=1, max_size=5).map(tuple))
def test_round_trip_flat(elements: tuple[PassEntry, ...]) -> None:
    node = PipelineNode.flat(elements)
    text = format_pipeline(node)
    assert parse_pass_list(text) == node
    assert parse_pipeline(text) == node


def _check_spans(node: PipelineNode, text: str) -> None:
    """Every recorded span must cover exactly the text it claims to come from."""
    assert text[node.span.start : node.span.end] == format_pipeline(node)
    for element in node.elements:
        if isinstance(element, PipelineNode):
            _check_spans(element, text)
            continue
        assert text[element.name_span.start : element.name_span.end] == element.name
        for option in element.options:
            assert text[option.key_span.start : option.key_span.end] == option.key
