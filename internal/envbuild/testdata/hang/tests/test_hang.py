import time


def test_quick():
    assert True


def test_forever():
    while True:
        time.sleep(1)
