"""Amounts of money as integer cents."""

CURRENCY_SYMBOLS = {"USD": "$", "EUR": "€", "GBP": "£"}


def parse_amount(text):
    """Parse "12.34", "-0.5" or "1,234.50" into cents."""
    text = text.strip().replace(",", "")
    if not text:
        raise ValueError("empty amount")
    negative = text.startswith("-")
    if negative:
        text = text[1:]
    whole, _, frac = text.partition(".")
    if len(frac) > 2:
        raise ValueError("more than two decimals: %r" % text)
    cents = int(whole or "0") * 100 + int(frac.ljust(2, "0") or "0")
    return -cents if negative else cents


def format_amount(cents, currency="USD"):
    """Format cents with the currency's symbol and thousands separators."""
    symbol = CURRENCY_SYMBOLS.get(currency, currency + " ")
    sign = "-" if cents < 0 else ""
    whole, frac = divmod(abs(cents), 100)
    return "%s%s%s.%02d" % (sign, symbol, "{:,}".format(whole), frac)


def split_evenly(cents, parts):
    """Split an amount into parts that differ by at most one cent."""
    if parts <= 0:
        raise ValueError("parts must be positive")
    base, extra = divmod(cents, parts)
    return [base + 1 if i < extra else base for i in range(parts)]


def percent_of(cents, percent):
    """percent% of an amount, rounded half away from zero."""
    value = cents * percent
    if value >= 0:
        return (value + 50) // 100
    return -((-value + 50) // 100)
