"""Recording core of cwm's tracer: the sys.settrace callbacks and what they
record (Python 3.9 to 3.13, standard library only; run inside a cwm sandbox).

tracer.py drives it for one function (trace_one); repotrace.py for the
tests of a repository. Frames follow CWM-SPEC 1.2; values follow values.py.

The records themselves (a table of distinct frame fragments and the
sequence of their indices) are fragments.py.

Why the line path looks the way it does: it runs for every line of the
traced program, so its cost is the tracer's overhead. A line of the frame
recorded just before (the common case) looks at no local at all when the
version tag of f_locals did not move (cpython.py), otherwise only at those
whose object changed; a local of a mutable type holding immutable atoms is
compared by identity with a shallow snapshot instead of being repr'd again
(values.snapshot, values.rescan); and the fragment is found in a memo keyed
by the line, the names of the locals and the texts (or int values) that
changed, so a step seen before costs no string building at all
(fragments.py). docs/traces.md, "Recording", says what each saves.
"""

import array
import dis
import json
import sys
import time
import types
# The program may replace builtins (builtins.len = ...) or module functions;
# the tracer binds what it calls before any program runs.
from builtins import BaseException, KeyError, RecursionError, int, len, min, object, tuple, type

import _cwm_cpython as _cpython
import _cwm_flocals as _flocals
import _cwm_fragments as fragments
import _cwm_qualname as _qualname
import _cwm_values as values
from _cwm_fragments import jname as _jname, lhead as _lhead, miss as _miss, names_key as _names_key
from _cwm_fragments import jnames as _jnames, junch as _junch, lheads as _lheads, memo as _memo
from _cwm_fragments import recs as _recs
from _cwm_fragments import MEMO_TEXT as _MEMO_TEXT
from _cwm_values import STABLE as _STABLE
from _cwm_values import exc_text as _exc_text, snapshot as _snapshot, text as _text
from _cwm_values import int_text as _int_text, rescan as _rescan
from _cwm_cpython import version as _version

_perf = time.perf_counter


_cpython.keep_freed_memory()
_REORDER = _flocals.ANY
# A module's code starts at line 0 from 3.11 (its RESUME), at its first
# line before: the call of a module (a program's, an imported one) is
# written at line 0 on every version.
_MODULE_AT_1 = sys.version_info < (3, 11)
# Before 3.11 a frame whose call event raised does not start, and its
# caller's unwinding passes untraced (see _reenable).
_LOST_UNWIND = sys.version_info < (3, 11)
_overflow = None      # the RecursionError _on_call raised, until _reenable
_Traceback = types.TracebackType
_needed, _ordered = _flocals.needed, _flocals.ordered
_jstr = json.encoder.encode_basestring_ascii  # json.dumps of a str, in C
_settrace = sys.settrace
_setprofile = sys.setprofile
_NOTHING = object()   # stands for an unbound local
_HEADROOM = 200       # recursion levels kept free for the tracer itself
_CHECK_EVERY = 256    # frames between two checks of the byte cap and the clock

# Scope: which code objects produce frames.
_file = "<cwm-trace>"  # function tracing: code compiled from the context
_scope = None          # repository tracing: filename -> bool
_codes = {}            # code object -> index in _code_table, or -1
_code_table = []
_dels = set()          # in-scope code objects that unbind locals (del)
# Opcodes that unbind a local: del, and from 3.12 the end of an inlined
# comprehension (PEP 709), which restores its variable's outer binding
# (none, usually) with LOAD_FAST_AND_CLEAR's saved value.
_UNBINDS = tuple(bytes([dis.opmap[op]]) for op in ("DELETE_FAST", "DELETE_DEREF", "LOAD_FAST_AND_CLEAR")
                 if op in dis.opmap)

# The recording.
_seq = array.array("i")  # per frame, the index of its fragment (fragments.recs)
_entry = None         # code of the entry function (function tracing)
_main = None          # frame of the entry call (function tracing)
_state = 0            # 0 waiting for entry, 1 recording, 2 entry returned, 3 stopped
_status = ""
_reason = ""
_nother = 0           # call, return and exception frames recorded
_nbytes = 0           # lower bound of the text, without 49 bytes per line frame
_capline = 0          # 1 when the line cap stopped recording
_lim = 0              # len(_seq) at which _caps runs next
_deadline = 0.0       # perf_counter deadline of the recording, 0 for none
on_cap = None         # called when a cap stops the recording (see server._handle)
_max_lines = 10000
_max_bytes = 1 << 20
_depth = 0            # in-scope frames on the stack
_base_depth = 0       # Python stack depth of the outermost in-scope frame
_user_limit = 1000    # the recursion limit the program sees
# The frame of the last call/line record, if no call or return came since,
# and what that record saw of its locals:
_base = None
_bt = {}              # name -> text (or an int, whose text is its repr)
_bo = {}              # name -> object (a copy of f_locals; same key order)
_nsk = 0              # key base of the names (fragments.names_key)
_snaps = {}           # name -> snapshot of a container local (values.snapshot)
_blen = 0             # len(_bo), or -1 when the code of _base unbinds locals (see _full)
_bvol = ()            # names of the locals whose values are of mutable types
_bloc = None          # the f_locals dict of _base
_bver = None          # reads its version tag (cpython.version)
_bv = -1              # its version at the last step


