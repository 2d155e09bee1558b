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

It also drops, from the configuration's addopts and PYTEST_ADDOPTS, the
options cwm removes from a test command's own arguments (CWM_DROP_PYTEST:
"name=1" for an option that takes a value, "name=0" for one that does not,
"name*" for a prefix): only the command line is cwm's to rewrite, yet a
plugin option in addopts stops pytest with a usage error the same way when
the plugin is absent. The command line itself cwm has rewritten already, and
its own options there (--maxfail for a regression run) stay; with
CWM_DROP_PYTEST_ALL set (a pytest a shell command starts, whose command
line is the repository's) it is filtered too.
"""

import json
import os

import pytest

_path = os.environ.pop("CWM_REPORT", None)
_drop_spec = os.environ.pop("CWM_DROP_PYTEST", "")
_drop_all = os.environ.pop("CWM_DROP_PYTEST_ALL", "") != ""
_out = None


def _drop_table(spec):
    exact, prefixes = {}, []
    for word in spec.split():
        if word.endswith("*"):
            prefixes.append(word[:-1])
        else:
            name, _, value = word.partition("=")
            exact[name] = value == "1"
    return exact, prefixes


def _filter(args, exact, prefixes):
    """args without the dropped options, as Go's filterPytestArgs does."""
    kept, i = [], 0
    while i < len(args):
        a = args[i]
        name, eq, _ = a.partition("=")
        if name in exact or any(name.startswith(p) for p in prefixes):
            optional = name == "--cov" and i + 1 < len(args) and not args[i + 1].startswith("-")
            if (exact.get(name, False) or optional) and not eq and i + 1 < len(args):
                i += 1
            i += 1
            continue
        if a.startswith("-n") and (a[2:].isdigit() or a[2:] in ("auto", "logical")):
            i += 1
            continue
        kept.append(a)
        i += 1
    return kept


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config, parser, args):
    # args holds the addopts and PYTEST_ADDOPTS already, ahead of the
    # command line; pytest parses this same list once the hook returns.
    if not _drop_spec:
        return
    keep = 0 if _drop_all else len(early_config.invocation_params.args)
    cut = max(len(args) - keep, 0)
    args[:] = _filter(args[:cut], *_drop_table(_drop_spec)) + args[cut:]


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
