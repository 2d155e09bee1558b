import pytest

from textkit import tokens


@pytest.mark.parametrize(
    "text, want",
    [
        ("  hello   world ", "hello world"),
        ("a\tb\nc", "a b c"),
        ("", ""),
    ],
)
def test_normalize_whitespace(text, want):
    assert tokens.normalize_whitespace(text) == want


@pytest.mark.parametrize(
    "text, want",
    [("café", "cafe"), ("naïve façade", "naive facade"), ("plain", "plain"), ("Ångström", "Angstrom")],
)
def test_strip_accents(text, want):
    assert tokens.strip_accents(text) == want


class TestWords:
    def test_basic(self):
        assert tokens.words("Hello, world!") == ["Hello", "world"]

    def test_apostrophes_and_hyphens_stay(self):
        assert tokens.words("Don't split well-known words.") == ["Don't", "split", "well-known", "words"]

    def test_lower(self):
        assert tokens.words("The CAT", lower=True) == ["the", "cat"]

    def test_numbers_dropped(self):
        assert tokens.words("route 66 and 7 bridges", keep_numbers=False) == ["route", "and", "bridges"]

    def test_numbers_kept_by_default(self):
        assert tokens.words("3 little pigs") == ["3", "little", "pigs"]

    def test_underscores_split(self):
        assert tokens.words("snake_case_name") == ["snake", "case", "name"]

    def test_empty(self):
        assert tokens.words("") == []


class TestSentences:
    def test_simple(self):
        assert tokens.sentences("One. Two! Three?") == ["One.", "Two!", "Three?"]

    def test_abbreviation_does_not_split(self):
        text = "Dr. Smith arrived. He was late."
        assert tokens.sentences(text) == ["Dr. Smith arrived.", "He was late."]

    def test_initial_does_not_split(self):
        assert tokens.sentences("J. R. R. Tolkien wrote books. Many.") == [
            "J. R. R. Tolkien wrote books.",
            "Many.",
        ]

    def test_trailing_text_without_period(self):
        assert tokens.sentences("First. And then") == ["First.", "And then"]

    def test_repeated_punctuation(self):
        assert tokens.sentences("Really?! Yes...") == ["Really?!", "Yes..."]

    def test_empty(self):
        assert tokens.sentences("   ") == []


@pytest.mark.parametrize(
    "items, n, want",
    [
        ("abc", 2, [("a", "b"), ("b", "c")]),
        ([1, 2, 3], 3, [(1, 2, 3)]),
        ([1, 2], 3, []),
    ],
)
def test_ngrams(items, n, want):
    assert tokens.ngrams(items, n) == want


def test_ngrams_padding():
    assert tokens.ngrams(["x", "y"], 2, pad="_") == [("_", "x"), ("x", "y"), ("y", "_")]


def test_ngrams_rejects_zero():
    with pytest.raises(ValueError, match="positive"):
        tokens.ngrams("abc", 0)


def test_char_ngrams():
    assert tokens.char_ngrams("text", 3) == ["tex", "ext"]


@pytest.mark.parametrize(
    "name, want",
    [
        ("parseHTTPResponse", ["parse", "HTTP", "Response"]),
        ("PascalCase", ["Pascal", "Case"]),
        ("snake_case", ["snake", "case"]),
        ("kebab-case name", ["kebab", "case", "name"]),
        ("", []),
    ],
)
def test_split_camel(name, want):
    assert tokens.split_camel(name) == want


def test_line_spans():
    text = "ab\ncde\r\n\nf"
    assert tokens.line_spans(text) == [(0, 2), (3, 6), (8, 8), (9, 10)]
    assert [text[s:e] for s, e in tokens.line_spans(text)] == ["ab", "cde", "", "f"]
