import pytest

from halve import halve


@pytest.mark.parametrize("n, want", [(4, 2), (5, 2), (0, 0)])
def test_halve(n, want):
    assert halve(n) == want
