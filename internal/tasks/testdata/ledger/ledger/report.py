"""Plain-text reports."""

from ledger.money import format_amount


def pad(cells, widths):
    return "  ".join(str(c).ljust(w) for c, w in zip(cells, widths)).rstrip()


def table(rows, headers):
    """Left-aligned columns as wide as their widest cell."""
    rows = [list(map(str, r)) for r in rows]
    widths = [len(h) for h in headers]
    for r in rows:
        for i, cell in enumerate(r):
            widths[i] = max(widths[i], len(cell))
    lines = [pad(headers, widths), pad(["-" * w for w in widths], widths)]
    lines.extend(pad(r, widths) for r in rows)
    return "\n".join(lines)


def balance_lines(entries, currency="USD"):
    """One line per (label, cents) entry, with a running balance."""
    balance = 0
    out = []
    for label, cents in entries:
        balance += cents
        out.append("%s %s" % (label, format_amount(balance, currency)))
    return out
