"""cwm's Python execution tracer: CWM-format traces from sys.settrace (3.11).

Run inside a cwm sandbox, never on the host. Two modes:

  python3 tracer.py serve [RECYCLE]   fork server: JSON requests on stdin,
                                      one JSON result line per request
  python3 tracer.py once              trace one request read from stdin

The server imports everything once, then forks a *runner* that traces
functions one after another and is replaced by a fresh fork from the
pristine server whenever a function leaves any detectable trace in the
process (see _fingerprint), after RECYCLE functions, on a timeout or a death.
RECYCLE=1 forks a new runner for every function. The runner sends each
result to the server through a pipe; the server enforces the wall clock
(kill -> "timeout") and reports runner deaths as "error". The protocol file
descriptors are private: fds 0 and 1 point at /dev/null, so nothing the
traced program writes can reach the protocol.

Frames follow CWM-SPEC 1.2; values follow values.py and docs/traces.md.
Python 3.11 standard library only.
"""

import array
import base64
import builtins
import json
import linecache
import os
import random
import sys
import time
import types
# The program may replace builtins (builtins.len = ...) or module functions;
# the tracer binds what it calls before any program runs.
from builtins import (BaseException, RecursionError, TypeError, bytes, dict, int, isinstance,
                      len, max, object, repr, round, str, tuple, type)

import _cwm_values as values
from _cwm_values import ILIM as _ILIM, STABLE as _STABLE
from _cwm_values import exc_text as _exc_text, text as _text
_perf = time.perf_counter
_dumps = json.dumps
_b64 = base64.b64encode
_linecache = linecache.cache
_seed = random.seed

# ------------------------------------------------------------------ tracing
#
# Each distinct frame is recorded once as the JSON text of a flat array
# (without its closing bracket, which encode adds):
#   call      [1, lineno, code index, name, text, name, text, ...]
#   line      [2, lineno, name, text, ...]        text ".." when unchanged
#   return    [3, lineno, text]       exception [4, lineno, text]
# Depth and code of the other frames follow from the call/return nesting.
#
# Why text and not tuples: on the VMs cwm runs on, growing the heap is the
# dominant cost of tracing (a page fault costs ~20 us), and retained
# containers make every garbage collection slower. A loop repeats the same
# frame many times, so each distinct fragment is stored once (_recs, in
# first-seen order) and the trace is the sequence of their indices (_seq, 4
# bytes per frame, sent as base64).

_UNCH = '".."'           # the JSON text of ".."
_jstr = json.encoder.encode_basestring_ascii  # json.dumps of a str, in C
_HEADROOM = 200       # recursion levels kept free for the tracer itself
_file = "<cwm-trace>"
_roots = ()           # in-scope directory prefixes (repository tracing)
_codes = {}           # code object -> index in _code_table, or -1
_code_table = []
_seq = array.array("i")  # per frame, the index of its fragment in _recs
_recs = {}            # distinct JSON fragments -> index
_lheads = {}          # line number -> "[2,<line>" (a line record's start)
_jnames = {}          # local name -> its JSON text
_junch = {}           # local name -> its JSON text + ',".."'
_entry = None         # code of the entry function
_main = None          # frame of the entry call
_state = 0            # 0 waiting for entry, 1 recording, 2 entry returned, 3 stopped
_status = ""
_reason = ""
_nlines = _nbytes = 0
_max_lines = 10000
_max_bytes = 1 << 20
_depth = 0            # in-scope frames on the stack
_base_depth = 0       # Python stack depth of the entry frame
_user_limit = 1000    # the recursion limit the program sees
_base = None          # frame of the last call/line record, if no call/return since
_bt = {}              # its locals' texts
_bo = {}              # its locals' objects
_settrace = sys.settrace
_setprofile = sys.setprofile
_replaced = ""


def _classify(code):
    f = code.co_filename
    if f == _file or (_roots and f.startswith(_roots)):
        ci = len(_code_table)
        _code_table.append((f, code.co_qualname, code.co_firstlineno))
    else:
        ci = -1
    _codes[code] = ci
    return ci


def _stack_depth(frame):
    n = 0
    while frame is not None:
        n += 1
        frame = frame.f_back
    return n


def _lhead(ln):
    h = _lheads[ln] = "[2,%d" % ln
    return h


def _jname(k):
    """The JSON text of a local's name; also caches its unchanged pair."""
    j = _jnames[k] = _jstr(k)
    _junch[k] = j + ',".."'
    return j


