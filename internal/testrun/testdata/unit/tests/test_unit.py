import sys
import unittest

from pkg import double


class Doubling(unittest.TestCase):
    def test_ok(self):
        self.assertEqual(double(2), 4)

    def test_doc(self):
        """A docstring comes first in verbose output."""
        print("noise on stderr", file=sys.stderr)

    @unittest.skip("not today")
    def test_skipped(self):
        pass

    def test_fail(self):
        self.assertEqual(double(2), 5)

    def test_error(self):
        raise KeyError("x")

    @unittest.expectedFailure
    def test_expected_failure(self):
        self.assertEqual(1, 2)

    def test_subtests(self):
        for i in range(3):
            with self.subTest(i=i):
                self.assertLess(i, 2)


class BrokenSetup(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        raise RuntimeError("class setup broke")

    def test_never_runs(self):
        pass
