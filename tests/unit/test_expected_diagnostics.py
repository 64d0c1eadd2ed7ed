"""--verify-diagnostics: annotation parsing, line resolution and matching."""

from __future__ import annotations

import pytest

from crane.tools.expected_diagnostics import (
    EmittedDiagnostic,
    Expectation,
    ExpectationSyntaxError,
    check_diagnostics,
    parse_expectations,
    verify_diagnostics,
)
from crane.tools.split_input import split_input


def parse_ok(text: str, first_line: int = 1) -> list[Expectation]:
    expectations, errors = parse_expectations(text, first_line)
    assert errors == []
    return expectations


def only(text: str, first_line: int = 1) -> Expectation:
    (expectation,) = parse_ok(text, first_line)
    return expectation


def parse_errors(text: str) -> list[str]:
    expectations, errors = parse_expectations(text)
    assert expectations == []
    return [error.render("t.crn") for error in errors]


def diag(
    severity: str, line: int | None, message: str, column: int | None = None, rendered: str = ""
) -> EmittedDiagnostic:
    return EmittedDiagnostic(severity, line, message, rendered, column)


# --- parsing ---------------------------------------------------------------------------


def test_same_line_annotation() -> None:
    expectation = only('"x.y"() // expected-error {{bad op}}')
    assert expectation == Expectation("error", 1, "bad op", 1, 12)


@pytest.mark.parametrize("severity", ["error", "warning", "note", "remark"])
def test_all_severities(severity: str) -> None:
    assert only(f"// expected-{severity} {{{{m}}}}").severity == severity


@pytest.mark.parametrize(
    ("designator", "line"),
    [("+1", 4), ("+3", 6), ("-1", 2), ("-2", 1), ("2", 2), ("7", 7), ("unknown", None)],
)
def test_designators(designator: str, line: int | None) -> None:
    text = "a\nb\n// expected-error@" + designator + " {{m}}\nc\nd\ne\nf\n"
    expectation = only(text)
    assert expectation.line == line
    assert expectation.annotation_line == 3


def test_space_before_designator_and_message_is_allowed() -> None:
    assert only("x\n// expected-error @-1   {{m}}").line == 1


def test_above_and_below_skip_annotation_lines() -> None:
    text = (
        "op1\n"  # 1
        "// expected-error@below {{e1}}\n"  # 2
        "// expected-note@below {{n1}}\n"  # 3
        "op4\n"  # 4
        "// expected-warning@above {{w}}\n"  # 5
        "op6 // expected-error {{same line}}\n"  # 6
        "// expected-remark@above {{r}}\n"  # 7
        "// expected-error@below {{e2}}\n"  # 8
        "op9 // expected-error {{there}}\n"  # 9
        "op10\n"  # 10
    )
    lines = {(e.severity, e.message): e.line for e in parse_ok(text)}
    assert lines == {
        ("error", "e1"): 4,
        ("note", "n1"): 4,
        ("warning", "w"): 4,
        ("error", "same line"): 6,
        ("remark", "r"): 4,
        ("error", "e2"): 10,
        ("error", "there"): 9,
    }


def test_first_line_offsets_every_line() -> None:
    text = "op\n// expected-error@above {{a}}\n// expected-error@+1 {{b}}\nop\n"
    a, b = parse_ok(text, first_line=41)
    assert (a.line, a.annotation_line) == (41, 42)
    assert (b.line, b.annotation_line) == (44, 43)


def test_message_runs_to_the_last_closing_braces() -> None:
    assert only("// expected-error {{a }} b {{c}}").message == "a }} b {{c"
    assert only("// expected-error {{}}").message == ""
    assert only("// expected-error {{ spaced }}  ").message == " spaced "


def test_annotation_in_the_middle_of_a_comment() -> None:
    assert only("// note: expected-error {{m}}").annotation_column == 10


@pytest.mark.parametrize(
    "text",
    [
        "// expected-error-re {{a}}",
        "// expected-error-re@+0 {{a}}",
        "// expected-error@+0-re {{a}}",
    ],
)
def test_regex_suffix_either_side_of_the_designator(text: str) -> None:
    expectation = only(text)
    assert expectation.regex is not None
    assert expectation.line == 1


def test_regex_pieces_and_literal_parts() -> None:
    expectation = only("// expected-error-re {{value {{[0-9]+}} (of {{.*}}) is bad.}}")
    assert expectation.matches("the value 42 (of %x) is bad.")
    assert not expectation.matches("the value x (of %x) is bad.")
    # Literal parts are escaped: '(' and '.' mean themselves.
    assert not expectation.matches("value 42 Xof %xY is bad!")


