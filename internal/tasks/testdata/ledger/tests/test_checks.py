import pytest

from ledger.checks import clean_reference, is_email, luhn_valid


@pytest.mark.parametrize("number, ok", [("4539 1488 0343 6467", True), ("8273 1232 7352 0569", False), ("0", False)])
def test_luhn(number, ok):
    assert luhn_valid(number) is ok


def test_is_email():
    assert is_email("a.b@example.org")
    assert not is_email("a@b")


def test_clean_reference():
    assert clean_reference("ab-12") == "0000AB12"


def test_clean_reference_width():
    assert clean_reference("x", width=3) == "00X"
