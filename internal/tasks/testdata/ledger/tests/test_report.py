from ledger.report import balance_lines, table


def test_table():
    assert table([("apple", 3), ("fig", 12)], ["item", "qty"]) == (
        "item   qty\n-----  ---\napple  3\nfig    12"
    )


def test_balance_lines():
    assert balance_lines([("in", 1000), ("out", -250)]) == ["in $10.00", "out $7.50"]


def test_balance_lines_currency():
    assert balance_lines([("fee", -99)], "GBP") == ["fee -£0.99"]