def test_plain_message_is_a_substring_match_without_regex_meaning() -> None:
    expectation = only("// expected-error {{a.b [0-9]}}")
    assert expectation.regex is None
    assert expectation.matches("xx a.b [0-9] yy")
    assert not expectation.matches("a-b 5")


def test_words_that_merely_start_alike_are_not_annotations() -> None:
    assert parse_expectations("// expected-errors: none\n// unexpected-errorx\n") == ([], [])


@pytest.mark.parametrize(
    ("text", "rendered"),
    [
        ("// expected-error m", "t.crn:1:19: error: expected '{{' after expected-error"),
        ("// expected-error {m}", "t.crn:1:19: error: expected '{{' after expected-error"),
        (
            "// expected-warning {{oops",
            "t.crn:1:21: error: missing '}}' to close the message of expected-warning",
        ),
        (
            "// expected-error {{a}} trailing",
            "t.crn:1:24: error: unexpected text after the message of expected-error",
        ),
        (
            "// expected-error@+x {{a}}",
            "t.crn:1:18: error: invalid location '@+x' in expected-error "
            "(expected @+N, @-N, @N, @above, @below or @unknown)",
        ),
        (
            "// expected-note@abovex {{a}}",
            "t.crn:1:17: error: invalid location '@abovex' in expected-note "
            "(expected @+N, @-N, @N, @above, @below or @unknown)",
        ),
        (
            "// expected-error-re {{a {{(}} b}}",
            "t.crn:1:28: error: invalid regex '(' in expected-error-re: "
            "missing ), unterminated subpattern",
        ),
        (
            "// expected-error@above {{a}}",
            "t.crn:1:4: error: expected-error@above is misplaced: there is no line above it",
        ),
        (
            "// expected-error@below {{a}}",
            "t.crn:1:4: error: expected-error@below is misplaced: there is no line below it",
        ),
        (
            "// expected-error@-1 {{a}}",
            "t.crn:1:4: error: expected-error@-1 is misplaced: it refers to line 0, before the file",
        ),
    ],
)
def test_malformed_annotations_are_reported(text: str, rendered: str) -> None:
    assert parse_errors(text) == [rendered]


def test_malformed_annotation_still_counts_as_an_annotation_line() -> None:
    text = "op\n// expected-error {oops}\n// expected-error@above {{m}}\n"
    expectations, errors = parse_expectations(text)
    assert [e.line for e in expectations] == [1]
    assert errors == [ExpectationSyntaxError(2, 19, "expected '{{' after expected-error")]


def test_expectation_syntax_error_default_source_name() -> None:
    assert ExpectationSyntaxError(3, 4, "m").render() == "<input>:3:4: error: m"


# --- checking --------------------------------------------------------------------------


def test_exact_match_succeeds() -> None:
    expectations = parse_ok("// expected-error@+1 {{bad}}\nop\n")
    assert check_diagnostics(expectations, [diag("error", 2, "a bad op")]) == []


def test_missing_diagnostic() -> None:
    expectations = parse_ok("op\n// expected-error@-1 {{bad op}}\n")
    assert check_diagnostics(expectations, [], "t.crn") == [
        't.crn:2: error: expected error "bad op" was not produced'
    ]


def test_unexpected_diagnostic_with_snippet() -> None:
    rendered = "t.crn:3:5: error: type mismatch\n  %x = add %a\n    ^"
    failures = check_diagnostics([], [diag("error", 3, "type mismatch", 5, rendered)], "t.crn")
    assert failures == ["t.crn:3:5: error: unexpected error: type mismatch\n  %x = add %a\n    ^"]


def test_unexpected_without_column_or_location() -> None:
    failures = check_diagnostics(
        [], [diag("warning", 3, "w"), diag("remark", None, "r")], source_name="t.crn"
    )
    assert failures == [
        "t.crn:3: error: unexpected warning: w",
        "t.crn: error: unexpected remark: r",
    ]


def test_wrong_text_on_the_right_line_gives_both_failures() -> None:
    expectations = parse_ok("op // expected-error {{expected i32}}\n")
    failures = check_diagnostics(expectations, [diag("error", 1, "expected f32", 1)], "t.crn")
    assert failures == [
        't.crn:1: error: expected error "expected i32" was not produced',
        "t.crn:1:1: error: unexpected error: expected f32",
    ]