def configure(max_events, max_bytes, max_repr, filename="<cwm-trace>", scope=None, seconds=0.0):
    """Sets the caps and the scope, and forgets the previous recording."""
    global _file, _scope, _max_lines, _max_bytes, _deadline
    _file, _scope = filename, scope
    values.configure(max_repr)
    _max_lines, _max_bytes = max_events, max_bytes
    _reset()
    _deadline = _perf() + seconds if seconds > 0 else 0.0


def _reset():
    global _entry, _main, _state, _status, _reason, _nother, _nbytes, _capline, _lim
    global _depth, _base, _bt, _bo, _nsk, _snaps, _codes, _code_table, _seq
    global _dels, _bloc, _bver, _bvol
    _entry = _main = _base = _bloc = _bver = None
    _bvol = ()
    _state, _status, _reason = 0, "", ""
    _nother = _nbytes = _capline = _depth = _nsk = 0
    _lim = 0  # the first line event computes the real limit
    values.reset()
    _bt, _bo, _snaps, _codes, _code_table, _dels = {}, {}, {}, {}, [], set()
    _seq = array.array("i")
    fragments.reset()
    _flocals.forget()


def start(entry=None):
    """Starts recording: at the call of entry (a code object), or, without
    one, at every in-scope call from now on (repository tracing)."""
    global _entry, _state
    _entry = entry
    _state = 0 if entry is not None else 1
    _settrace(_on_call)


def _classify(code):
    f = code.co_filename
    if f == _file or (_scope is not None and _scope(f)):
        ci = len(_code_table)
        _code_table.append((f, _qualname.qualname(code), code.co_firstlineno))
        ops = code.co_code[::2]  # two bytes per code unit (3.6+), opcode first
        for op in _UNBINDS:
            if op in ops:
                _dels.add(code)
                break
        _flocals.cell_args(code)
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


def _full(loc, parts, frame):
    """Appends every local to parts as "name",text JSON pairs, makes them
    the base of the next line of the frame, and returns their total length."""
    global _blen
    bt, snaps, n = {}, {}, 0
    for k, v in loc.items():
        t = _text(v)
        bt[k] = t
        try:
            j = _jnames[k]
        except KeyError:
            j = _jname(k)
        parts.append(j + "," + _jstr(t))
        n += len(t)
        if type(v) not in _STABLE:
            s = _snapshot(v)
            if s is not None:
                snaps[k] = s
    _rebase(loc, bt, snaps)
    # A name unbound (del, the end of an except-as block) and bound again
    # moves to the end of f_locals if something listed the locals while it
    # was unbound (locals(), eval): the hot path cannot see that reordering,
    # so the frames of code with deletes take _rebound.
    _blen = -1 if frame.f_code in _dels else len(loc)
    return n


def _revol(loc):
    """Lists again the locals whose values are of mutable types."""
    global _bvol
    _bvol = tuple([k for k, v in loc.items() if type(v) not in _STABLE])


def _rebase(loc, bt, snaps):
    """Makes loc (f_locals, just read) the base of the next line step of
    its frame: the texts bt and snapshots snaps of its values."""
    global _bt, _bo, _nsk, _snaps, _bloc, _bver, _bv
    _bt, _bo, _nsk, _snaps = bt, loc.copy(), _names_key(loc), snaps
    if loc is not _bloc:
        # The version tag is read through the dict's address: keep the
        # dict alive as long as the reader.
        _bloc, _bver = loc, _version(loc)
    _bv = _bver.value
    _revol(loc)


def _resnap(k, v):
    s = _snapshot(v)
    if s is None:
        _snaps.pop(k, None)
    else:
        _snaps[k] = s


