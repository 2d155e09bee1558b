"""Whole programs on stdin for cwm's tracer (cwm trace prog; run inside a
cwm sandbox, by the runner of server.py).

A program is traced from its first line to its end: its module code is the
entry scope (CPython reports the module's call at line 0; the Go side puts
it on the context's first line, the START_OF_TRACE marker), and every
function of the program it calls is traced inside it as in trace_one. The
program reads the test input on file descriptor 0 and through sys.stdin,
as it would from a judge: the input is in a memfd (no file in the working
directory), dup'ed onto 0 for the run and replaced by /dev/null after.
What it prints to sys.stdout, and writes to file descriptor 1 (a memfd
for the run, too), is kept up to the request's max_capture characters,
for the Go side to compare with the expected output. The
result says how the program ended beyond the trace: "raised" is the type
of the exception that ended it ("" when it ran to its end), "exit_code"
the code of a SystemExit.
"""

import builtins
import io
import os
import sys
import threading
import types
from builtins import BaseException, SystemExit, bytes, int, isinstance, len, memoryview, type

import _cwm_record as record
import _cwm_tracer as tracer
import _cwm_values as values
from _cwm_values import text as _text

_enumerate = threading.enumerate
_DELETE_NAME = bytes([record.dis.opmap["DELETE_NAME"]])


class _Out(tracer._Capture):
    """sys.stdout of a program: _Capture with a binary side, which
    competitive programs write to (sys.stdout.buffer.write), and a file
    descriptor, which fast-IO templates write to (os.write(fileno(), ...)):
    1, a memfd while the program runs, read back after (_drain)."""

    def __init__(self, cap):
        super().__init__(cap)
        self.buffer = _Bytes(self)

    def fileno(self):
        return 1


class _Bytes:
    def __init__(self, out):
        self.out = out

    def write(self, b):
        self.out.write(bytes(b).decode("utf-8", "replace"))
        return len(b)

    def flush(self):
        pass


def _stdin(data):
    """Puts data on file descriptor 0 and returns the sys.stdin to read it
    by (a memfd: the input can be larger than a pipe holds)."""
    fd = os.memfd_create("cwm-stdin")
    raw = data.encode("utf-8", "surrogatepass")
    view = memoryview(raw)
    while view:
        view = view[os.write(fd, view):]
    os.lseek(fd, 0, os.SEEK_SET)
    os.dup2(fd, 0)
    os.close(fd)
    return io.TextIOWrapper(io.BufferedReader(io.FileIO(0, "r", closefd=False)), encoding="utf-8")


def _no_stdin():
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.close(null)


def _stdout_fd():
    """Makes file descriptor 1 a memfd for what the program writes to it."""
    fd = os.memfd_create("cwm-stdout")
    os.dup2(fd, 1)
    os.close(fd)


def _drain(out):
    """Adds what the program wrote to file descriptor 1 to out: the first
    4 * out.cap bytes read, the rest counted."""
    size = os.fstat(1).st_size
    if not size:
        return
    os.lseek(1, 0, os.SEEK_SET)
    want, parts = min(size, 4 * out.cap + 4), []
    while want > 0:
        b = os.read(1, want)
        if not b:
            break
        parts.append(b)
        want -= len(b)
    data = b"".join(parts)
    out.write(data.decode("utf-8", "replace"))
    out.total += size - len(data)


def trace_prog(req):
    """Runs and traces the program req["source"] with req["stdin"] as its
    input; the result is trace_one's, plus raised and exit_code."""
    filename = req.get("filename") or "<cwm-trace>"
    record.configure(int(req.get("max_events") or 10000), int(req.get("max_bytes") or (1 << 20)),
                     max(64, int(req.get("max_repr") or 4096)), filename)
    tracer._run = r = tracer._Run(req)
    r.out, r.err = _Out(int(req.get("max_capture") or 4096)), tracer._Capture(4096)
    src = req["source"]
    mod = types.ModuleType("__main__")
    mod.__file__ = filename
    ns = mod.__dict__
    # The builtins module, as a script's __main__ has it; without it exec
    # puts the builtins' dict there, whose text the module frame's locals
    # would make again at every line.
    ns["__builtins__"] = builtins
    tracer._linecache[filename] = (len(src), None, src.splitlines(True), filename)
    saved = (sys.modules["__main__"], sys.stdout, sys.stderr, sys.stdin)
    tracer._seed(0)
    setup_error = ""
    raised = code = None
    try:
        code = compile(src, filename, "exec")
    except BaseException as e:
        setup_error = "the program does not compile: %s" % _text(e)
    if setup_error:
        return tracer.result("error", setup_error)
    if _DELETE_NAME in code.co_code[::2]:
        # Module code that deletes names: record's line path then compares
        # the names themselves, not only their count (see record._full).
        record._dels.add(code)
    kind, exit_code = "", None
    hooked = None
    try:
        sys.modules["__main__"] = mod
        sys.stdin = _stdin(req.get("stdin") or "")
        _stdout_fd()
        sys.stdout, sys.stderr = r.out, r.err
        hooked = tracer.hook_sys()
        before = set(_enumerate())
        r.phase = "run"
        record.start(code)
        try:
            exec(code, ns)
        except BaseException as e:
            raised = e
        tracer._settrace(None)
        # A script's interpreter waits for its threads before it exits;
        # competitive programs often run main() in a thread with a larger
        # stack. Only the main thread is traced; the threads' output counts.
        for t in _enumerate():
            if t not in before and not t.daemon:
                t.join()
        _drain(r.out)
        r.phase = "output"
        r.raised = raised is not None
        r.output = values.output_text(raised, int(req.get("max_output") or 65536))
        if raised is not None:
            kind = type(raised).__name__
        if isinstance(raised, SystemExit):
            c = raised.code
            exit_code = 0 if c is None else c if type(c) is int else 1
    finally:
        tracer._settrace(None)
        r.phase = "cleanup"
        raised = code = None
        ns.clear()
        if hooked is not None:
            tracer.unhook_sys(hooked)
        sys.modules["__main__"], sys.stdout, sys.stderr, sys.stdin = saved
        _no_stdin()
    if record._state == 2:
        res = tracer.result("exception" if r.raised else "ok")
    elif record._state == 3:
        res = tracer.result()
    else:
        res = tracer.result("error", "tracing stopped before the program ended "
                            "(sys.settrace was switched off inside the program)")
    res["raised"] = kind
    if exit_code is not None:
        res["exit_code"] = exit_code
    return res
