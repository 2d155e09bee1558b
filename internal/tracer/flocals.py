"""A frame's locals in the order Python 3.11 and 3.12 list them, on every
Python the tracer runs on (docs/traces.md, "Python versions").

A trace writes the locals in f_locals order. On 3.11 and 3.12 f_locals is
a dict on the frame that each read refreshes from the frame's variables:
a name keeps the place where it was first bound, a name bound later goes
at the end, and one unbound and bound again moves to the end. Two Pythons
list them otherwise:

- 3.13 (PEP 667) makes f_locals a proxy onto the frame, a new one at each
  read, listing the bound names in the order of their slots: a local bound
  after a free variable is read comes before it;
- 3.9 and 3.10 move an argument that a nested function captures (a cell)
  behind every other local at each refresh, where 3.11 keeps it among the
  arguments.

For those frames (needed says which) ordered gives a dict in 3.11's order:
the names it listed at the frame's previous read, in the same order, that
are still bound, then the newly bound ones in slot order. What it returns
is a _Locals, not a dict: it is made afresh at each read, and the version
tag of a fresh dict says nothing about the frame (cpython.version).
"""

import sys
from builtins import dict, len, set, sorted, tuple, type

_CO_SUSPENDS = 0x20 | 0x80 | 0x200  # generator, coroutine, async generator
PROXY = sys.version_info >= (3, 13)
# Whether any frame can need ordered: not on 3.11 and 3.12, whose hot path
# then skips the question.
ANY = PROXY or sys.version_info < (3, 11)
_orders = {}   # frame -> the names of its last read, in order
_ranks = {}    # code -> {name: slot}, for 3.9 and 3.10's captured arguments


class _Locals(dict):
    __slots__ = ()


def cell_args(code):
    """On 3.9 and 3.10, the slot of each name of code if one of its
    arguments is captured by a nested function (f_locals then lists it out
    of place), else None."""
    if PROXY or sys.version_info >= (3, 11) or not code.co_cellvars:
        return None
    co = code
    nargs = co.co_argcount + co.co_kwonlyargcount + (co.co_flags & 0x4 != 0) + (co.co_flags & 0x8 != 0)
    if not set(co.co_cellvars) & set(co.co_varnames[:nargs]):
        return None
    names = co.co_varnames + tuple([c for c in co.co_cellvars if c not in co.co_varnames]) + co.co_freevars
    rank = {n: i for i, n in enumerate(names)}
    _ranks[code] = rank
    return rank


def needed(frame, loc):
    """Whether loc, frame's f_locals, must go through ordered."""
    return type(loc) is not dict or frame.f_code in _ranks


def ordered(frame, loc):
    """frame's locals (loc, its f_locals) in 3.11's order."""
    rank = _ranks.get(frame.f_code)
    if rank is None:
        cur = dict(loc)
    else:
        cur = dict(sorted(loc.items(), key=lambda kv: rank.get(kv[0], len(rank))))
    prev = _orders.get(frame)
    keys = tuple(cur)
    if prev is not None and keys != prev:
        out = _Locals()
        for k in prev:
            if k in cur:
                out[k] = cur[k]
        out.update(cur)
        _orders[frame] = tuple(out)
        return out
    _orders[frame] = keys
    return _Locals(cur)


def left(frame):
    """Forgets a frame that returned, unless it is suspended (a generator
    resumes in the same frame, its names in the same order)."""
    if _orders and not frame.f_code.co_flags & _CO_SUSPENDS:
        _orders.pop(frame, None)


def forget():
    """Forgets every frame and code (a new recording)."""
    _orders.clear()
    _ranks.clear()
