from ledger.invoice import apply_discount, invoice_total, line_total, subtotal

LINES = [(2, 500), (1, 1250), (3, 99)]


def test_line_total():
    assert line_total(3, 99) == 297


def test_subtotal():
    assert subtotal(LINES) == 2547


def test_apply_discount_percent():
    assert apply_discount(2000, percent=10) == 1800


def test_apply_discount_fixed_floor():
    assert apply_discount(500, fixed=800) == 0


def test_invoice_total():
    assert invoice_total(LINES, discount_percent=10, tax_percent=20) == 2292 + 458
