"""Per-test hooks shared by cwm's in-process recorders (the coverage map's
and the repository tracer's): a recorder has start(test_id) and stop(), and
these call them around every test, its fixtures included.

    pytest_runtest_protocol = pytest_hook(RECORDER)   # in a pytest plugin
    unittest_main(RECORDER, sys.argv[1:])             # python -m PLUGIN [args]

Run as a module (python -m _cwm_pertest ARGS) it is unittest's command line
that also loads tests by the ids unittest reports (id_loader).
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


def _tests(suite):
    import unittest

    for t in suite:
        if isinstance(t, unittest.TestSuite):
            yield from _tests(t)
        else:
            yield t


def id_loader():
    """A unittest loader that also loads a test by the id unittest gave it
    when the name is not a TestCase method: a doctest a load_tests hook
    added (pkg.mod.func) is found by id in its module's suite, or else in
    the suite the run's discovery builds (CWM_UNITTEST_DISCOVER), where
    unittest itself would call pkg.mod.func() and fail."""
    import importlib
    import inspect
    import os
    import unittest

    class Loader(unittest.TestLoader):
        def loadTestsFromName(self, name, module=None):
            if module is not None:
                return super().loadTestsFromName(name, module)
            parts = name.split(".")
            mod, i = None, len(parts)
            while i > 0 and mod is None:
                try:
                    mod = importlib.import_module(".".join(parts[:i]))
                except ImportError:
                    i -= 1
            obj, parent = mod, None
            for attr in parts[i:]:
                parent, obj = obj, getattr(obj, attr, None)
            plain = (
                obj is None
                or inspect.ismodule(obj)
                or isinstance(obj, unittest.TestSuite)
                or (inspect.isclass(obj) and issubclass(obj, unittest.TestCase))
                or (inspect.isclass(parent) and issubclass(parent, unittest.TestCase))
            )
            if not plain and mod is not None:
                found = [t for t in _tests(self.loadTestsFromModule(mod)) if t.id() == name]
                if not found:
                    found = [t for t in self.discovered() if t.id() == name]
                if found:
                    return self.suiteClass(found)
            return super().loadTestsFromName(name, module)

        def discovered(self):
            # The suite the run's discovery (CWM_UNITTEST_DISCOVER: start,
            # pattern, top) builds, once: where load_tests hooks add
            # tests of other modules.
            if self._discovered is None:
                self._discovered = []
                spec = os.environ.get("CWM_UNITTEST_DISCOVER", "")
                if spec:
                    start, pattern, top = spec.split("\n")
                    loader = unittest.TestLoader()
                    self._discovered = list(_tests(loader.discover(start, pattern, top)))
            return self._discovered

    loader = Loader()
    loader._discovered = None
    return loader


def unittest_main(recorder, argv):
    """unittest's command line, with the recorder (if any) around each test
    and tests loadable by their ids (id_loader)."""
    import unittest

    class Result(unittest.TextTestResult):
        def startTest(self, test):
            if recorder is not None:
                recorder.start(test.id())
            super().startTest(test)

        def stopTest(self, test):
            super().stopTest(test)
            if recorder is not None:
                recorder.stop()

    class Runner(unittest.TextTestRunner):
        resultclass = Result

    unittest.main(module=None, argv=["python -m unittest"] + argv, testRunner=Runner, testLoader=id_loader())


if __name__ == "__main__":
    import sys

    unittest_main(None, sys.argv[1:])