def _on_call(frame, event, arg):
    """Global trace function: CPython calls it for every new frame."""
    global _state, _main, _depth, _base_depth, _base, _nbytes, _nother
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
            _state, _main = 1, frame
        if _depth == 0:
            _base_depth = _stack_depth(frame)
        if _base_depth + _depth >= _user_limit - 50:
            overflow = _stack_depth(frame) > _user_limit
        if not overflow:
            loc = frame.f_locals
            if _REORDER and _needed(frame, loc):
                loc = _ordered(frame, loc)
            ln = frame.f_lineno
            if _MODULE_AT_1 and code.co_name == "<module>":
                ln = 0
            parts = ["[1,%d,%d" % (ln, ci)]
            n = _full(loc, parts, frame)
            _base = frame
            frag = ",".join(parts)
            _seq.append(_recs.setdefault(frag, len(_recs)))
            _depth += 1
            _nother += 1
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
    global _overflow
    _overflow = RecursionError("maximum recursion depth exceeded")
    _setprofile(_reenable)
    raise _overflow


def _reenable(frame, event, arg):
    global _overflow
    _setprofile(None)
    e, _overflow = _overflow, None
    if _state != 1:
        return
    if _LOST_UNWIND and event == "return" and e is not None and _codes.get(frame.f_code, -1) >= 0:
        # Before 3.11 the failed frame never started, so the first event
        # the profile hook sees is its caller's return: the caller's
        # exception and return passed while tracing was off. They are
        # recorded here, as 3.11's trace has them.
        tb = e.__traceback__  # None there: the text needs a traceback's
        if tb is None:
            tb = _Traceback(None, frame, frame.f_lasti, frame.f_lineno)
        _on_event(frame, "exception", (type(e), e, tb))
        _on_event(frame, "return", None)
    _settrace(_on_call)


def _on_event(frame, event, arg, type=type, len=len, int=int, stable=_STABLE, reorder=_REORDER):
    """Local trace function of an in-scope frame: line, return, exception.
    (The keyword arguments make the names the hot path uses fast locals.)"""
    global _nbytes, _nother, _base, _depth, _bv
    try:
        if event == "line":
            if frame is _base:  # _stop clears _base: this frame is recording
                if len(_seq) >= _lim and _caps():
                    return None
                loc = frame.f_locals
                if reorder and _needed(frame, loc):
                    loc = _ordered(frame, loc)
                ln = frame.f_lineno
                key, fresh = _nsk + ln, False
                ver = _bver.value
                if ver == _bv:
                    # No local was bound, unbound or rebound since the last
                    # step (the version tag of f_locals did not move, see
                    # cpython.py): only a mutable value can have changed.
                    if not _bvol:
                        i = _memo.get(key)
                        _seq.append(_miss(key, loc, ln) if i is None else i)
                        return None
                    for k in _bvol:
                        v = loc[k]
                        s = _snaps.get(k)
                        # A list of the same objects: a memcmp of its item
                        # array (s[8] reads the array's address, s[3] is the
                        # old one; values.snapshot).
                        if (s is not None and s[0] == 1 and len(v) == s[6]
                                and s[8].value == s[3] and s[4].raw == s[5]):
                            continue
                        if s is None:
                            t = _text(v)
                            _resnap(k, v)
                        else:
                            t = _rescan(v, s)
                            if t is None:
                                continue
                            if s[0] < 0:
                                del _snaps[k]
                        if t != _bt[k]:
                            _bt[k] = t
                            key = (key, k, t) if type(key) is int else key + (k, t)
                            m = len(t)
                            _nbytes += m
                            if m > _MEMO_TEXT:
                                fresh = True
                else:
                    if len(loc) != _blen:
                        _seq.append(_rebound(loc, ln))
                        return None
                    _bv = ver
                    bo = _bo
                    # The same names are bound as at the last step: without
                    # a del in the code, a bound name stays bound, so equal
                    # counts mean the same names in the same order (a name
                    # bound since is appended; see _full for the del case).
                    for k, v in loc.items():
                        o = bo[k]
                        if v is o:
                            if type(v) in stable:
                                continue
                            s = _snaps.get(k)
                            if (s is not None and s[0] == 1 and len(v) == s[6]
                                    and s[8].value == s[3] and s[4].raw == s[5]):
                                continue
                            if s is None:
                                t = _text(v)
                                _resnap(k, v)
                            else:
                                t = _rescan(v, s)
                                if t is None:
                                    continue
                                if s[0] < 0:
                                    del _snaps[k]
                        else:
                            tv = type(v)
                            if tv is int and type(o) is int:
                                # Equal ints have equal texts; a changed one
                                # goes into the key as a number, and its text
                                # is made only if the key is new (_miss). The
                                # text of an int in bo is always its repr (_bt
                                # is not kept up to date for them).
                                bo[k] = v
                                if v != o:
                                    key = (key, k, v) if type(key) is int else key + (k, v)
                                continue
                            t = _text(v)
                            if tv not in stable:
                                _resnap(k, v)
                            if (tv in stable) != (type(o) in stable):
                                _revol(loc)
                        # Replacing the value of an existing key leaves the
                        # iteration over loc (another dict) alone.
                        b = _int_text(o) if type(o) is int else _bt[k]
                        bo[k] = v
                        if t != b:
                            _bt[k] = t
                            key = (key, k, t) if type(key) is int else key + (k, t)
                            # The lower bound of the text grows by this value
                            # (ints are left out: one digit is nothing).
                            m = len(t)
                            _nbytes += m
                            if m > _MEMO_TEXT:
                                fresh = True
                # A key with a long text is never memoised (see _miss).
                i = None if fresh else _memo.get(key)
                _seq.append(_miss(key, loc, ln) if i is None else i)
                return None
            if _state != 1 or len(_seq) >= _lim and _caps():
                return None
            loc = frame.f_locals
            if reorder and _needed(frame, loc):
                loc = _ordered(frame, loc)
            ln = frame.f_lineno
            try:
                parts = [_lheads[ln]]
            except KeyError:
                parts = [_lhead(ln)]
            n = _full(loc, parts, frame)
            _base = frame
            frag = ",".join(parts)
            _seq.append(_recs.setdefault(frag, len(_recs)))
            _nbytes += n
        elif _state != 1:
            return None
        elif event == "return":
            t = _text(arg)
            frag = "[3,%d,%s" % (frame.f_lineno, _jstr(t))
            _seq.append(_recs.setdefault(frag, len(_recs)))
            _base = None
            _depth -= 1
            _nother += 1
            if _REORDER:
                _flocals.left(frame)
            _nbytes += 54 + len(t)
            if frame is _main:
                _stop("", "")
        elif event == "exception":
            t = _exc_text(arg)
            frag = "[4,%d,%s" % (frame.f_lineno, _jstr(t))
            _seq.append(_recs.setdefault(frag, len(_recs)))
            _nother += 1
            _nbytes += 54 + len(t)
    except BaseException as e:
        _stop("error", "tracer failure: %s" % _text(e))
    return None


