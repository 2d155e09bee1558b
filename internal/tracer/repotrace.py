"""cwm's repository tracer: the raw trace of each test of a repository's
suite, for cutting into function-level episodes (repo.go, episodes.go).

Used two ways, inside a sandbox on an environment, with the tracer's
directory on PYTHONPATH:

    python -m pytest -p _cwm_repotrace ...        (a pytest plugin)
    python -m _cwm_repotrace [unittest args]      (unittest's command line)

Around each test (its fixtures included, as in the coverage map) the
recorder (record.py) runs in repository mode: every call of code in a file
of the repository is recorded, except the tests themselves (test_*.py,
*_test.py, conftest.py, files under tests/, test/ or testing/) and anything
under a virtual environment or site-packages. Code outside that scope runs
untraced; repository code it calls back is recorded, one level deeper.
Each test's recording is one JSON line appended to CWMTRACE_OUT: the
result fields of tracer.py (test, status, error, codes, lines, bytes,
seconds) and the frames as a table and a sequence (record.encode).

CWMTRACE_CONFIG (JSON) sets root (/repo), max_events, max_bytes, max_repr
and seconds: the caps of one test's recording. Past a cap the recording
stops (status too_long or timeout) and the test runs on untraced. With
"tests": true the tests' own files are in scope too (cwm trace tests, whose
traces start at the test function).
"""

import json
import os
import random
import signal
import sys
import time

import _cwm_pertest as pertest
import _cwm_record as record
import _cwm_tracer as tracer
import _cwm_values as values

CONFIG = json.loads(os.environ.get("CWMTRACE_CONFIG") or "{}")
OUT = os.environ.get("CWMTRACE_OUT", "/tmp/cwmtrace.jsonl")
ROOT = os.path.realpath(CONFIG.get("root", "/repo")).rstrip("/") + "/"
TEST_DIRS = ("tests", "test", "testing")
TESTS = bool(CONFIG.get("tests"))
_dumps = json.dumps
_perf = time.perf_counter


def in_scope(filename):
    """Whether code from filename is the repository's own, not its tests
    (unless TESTS)."""
    if not filename.startswith(ROOT) or not filename.endswith(".py"):
        return False
    parts = filename[len(ROOT):].split("/")
    base = parts[-1]
    if parts[0] in ("venv", ".venv", ".git") or "site-packages" in parts:
        return False
    return TESTS or not (
        base.startswith("test_")
        or base.endswith("_test.py")
        or base == "conftest.py"
        or any(p in TEST_DIRS for p in parts[:-1])
    )


class Recorder:
    """Records one test at a time."""

    def __init__(self):
        self.test = None
        self.out = None

    def start(self, test):
        self.test, self.t0 = test, _perf()
        record.configure(int(CONFIG.get("max_events") or 1000000),
                         int(CONFIG.get("max_bytes") or (256 << 20)),
                         max(64, int(CONFIG.get("max_repr") or 4096)),
                         filename=None, scope=in_scope,
                         seconds=float(CONFIG.get("seconds") or 60))
        # As in function tracing: a fixed seed, so that a test that uses
        # random traces the same way every time.
        random.seed(0)
        self.hooked = tracer.hook_sys()
        # A __repr__ that runs for more than 50-100 ms of CPU is cut off
        # (values.on_prof), as in function tracing.
        self.prof = signal.signal(signal.SIGPROF, values.on_prof)
        signal.setitimer(signal.ITIMER_PROF, 0.05, 0.05)
        record.start(None)

    def stop(self):
        if self.test is None:
            return
        record._settrace(None)
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, self.prof)
        tracer.unhook_sys(self.hooked)
        status, reason = record._status or "ok", record._reason
        res = {"test": self.test, "status": status, "codes": record._code_table,
               "lines": record.lines(), "bytes": record.nbytes(),
               "seconds": round(_perf() - self.t0, 6)}
        if reason:
            res["error"] = reason
        line = record.encode(_dumps(res, separators=(",", ":")))
        if self.out is None:
            self.out = open(OUT, "a", encoding="utf-8")
        self.out.write(line + "\n")
        self.out.flush()
        self.test = None
        record.configure(1, 1, 64)  # let the recording's memory go


RECORDER = Recorder()
pytest_runtest_protocol = pertest.pytest_hook(RECORDER)


if __name__ == "__main__":
    pertest.unittest_main(RECORDER, sys.argv[1:])
