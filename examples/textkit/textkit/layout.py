"""Laying text out: wrapping, justifying, truncating and tables."""

import textwrap
from itertools import zip_longest

ELLIPSIS = "\u2026"


def wrap(text, width=70, indent=""):
    """Wrap text into lines of at most width characters.

    Words longer than width are put on a line of their own rather than
    broken, so no line is split inside a word.
    """
    if width <= len(indent):
        raise ValueError("width %d leaves no room after the indent" % width)
    lines = []
    current = indent
    for word in text.split():
        candidate = current + word if current == indent else current + " " + word
        if len(candidate) <= width or current == indent:
            current = candidate
        else:
            lines.append(current)
            current = indent + word
    if current != indent:
        lines.append(current)
    return lines


def justify_line(line, width):
    """Stretch a line to exactly width by widening its gaps, left gaps first."""
    words = line.split()
    if len(words) < 2 or len(line) >= width:
        return line
    gaps = len(words) - 1
    spaces = width - sum(len(w) for w in words)
    base, extra = divmod(spaces, gaps)
    out = []
    for i, word in enumerate(words[:-1]):
        out.append(word)
        out.append(" " * (base + (1 if i < extra else 0)))
    out.append(words[-1])
    return "".join(out)


def justify(text, width=70):
    """Wrap and fully justify text; the last line stays ragged."""
    lines = wrap(text, width)
    if not lines:
        return ""
    body = [justify_line(line, width) for line in lines[:-1]]
    body.append(lines[-1])
    return "\n".join(body)


def center(text, width, fill=" "):
    """Center text in width; an odd remainder goes to the right."""
    if len(fill) != 1:
        raise ValueError("fill must be one character")
    room = width - len(text)
    if room <= 0:
        return text
    left = room // 2
    right = room - left
    return fill * left + text + fill * right


def truncate(text, limit, marker=ELLIPSIS, at_word=True):
    """Shorten text to at most limit characters, ending with marker.

    With at_word, the cut happens at the last space before the limit when
    there is one.
    """
    if len(text) <= limit:
        return text
    room = limit - len(marker)
    if room <= 0:
        return marker[:limit]
    cut = text[:room]
    if at_word and text[room] != " " and " " in cut:
        cut = cut[: cut.rfind(" ")]
    return cut.rstrip() + marker


def indent(text, prefix="    ", skip_blank=True):
    """Prefix every line of text; blank lines stay empty with skip_blank."""
    out = []
    for line in text.splitlines(keepends=True):
        if skip_blank and not line.strip():
            out.append(line)
        else:
            out.append(prefix + line)
    return "".join(out)


def dedent(text):
    """Remove the indentation common to every non-blank line."""
    return textwrap.dedent(text)


def _cell(value):
    if value is None:
        return ""
    if isinstance(value, float):
        return "%.2f" % value
    return str(value)


def _align(cell, width, numeric):
    return cell.rjust(width) if numeric else cell.ljust(width)


def _is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def table(rows, headers=None, separator=" | "):
    """Format rows as a plain-text table.

    Numbers are right-aligned, everything else left-aligned; missing cells
    are empty. A rule of dashes separates headers from the body.
    """
    rows = [list(r) for r in rows]
    if headers is not None:
        rows.insert(0, list(headers))
    if not rows:
        return ""
    columns = list(zip_longest(*rows, fillvalue=None))
    widths = [max(len(_cell(v)) for v in col) for col in columns]
    numeric = [
        all(_is_number(v) or v is None for v in col[1 if headers else 0:]) for col in columns
    ]
    lines = []
    for index, row in enumerate(rows):
        padded = list(row) + [None] * (len(widths) - len(row))
        cells = [
            _align(_cell(v), w, num and not (headers and index == 0))
            for v, w, num in zip(padded, widths, numeric)
        ]
        lines.append(separator.join(cells).rstrip())
        if headers is not None and index == 0:
            lines.append(separator.join("-" * w for w in widths).replace(" ", "-"))
    return "\n".join(lines)


def columns(items, width=80, gap=2):
    """Lay items out in as many columns as fit in width, filled down first."""
    items = [str(i) for i in items]
    if not items:
        return ""
    cell = max(len(i) for i in items) + gap
    ncols = max(1, (width + gap) // cell)
    nrows = -(-len(items) // ncols)
    lines = []
    for r in range(nrows):
        row = [items[c * nrows + r] for c in range(ncols) if c * nrows + r < len(items)]
        lines.append("".join(i.ljust(cell) for i in row).rstrip())
    return "\n".join(lines)
