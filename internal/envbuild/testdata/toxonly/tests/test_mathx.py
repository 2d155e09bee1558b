import pytest

import mathx


@pytest.mark.parametrize("a, b, want", [(12, 18, 6), (7, 5, 1), (0, 4, 4)])
def test_gcd(a, b, want):
    assert mathx.gcd(a, b) == want


def test_lcm():
    assert mathx.lcm(4, 6) == 12
    assert mathx.lcm(0, 6) == 0


@pytest.mark.parametrize("n", [2, 3, 13])
def test_primes(n):
    assert mathx.is_prime(n)


def test_not_prime():
    assert not mathx.is_prime(21)
