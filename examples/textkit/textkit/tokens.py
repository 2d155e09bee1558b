"""Splitting text into words, sentences and n-grams."""

import re
import unicodedata

_WORD = re.compile(r"[^\W_]+(?:['\u2019-][^\W_]+)*")
_SENTENCE_END = re.compile(r"([.!?]+)(\s+|$)")
_CAMEL_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_ABBREVIATIONS = frozenset({"dr", "mr", "mrs", "ms", "prof", "st", "vs", "etc", "e.g", "i.e"})


def normalize_whitespace(text):
    """Collapse every run of whitespace into one space and trim both ends."""
    parts = text.split()
    return " ".join(parts)


def strip_accents(text):
    """Remove combining marks, so that "café" becomes "cafe"."""
    decomposed = unicodedata.normalize("NFKD", text)
    kept = [ch for ch in decomposed if not unicodedata.combining(ch)]
    return "".join(kept)


def words(text, lower=False, keep_numbers=True):
    """Return the words of text in order.

    Apostrophes and hyphens inside a word are kept ("don't", "well-known").
    """
    found = _WORD.findall(text)
    if not keep_numbers:
        found = [w for w in found if not w.isdigit()]
    if lower:
        return [w.lower() for w in found]
    return found


def _is_abbreviation(chunk):
    last = chunk.rstrip(".").split()
    if not last:
        return False
    token = last[-1].lower()
    return token in _ABBREVIATIONS or (len(token) == 1 and token.isalpha())


def sentences(text):
    """Split text into sentences, keeping their final punctuation.

    A period after a known abbreviation ("Dr.", "etc.") or a single
    initial does not end a sentence.
    """
    result = []
    start = 0
    for match in _SENTENCE_END.finditer(text):
        end = match.end(1)
        chunk = text[start:end].strip()
        if match.group(1) == "." and _is_abbreviation(chunk) and match.end() < len(text):
            continue
        if chunk:
            result.append(chunk)
        start = match.end()
    tail = text[start:].strip()
    if tail:
        result.append(tail)
    return result


def ngrams(items, n, pad=None):
    """Return the n-grams of a sequence as tuples.

    With pad set, the sequence is padded on both sides so that every item
    starts and ends an n-gram.
    """
    if n <= 0:
        raise ValueError("n must be positive, got %d" % n)
    seq = list(items)
    if pad is not None:
        filler = [pad] * (n - 1)
        seq = filler + seq + filler
    count = len(seq) - n + 1
    return [tuple(seq[i:i + n]) for i in range(max(count, 0))]


def char_ngrams(text, n):
    """Return the character n-grams of text as strings."""
    grams = ngrams(text, n)
    return ["".join(g) for g in grams]


def split_camel(name):
    """Split a camelCase or PascalCase identifier into its parts.

    Acronyms stay together: "parseHTTPResponse" -> ["parse", "HTTP", "Response"].
    """
    parts = []
    for piece in re.split(r"[_\-\s]+", name):
        if piece:
            parts.extend(_CAMEL_BOUNDARY.split(piece))
    return [p for p in parts if p]


def line_spans(text):
    """Return (start, end) offsets of each line, without the newline."""
    spans = []
    pos = 0
    for line in text.splitlines(keepends=True):
        stripped = line.rstrip("\r\n")
        spans.append((pos, pos + len(stripped)))
        pos += len(line)
    return spans
