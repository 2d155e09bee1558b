"""A loop whose counter a mutant can stop from advancing."""


def count_up(n):
    """Sum of 0..n-1, counted one step at a time."""
    i = 0
    total = 0
    while i < n:
        total += i
        i += 1
    return total
