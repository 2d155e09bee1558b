import pytest

from ledger.dates import add_days, day_of_year, days_in_month, is_leap


@pytest.mark.parametrize("year, leap", [(2024, True), (2023, False), (1900, False), (2000, True)])
def test_is_leap(year, leap):
    assert is_leap(year) is leap


def test_days_in_month():
    assert days_in_month(2024, 2) == 29
    assert days_in_month(2023, 2) == 28
    assert days_in_month(2023, 4) == 30


def test_day_of_year():
    assert day_of_year(2023, 1, 1) == 1
    assert day_of_year(2024, 3, 1) == 61


def test_add_days_within_month():
    assert add_days(2023, 5, 10, 5) == (2023, 5, 15)


def test_add_days_across_year():
    assert add_days(2023, 12, 30, 3) == (2024, 1, 2)
