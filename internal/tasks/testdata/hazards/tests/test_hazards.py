from hazards.loop import count_up
from hazards.table import TABLE, build_table


def test_count_up():
    assert count_up(4) == 6


def test_count_up_zero():
    assert count_up(0) == 0


def test_build_table():
    assert build_table("xy") == {"x": 120, "y": 121}


def test_table():
    assert TABLE["c"] == 99
