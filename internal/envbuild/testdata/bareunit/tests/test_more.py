import unittest

from shapes import rectangle_area


class ZeroTest(unittest.TestCase):
    def test_zero(self):
        self.assertEqual(rectangle_area(0, 5), 0)
