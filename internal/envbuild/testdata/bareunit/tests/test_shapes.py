import math
import unittest

from shapes import circle_area, rectangle_area


class CircleTest(unittest.TestCase):
    def test_unit(self):
        self.assertAlmostEqual(circle_area(1), math.pi)

    def test_negative(self):
        with self.assertRaises(ValueError):
            circle_area(-1)


class RectangleTest(unittest.TestCase):
    def test_area(self):
        self.assertEqual(rectangle_area(2, 3), 6)

    @unittest.skip("squares are rectangles too")
    def test_square(self):
        pass
