import math

import pytest

from textkit import stats

TEXT = "The cat sat on the mat. The dog sat on the log. A cat and a dog!"


def test_word_counts():
    counts = stats.word_counts("Cat cat DOG 42")
    assert counts == {"cat": 2, "dog": 1}


def test_word_counts_without_stop_words():
    counts = stats.word_counts(TEXT, ignore_stop_words=True)
    assert "the" not in counts
    assert counts["sat"] == 2


def test_top_words():
    assert stats.top_words(TEXT, n=3) == [("cat", 2), ("dog", 2), ("sat", 2)]


def test_top_words_with_stop_words():
    assert stats.top_words(TEXT, n=1, ignore_stop_words=False) == [("the", 4)]


def test_top_words_empty():
    assert stats.top_words("", n=3) == []


@pytest.mark.parametrize(
    "text, want",
    [("a b c d", 1.0), ("a a a a", 0.25), ("", 0.0), ("Dog dog", 0.5)],
)
def test_lexical_diversity(text, want):
    assert stats.lexical_diversity(text) == pytest.approx(want)


@pytest.mark.parametrize(
    "word, want",
    [
        ("cat", 1),
        ("table", 2),
        ("beautiful", 3),
        ("rhythm", 1),
        ("", 0),
        ("Hello!", 2),
    ],
)
def test_syllables(word, want):
    assert stats.syllables(word) == want


def test_flesch_easy_text_scores_high():
    assert stats.flesch_reading_ease("The cat sat. The dog ran.") > 90


def test_flesch_hard_text_scores_lower():
    easy = stats.flesch_reading_ease("The cat sat on the mat.")
    hard = stats.flesch_reading_ease(
        "Notwithstanding considerable institutional opposition, the "
        "administration implemented comprehensive organisational restructuring."
    )
    assert hard < easy
    assert hard < 30


def test_flesch_empty():
    assert stats.flesch_reading_ease("") == 0.0


def test_flesch_value():
    assert stats.flesch_reading_ease("The cat sat on the mat.") == pytest.approx(116.15, abs=0.01)


class TestAverages:
    def test_mean(self):
        assert stats.mean([1, 2, 3, 4]) == 2.5

    def test_mean_of_generator(self):
        assert stats.mean(x for x in (2, 4)) == 3

    def test_mean_empty(self):
        with pytest.raises(ValueError):
            stats.mean([])

    @pytest.mark.parametrize("values, want", [([3, 1, 2], 2), ([4, 1, 3, 2], 2.5), ([7], 7)])
    def test_median(self, values, want):
        assert stats.median(values) == want

    def test_median_empty(self):
        with pytest.raises(ValueError):
            stats.median([])

    def test_stdev(self):
        assert stats.stdev([2, 4, 4, 4, 5, 5, 7, 9]) == pytest.approx(math.sqrt(32 / 7))

    def test_stdev_needs_two(self):
        with pytest.raises(ValueError):
            stats.stdev([1])


def test_tf_idf_shared_word_weighs_zero():
    weights = stats.tf_idf(["red apple", "red car"])
    assert weights[0]["red"] == 0
    assert weights[0]["apple"] == pytest.approx(0.5 * math.log(2))
    assert weights[1]["car"] == pytest.approx(0.5 * math.log(2))


def test_tf_idf_empty_document():
    assert stats.tf_idf(["", "word"]) == [{}, {"word": pytest.approx(math.log(2))}]


def test_summary():
    got = stats.summary("Short words here. And more.")
    assert got == {
        "characters": 27,
        "words": 5,
        "sentences": 2,
        "mean_word_length": 4.2,
        "diversity": 1.0,
        "reading_ease": stats.flesch_reading_ease("Short words here. And more."),
    }


def test_summary_empty():
    got = stats.summary("")
    assert got["words"] == 0
    assert got["mean_word_length"] == 0.0
