"""cwm's trace worker: the fork server and its runners (see tracer.py).

  python3 server.py serve [RECYCLE [MEMORY]]
  python3 server.py once

Protocol (serve): the server writes one line {"ready": true, ...}, then for
each request line (JSON: op "trace", "prog" or "mutate", see tracer.trace_one,
prog.trace_prog and mutate.mutate) exactly one result line; {"op": "exit", "code": N} ends it
with status N. A runner prefixes its result with
one byte, K (keep me) or X (I exit now), which the server strips.
"""

import builtins
import decimal
import gc
import json
import locale
import os
import resource
import select
import shutil
import signal
import sys
import threading
import time
import warnings

if not (3, 9) <= sys.version_info[:2] <= (3, 13):
    # The tracer keeps to 3.9's syntax and reads f_locals and CPython's
    # object layouts as 3.9 to 3.13 have them (flocals.py, cpython.py): on
    # another Python it refuses before importing them (python.go, Pythons).
    sys.exit("needs Python 3.9 to 3.13 (this environment has %d.%d)" % sys.version_info[:2])

import _cwm_mutate as mutate
import _cwm_prog as prog
import _cwm_tracer as tracer
import _cwm_values as values

# What the runner calls after programs have run, bound before: a program may
# replace builtins or module functions (see _fingerprint).
from builtins import BaseException, OSError, ValueError, float, hasattr, id, int, len, map, repr, tuple
from os import listdir as _listdir, waitpid as _waitpid, write as _os_write, getcwd as _getcwd
_dumps, _loads = json.dumps, json.loads
_setitimer, _getsignal = signal.setitimer, signal.getsignal
_getrusage, _getrlimit = resource.getrusage, resource.getrlimit
_active_count = threading.active_count

# Imported once by the server so that programs importing them pay nothing
# and a runner importing them is not considered changed.
PREIMPORT = (
    "abc array ast base64 binascii bisect calendar cmath codecs collections "
    "contextlib copy csv dataclasses datetime difflib enum fractions functools "
    "hashlib heapq io itertools keyword math numbers operator pprint queue "
    "random re reprlib statistics string struct textwrap traceback typing "
    "unicodedata uuid collections.abc"
).split()

WORKDIR = "/tmp/cwm-work"
GRACE = 1.0           # seconds the server waits past a runner's own deadline
_real_exit = os._exit
_wfd = -1             # the runner's result pipe
_rfd = -1             # the runner's request pipe
_armed = 0.0          # the current function's timeout while it runs, else 0
_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGALRM, signal.SIGPROF,
            signal.SIGCHLD, signal.SIGPIPE, signal.SIGUSR1, signal.SIGUSR2, signal.SIGHUP)
_LIMITS = (resource.RLIMIT_AS, resource.RLIMIT_NOFILE, resource.RLIMIT_STACK,
           resource.RLIMIT_CPU, resource.RLIMIT_FSIZE, resource.RLIMIT_NPROC)


def _write(fd, data):
    while data:
        data = data[_os_write(fd, data):]


def _send(flag, res):
    if _wfd < 0:  # a process the program forked: it has no result to give
        _real_exit(0)
    if "status" in res and "codes" in res:  # a trace result: frames are text
        line = tracer.encode(res)
    else:
        line = _dumps(res, separators=(",", ":"))
    _write(_wfd, flag + line.encode() + b"\n")


def _forked():
    """In a process the traced program forks (os.fork, multiprocessing):
    drop the protocol, so that only the runner ever answers."""
    global _wfd, _rfd
    for fd in (_wfd, _rfd):
        try:
            os.close(fd)
        except OSError:
            pass
    _wfd = _rfd = -1


# ------------------------------------------------------------------ runner

# Modules whose attributes programs commonly replace (monkeypatching); their
# namespaces are compared value by value. For all other modules only the
# number of names is compared: a full comparison would cost milliseconds.
WATCHED = ("builtins sys os os.path random math string re json time functools "
           "itertools collections operator copy heapq bisect").split()


# The int-to-str digit limit (3.11, and 3.9.14 and 3.10.7 on): a Python
# without it has no such setting for a program to change.
_int_digits = getattr(sys, "get_int_max_str_digits", lambda: 0)


