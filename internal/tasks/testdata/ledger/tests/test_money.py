import pytest

from ledger.money import format_amount, parse_amount, percent_of, split_evenly


@pytest.mark.parametrize("text, cents", [("12.34", 1234), ("-0.5", -50), ("1,234.50", 123450), ("7", 700)])
def test_parse_amount(text, cents):
    assert parse_amount(text) == cents


def test_parse_amount_rejects_three_decimals():
    with pytest.raises(ValueError):
        parse_amount("1.234")


def test_format_amount():
    assert format_amount(123456) == "$1,234.56"
    assert format_amount(-5, "EUR") == "-€0.05"


def test_format_unknown_currency():
    assert format_amount(100, "CHF") == "CHF 1.00"


def test_split_evenly():
    assert split_evenly(100, 3) == [34, 33, 33]
    assert sum(split_evenly(1001, 7)) == 1001


def test_percent_of():
    assert percent_of(1000, 15) == 150
    assert percent_of(999, 50) == 500
