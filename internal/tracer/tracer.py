"""cwm's Python execution tracer: CWM-format traces from sys.settrace.

Run inside a cwm sandbox, never on the host. Two modes:

  python3 server.py serve [RECYCLE]   fork server: JSON requests on stdin,
                                      one JSON result line per request
  python3 server.py once              trace one request read from stdin

The server imports everything once, then forks a *runner* that traces
functions one after another and is replaced by a fresh fork from the
pristine server whenever a function leaves any detectable trace in the
process (see server._fingerprint), after RECYCLE functions, on a timeout or
a death. This module is what the runner calls for one function
(trace_one); the recording itself is record.py, value text values.py.
Frames follow CWM-SPEC 1.2; values follow values.py and docs/traces.md.
Python 3.9 to 3.13, standard library only (docs/traces.md, "Python versions").
"""

import json
import linecache
import random
import sys
import time
import types
# The program may replace builtins (builtins.len = ...) or module functions;
# the tracer binds what it calls before any program runs.
from builtins import (BaseException, TypeError, int, isinstance, len, max, round, str, type)

import _cwm_record as record
import _cwm_values as values
from _cwm_values import text as _text
_perf = time.perf_counter
_dumps = json.dumps
_linecache = linecache.cache
_seed = random.seed
_settrace = record._settrace


class _Capture:
    """sys.stdout/sys.stderr of the program: keeps the first `cap` chars."""

    encoding, errors, newlines = "utf-8", "strict", None

    def __init__(self, cap):
        self.cap, self.parts, self.kept, self.total = cap, [], 0, 0

    def write(self, s):
        if type(s) is not str:
            raise TypeError("write() argument must be str, not %s" % type(s).__name__)
        n = len(s)
        self.total += n
        if self.kept < self.cap:
            s = s[: self.cap - self.kept]
            self.parts.append(s)
            self.kept += len(s)
        return n

    def writelines(self, lines):
        for s in lines:
            self.write(s)

    def flush(self):
        pass

    def isatty(self):
        return False

    def writable(self):
        return True

    def text(self):
        return "".join(self.parts)


def _guard_settrace(fn):
    """Stands in for sys.settrace while the program runs: the program's call
    is honoured, and the trace is reported incomplete."""
    if record._state == 1:
        record._stop("error", "the program called sys.settrace(%s); the trace is incomplete" % _text(fn))
    _settrace(fn)


def _set_limit(n):
    _set_limit_real(n + record._HEADROOM)
    record._user_limit = n


def _get_limit():
    return record._user_limit


_set_limit_real = sys.setrecursionlimit
_get_limit_real = sys.getrecursionlimit


def hook_sys():
    """While the program runs, sys.settrace is guarded and the recursion
    limit the program sees is record._HEADROOM below the real one (see
    record._on_call). Returns what unhook_sys restores."""
    saved = (sys.settrace, sys.setrecursionlimit, sys.getrecursionlimit, _get_limit_real())
    sys.settrace, sys.setrecursionlimit, sys.getrecursionlimit = _guard_settrace, _set_limit, _get_limit
    record._user_limit = saved[3]
    _set_limit_real(saved[3] + record._HEADROOM)
    return saved


def unhook_sys(saved):
    sys.settrace, sys.setrecursionlimit, sys.getrecursionlimit = saved[:3]
    _set_limit_real(saved[3])


# ------------------------------------------------------------ one function

class _Run:
    """What the harness knows about the current function beyond the frames."""

    def __init__(self, req):
        self.req = req
        self.t0 = _perf()
        cap = int(req.get("max_capture") or 4096)
        self.out, self.err = _Capture(cap), _Capture(cap)
        self.phase = "setup"
        self.output = None
        self.raised = False


_run = None


def status():
    """How recording stopped ("" while it runs or after the entry returned)
    and why."""
    return record._status, record._reason


def result(status="", reason=""):
    """The result of the current run so far; status/reason override the
    recorded ones (a timeout, an os._exit)."""
    r = _run
    if not status:
        status, reason = record._status, record._reason
    res = {
        "id": r.req.get("id", ""),
        "status": status,
        "codes": record._code_table,
        "lines": record.lines(),
        "bytes": record.nbytes(),
        "seconds": round(_perf() - r.t0, 6),
    }
    if reason:
        res["error"] = reason
    if r.output is not None:
        res["output"] = r.output
    for name, cap in (("stdout", r.out), ("stderr", r.err)):
        if cap.total:
            res[name] = cap.text()
            res[name + "_chars"] = cap.total
    return res


def encode(res):
    """The JSON line of a result, frames included (see record.encode)."""
    return record.encode(_dumps(res, separators=(",", ":")))


def trace_one(req):
    """Runs the module req["source"], then traces its entry function."""
    global _run
    filename = req.get("filename") or "<cwm-trace>"
    record.configure(int(req.get("max_events") or 10000), int(req.get("max_bytes") or (1 << 20)),
                     max(64, int(req.get("max_repr") or 4096)), filename)
    _run = r = _Run(req)
    src = req["source"]
    mod = types.ModuleType("__main__")
    mod.__file__ = filename
    ns = mod.__dict__
    _linecache[filename] = (len(src), None, src.splitlines(True), filename)
    saved = (sys.modules["__main__"], sys.stdout, sys.stderr)
    _seed(0)
    sys.modules["__main__"] = mod
    sys.stdout, sys.stderr = r.out, r.err
    hooked = hook_sys()
    value = raised = fn = code = None
    setup_error = ""
    try:
        try:
            code = compile(src, filename, "exec")
        except BaseException as e:
            setup_error = "the context does not compile: %s" % _text(e)
        if not setup_error:
            r.phase = "module"
            try:
                exec(code, ns)
            except BaseException as e:
                setup_error = "module-level code raised %s" % _text(e)
        if not setup_error:
            fn = ns.get(req.get("entry") or "main")
            if not isinstance(fn, types.FunctionType):
                setup_error = "the context has no function %r" % (req.get("entry") or "main")
        if not setup_error:
            r.phase = "run"
            record.start(fn.__code__)
            try:
                value = fn()
            except BaseException as e:
                raised = e
            _settrace(None)
            r.phase = "output"
            r.raised = raised is not None
            r.output = values.output_text(raised if raised is not None else value,
                                          int(req.get("max_output") or 65536))
    finally:
        _settrace(None)
        r.phase = "cleanup"
        # Break the function <-> globals cycles now, while the program's
        # stderr is still captured: a __del__ may run.
        value = raised = fn = code = None
        ns.clear()
        unhook_sys(hooked)
        sys.modules["__main__"], sys.stdout, sys.stderr = saved
    if setup_error:
        return result("error", setup_error)
    if record._state == 2:
        return result("exception" if r.raised else "ok")
    if record._state == 3:
        return result()
    return result("error", "tracing stopped before the entry function returned "
                  "(sys.settrace was switched off inside the program)")
