"""cwm's pytest reporter: one JSON line per test phase, written as it
happens to the file named by CWM_REPORT.

Test ids are pytest's own node ids (report.nodeid), exactly what pytest
accepts back on its command line: JUnit XML only has a class name and the
file where a method is defined, which is wrong for inherited test classes.
pytest writes its JUnit report only when the session ends. A suite killed by
a limit, or one that deletes its own working directory (pytest then fails
before writing the report), would leave nothing; this stream keeps what
finished, and names the test that was running.

The variable is taken out of the environment, so that a pytest the tests
start themselves does not write into this run's report.
"""

import json
import os

_path = os.environ.pop("CWM_REPORT", None)
_out = None


def _write(rec):
    global _out
    if not _path:
        return
    if _out is None:
        _out = open(_path, "a", buffering=1)
    _out.write(json.dumps(rec) + "\n")
    _out.flush()


def _message(report):
    if report.outcome == "skipped" and isinstance(report.longrepr, tuple):
        return str(report.longrepr[2])
    crash = getattr(report.longrepr, "reprcrash", None)
    if crash is not None and getattr(crash, "message", ""):
        # The exception's first line, as JUnit's message attribute has it.
        return crash.message.strip().splitlines()[0]
    text = getattr(report, "longreprtext", "") or ""
    lines = [l for l in text.splitlines() if l.strip()]
    return lines[-1] if lines else ""


def pytest_runtest_logstart(nodeid, location):
    _write({"start": nodeid})


def pytest_runtest_logreport(report):
    _write({
        "id": report.nodeid,
        "when": report.when,
        "outcome": report.outcome,
        "xfail": hasattr(report, "wasxfail"),
        "seconds": report.duration,
        "message": _message(report)[:200],
    })


def pytest_collectreport(report):
    if report.failed:
        _write({"id": report.nodeid, "when": "collect", "outcome": "failed", "message": _message(report)[:200]})
