import pytest

from units import convert, newer


def test_km_to_m():
    assert convert(2, "km", "m") == 2000


def test_cm_to_m():
    assert convert(50, "cm", "m") == pytest.approx(0.5)


def test_newer():
    assert newer("1.10", "1.9")


def test_unknown_unit():
    with pytest.raises(KeyError):
        convert(1, "mile", "m")
