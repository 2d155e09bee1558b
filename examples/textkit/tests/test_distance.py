import pytest

from textkit import distance


@pytest.mark.parametrize(
    "a, b, want",
    [
        ("kitten", "sitting", 3),
        ("flaw", "lawn", 2),
        ("", "abc", 3),
        ("ab", "ba", 2),
    ],
)
def test_levenshtein(a, b, want):
    assert distance.levenshtein(a, b) == want
    assert distance.levenshtein(b, a) == want


def test_levenshtein_substitution_cost():
    assert distance.levenshtein("cat", "cut", substitution_cost=2) == 2


@pytest.mark.parametrize("a, b, want", [("karolin", "kathrin", 3), ("", "", 0), ("abc", "abc", 0)])
def test_hamming(a, b, want):
    assert distance.hamming(a, b) == want


def test_hamming_rejects_unequal_lengths():
    with pytest.raises(ValueError, match="equal lengths"):
        distance.hamming("a", "ab")


@pytest.mark.parametrize(
    "a, b, want",
    [("", "", 1.0), ("abcd", "abcd", 1.0), ("abcd", "abcf", 0.75), ("ab", "xy", 0.0)],
)
def test_similarity(a, b, want):
    assert distance.similarity(a, b) == pytest.approx(want)


@pytest.mark.parametrize(
    "a, b, want",
    [("ABCBDAB", "BDCABA", 4), ("abc", "abc", 3), ("abc", "def", 0)],
)
def test_lcs_length(a, b, want):
    assert distance.lcs_length(a, b) == want


@pytest.mark.parametrize(
    "a, b, want",
    [
        ("xabcdey", "zzabcdzz", "abcd"),
        ("hello", "yellow", "ello"),
        ("abc", "xyz", ""),
    ],
)
def test_longest_common_substring(a, b, want):
    assert distance.longest_common_substring(a, b) == want


@pytest.mark.parametrize(
    "a, b, want",
    [("abc", "bcd", 0.5), ([], [], 1.0), ("aa", "a", 1.0), ([1, 2], [3], 0.0)],
)
def test_jaccard(a, b, want):
    assert distance.jaccard(a, b) == pytest.approx(want)


class TestClosest:
    CANDIDATES = ["apple", "apply", "maple", "banana"]

    def test_exact_match(self):
        assert distance.closest("maple", self.CANDIDATES) == "maple"

    def test_typo(self):
        assert distance.closest("bananna", self.CANDIDATES) == "banana"

    def test_tie_goes_to_first(self):
        assert distance.closest("appla", self.CANDIDATES) == "apple"

    def test_case_insensitive(self):
        assert distance.closest("APPLY", self.CANDIDATES) == "apply"

    def test_none_within_distance(self):
        assert distance.closest("zzz", self.CANDIDATES) is None

    def test_max_distance(self):
        assert distance.closest("bnn", self.CANDIDATES, max_distance=3) == "banana"


def test_diff_lines():
    old = "a\nb\nc\nd\n"
    new = "a\nB\nc\nd\n"
    assert distance.diff_lines(old, new) == ["@@ -1,3 +1,3 @@", " a", "-b", "+B", " c"]


def test_diff_lines_identical():
    assert distance.diff_lines("x\ny", "x\ny") == []


@pytest.mark.parametrize(
    "old, new, want",
    [("a\nb", "a\nb", 0.0), ("a\nb", "c\nd", 1.0), ("a\nb", "a\nc", 0.5), ("", "", 0.0)],
)
def test_changed_ratio(old, new, want):
    assert distance.changed_ratio(old, new) == pytest.approx(want)