def _fingerprint():
    """Process state a function could change and a later one could observe.
    A runner whose fingerprint changed is replaced by a fresh fork."""
    mods = sys.modules
    return {
        "imported or replaced modules": tuple(map(id, mods.values())),
        "builtins": tuple(map(id, builtins.__dict__.values())),
        "module attributes": tuple(tuple(map(id, mods[m].__dict__.values()))
                                   for m in WATCHED if m in mods),
        "module attribute counts": tuple(len(m.__dict__) for m in tuple(mods.values())
                                         if hasattr(m, "__dict__")),
        "sys.path or import hooks": (tuple(sys.path), tuple(map(id, sys.meta_path)),
                                     tuple(map(id, sys.path_hooks))),
        "sys hooks or streams": tuple(map(id, (
            sys.excepthook, sys.displayhook, sys.unraisablehook, sys.breakpointhook,
            sys.stdin, sys.stdout, sys.stderr, sys.__stdin__, sys.__stdout__,
            sys.__stderr__, sys.gettrace(), sys.getprofile()))),
        "interpreter settings": (_int_digits(), sys.getswitchinterval(),
                                 sys.getrecursionlimit(), gc.isenabled(), gc.get_threshold()),
        "working directory": _getcwd(),
        "environment": tuple(os.environ.items()),
        "signal handlers": tuple(id(_getsignal(s)) for s in _SIGNALS),
        "resource limits": tuple(_getrlimit(r) for r in _LIMITS),
        "warning filters": tuple(map(id, warnings.filters)),
        "decimal context": repr(decimal.getcontext()),
        "locale": locale.setlocale(locale.LC_ALL),
        "threads": (_active_count(), len(_listdir("/proc/self/task"))),
        "open files": len(_listdir("/proc/self/fd")),
        "files in the working directory": len(_listdir(".")),
    }


def _leak(base, rss0):
    """Why the runner may no longer be reused, or ""."""
    try:
        _waitpid(-1, os.WNOHANG)
    except ChildProcessError:
        pass
    else:  # running, or exited and never waited for
        return "child processes"
    now = _fingerprint()
    for k, v in base.items():
        if now[k] != v:
            return k
    if _getrusage(resource.RUSAGE_SELF).ru_maxrss > rss0 + (256 << 10):
        return "memory grew by more than 256 MiB"
    return ""


def _on_alarm(signum, frame):
    """The function ran out of time: send what was traced, and exit."""
    if not _armed:
        return
    tracer._settrace(None)
    phase = tracer._run.phase if tracer._run else "setup"
    why = "wall-clock limit of %gs reached" % _armed
    if phase == "module":
        why += " while running module-level code"
    stopped, reason = tracer.status()
    if stopped:  # recording had stopped at a cap; the program ran on
        why += "; recording had stopped before: " + reason
    _send(b"X", tracer.result("timeout", why))
    _real_exit(0)


def _cap_exit():
    """Recording stopped at a cap in a request that asked to stop there (a
    fuzzing candidate, which is kept only if its trace is complete): send
    what was traced and exit, instead of running the program on untraced
    until it ends or the wall clock runs out."""
    tracer._settrace(None)
    _send(b"X", tracer.result())
    _real_exit(0)


def _user_exit(code=0):
    """os._exit as the program sees it: report, then really exit."""
    if _wfd < 0:
        _real_exit(code)
    tracer._settrace(None)
    _send(b"X", tracer.result("error", "the program called os._exit(%s)" % values.text(code)))
    _real_exit(0)


def _handle(req):
    global _armed
    if req.get("op") == "mutate":
        try:
            return mutate.mutate(req)
        except BaseException as e:
            return {"id": req.get("id", ""), "error": "mutate: %s" % values.text(e)}
    timeout = float(req.get("timeout") or 5.0)
    _armed = timeout
    _setitimer(signal.ITIMER_PROF, 0.05, 0.05)
    _setitimer(signal.ITIMER_REAL, timeout)
    os._exit = _user_exit
    if req.get("stop_at_cap"):
        tracer.record.on_cap = _cap_exit
    try:
        if req.get("op") == "prog":
            return prog.trace_prog(req)
        return tracer.trace_one(req)
    finally:
        tracer.record.on_cap = None
        os._exit = _real_exit
        _armed = 0.0
        _setitimer(signal.ITIMER_REAL, 0)
        _setitimer(signal.ITIMER_PROF, 0)


def _drop_privileges():
    """Runs the program as nobody when the sandbox maps that user: it can
    then neither signal the server nor touch the tracer's files. Its own
    processes are capped below the sandbox's limit, so a fork bomb fails
    in the program instead of getting the whole worker killed."""
    if os.getuid() != 0:
        return
    try:
        os.setgroups([])
        os.setgid(65534)
        os.setuid(65534)
        resource.setrlimit(resource.RLIMIT_NPROC, (128, 128))
    except OSError:
        pass


def _runner(rfd, wfd, recycle, memory):
    """Traces requests from rfd until it must be replaced (see _fingerprint)."""
    global _wfd, _rfd
    _wfd, _rfd = wfd, rfd
    reader = os.fdopen(rfd, "rb")
    if memory > 0:
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    signal.signal(signal.SIGALRM, _on_alarm)
    signal.signal(signal.SIGPROF, values.on_prof)
    os.register_at_fork(after_in_child=_forked)
    os.makedirs(WORKDIR, mode=0o777, exist_ok=True)
    os.chmod(WORKDIR, 0o777)
    os.chdir(WORKDIR)
    _drop_privileges()
    base = _fingerprint()
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    n = 0
    while True:
        line = reader.readline()
        if not line:
            _real_exit(0)
        try:
            req = _loads(line)
        except ValueError as e:
            req, res = {}, {"status": "error", "error": "bad request: %s" % e}
        else:
            res = _handle(req)
        n += 1
        leak = _leak(base, rss0) if n < recycle else ""
        if leak:
            res["leak"] = leak
        last = bool(leak) or n >= recycle
        _send(b"X" if last else b"K", res)
        if last:
            _real_exit(0)


