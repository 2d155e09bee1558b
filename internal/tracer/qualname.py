"""The qualified name of a code object on every Python the tracer runs on.

A trace's code table names each frame's code by (file, qualname, first
line), which episodes are cut by. Python 3.11 and later carry it as
co_qualname; 3.9 and 3.10 give the name to the function object only (the
compiler pushes it as a constant next to the code object), and the tracer
sees frames, not functions. So on those versions the file's source is
compiled once more, the same compiler giving the same code objects, and
the qualified names are worked out along its tree of code objects the way
the compiler does (compile.c, compiler_set_qualname): a function in a
class is Class.name, one in a function (or lambda or comprehension) is
outer.<locals>.name. The one rule left out is a nested def declared
global in its enclosing scope (qualname: its bare name), which is rare
enough to cost only a wrong name in the table, never a wrong frame.
"""

import linecache
from builtins import BaseException, compile, getattr, type

_CO_OPTIMIZED = 0x1   # a function's code; a class body and a module lack it
_CodeType = type(compile("", "", "exec"))
# filename -> (the source lines, {key: qualname}); a table is made again
# when linecache holds other lines for the file (each traced function is
# compiled under the same name, <cwm-trace>).
_tables = {}


def qualname(code):
    """The qualified name of code, as co_qualname gives it on 3.11+."""
    q = getattr(code, "co_qualname", None)
    if q is not None:
        return q
    f = code.co_filename
    lines = linecache.getlines(f)
    t = _tables.get(f)
    if t is None or t[0] is not lines:
        t = _tables[f] = (lines, _table(f, lines))
    names = t[1]
    return (names.get((code.co_name, code.co_firstlineno, code.co_code))
            or names.get((code.co_name, code.co_firstlineno))
            or code.co_name)


def _table(filename, lines):
    """The qualified names of the code objects compiled from lines, by
    (name, first line, bytecode) and by (name, first line)."""
    names = {}
    try:
        root = compile("".join(lines), filename, "exec", dont_inherit=True)
    except BaseException:  # not Python source: names fall back to co_name
        return names
    stack = [(root, None, False)]
    while stack:
        code, qual, in_function = stack.pop()
        for c in code.co_consts:
            if type(c) is not _CodeType:
                continue
            if qual is None:
                q = c.co_name
            elif in_function:
                q = qual + ".<locals>." + c.co_name
            else:
                q = qual + "." + c.co_name
            names[(c.co_name, c.co_firstlineno, c.co_code)] = q
            names.setdefault((c.co_name, c.co_firstlineno), q)
            stack.append((c, q, bool(c.co_flags & _CO_OPTIMIZED)))
    return names
