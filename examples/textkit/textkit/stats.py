"""Counting words and estimating how easy a text is to read."""

import math
from collections import Counter

from textkit.tokens import sentences, words

STOP_WORDS = frozenset(
    """a about an and are as at be but by for from has have in is it its of on
    or that the this to was were will with""".split()
)

_VOWELS = "aeiouy"


def word_counts(text, ignore_stop_words=False):
    """Count the words of text, case-insensitively."""
    tokens = words(text, lower=True, keep_numbers=False)
    if ignore_stop_words:
        tokens = [t for t in tokens if t not in STOP_WORDS]
    return Counter(tokens)


def top_words(text, n=5, ignore_stop_words=True):
    """Return the n most frequent words as (word, count), most frequent first.

    Ties are broken alphabetically so the result does not depend on the order
    in which words first appear.
    """
    counts = word_counts(text, ignore_stop_words=ignore_stop_words)
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return ranked[:n]


def lexical_diversity(text):
    """Return the share of distinct words among all words (0 for no words)."""
    tokens = words(text, lower=True)
    if not tokens:
        return 0.0
    distinct = len(set(tokens))
    return distinct / len(tokens)


def syllables(word):
    """Estimate the syllables of an English word by counting vowel groups."""
    word = word.lower().strip(".,;:!?\"'")
    if not word:
        return 0
    count = 0
    previous_vowel = False
    for ch in word:
        is_vowel = ch in _VOWELS
        if is_vowel and not previous_vowel:
            count += 1
        previous_vowel = is_vowel
    if word.endswith("e") and not word.endswith("le") and count > 1:
        count -= 1
    return max(count, 1)


def flesch_reading_ease(text):
    """Flesch reading ease: about 90-100 is very easy, below 30 is very hard."""
    tokens = words(text)
    sentence_count = len(sentences(text))
    if not tokens or sentence_count == 0:
        return 0.0
    syllable_count = sum(syllables(t) for t in tokens)
    words_per_sentence = len(tokens) / sentence_count
    syllables_per_word = syllable_count / len(tokens)
    score = 206.835 - 1.015 * words_per_sentence - 84.6 * syllables_per_word
    return round(score, 2)


def mean(values):
    """Arithmetic mean; raises ValueError for no values."""
    values = list(values)
    if not values:
        raise ValueError("mean of no values")
    return sum(values) / len(values)


def median(values):
    """Median of values; raises ValueError for no values."""
    ordered = sorted(values)
    size = len(ordered)
    if size == 0:
        raise ValueError("median of no values")
    middle = size // 2
    if size % 2 == 1:
        return ordered[middle]
    return (ordered[middle - 1] + ordered[middle]) / 2


def stdev(values):
    """Sample standard deviation (n - 1 in the denominator)."""
    values = list(values)
    if len(values) < 2:
        raise ValueError("stdev needs at least two values")
    centre = mean(values)
    squares = sum((v - centre) ** 2 for v in values)
    return math.sqrt(squares / (len(values) - 1))


def tf_idf(documents):
    """Weight every word of every document by tf-idf.

    Returns one dict per document mapping word -> weight. A word present in
    every document weighs 0.
    """
    counted = [word_counts(doc) for doc in documents]
    total_docs = len(counted)
    doc_freq = Counter()
    for counts in counted:
        doc_freq.update(counts.keys())
    weights = []
    for counts in counted:
        length = sum(counts.values()) or 1
        doc_weights = {}
        for word, count in counts.items():
            idf = math.log(total_docs / doc_freq[word])
            doc_weights[word] = count / length * idf
        weights.append(doc_weights)
    return weights


def summary(text):
    """Describe text in one dict: counts, averages and readability."""
    tokens = words(text)
    sents = sentences(text)
    lengths = [len(t) for t in tokens]
    return {
        "characters": len(text),
        "words": len(tokens),
        "sentences": len(sents),
        "mean_word_length": round(mean(lengths), 2) if lengths else 0.0,
        "diversity": round(lexical_diversity(text), 3),
        "reading_ease": flesch_reading_ease(text),
    }
