"""textkit: small, dependency-free helpers for working with plain text.

The package is organised by task:

- :mod:`textkit.tokens` splits text into words, sentences and n-grams;
- :mod:`textkit.case` converts identifiers and titles between cases;
- :mod:`textkit.stats` counts words and estimates readability;
- :mod:`textkit.layout` wraps, justifies and tabulates text;
- :mod:`textkit.distance` compares strings and lines.
"""

from textkit.case import camel_case, kebab_case, slugify, snake_case, title_case
from textkit.distance import levenshtein, similarity
from textkit.layout import table, truncate, wrap
from textkit.stats import flesch_reading_ease, top_words, word_counts
from textkit.tokens import ngrams, sentences, words

__version__ = "0.3.1"

__all__ = [
    "camel_case",
    "flesch_reading_ease",
    "kebab_case",
    "levenshtein",
    "ngrams",
    "sentences",
    "similarity",
    "slugify",
    "snake_case",
    "table",
    "title_case",
    "top_words",
    "truncate",
    "word_counts",
    "words",
    "wrap",
]
