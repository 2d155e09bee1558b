"""Type-preserving mutation of call arguments, for coverage-guided fuzzing.

mutate({"call": "f([1, 2], 'ab')", "seed": 7, "n": 4, "code": SOURCE})
returns up to n distinct calls f(...) whose arguments are literals of the
same types as the originals (ints, floats, strings, bytes, lists, tuples,
dicts, sets, bools, None), with "input" the argument text. The constants of
SOURCE (the function's code) are used as a dictionary: a branch such as
`if 'a' in s` or `if x == 42` is found far sooner. Deterministic for a seed
(the server runs with PYTHONHASHSEED=0, so set iteration order is fixed).
"""

import ast
import math
import random
import string

_CHARS = string.ascii_letters + string.digits + string.punctuation + " "
_INTS = (0, 1, -1, 2, 3, 7, 10, 100, -100, 255, 256, 1000)
_MAXLEN = 64  # containers and strings grow no longer than this


def mutate(req):
    call = req["call"]
    tree = ast.parse(call.strip(), mode="eval").body
    if not isinstance(tree, ast.Call):
        return {"error": "not a call expression"}
    try:
        args = [ast.literal_eval(a) for a in tree.args]
        kws = [(k.arg, ast.literal_eval(k.value)) for k in tree.keywords]
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return {"error": "the arguments are not all literals"}
    if any(k is None for k, _ in kws) or not (args or kws):
        return {"error": "nothing to mutate"}
    func = ast.get_source_segment(call.strip(), tree.func)
    r = random.Random(int(req.get("seed", 0)))
    r.consts = _constants(req.get("code") or "")
    seen = {_render(args, kws)}
    out = []
    for _ in range(int(req.get("n", 1)) * 8):
        if len(out) >= int(req.get("n", 1)):
            break
        a, k = list(args), list(kws)
        for _ in range(r.choice((1, 1, 1, 2, 3))):
            i = r.randrange(len(a) + len(k))
            if i < len(a):
                a[i] = _mut(a[i], r, 0)
            else:
                name, v = k[i - len(a)]
                k[i - len(a)] = (name, _mut(v, r, 0))
        text = _render(a, k)
        if text in seen or not _literal(text):
            continue
        seen.add(text)
        out.append({"call": "%s(%s)" % (func, text), "input": text})
    return {"calls": out}


def _constants(code):
    """Literal strings, bytes and numbers of the code, by type (at most 64)."""
    out = {}
    try:
        nodes = ast.walk(ast.parse(code))
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return out
    n = 0
    for node in nodes:
        if isinstance(node, ast.Constant) and type(node.value) in (int, float, str, bytes):
            v = node.value
            if isinstance(v, (str, bytes)) and not 0 < len(v) <= 32:
                continue
            lst = out.setdefault(type(v), [])
            if v not in lst:
                lst.append(v)
                n += 1
                if n >= 64:
                    break
    return out


def _const(r, t):
    """A constant of type t from the code, or None (half the time, None)."""
    lst = r.consts.get(t)
    return r.choice(lst) if lst and r.random() < 0.5 else None


def _render(args, kws):
    return ", ".join([repr(a) for a in args] + ["%s=%r" % kv for kv in kws])


def _literal(text):
    """Whether text reads back as literals (no inf, nan or oversized ints)."""
    try:
        ast.literal_eval("(" + text + ",)")
        return len(text) < 100000
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return False


def _mut(v, r, depth):
    t = type(v)
    if v is None:
        return None
    if t is bool:
        return not v
    if t is int:
        c = _const(r, int)
        if c is not None:
            return r.choice((c, c + 1, c - 1))
        return r.choice((v + 1, v - 1, -v, v * 2, v // 2, v + r.randint(-10, 10), r.choice(_INTS)))
    if t is float:
        c = _const(r, float)
        if c is not None:
            return c
        x = r.choice((v + 1.0, v - 0.5, -v, v * 2, v / 2, 0.0, float(round(v)), round(r.uniform(-10, 10), 2)))
        return x if math.isfinite(x) else 0.0
    if t is str:
        c = _const(r, str)
        if c is not None:  # splice a constant of the code in
            i = r.randrange(len(v) + 1)
            return r.choice((c, v[:i] + c + v[i:]))
        char = lambda c=None: r.choice(_CHARS + v)
        return "".join(_seq(list(v), r, char, char))
    if t is bytes:
        byte = lambda b=None: r.choice(b"abcz019 \x00\xff" + v)
        return bytes(_seq(list(v), r, byte, byte))
    if t in (list, tuple):
        return t(_seq(list(v), r, lambda x: _mut(x, r, depth + 1), None))
    if t in (set, frozenset):
        items = sorted(v, key=repr)
        if items and r.random() < 0.5:
            items.pop(r.randrange(len(items)))
        elif items and len(items) < _MAXLEN:
            items.append(_mut(r.choice(items), r, depth + 1))
        return t(_hashable(items))
    if t is dict:
        items = list(v.items())
        op = r.randrange(4) if items else 3
        if op == 0:
            i = r.randrange(len(items))
            items[i] = (items[i][0], _mut(items[i][1], r, depth + 1))
        elif op == 1:
            items.pop(r.randrange(len(items)))
        elif op == 2:
            i = r.randrange(len(items))
            items[i] = (_mut(items[i][0], r, depth + 1), items[i][1])
        elif items and len(items) < _MAXLEN:
            k, x = r.choice(items)
            items.append((_mut(k, r, depth + 1), x))
        return dict(_hashable_keys(items))
    return v


def _seq(items, r, new, blank):
    """One edit of a sequence: change, delete, insert, duplicate, swap,
    reverse. blank makes an element for an empty sequence (None: unknown
    element type, the sequence stays empty)."""
    if not items:
        return [blank()] if blank else items
    op = r.randrange(7)
    if op == 0 or (op >= 5 and len(items) < 2):
        i = r.randrange(len(items))
        items[i] = new(items[i])
    elif op == 1:
        items.pop(r.randrange(len(items)))
    elif op == 2 and len(items) < _MAXLEN:
        src = items[r.randrange(len(items))]
        items.insert(r.randrange(len(items) + 1), new(src))
    elif op == 3 and len(items) < _MAXLEN:
        i = r.randrange(len(items))
        items.insert(i, items[i])
    elif op == 4:
        items.clear() if r.random() < 0.2 else items.reverse()
    else:
        i, j = r.randrange(len(items)), r.randrange(len(items))
        items[i], items[j] = items[j], items[i]
    return items


def _hashable(items):
    out = []
    for x in items:
        try:
            hash(x)
            out.append(x)
        except TypeError:
            pass
    return out


def _hashable_keys(items):
    return [(k, x) for k, x in items if _hashable([k])]
