import unittest


def test_ok():
    assert sum([1, 2]) == 3


class Legacy(unittest.TestCase):
    def test_legacy(self):
        self.assertTrue(True)
