from greet import greet


def test_greet():
    assert greet("Ada") == "Hello, Ada!"


def test_default_name():
    assert greet("  ") == "Hello, world!"


def test_punctuation():
    assert greet("Bob", "?") == "Hello, Bob?"
