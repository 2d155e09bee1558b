"""Taxes on amounts in cents."""


def flat_tax(cents, rate_percent):
    """Tax at one rate, rounded down."""
    return cents * rate_percent // 100


def progressive_tax(income, brackets):
    """Tax of income under brackets [(upper_bound or None, rate_percent)]."""
    tax = 0
    lower = 0
    for upper, rate in brackets:
        if upper is None or income <= upper:
            tax += (income - lower) * rate // 100
            return tax
        tax += (upper - lower) * rate // 100
        lower = upper
    raise ValueError("the last bracket must be open (None)")


def net_of_tax(gross, rate_percent):
    """The amount before a tax that gross includes."""
    if rate_percent < 0:
        raise ValueError("negative rate")
    return gross * 100 // (100 + rate_percent)