# ------------------------------------------------------------------ server

class _Runner:
    """The server's handle on one runner process."""

    def __init__(self, recycle, memory, private):
        shutil.rmtree(WORKDIR, ignore_errors=True)
        req_r, self.req_w = os.pipe()
        self.res_r, res_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            try:
                os.setpgid(0, 0)
                for fd in private + [self.req_w, self.res_r]:
                    os.close(fd)
                _runner(req_r, res_w, recycle, memory)
            finally:
                _real_exit(70)
        self.pid = pid
        try:
            os.setpgid(pid, pid)  # also here: the child may not have run yet
        except OSError:
            pass
        os.close(req_r)
        os.close(res_w)

    def call(self, line, req):
        """Sends one request; returns (result line, whether the runner ended)."""
        timeout = float(req.get("timeout") or 5.0)
        deadline = time.monotonic() + timeout + GRACE + timeout / 5
        try:
            _write(self.req_w, line if line.endswith(b"\n") else line + b"\n")
        except OSError:
            return self._dead(req), True
        buf = bytearray()
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return self._kill(req, timeout), True
            ready, _, _ = select.select([self.res_r], [], [], left)
            if not ready:
                continue
            chunk = os.read(self.res_r, 1 << 16)
            if not chunk:
                return self._dead(req), True
            buf += chunk
            if buf.endswith(b"\n"):
                return bytes(buf[1:]), buf[:1] == b"X"

    def _kill(self, req, timeout):
        self.close(signal.SIGKILL)
        res = {"id": req.get("id", ""), "status": "timeout",
               "error": "wall-clock limit of %gs reached; the traced process did not "
                        "stop by itself and was killed" % timeout}
        return json.dumps(res).encode() + b"\n"

    def _dead(self, req):
        st = self.close(signal.SIGKILL)
        if os.WIFSIGNALED(st):
            sig = os.WTERMSIG(st)
            how = "killed by %s" % signal.Signals(sig).name
            if sig == signal.SIGKILL:
                how += " (out of memory?)"
        else:
            how = "exited with status %d" % os.WEXITSTATUS(st)
        res = {"id": req.get("id", ""), "status": "error",
               "error": "the traced process died without a result: " + how}
        return json.dumps(res).encode() + b"\n"

    def close(self, sig=signal.SIGKILL):
        """Ends the runner and everything it started; returns its wait status."""
        try:
            os.killpg(self.pid, sig)
        except OSError:
            pass
        _, st = os.waitpid(self.pid, 0)
        self.pid = 0
        os.close(self.req_w)
        os.close(self.res_r)
        shutil.rmtree(WORKDIR, ignore_errors=True)
        return st


def _private_fds():
    """Moves the protocol to private descriptors and points 0 and 1 at
    /dev/null, so the traced program can neither read nor corrupt it."""
    pin, pout = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.close(null)
    return pin, pout


def _preimport():
    for name in PREIMPORT:
        try:
            __import__(name)
        except ImportError:
            pass


def serve(recycle, memory):
    """Serves requests until EOF or an exit request; returns the exit
    status: the request's "code", which cwm sets non-zero to have the
    sandbox check its memory cgroup for OOM kills (a failed command is
    checked, a clean exit is not)."""
    pin, pout = _private_fds()
    reader = os.fdopen(pin, "rb")
    _preimport()
    gc.collect()
    gc.freeze()  # forked runners then leave the server's objects alone in GC
    hello = {"ready": True, "python": sys.version.split()[0], "pid": os.getpid(),
             "hash_randomization": sys.flags.hash_randomization}
    _write(pout, json.dumps(hello).encode() + b"\n")
    runner = None
    status = 0
    for line in reader:
        try:
            req = json.loads(line)
        except ValueError as e:
            _write(pout, json.dumps({"status": "error", "error": "bad request: %s" % e}).encode() + b"\n")
            continue
        if req.get("op") == "exit":
            status = int(req.get("code") or 0)
            break
        if runner is None:
            runner = _Runner(recycle, memory, [pin, pout])
        out, ended = runner.call(line, req)
        if ended:
            if runner.pid:
                runner.close()
            runner = None
        _write(pout, out)
    if runner is not None:
        runner.close()
    return status


def once():
    """One request from stdin, traced in this process (the baseline that
    starts a fresh interpreter per function)."""
    pin, pout = _private_fds()
    _preimport()
    _runner(pin, pout, 1, 0)


if __name__ == "__main__":
    if sys.argv[1:2] == ["once"]:
        once()
    else:
        args = [int(a) for a in sys.argv[2:4]]
        sys.exit(serve(args[0] if args else 1000, args[1] if len(args) > 1 else 1 << 30))
