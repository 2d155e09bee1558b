"""Converting identifiers and titles between naming conventions."""

import re
import string

from textkit.tokens import split_camel, strip_accents

# Words that stay lower case inside a title, unless they start or end it.
SMALL_WORDS = frozenset(
    "a an and as at but by en for if in nor of on or per the to v via vs".split()
)


def _parts(name):
    return [p.lower() for p in split_camel(name)]


def snake_case(name):
    """Convert an identifier to snake_case: "parseHTTPResponse" -> "parse_http_response"."""
    parts = _parts(name)
    return "_".join(parts)


def kebab_case(name):
    """Convert an identifier to kebab-case."""
    parts = _parts(name)
    return "-".join(parts)


def camel_case(name, upper_first=False):
    """Convert an identifier to camelCase (or PascalCase with upper_first)."""
    parts = _parts(name)
    if not parts:
        return ""
    head, rest = parts[0], parts[1:]
    if upper_first:
        head = head.capitalize()
    return head + "".join(p.capitalize() for p in rest)


def pascal_case(name):
    """Convert an identifier to PascalCase."""
    return camel_case(name, upper_first=True)


def constant_case(name):
    """Convert an identifier to CONSTANT_CASE."""
    return snake_case(name).upper()


def title_case(text, small_words=SMALL_WORDS):
    """Capitalise a title the way English style guides do.

    Small words stay lower case except at the start and the end; words that
    already contain capitals (acronyms, "iPhone") are left alone.
    """
    tokens = text.split()
    last = len(tokens) - 1
    out = []
    for i, token in enumerate(tokens):
        lowered = token.lower()
        if token != lowered and token != token.capitalize():
            out.append(token)
        elif 0 < i < last and lowered in small_words:
            out.append(lowered)
        else:
            out.append(token[:1].upper() + token[1:].lower())
    return " ".join(out)


def slugify(text, separator="-", max_length=None):
    """Make a URL slug: ASCII letters and digits joined by separator.

    With max_length, the slug is cut at a word boundary when possible.
    """
    ascii_text = strip_accents(text).encode("ascii", "ignore").decode("ascii")
    words = re.findall(r"[a-z0-9]+", ascii_text.lower())
    slug = separator.join(words)
    if max_length is not None and len(slug) > max_length:
        cut = slug[:max_length]
        boundary = cut.rfind(separator)
        slug = cut[:boundary] if boundary > 0 else cut
    return slug


def swap_case(text):
    """Swap the case of every ASCII letter, leaving other characters alone."""
    swapped = []
    for ch in text:
        if ch in string.ascii_lowercase:
            swapped.append(ch.upper())
        elif ch in string.ascii_uppercase:
            swapped.append(ch.lower())
        else:
            swapped.append(ch)
    return "".join(swapped)


def is_palindrome(text, ignore_case=True):
    """Report whether text reads the same backwards, ignoring non-letters."""
    letters = [ch for ch in text if ch.isalnum()]
    if ignore_case:
        letters = [ch.lower() for ch in letters]
    left, right = 0, len(letters) - 1
    while left < right:
        if letters[left] != letters[right]:
            return False
        left += 1
        right -= 1
    return True


def acronym(text, min_length=2):
    """Build an acronym from the significant words of text."""
    initials = [w[0].upper() for w in text.split() if w.lower() not in SMALL_WORDS]
    if len(initials) < min_length:
        return ""
    return "".join(initials)
