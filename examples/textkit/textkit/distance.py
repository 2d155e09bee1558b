"""Comparing strings and lines: edit distances, similarity and diffs."""

import difflib
from functools import lru_cache


def levenshtein(a, b, substitution_cost=1):
    """Edit distance: insertions, deletions and substitutions to turn a into b."""
    if a == b:
        return 0
    if len(a) < len(b):
        a, b = b, a
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, start=1):
        current = [i]
        for j, cb in enumerate(b, start=1):
            insert = current[j - 1] + 1
            delete = previous[j] + 1
            replace = previous[j - 1] + (0 if ca == cb else substitution_cost)
            current.append(min(insert, delete, replace))
        previous = current
    return previous[-1]


def hamming(a, b):
    """Number of positions at which two equal-length strings differ."""
    if len(a) != len(b):
        raise ValueError("hamming distance needs equal lengths (%d != %d)" % (len(a), len(b)))
    return sum(1 for x, y in zip(a, b) if x != y)


def similarity(a, b):
    """Similarity in [0, 1] derived from the Levenshtein distance."""
    longest = max(len(a), len(b))
    if longest == 0:
        return 1.0
    return 1.0 - levenshtein(a, b) / longest


def lcs_length(a, b):
    """Length of the longest common subsequence of a and b."""

    @lru_cache(maxsize=None)
    def go(i, j):
        if i == len(a) or j == len(b):
            return 0
        if a[i] == b[j]:
            return 1 + go(i + 1, j + 1)
        return max(go(i + 1, j), go(i, j + 1))

    return go(0, 0)


def longest_common_substring(a, b):
    """The longest string that appears in both a and b (the first one found)."""
    best_len, best_end = 0, 0
    lengths = [0] * (len(b) + 1)
    for i in range(1, len(a) + 1):
        diagonal = 0
        for j in range(1, len(b) + 1):
            above = lengths[j]
            if a[i - 1] == b[j - 1]:
                lengths[j] = diagonal + 1
                if lengths[j] > best_len:
                    best_len, best_end = lengths[j], i
            else:
                lengths[j] = 0
            diagonal = above
    return a[best_end - best_len:best_end]


def jaccard(a, b):
    """Jaccard similarity of two collections, as sets (1.0 when both are empty)."""
    left, right = set(a), set(b)
    union = left | right
    if not union:
        return 1.0
    return len(left & right) / len(union)


def closest(word, candidates, max_distance=2):
    """The candidate nearest to word, or None when none is within max_distance.

    Ties go to the candidate listed first.
    """
    best, best_distance = None, max_distance + 1
    for candidate in candidates:
        d = levenshtein(word.lower(), candidate.lower())
        if d < best_distance:
            best, best_distance = candidate, d
    return best


def diff_lines(old, new, context=1):
    """A compact unified diff of two texts, without file headers."""
    old_lines = old.splitlines()
    new_lines = new.splitlines()
    out = []
    for line in difflib.unified_diff(old_lines, new_lines, n=context, lineterm=""):
        if line.startswith("---") or line.startswith("+++"):
            continue
        out.append(line)
    return out


def changed_ratio(old, new):
    """Share of lines that differ between two texts, from 0 to 1."""
    matcher = difflib.SequenceMatcher(None, old.splitlines(), new.splitlines(), autojunk=False)
    total = len(old.splitlines()) + len(new.splitlines())
    if total == 0:
        return 0.0
    same = sum(block.size for block in matcher.get_matching_blocks())
    return 1.0 - 2.0 * same / total
