import sys
import unittest


class Noisy(unittest.TestCase):
    def test_quick(self):
        self.assertTrue(True)

    def test_shout(self):
        while True:
            sys.stdout.write("spam " * 1000 + "\n")
