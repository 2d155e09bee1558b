"""Invoices: lines of quantity x unit price, discounts and tax."""

from ledger.money import percent_of
from ledger.tax import flat_tax


def line_total(quantity, unit_cents):
    if quantity < 0:
        raise ValueError("negative quantity")
    return quantity * unit_cents


def subtotal(lines):
    """Sum of (quantity, unit_cents) lines."""
    return sum(line_total(q, u) for q, u in lines)


def apply_discount(cents, percent=0, fixed=0):
    """A percentage off, then a fixed amount off, never below zero."""
    discounted = cents - percent_of(cents, percent)
    return max(discounted - fixed, 0)


def invoice_total(lines, discount_percent=0, tax_percent=0):
    """What the customer pays."""
    net = apply_discount(subtotal(lines), percent=discount_percent)
    return net + flat_tax(net, tax_percent)