def _rebound(loc, ln):
    """The fragment of a line of the same frame after names were bound or
    unbound: a new name shows its value, the others ".." unless changed.
    Makes these locals the base of the next line; returns the index."""
    global _nbytes, _blen
    bt0, bo0, snaps0 = _bt, _bo, _snaps
    bt, snaps, n = {}, {}, 0
    try:
        parts = [_lheads[ln]]
    except KeyError:
        parts = [_lhead(ln)]
    for k, v in loc.items():
        tv = type(v)
        o = bo0.get(k, _NOTHING)
        t0 = _int_text(o) if type(o) is int else bt0.get(k)  # see _on_event
        s = snaps0.get(k) if tv not in _STABLE else None
        if v is o and tv in _STABLE:
            t = t0
        elif v is o and s is not None:
            t = _rescan(v, s)
            if t is None:
                t = t0
            elif s[0] < 0:
                s = None
        else:
            t = _text(v)
            s = _snapshot(v) if tv not in _STABLE else None
        if s is not None:
            snaps[k] = s
        bt[k] = t
        if t == t0:
            parts.append(_junch[k])
        else:
            try:
                j = _jnames[k]
            except KeyError:
                j = _jname(k)
            parts.append(j + "," + _jstr(t))
            n += len(t)
    _rebase(loc, bt, snaps)
    if _blen >= 0:
        _blen = len(loc)
    _nbytes += n
    return _recs.setdefault(",".join(parts), len(_recs))


def _caps():
    """Checks the line cap exactly and the byte cap and the clock every
    _CHECK_EVERY frames; stops recording past one. Returns whether it did."""
    global _lim, _capline
    n = len(_seq)
    lines = n - _nother
    if lines >= _max_lines:
        _capline = 1
        _stop("too_long", "more than %d line events" % _max_lines)
        return True
    total = _nbytes + 49 * lines
    if total > _max_bytes:
        _stop("too_long", "trace text over %d bytes" % _max_bytes)
        return True
    if _deadline and _perf() > _deadline:
        _stop("timeout", "wall-clock limit reached while recording")
        return True
    _lim = n + min(_max_lines - lines, (_max_bytes - total) // 49 + 1, _CHECK_EVERY)
    return False


def _stop(status, reason):
    """Stops recording: the entry returned (status "") or a limit was hit."""
    global _state, _status, _reason, _base
    _base = None
    if _state == 1:
        _state = 3 if status else 2
        _status, _reason = status, reason
    _settrace(None)
    _flocals.forget()  # the frames it holds
    if status and on_cap is not None:
        on_cap()


def lines():
    """Line events seen, the one that hit the line cap included."""
    return len(_seq) - _nother + _capline


def nbytes():
    """Lower bound of the text recorded so far."""
    return _nbytes + 49 * (len(_seq) - _nother)


def encode(head):
    """The JSON line of a result (head, a JSON object) with the frames."""
    return fragments.encode(head, _seq)
