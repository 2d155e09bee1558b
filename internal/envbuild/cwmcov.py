"""cwm's per-test recorder: which functions and lines of the repository
each test executes.

Used two ways, both inside a sandbox with this file on PYTHONPATH:

    python -m pytest -p cwmcov ...        (a pytest plugin)
    python -m cwmcov [unittest args]      (unittest's command line)

Only code in files under CWMCOV_ROOT (default /repo) is recorded, and not
the tests themselves (test_*.py, *_test.py, conftest.py, files under a
tests/ or test/ directory). On Python 3.12+ sys.monitoring is used, and each
line is reported once per test then disabled until the next test, so the
cost is close to nothing; before 3.12 sys.settrace, with a local tracer only
for frames of recorded files. The result is written as JSON to CWMCOV_OUT
when the run ends:

    {"version": 1, "tests": {TEST_ID: {"functions": [[FILE, QUALNAME, LINE], ...],
                                       "lines": {FILE: [LINE, ...]}}}}

FILE is relative to the root; QUALNAME is the code object's qualified name
(comprehensions, lambdas and generator expressions are left out as
functions, their lines count for the enclosing function's file).
"""

import json
import os
import sys
import threading

import _cwm_pertest as pertest

ROOT = os.path.realpath(os.environ.get("CWMCOV_ROOT", "/repo")).rstrip("/") + "/"
OUT = os.environ.get("CWMCOV_OUT", "/tmp/cwmcov.json")
TEST_DIRS = ("tests", "test", "testing")


def _wanted(filename, cache={}):
    hit = cache.get(filename)
    if hit is not None:
        return hit
    ok = False
    if filename.startswith(ROOT) and filename.endswith(".py"):
        rel = filename[len(ROOT):]
        parts = rel.split("/")
        base = parts[-1]
        ok = not (
            base.startswith("test_")
            or base.endswith("_test.py")
            or base == "conftest.py"
            or any(p in TEST_DIRS for p in parts[:-1])
            or parts[0] in ("venv", ".venv", ".git")
        )
    cache[filename] = ok
    return ok


def _qualname(code, tables={}):
    q = getattr(code, "co_qualname", None)
    if q is not None:
        return q
    # Before 3.11 a code object has no qualified name: it is read from the
    # file's syntax tree, by the line the code starts on (a decorated
    # definition's first decorator) and its name, so that a method is
    # Class.method on every Python, as mutation matches it.
    table = tables.get(code.co_filename)
    if table is None:
        table = tables[code.co_filename] = _qualnames(code.co_filename)
    return table.get((code.co_firstlineno, code.co_name), code.co_name)


def _qualnames(filename):
    import ast

    try:
        with open(filename, "rb") as f:
            tree = ast.parse(f.read(), filename)
    except (OSError, SyntaxError, ValueError):
        return {}
    out = {}

    def walk(node, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                q = prefix + child.name
                first = min([child.lineno] + [d.lineno for d in child.decorator_list])
                out[(first, child.name)] = q
                walk(child, q + ("." if isinstance(child, ast.ClassDef) else ".<locals>."))
            else:
                walk(child, prefix)

    walk(tree, "")
    return out


class Recorder:
    def __init__(self):
        self.tests = {}
        self.lines = None
        self.funcs = None
        self.current = None

    def start(self, test_id):
        self.current = test_id
        self.lines = {}
        self.funcs = set()
        self._begin()

    def stop(self):
        if self.current is None:
            return
        self._end()
        rec = self.tests.setdefault(self.current, {"functions": set(), "lines": {}})
        rec["functions"] |= self.funcs
        for f, ls in self.lines.items():
            rec["lines"].setdefault(f, set()).update(ls)
        self.current = None

    def record_call(self, code):
        if not code.co_name.startswith("<"):
            self.funcs.add((code.co_filename[len(ROOT):], _qualname(code), code.co_firstlineno))

    def record_line(self, filename, line):
        s = self.lines.get(filename)
        if s is None:
            s = self.lines[filename] = set()
        s.add(line)

    def dump(self):
        out = {}
        for tid, rec in self.tests.items():
            out[tid] = {
                "functions": sorted(rec["functions"]),
                "lines": {f[len(ROOT):]: sorted(ls) for f, ls in sorted(rec["lines"].items())},
            }
        tmp = OUT + ".tmp"
        os.makedirs(os.path.dirname(tmp), exist_ok=True)
        with open(tmp, "w") as f:
            json.dump({"version": 1, "tests": out}, f)
        os.replace(tmp, OUT)

    if hasattr(sys, "monitoring"):

        def _begin(self):
            mon = sys.monitoring
            tool = mon.COVERAGE_ID
            if mon.get_tool(tool) is None:
                mon.use_tool_id(tool, "cwmcov")
                mon.register_callback(tool, mon.events.PY_START, self._on_start)
                mon.register_callback(tool, mon.events.LINE, self._on_line)
            mon.set_events(tool, mon.events.PY_START | mon.events.LINE)
            mon.restart_events()

        def _end(self):
            sys.monitoring.set_events(sys.monitoring.COVERAGE_ID, 0)

        def _on_start(self, code, offset):
            if not _wanted(code.co_filename):
                return sys.monitoring.DISABLE
            self.record_call(code)
            return sys.monitoring.DISABLE  # once per test is enough

        def _on_line(self, code, line):
            if _wanted(code.co_filename):
                self.record_line(code.co_filename, line)
            return sys.monitoring.DISABLE

    else:

        def _begin(self):
            sys.settrace(self._global)
            threading.settrace(self._global)

        def _end(self):
            sys.settrace(None)
            threading.settrace(None)

        def _global(self, frame, event, arg):
            code = frame.f_code
            if event != "call" or not _wanted(code.co_filename):
                return None
            self.record_call(code)
            filename = code.co_filename
            lines = self.lines.get(filename)
            if lines is None:
                lines = self.lines[filename] = set()
            add = lines.add

            def local(frame, event, arg):
                if event == "line":
                    add(frame.f_lineno)
                return local

            return local


RECORDER = Recorder()
pytest_runtest_protocol = pertest.pytest_hook(RECORDER)


def pytest_sessionfinish(session, exitstatus):
    RECORDER.dump()


if __name__ == "__main__":
    try:
        pertest.unittest_main(RECORDER, sys.argv[1:])
    finally:
        RECORDER.dump()