def _full(loc, parts):
    """Appends every local to parts as "name",text JSON pairs; returns the
    texts and their total length."""
    bt, n = {}, 0
    jn = _jnames.get
    for k, v in loc.items():
        t = _text(v)
        bt[k] = t
        parts.append((jn(k) or _jname(k)) + "," + _jstr(t))
        n += len(t)
    return bt, n


def _on_call(frame, event, arg):
    """Global trace function: CPython calls it for every new frame."""
    global _state, _main, _depth, _base_depth, _base, _bt, _bo, _nbytes
    overflow = False
    try:
        code = frame.f_code
        ci = _codes.get(code)
        if ci is None:
            ci = _classify(code)
        if ci < 0:
            return None
        if _state != 1:
            if _state != 0 or code is not _entry:
                return None
            _state, _main, _depth = 1, frame, 0
            _base_depth = _stack_depth(frame)
        if _base_depth + _depth >= _user_limit - 50:
            overflow = _stack_depth(frame) > _user_limit
        if not overflow:
            loc = frame.f_locals
            parts = ["[1,%d,%d" % (frame.f_lineno, ci)]
            _bt, n = _full(loc, parts)
            _base, _bo = frame, loc.copy()
            frag = ",".join(parts)
            _seq.append(_recs.setdefault(frag, len(_recs)))
            _depth += 1
            _nbytes += 42 + 7 * len(loc) + n
            if _nbytes > _max_bytes:
                _stop("too_long", "trace text over %d bytes" % _max_bytes)
            return _on_event
    except BaseException as e:
        _stop("error", "tracer failure: %s" % _text(e))
        return None
    # The program recursed past its recursion limit. Untraced, creating this
    # frame would have raised RecursionError; it is raised here, where the
    # tracer still has headroom. Raising from a trace function makes CPython
    # switch tracing off; the profile hook switches it back on as the failed
    # frame unwinds, so the callers' exception frames are recorded.
    _setprofile(_reenable)
    raise RecursionError("maximum recursion depth exceeded")


def _reenable(frame, event, arg):
    _setprofile(None)
    if _state == 1:
        _settrace(_on_call)


def _on_event(frame, event, arg):
    """Local trace function of an in-scope frame: line, return, exception."""
    global _nlines, _nbytes, _base, _bt, _bo, _depth
    try:
        if _state != 1:
            return None
        if event == "line":
            _nlines += 1
            if _nlines > _max_lines:
                _stop("too_long", "more than %d line events" % _max_lines)
                return None
            loc = frame.f_locals
            ln = frame.f_lineno
            # Dict subscripts in try blocks: cheaper than .get calls (a try
            # costs nothing in 3.11 until it raises, here for new names only).
            try:
                parts = [_lheads[ln]]
            except KeyError:
                parts = [_lhead(ln)]
            if frame is _base:
                # The hot path: a line after a line of the same frame.
                app = parts.append
                bt, bo, un, stable = _bt, _bo, _junch, _STABLE
                n = 0
                for k, v in loc.items():
                    tv = type(v)
                    try:
                        if v is bo[k] and tv in stable:
                            app(un[k])
                            continue
                    except KeyError:  # bound since the previous frame
                        pass
                    t = repr(v) if tv is int and -_ILIM < v < _ILIM else _text(v)
                    if t == bt.get(k):
                        app(un[k])
                    else:
                        bt[k] = t
                        try:
                            app(_jnames[k] + "," + _jstr(t))
                        except KeyError:
                            app(_jname(k) + "," + _jstr(t))
                        n += len(t)
                if len(bt) != len(loc):  # a local was deleted
                    _bt = {k: bt[k] for k in loc}
            else:
                _bt, n = _full(loc, parts)
                _base = frame
            _bo = loc.copy()
            frag = ",".join(parts)
            i = _recs.get(frag)
            if i is None:
                i = _recs[frag] = len(_recs)
            _seq.append(i)
            _nbytes += 49 + n
            if _nbytes > _max_bytes:
                _stop("too_long", "trace text over %d bytes" % _max_bytes)
        elif event == "return":
            t = _text(arg)
            frag = "[3,%d,%s" % (frame.f_lineno, _jstr(t))
            _seq.append(_recs.setdefault(frag, len(_recs)))
            _base = None
            _depth -= 1
            _nbytes += 54 + len(t)
            if frame is _main:
                _stop("", "")
        elif event == "exception":
            t = _exc_text(arg)
            frag = "[4,%d,%s" % (frame.f_lineno, _jstr(t))
            _seq.append(_recs.setdefault(frag, len(_recs)))
            _nbytes += 54 + len(t)
    except BaseException as e:
        _stop("error", "tracer failure: %s" % _text(e))
    return None


