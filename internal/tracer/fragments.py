"""The frame records of cwm's tracer (record.py): each distinct frame is
stored once as the JSON text of a flat array, without its closing bracket
(added by encode):

  call      [1, lineno, code index, name, text, name, text, ...]
  line      [2, lineno, name, text, ...]        text ".." when unchanged
  return    [3, lineno, text]       exception [4, lineno, text]

and the trace is the sequence of their indices. Depth and code of the
frames other than calls follow from the call/return nesting.

Why text and not tuples: on the VMs cwm runs on, growing the heap is the
dominant cost of tracing (a page fault costs ~20 us), and retained
containers make every garbage collection slower. A loop repeats the same
frame many times, so each distinct fragment is stored once (recs, in
first-seen order) and the trace is the sequence of their indices (4 bytes
per frame, sent as base64).

A line step of the frame recorded just before is found through memo, keyed
by the line, the names of the locals (a key base from names_key) and what
changed; miss makes the fragment of a key not seen before.

The tables are module globals that record.py binds once: reset clears
them in place, never rebinds them.
"""

import array
import base64
import json
import sys
from builtins import int, len, range, tuple, type

from _cwm_values import ILIM as _ILIM, SAFE as _SAFE, int_text as _int_text

_b64 = base64.b64encode
_jstr = json.encoder.encode_basestring_ascii  # json.dumps of a str, in C
MEMO_TEXT = 64        # longest value text a memo key keeps (see miss)

recs = {}             # distinct JSON fragments -> index
memo = {}             # line-step key -> index in recs (see record._on_event)
_nsids = {}           # tuple of local names -> its key base (an int)
_templates = {}       # key base -> fragment parts with every local "..", and positions
_slots = {}           # (key base + line, name) -> the fragment before and after its value
lheads = {}           # line number -> "[2,<line>" (a line record's start)
jnames = {}           # local name -> its JSON text
junch = {}            # local name -> its JSON text + ',".."'


def reset():
    """Forgets every fragment and key (the names' JSON texts stay valid)."""
    for t in (recs, memo, _nsids, _templates, _slots):
        t.clear()


def lhead(ln):
    h = lheads[ln] = "[2,%d" % ln
    return h


def jname(k):
    """The JSON text of a local's name; also caches its unchanged pair."""
    j = jnames[k] = _jstr(k)
    junch[k] = j + ',".."'
    return j


def names_key(loc):
    """The key base of the names of loc, in order (see _on_event)."""
    names = tuple(loc)
    nsk = _nsids.get(names)
    if nsk is None:
        # Key bases are multiples of 2**32, so base + line number is unique.
        nsk = _nsids[names] = (len(_nsids) + 1) << 32
    return nsk


def miss(key, loc, ln):
    """The fragment of a line step not seen before: every local in order,
    ".." unless its text changed (key is base + ln, or (base + ln, name,
    text, name, text, ...) in the order of loc)."""
    if type(key) is int:
        nsk, last = key - ln, 0
    else:
        nsk, last = key[0] - ln, len(key) - 1
        if last == 2:
            return miss1(key, loc, ln)
    parts = template(nsk, loc)[0].copy()
    pos = _templates[nsk][1]
    keep = True
    for j in range(1, last, 2):
        k, t = key[j], key[j + 1]
        json, small = value_json(t)
        keep = keep and small
        parts[pos[k]] = jnames[k] + "," + json
    try:
        parts[0] = lheads[ln]
    except KeyError:
        parts[0] = lhead(ln)
    i = recs.setdefault(",".join(parts), len(recs))
    if keep:
        memo[key] = i
    return i


def template(nsk, loc):
    """Slot 0 for the head, then every name unchanged; and where each name
    is. For the names of key base nsk (the fast path guarantees loc has
    exactly them, in this order)."""
    tp = _templates.get(nsk)
    if tp is None:
        tp = _templates[nsk] = ([""] + [junch[k] for k in loc],
                                {k: i for i, k in enumerate(loc, 1)})
    return tp


def miss1(key, loc, ln):
    """_miss for one changed local, the common case: the fragment is the
    text around that local's value, made once per line and local, plus the
    value (one copy of a long text, where assembling the parts made three)."""
    base, k, t = key
    sl = _slots.get((base, k))
    if sl is None:
        tp = template(base - ln, loc)
        parts = tp[0].copy()
        try:
            parts[0] = lheads[ln]
        except KeyError:
            parts[0] = lhead(ln)
        p = tp[1][k]
        post = parts[p + 1:]
        sl = _slots[(base, k)] = (",".join(parts[:p]) + "," + jnames[k] + ",",
                                  "," + ",".join(post) if post else "")
    # One join: a long text is copied once.
    if type(t) is int:
        frag = "".join((sl[0], '"', _int_text(t), '"', sl[1]))
        small = -_ILIM < t < _ILIM
    else:
        small = len(t) <= MEMO_TEXT
        if t is _SAFE[0] or t.isascii() and t.isprintable() and '"' not in t and "\\" not in t:
            frag = "".join((sl[0], '"', t, '"', sl[1]))
        else:
            frag = "".join((sl[0], _jstr(t), sl[1]))
    i = recs.setdefault(frag, len(recs))
    if small:
        memo[key] = i
    return i


def value_json(t):
    """The JSON text of a changed value of a key (an int or a text), and
    whether the key may be memoised: the memo would keep a huge int alive,
    and a long text rarely comes back (on these VMs every byte kept costs
    page faults; the fragment holds it already)."""
    if type(t) is int:
        # An int's text needs no JSON escaping.
        return '"' + _int_text(t) + '"', -_ILIM < t < _ILIM
    # json.dumps of t: t in quotes when nothing needs escaping (the common
    # case, a quarter of the cost for a long text).
    if t is _SAFE[0] or t.isascii() and t.isprintable() and '"' not in t and "\\" not in t:
        return '"' + t + '"', len(t) <= MEMO_TEXT
    return _jstr(t), len(t) <= MEMO_TEXT


def encode(head, seq):
    """The JSON line of a result dict with the frames: "table" holds the
    distinct frame records, "seq" the index of each frame's record (int32,
    little-endian, base64)."""
    if sys.byteorder != "little":
        seq = array.array("i", seq)
        seq.byteswap()
    tail = '],"seq":"%s"}' % _b64(seq.tobytes()).decode()
    if not recs:
        return head[:-1] + ',"table":[' + tail
    # Fragments are stored without their closing bracket (one string
    # operation less per frame); it is added here. One join makes the whole
    # line: the table can be megabytes, and every copy costs page faults.
    frags = list(recs)
    frags[0] = head[:-1] + ',"table":[' + frags[0]
    frags[-1] += "]" + tail
    return "],".join(frags)
