"""Check digits and simple validation."""

import re

_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[a-z]{2,}$", re.IGNORECASE)


def luhn_valid(number):
    """Luhn checksum of a string of digits (spaces allowed)."""
    digits = [int(ch) for ch in number if not ch.isspace()]
    if len(digits) < 2:
        return False
    total = 0
    for i, d in enumerate(reversed(digits)):
        if i % 2 == 1:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0


def is_email(text):
    return bool(_EMAIL.match(text))


def clean_reference(ref, width=8):
    """Upper-case, strip separators, left-pad with zeros to width."""
    kept = "".join(ch for ch in ref.upper() if ch.isalnum())
    if len(kept) > width:
        raise ValueError("reference too long")
    return kept.rjust(width, "0")
