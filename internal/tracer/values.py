"""Value text for cwm's tracer (tracer.py): how a Python value is written in
a trace (docs/traces.md, "Value text").

The text is the value's repr, with memory addresses and thread idents
removed (deterministic), cut at max_repr characters with a marker, and never
an exception: a __repr__ that raises, returns a non-string or runs too long
(SIGPROF, see on_prof) gives object.__repr__'s text instead.
"""

import re
# The program may replace builtins; bind what is called here first.
from builtins import (BaseException, ValueError, bytearray, bytes, complex, dict, float,
                      frozenset, getattr, id, int, len, list, object, range, repr, set,
                      str, tuple, type)

MAXR = 4096           # longest value text before truncation (max_repr)
_BIGLEN = MAXR // 3   # containers longer than this cannot fit: render a prefix
ILIM = 10 ** 18       # ints inside (-ILIM, ILIM) take the plain repr path
_ADDR = re.compile(r" at 0x[0-9a-fA-F]+")
_TID = re.compile(r"((?:started|stopped)(?: daemon)?) \d+")
_SEQS = {list: "[]", tuple: "()", set: "{}", frozenset: "frozenset({})", dict: "{}"}
# Types whose text cannot change while the object stays the same: an
# unchanged local of such a type is written ".." without calling repr.
# Other types are classified once, when first seen (_classify_type).
_BASE = frozenset({int, float, str, bytes, bool, type(None), complex, range,
                   type(...), type(NotImplemented)})
STABLE = set(_BASE)
_SEEN = set(_BASE)
_active = set()       # ids of containers being rendered by _bounded (cycles)
_ticks = 0            # SIGPROF ticks (50 ms of CPU each) during a run
_repr_since = -1      # tick at which a repr of untrusted code began, or -1


class _ReprTimeout(BaseException):
    """Raised by the SIGPROF handler inside a __repr__ that runs too long."""


def configure(max_repr):
    global MAXR, _BIGLEN
    MAXR, _BIGLEN = max_repr, max_repr // 3


def reset():
    """Forgets the previous function: its types (a runner serves many
    functions, and would keep their classes alive) and its CPU ticks."""
    global _ticks
    _ticks = 0
    STABLE.intersection_update(_BASE)  # the same set object: tracer.py holds it
    _SEEN.clear()
    _SEEN.update(_BASE)


def _cut(r, more, unit="chars"):
    return r[:MAXR] + "<... %d more %s>" % (more, unit)


def text(v):
    """The value text of v: its repr, without addresses, bounded, never raising."""
    tv = type(v)
    if tv is int:
        if -ILIM < v < ILIM:
            return repr(v)
        return _int_text(v)
    if tv is str:
        if len(v) <= MAXR:
            r = repr(v)
            return r if len(r) <= MAXR else _cut(r, len(r) - MAXR)
        return _cut(repr(v[:MAXR]), len(v) - MAXR)
    if tv is float or tv is bool or v is None:
        return repr(v)
    return _slow(v)


def _int_text(v):
    try:
        r = repr(v)
    except ValueError:  # beyond sys.get_int_max_str_digits()
        return "<int: %d bits>" % v.bit_length()
    return r if len(r) <= MAXR else _cut(r, len(r) - MAXR)


def _slow(v):
    global _repr_since
    tv = type(v)
    if tv not in _SEEN:
        _classify_type(tv)
    if tv in _SEQS and len(v) > _BIGLEN:
        return _bounded(v, tv)
    if (tv is bytes or tv is bytearray) and len(v) > MAXR:
        return _cut(repr(v[:MAXR]), len(v) - MAXR)
    # User code may run from here on (a __repr__, also inside containers);
    # SIGPROF interrupts it after 50-100 ms of CPU (see on_prof).
    _repr_since = _ticks
    try:
        r = repr(v)
        _repr_since = -1
        if type(r) is not str:  # a str subclass could run code in == or len
            r = "".join([r])
    except BaseException:
        _repr_since = -1
        r = _fallback(v)
    if " at 0x" in r:
        r = _ADDR.sub("", r)
    if "started " in r or "stopped " in r:
        r = _TID.sub(r"\1", r)
    return r if len(r) <= MAXR else _cut(r, len(r) - MAXR)


def _fallback(v):
    """Text for a value whose repr failed or timed out: object.__repr__'s."""
    try:
        return _ADDR.sub("", object.__repr__(v))
    except BaseException:
        return "<object>"


def _classify_type(tv):
    _SEEN.add(tv)
    try:
        if getattr(tv, "__repr__", None) is object.__repr__:
            STABLE.add(tv)
    except BaseException:
        pass


def _bounded(v, tv):
    """A prefix of a long built-in container's repr, then a count of the rest."""
    if id(v) in _active:
        return _SEQS[tv].replace("{}", "{...}").replace("[]", "[...]").replace("()", "(...)")
    _active.add(id(v))
    try:
        parts, n = [], 0
        items = v.items() if tv is dict else v
        for x in items:
            t = text(x[0]) + ": " + text(x[1]) if tv is dict else text(x)
            parts.append(t)
            n += len(t) + 2
            if n > MAXR:
                break
        body = ", ".join(parts) + ", <... %d more items>" % (len(v) - len(parts))
        if tv is frozenset:
            return "frozenset({" + body + "})"
        return _SEQS[tv][0] + body + _SEQS[tv][1]
    except BaseException:  # a __repr__ of an element changed the container
        return _fallback(v)
    finally:
        _active.discard(id(v))


def exc_text(arg):
    # The settrace tuple (type, value, traceback), as CWM shows it.
    return "(" + text(arg[0]) + ", " + text(arg[1]) + ", " + text(arg[2]) + ")"


def output_text(v, cap):
    """The text of the entry's result, with its own (larger) length cap."""
    global MAXR, _BIGLEN
    saved = MAXR
    MAXR, _BIGLEN = cap, cap // 3
    try:
        return text(v)
    finally:
        MAXR, _BIGLEN = saved, saved // 3


def on_prof(signum, frame):
    """SIGPROF handler (every 50 ms of CPU): stops a __repr__ that has run
    for more than one full tick."""
    global _ticks
    _ticks += 1
    if _repr_since >= 0 and _ticks - _repr_since >= 2:
        raise _ReprTimeout
