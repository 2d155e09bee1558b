def add(a, b):
    return a - b


def test_add():
    assert add(2, 2) == 4


def test_add_zero():
    assert add(0, 3) == 3