def _stop(status, reason):
    """Stops recording: the entry returned (status "") or a limit was hit."""
    global _state, _status, _reason
    if _state == 1:
        _state = 3 if status else 2
        _status, _reason = status, reason
    _settrace(None)


def _guard_settrace(fn):
    """Stands in for sys.settrace while the program runs: the program's call
    is honoured, and the trace is reported incomplete."""
    global _replaced
    if _state == 1:
        _replaced = "the program called sys.settrace(%s); the trace is incomplete" % _text(fn)
        _stop("error", _replaced)
    _settrace(fn)


def _set_limit(n):
    global _user_limit
    _set_limit_real(n + _HEADROOM)
    _user_limit = n


_set_limit_real = sys.setrecursionlimit
_get_limit_real = sys.getrecursionlimit


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


# ------------------------------------------------------------ one function

def _configure(req):
    global _file, _roots, _max_lines, _max_bytes
    _file = req.get("filename") or "<cwm-trace>"
    roots = req.get("roots") or ()
    _roots = tuple(r.rstrip("/") + "/" for r in roots)
    values.configure(max(64, int(req.get("max_repr") or 4096)))
    _max_lines = int(req.get("max_events") or 10000)
    _max_bytes = int(req.get("max_bytes") or (1 << 20))


def _reset():
    global _entry, _main, _state, _status, _reason, _nlines, _nbytes, _depth
    global _base, _bt, _bo, _replaced, _codes, _code_table, _seq, _recs
    _entry = _main = _base = None
    _state, _status, _reason, _replaced = 0, "", "", ""
    _nlines = _nbytes = _depth = 0
    values.reset()
    _bt, _bo, _codes, _code_table, _seq, _recs = {}, {}, {}, [], array.array("i"), {}


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


def result(status="", reason=""):
    """The result of the current run so far; status/reason override the
    recorded ones (a timeout, an os._exit)."""
    r = _run
    if not status:
        status, reason = _status, _reason
    res = {
        "id": r.req.get("id", ""),
        "status": status,
        "codes": _code_table,
        "lines": _nlines,
        "bytes": _nbytes,
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
    """The JSON line of a result, frames included: "table" holds the
    distinct frame records, "seq" the index of each frame's record (int32,
    little-endian, base64)."""
    head = _dumps(res, separators=(",", ":"))
    seq = _seq
    if sys.byteorder != "little":
        seq = array.array("i", _seq)
        seq.byteswap()
    # Fragments are stored without their closing bracket (one string
    # operation less per frame); it is added here.
    table = "],".join(_recs) + "]" if _recs else ""
    return '%s,"table":[%s],"seq":"%s"}' % (head[:-1], table, _b64(seq.tobytes()).decode())


def trace_one(req):
    """Runs the module req["source"], then traces its entry function."""
    global _run, _entry, _user_limit
    _configure(req)
    _reset()
    _run = r = _Run(req)
    src = req["source"]
    mod = types.ModuleType("__main__")
    mod.__file__ = _file
    ns = mod.__dict__
    _linecache[_file] = (len(src), None, src.splitlines(True), _file)
    saved = (sys.modules["__main__"], sys.stdout, sys.stderr, sys.settrace,
             sys.setrecursionlimit, sys.getrecursionlimit, _get_limit_real())
    _seed(0)
    sys.modules["__main__"] = mod
    sys.stdout, sys.stderr = r.out, r.err
    sys.settrace, sys.setrecursionlimit = _guard_settrace, _set_limit
    sys.getrecursionlimit = lambda: _user_limit
    _user_limit = saved[-1]
    _set_limit_real(_user_limit + _HEADROOM)
    value = raised = None
    setup_error = ""
    try:
        try:
            code = compile(src, _file, "exec")
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
            _entry = fn.__code__
            _settrace(_on_call)
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
        (sys.modules["__main__"], sys.stdout, sys.stderr, sys.settrace,
         sys.setrecursionlimit, sys.getrecursionlimit) = saved[:-1]
        _set_limit_real(saved[-1])
    if setup_error:
        return result("error", setup_error)
    if _state == 2:
        return result("exception" if r.raised else "ok")
    if _state == 3:
        return result()
    return result("error", "tracing stopped before the entry function returned "
                  "(sys.settrace was switched off inside the program)")
