"""Per-test hooks shared by cwm's in-process recorders (the coverage map's
and the repository tracer's): a recorder has start(test_id) and stop(), and
these call them around every test, its fixtures included.

    pytest_runtest_protocol = pytest_hook(RECORDER)   # in a pytest plugin
    unittest_main(RECORDER, sys.argv[1:])             # python -m PLUGIN [args]
"""


def pytest_hook(recorder):
    """The plugin's pytest_runtest_protocol hook wrapper; None where pytest
    is not installed (unittest-only environments), as no pytest loads it."""
    try:
        import pytest
    except ImportError:
        return None

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(item, nextitem):
        recorder.start(item.nodeid)
        try:
            yield
        finally:
            recorder.stop()

    return pytest_runtest_protocol


def unittest_main(recorder, argv):
    """unittest's command line, with the recorder around each test."""
    import unittest

    class Result(unittest.TextTestResult):
        def startTest(self, test):
            recorder.start(test.id())
            super().startTest(test)

        def stopTest(self, test):
            super().stopTest(test)
            recorder.stop()

    class Runner(unittest.TextTestRunner):
        resultclass = Result

    unittest.main(module=None, argv=["python -m unittest"] + argv, testRunner=Runner)
