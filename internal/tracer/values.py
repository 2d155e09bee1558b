"""Value text for cwm's tracer (tracer.py): how a Python value is written in
a trace (docs/traces.md, "Value text").

The text is the value's repr, with memory addresses and thread idents
removed (deterministic), cut at max_repr characters with a marker, and never
an exception: a __repr__ that raises, returns a non-string or runs too long
(SIGPROF, see on_prof) gives object.__repr__'s text instead.
"""

import re
import sys
from itertools import accumulate as _accumulate, compress as _compress, repeat as _repeat
from operator import add as _add, is_not as _is_not
from _cwm_cpython import ITEMS as _ITEMS, address as _address
from _cwm_cpython import items_address as _items_address, items_view as _items_view
from _cwm_cpython import PTR as _PTR
_BITS = 8 * _PTR
_from_bytes = int.from_bytes
# The program may replace builtins; bind what is called here first.
from builtins import (BaseException, ValueError, any, bytearray, bytes, complex, dict, float,
                      frozenset, getattr, hasattr, id, int, len, list, map, object, range, repr, set,
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


def int_text(v):
    """The value text of an int."""
    if -ILIM < v < ILIM:
        return repr(v)
    return _int_text(v)


# The int-to-str limit came with 3.11 (and 3.9.14, 3.10.7): an
# interpreter without it writes the text 3.11 would (4300 digits, its
# default), though the program itself converts such ints without error.
_NO_DIGIT_LIMIT = not hasattr(sys, "get_int_max_str_digits")
_DIGIT_LIMIT = 10 ** 4300


def _int_text(v):
    if _NO_DIGIT_LIMIT and (v >= _DIGIT_LIMIT or -v >= _DIGIT_LIMIT):
        return "<int: %d bits>" % v.bit_length()
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
    if tv is _STR_ITER:
        return _str_iter(v)
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
    return _finish(r)


# 3.11 split str's iterator in two, str_ascii_iterator for ASCII text:
# before 3.11 (where str_iterator is the one) an iterator over ASCII text
# is named as 3.11 names it, so that traces agree across versions.
_STR_ITER = type(iter("")) if sys.version_info < (3, 11) else None


def _str_iter(v):
    try:
        s = v.__reduce__()[1][0]  # (iter, (the text,), position)
        ascii = type(s) is str and s.isascii()
    except BaseException:
        ascii = False
    return "<str_ascii_iterator object>" if ascii else "<str_iterator object>"


def _finish(r):
    """A repr made deterministic (no addresses, no thread idents) and bounded."""
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


def snapshot(v):
    """What tells, cheaply, whether the text of the container v changed:
    for a list, set, frozenset, tuple or dict (not too long to render
    whole) whose elements, keys and values are all of STABLE types (or
    tuples of them), the text cannot change while it holds the same objects
    in the same order. Returns [0] for an immutable one (its text never
    changes), [1, elements, texts, address, view, pointers, length, plain,
    reader, number, text, offsets] for a list (plain: its elements are all
    of _PLAIN types; reader: reads the address of its item array; number:
    pointers as an int, or None; text: the whole repr, once an element has
    changed; offsets: where each element's text starts in it, or None),
    [2, keys, values] for a dict, [3, elements] for a set, or None when v is
    none of these; see rescan. For a list, texts (the reprs of its
    elements) is filled the first time an element changes. No code of the
    program runs: types are looked up, elements compared by identity."""
    tv = type(v)
    try:
        if tv not in _SNAPPED or len(v) > _BIGLEN:
            return None
        if tv is dict:
            if _atoms(v) and _atoms(v.values()):
                return [2, tuple(v), tuple(v.values())]
            return None
        if not _atoms(v):
            return None
        if tv is list:
            s = [1, v.copy(), None, -1, None, b"", len(v), set(map(type, v)) <= _PLAIN,
                 _NO_ITEMS, None, None, None]
            _view(v, s)
            return s
        return [0] if tv is tuple or tv is frozenset else [3, tuple(v)]
    except BaseException:  # a metaclass __hash__ of an element's type
        return None


_SNAPPED = frozenset({list, set, frozenset, tuple, dict})


def _atoms(xs):
    """Whether every element of xs has a STABLE type, or is a tuple of
    elements of STABLE types."""
    ts = set(map(type, xs))
    if ts <= STABLE:
        return True
    if not (ts - STABLE) <= {tuple}:
        return False
    for x in xs:
        if type(x) is tuple and not set(map(type, x)) <= STABLE:
            return False
    return True


def _view(v, s):
    """Points s (a list snapshot) at the current item array of v: comparing
    that array's bytes with a copy is a memcmp, ~50 ns for any length, where
    comparing the elements one by one from Python costs ~10 ns each (a
    120-element list: 1 us, at every line event). The snapshot keeps its
    elements alive, so no new object can take an old one's address."""
    s[6] = n = len(v)
    items = _items_address(v)
    if items < 0:
        s[3] = -1  # the hot path's test fails; rescan compares one by one
        return
    if s[8] is _NO_ITEMS:
        # Reads v's header: valid while v lives, and a snapshot is only
        # used while the tracer holds v (the local is the same object).
        s[8] = _address(id(v) + _ITEMS)
    view = s[4]
    if items != s[3] or view is None or len(view) != n * _PTR:
        view = _items_view(v, items)
    s[3], s[4], s[5], s[9] = items, view, view.raw, None


def rescan(v, s):
    """None if container v still holds what its snapshot s recorded;
    otherwise its new text, with s updated in place (s[0] becomes -1 when
    v can no longer be snapshotted: the caller drops s)."""
    kind = s[0]
    if kind == 0:
        return None
    a = s[1]
    n = len(a)
    if len(v) == n:
        if kind == 1:
            changed = new = None
            if s[3] >= 0:
                old = s[5]
                items = s[8].value
                if items != s[3]:  # reallocated: compare the new array
                    s[3], s[4] = items, _items_view(v, items)
                new = s[4].raw
                if new == old:
                    return None
                # The first and last elements that differ, from the XOR of
                # the two pointer arrays as numbers (C work, where finding
                # them one by one from Python costs ~10 ns an element). The
                # number of the old array is kept from the last time.
                ni = _from_bytes(new, "little")
                oi = s[9] if s[9] is not None else _from_bytes(old, "little")
                x = ni ^ oi
                s[9] = ni
                lo = ((x & -x).bit_length() - 1) // _BITS
                hi = (x.bit_length() - 1) // _BITS
                if hi - lo < 8:
                    changed = range(lo, hi + 1)
            elif not any(map(_is_not, v, a)):
                return None
            if changed is None:
                changed = list(_compress(range(n), map(_is_not, v, a)))
            if len(changed) <= 8:
                t = _relist(v, s, changed, new)
                if t is not None:
                    return t
        elif not any(map(_is_not, v, a)) and (kind == 3 or not any(map(_is_not, v.values(), s[2]))):
            return None
    t = text(v)
    s2 = snapshot(v)
    if s2 is None:
        s[0] = -1
    else:
        s[:] = s2
    return t


def _relist(v, s, changed, items):
    """The text of list v whose elements differ from its snapshot s only at
    the positions changed: the reprs of the others are kept (a list's repr
    is "[" + ", ".join(reprs) + "]"), so a swap costs two reprs, not all.
    The brackets are kept on the first and last texts: one copy less.
    items is the bytes of v's item array when rescan read them, or None."""
    ts, a, plain = s[2], s[1], s[7]
    last = len(a) - 1
    # A contiguous change whose texts keep their total length (a swap, a
    # permutation of equal texts) is spliced into the old text: two slices
    # and a short join, where joining every text costs ~5 ns per element.
    splice = type(changed) is range and s[10] is not None
    try:
        if ts is None:
            ts = list(map(repr, a))
            ts[0] = "[" + ts[0]
            ts[last] += "]"
        if splice:
            lo, hi = changed.start, changed.stop - 1
            off = s[11]
            if off is None:
                off = s[11] = [0, *_accumulate(map(_add, map(len, ts), _repeat(2)))]
            old = off[hi + 1] - 2 - off[lo]
        for i in changed:
            x = v[i]
            tx = type(x)
            if tx not in STABLE and not (tx is tuple and set(map(type, x)) <= STABLE):
                return None
            plain = plain and tx in _PLAIN
            r = repr(x)
            if i == 0:
                r = "[" + r
            if i == last:
                r += "]"
            ts[i] = r
    except BaseException:  # an int beyond the digit limit: the full path
        return None
    # The snapshot's elements are v's again (it keeps them alive: see
    # _view), and so are its pointers (items, read by rescan).
    for i in changed:
        a[i] = v[i]
    s[2], s[7] = ts, plain
    if items is None:
        _view(v, s)
    else:
        s[5] = items
    r = None
    if splice:
        seg = ", ".join(ts[lo:hi + 1])
        if len(seg) == old:
            whole = s[10]
            r = "".join((whole[:off[lo]], seg, whole[off[hi + 1] - 2:]))
            for i in range(lo + 1, hi + 1):
                off[i] = off[i - 1] + len(ts[i - 1]) + 2
    if r is None:
        r = ", ".join(ts)
        s[11] = None  # offsets made again when needed
    s[10] = r
    if not plain:
        return _finish(r)
    # Reprs of numbers, bools and None hold no address, thread ident, quote,
    # backslash or non-ASCII character: only the length matters, and the
    # text needs no JSON escaping (SAFE tells record.py so).
    if len(r) > MAXR:
        r = _cut(r, len(r) - MAXR)
    SAFE[0] = r
    return r


class _NoItems:
    """The reader of a list whose item array is not compared: never equal."""

    value = None


_NO_ITEMS = _NoItems()
# Element types whose reprs are plain ASCII: digits, signs, letters, dots.
_PLAIN = frozenset({int, float, bool, type(None), complex})
# The last text made by _relist that needs no JSON escaping (see there).
SAFE = [None]


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
