from ledger.tax import flat_tax, net_of_tax, progressive_tax

BRACKETS = [(1000, 0), (5000, 10), (None, 20)]


def test_flat_tax():
    assert flat_tax(1999, 10) == 199


def test_progressive_low():
    assert progressive_tax(800, BRACKETS) == 0


def test_progressive_middle():
    assert progressive_tax(3000, BRACKETS) == 200


def test_progressive_top():
    assert progressive_tax(10000, BRACKETS) == 400 + 1000


def test_net_of_tax():
    assert net_of_tax(1200, 20) == 1000
