"""--split-input-file: chunking at marker lines with absolute line numbers."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from crane.tools.split_input import (
    SPLIT_MARKER,
    Chunk,
    is_split_marker,
    join_outputs,
    near_miss_markers,
    split_input,
)


def test_no_marker_is_one_chunk() -> None:
    assert split_input("a\nb\n") == [Chunk("a\nb\n", 1)]


def test_empty_text_is_one_empty_chunk() -> None:
    assert split_input("") == [Chunk("", 1)]


def test_chunks_keep_absolute_first_lines() -> None:
    text = "a\nb\n// -----\nc\n// -----\n\nd\ne"
    assert split_input(text) == [Chunk("a\nb\n", 1), Chunk("c\n", 4), Chunk("\nd\ne", 6)]


def test_marker_with_surrounding_whitespace_splits() -> None:
    text = "a\n   // -----   \nb\n\t// -----\r\nc\n"
    assert split_input(text) == [Chunk("a\n", 1), Chunk("b\n", 3), Chunk("c\n", 5)]


def test_check_line_mentioning_the_marker_does_not_split() -> None:
    text = "a\n// CHECK: // -----\n// CHECK-NEXT: b\n%x = y // -----\n"
    assert split_input(text) == [Chunk(text, 1)]


def test_near_misses_do_not_split() -> None:
    text = "a\n//-----\n// ----\n// ------\n// ----- x\n"
    assert split_input(text) == [Chunk(text, 1)]


def test_markers_at_the_edges_give_empty_chunks() -> None:
    assert split_input("// -----\na\n// -----\n") == [
        Chunk("", 1),
        Chunk("a\n", 2),
        Chunk("", 4),
    ]


def test_marker_without_trailing_newline() -> None:
    assert split_input("a\n// -----") == [Chunk("a\n", 1), Chunk("", 3)]


def test_padded_text_puts_lines_where_they_are_in_the_file() -> None:
    text = "one\n// -----\nthree\nfour\n// -----\nsix\n"
    chunks = split_input(text)
    file_lines = text.split("\n")
    for chunk in chunks:
        padded = chunk.padded_text().split("\n")
        for number, line in enumerate(padded, start=1):
            if line:
                assert file_lines[number - 1] == line
    assert chunks[2].padded_text() == "\n" * 5 + "six\n"


def test_only_newlines_count_as_line_breaks() -> None:
    # str.splitlines would also break at \x0c and \u2028, and shift every later line.
    text = "a\x0cb\u2028c\n// -----\nd\n"
    assert split_input(text) == [Chunk("a\x0cb\u2028c\n", 1), Chunk("d\n", 3)]


def test_is_split_marker() -> None:
    assert is_split_marker("// -----")
    assert is_split_marker("  // -----  \n")
    assert not is_split_marker("// -----x")
    assert not is_split_marker("x // -----")
    assert not is_split_marker("// ------")


def test_near_miss_markers_reports_their_lines() -> None:
    text = "a\n//-----\n// -----\n// ----\n  //  ------\n// --- text\n"
    assert near_miss_markers(text) == [2, 4, 5]


def test_join_outputs() -> None:
    assert join_outputs(["a\n", "b\n"]) == "a\n// -----\nb\n"
    assert join_outputs(["a", "b"]) == "a\n// -----\nb\n"
    assert join_outputs(["", "b\n"]) == "// -----\nb\n"
    assert join_outputs(["only\n"]) == "only\n"
    assert join_outputs([]) == ""
    assert SPLIT_MARKER == "// -----"


_lines = st.lists(
    st.one_of(st.text(alphabet="ab /-\t", max_size=12), st.just(SPLIT_MARKER)), max_size=20
)


@given(_lines)
def test_every_line_lands_in_one_chunk_at_its_file_line(lines: list[str]) -> None:
    text = "\n".join(lines)
    chunks = split_input(text)
    markers = [number for number, line in enumerate(lines, start=1) if is_split_marker(line)]
    assert [chunk.first_line for chunk in chunks] == [1, *(m + 1 for m in markers)]
    placed: dict[int, str] = {}
    for chunk in chunks:
        for number, line in enumerate(chunk.padded_text().split("\n"), start=1):
            if number >= chunk.first_line and line:
                assert number not in placed
                placed[number] = line
    expected = {
        number: line for number, line in enumerate(lines, start=1) if line and number not in markers
    }
    assert placed == expected