def test_wrong_line_gives_both_failures() -> None:
    expectations = parse_ok("// expected-error@+2 {{m}}\nop\nop\n")
    failures = check_diagnostics(expectations, [diag("error", 2, "m")], "f")
    assert failures == [
        'f:1: error: expected error "m" was not produced',
        "f:2: error: unexpected error: m",
    ]


def test_wrong_severity_gives_both_failures() -> None:
    expectations = parse_ok("op // expected-warning {{m}}\n")
    assert len(check_diagnostics(expectations, [diag("error", 1, "m")])) == 2


def test_each_expectation_takes_exactly_one_diagnostic() -> None:
    expectations = parse_ok("op // expected-error {{dup}}\n")
    failures = check_diagnostics(
        expectations, [diag("error", 1, "dup"), diag("error", 1, "dup")], "f"
    )
    assert failures == ["f:1: error: unexpected error: dup"]


def test_two_expectations_for_two_diagnostics_on_one_line() -> None:
    text = "// expected-error@+2 {{dup}}\n// expected-error@+1 {{dup}}\nop\n"
    emitted = [diag("error", 3, "dup"), diag("error", 3, "dup")]
    assert check_diagnostics(parse_ok(text), emitted) == []


def test_matching_does_not_depend_on_emission_order() -> None:
    # A greedy matcher would give "ab" to the looser "a" and then fail on "a".
    text = "// expected-error@+2 {{a}}\n// expected-error@+1 {{ab}}\nop\n"
    emitted = [diag("error", 3, "ab"), diag("error", 3, "a")]
    assert check_diagnostics(parse_ok(text), emitted) == []
    assert check_diagnostics(parse_ok(text), emitted[::-1]) == []


def test_unknown_location() -> None:
    expectations = parse_ok("// expected-error@unknown {{no loc}}\n")
    assert check_diagnostics(expectations, [diag("error", None, "has no loc")]) == []
    assert len(check_diagnostics(expectations, [diag("error", 1, "no loc")])) == 2


def test_notes_must_be_expected_too() -> None:
    expectations = parse_ok("op // expected-error {{e}}\n")
    failures = check_diagnostics(expectations, [diag("error", 1, "e"), diag("note", 1, "see")], "f")
    assert failures == ["f:1: error: unexpected note: see"]


def test_failures_are_ordered_by_line_unknown_last() -> None:
    expectations = parse_ok("// expected-error@+3 {{late}}\nop\nop\nop\n")
    emitted = [diag("error", None, "u"), diag("error", 2, "early")]
    failures = check_diagnostics(expectations, emitted, "f")
    assert failures == [
        'f:1: error: expected error "late" was not produced',
        "f:2: error: unexpected error: early",
        "f: error: unexpected error: u",
    ]


def test_regex_expectation_failure_shows_the_written_message() -> None:
    expectations = parse_ok("op // expected-error-re {{got {{[0-9]+}}}}\n")
    assert check_diagnostics(expectations, [diag("error", 1, "got 12")]) == []
    assert check_diagnostics(expectations, [], "f")[0] == (
        'f:1: error: expected error "got {{[0-9]+}}" was not produced'
    )


# --- verify_diagnostics with split input ------------------------------------------------


def test_split_chunks_report_absolute_lines() -> None:
    text = (
        "op1\n"  # 1
        "// -----\n"  # 2
        "// expected-error@+1 {{first}}\n"  # 3
        "op4\n"  # 4
        "// -----\n"  # 5
        "op6 // expected-error {{second}}\n"  # 6
        "// expected-error@+1 {{bad\n"  # 7
    )
    chunks = split_input(text)
    emitted_per_chunk = [[], [diag("error", 4, "first")], [diag("error", 6, "other")]]
    failures = [
        failure
        for chunk, emitted in zip(chunks, emitted_per_chunk, strict=True)
        for failure in verify_diagnostics(chunk.text, emitted, "t.crn", chunk.first_line)
    ]
    assert failures == [
        "t.crn:7:22: error: missing '}}' to close the message of expected-error",
        't.crn:6: error: expected error "second" was not produced',
        "t.crn:6: error: unexpected error: other",
    ]


def test_verify_diagnostics_success_is_an_empty_list() -> None:
    text = "op // expected-warning {{careful}}\n"
    assert verify_diagnostics(text, [diag("warning", 1, "be careful")]) == []
