from fetch import year


def test_year():
    assert year("2024-05-01") == 2024
