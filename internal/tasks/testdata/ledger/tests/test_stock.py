import pytest

from ledger.stock import OutOfStock, Stock


def make():
    s = Stock()
    s.add("apple", 5)
    s.add("pear", 2)
    s.add("apple", 1)
    return s


def test_add():
    assert make().levels == {"apple": 6, "pear": 2}


def test_remove():
    s = make()
    s.remove("apple", 4)
    assert s.levels["apple"] == 2


def test_remove_all_drops_item():
    s = make()
    s.remove("pear", 2)
    assert "pear" not in s.levels


def test_remove_too_many():
    with pytest.raises(OutOfStock):
        make().remove("pear", 3)


def test_value():
    assert make().value({"apple": 30, "pear": 50}) == 280


def test_low():
    s = make()
    s.add("plum", 1)
    assert s.low(2) == ["plum", "pear"]
