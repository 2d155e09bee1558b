import pytest

from textkit import layout

LOREM = "the quick brown fox jumps over the lazy dog"


class TestWrap:
    def test_fits_width(self):
        lines = layout.wrap(LOREM, width=15)
        assert lines == ["the quick brown", "fox jumps over", "the lazy dog"]
        assert all(len(line) <= 15 for line in lines)

    def test_long_word_gets_own_line(self):
        assert layout.wrap("a supercalifragilistic b", width=8) == ["a", "supercalifragilistic", "b"]

    def test_indent(self):
        assert layout.wrap("one two three", width=9, indent="> ") == ["> one two", "> three"]

    def test_empty(self):
        assert layout.wrap("", width=10) == []

    def test_width_too_small_for_indent(self):
        with pytest.raises(ValueError):
            layout.wrap("x", width=2, indent="  ")


@pytest.mark.parametrize(
    "line, width, want",
    [
        ("a b c", 7, "a  b  c"),
        ("a b c", 8, "a   b  c"),
        ("one", 10, "one"),
        ("already wide", 5, "already wide"),
    ],
)
def test_justify_line(line, width, want):
    assert layout.justify_line(line, width) == want


def test_justify():
    got = layout.justify(LOREM, width=15)
    assert got.split("\n") == ["the quick brown", "fox  jumps over", "the lazy dog"]


def test_justify_empty():
    assert layout.justify("", 10) == ""


@pytest.mark.parametrize(
    "text, width, fill, want",
    [("ab", 6, " ", "  ab  "), ("ab", 5, "*", "*ab**"), ("long", 2, " ", "long")],
)
def test_center(text, width, fill, want):
    assert layout.center(text, width, fill) == want


def test_center_rejects_long_fill():
    with pytest.raises(ValueError):
        layout.center("x", 5, fill="ab")


@pytest.mark.parametrize(
    "text, limit, kwargs, want",
    [
        ("short", 10, {}, "short"),
        ("hello brave new world", 12, {}, "hello brave\u2026"),
        ("hello brave new world", 12, {"at_word": False}, "hello brave\u2026"),
        ("hello brave new world", 10, {"marker": "..."}, "hello..."),
        ("abcdefghij", 6, {}, "abcde\u2026"),
        ("abcdef", 2, {"marker": "..."}, ".."),
    ],
)
def test_truncate(text, limit, kwargs, want):
    got = layout.truncate(text, limit, **kwargs)
    assert got == want
    assert len(got) <= limit


def test_indent_skips_blank_lines():
    assert layout.indent("a\n\nb\n", "> ") == "> a\n\n> b\n"


def test_indent_all_lines():
    assert layout.indent("a\n\nb", "-", skip_blank=False) == "-a\n-\n-b"


def test_dedent():
    assert layout.dedent("    a\n      b\n") == "a\n  b\n"


class TestTable:
    def test_headers_and_alignment(self):
        got = layout.table([["apple", 3], ["kiwi", 12]], headers=["fruit", "n"])
        assert got.split("\n") == [
            "fruit | n",
            "------|---",
            "apple |  3",
            "kiwi  | 12",
        ]

    def test_floats_and_missing_cells(self):
        got = layout.table([["a", 1.5], ["bb"]])
        assert got.split("\n") == ["a  | 1.50", "bb |"]

    def test_custom_separator(self):
        assert layout.table([[1, 2]], separator=",") == "1,2"

    def test_booleans_are_text(self):
        got = layout.table([[True], [10]])
        assert got.split("\n") == ["True", "10"]

    def test_empty(self):
        assert layout.table([]) == ""


def test_columns():
    items = ["a", "b", "c", "d", "e"]
    assert layout.columns(items, width=7, gap=1).split("\n") == ["a c e", "b d"]


def test_columns_single_column_when_narrow():
    assert layout.columns(["long", "items"], width=3) == "long\nitems"


def test_columns_empty():
    assert layout.columns([]) == ""
