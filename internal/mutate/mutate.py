"""cwm's mutation operators: where a bug can be put into a Python function.

Run inside a sandbox on the environment's own interpreter (standard library
only), so that "the mutant compiles" means it compiles under the Python the
tests run on:

    python mutate.py REQUEST.json OUT.json

REQUEST names the functions to mutate (those the passing tests execute) and
the lines the tests execute, per file:

    {"root": "/repo", "seed": 1, "families": ["operators", ...],
     "per_operator": 8,
     "files": {"pkg/mod.py": {"functions": [["Cls.meth", 12], ...],
                              "executed": [13, 14, ...]}}}

OUT receives every mutant as a set of byte-range edits of the file, so the
caller's diff touches only the mutated span and keeps formatting and
comments everywhere else:

    {"mutants": [{"file", "function", "line", "family", "operator", "desc",
                  "edits": [[START, END, TEXT], ...], "lines": [FIRST, LAST],
                  "executed": BOOL, "affects": [[NAME, LINE], ...]}],
     "stats": {FAMILY: {"sites": N, "identical": N, "syntax": N}},
     "unmatched": ["pkg/mod.py:12 name", ...], "errors": ["...", ...]}

Python's ast decides where an operator applies (node positions are UTF-8
byte columns, which is why all offsets here are in bytes). A site becomes a
mutant only if the edited file still compiles (compile(), which also runs
the symbol table checks ast.parse skips) and its tree differs from the
original's; everything is deterministic for a seed.
"""

import ast
import json
import random
import re
import sys

FAMILIES = ("functions", "arguments", "variables", "statements", "operators")

# Replacements within each operator family: the closest plausible slip,
# so that the bug looks like one a person could make.
BINOPS = {
    ast.Add: ("+", ["-"]),
    ast.Sub: ("-", ["+"]),
    ast.Mult: ("*", ["/", "+"]),
    ast.Div: ("/", ["*", "//"]),
    ast.FloorDiv: ("//", ["/", "%"]),
    ast.Mod: ("%", ["//"]),
    ast.Pow: ("**", ["*"]),
    ast.BitAnd: ("&", ["|"]),
    ast.BitOr: ("|", ["&"]),
    ast.BitXor: ("^", ["|"]),
    ast.LShift: ("<<", [">>"]),
    ast.RShift: (">>", ["<<"]),
}
CMPOPS = {
    ast.Eq: ("==", ["!="]),
    ast.NotEq: ("!=", ["=="]),
    ast.Lt: ("<", ["<=", ">"]),
    ast.LtE: ("<=", ["<", ">="]),
    ast.Gt: (">", [">=", "<"]),
    ast.GtE: (">=", [">", "<="]),
    ast.Is: ("is", ["is not"]),
    ast.IsNot: ("is not", ["is"]),
    ast.In: ("in", ["not in"]),
    ast.NotIn: ("not in", ["in"]),
}
# Token patterns as they may be written ("is  not" is legal).
TOKEN_RE = {
    "is not": rb"is\s+not\b",
    "not in": rb"not\s+in\b",
    "is": rb"is\b",
    "in": rb"in\b",
    "and": rb"and\b",
    "or": rb"or\b",
}

SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef)


class Source:
    """A file's bytes with ast positions turned into byte offsets."""

    def __init__(self, data):
        self.data = data
        self.starts = [0]
        for i, b in enumerate(data):
            if b == 10:
                self.starts.append(i + 1)

    def off(self, line, col):
        return self.starts[line - 1] + col

    def start(self, node):
        return self.off(node.lineno, node.col_offset)

    def end(self, node):
        return self.off(node.end_lineno, node.end_col_offset)

    def text(self, node):
        return self.data[self.start(node):self.end(node)]

    def line_start(self, line):
        return self.starts[line - 1]

    def line_end(self, line):
        """Offset just past the newline ending line (or the end of data)."""
        return self.starts[line] if line < len(self.starts) else len(self.data)

    def indent_of(self, line):
        s = self.line_start(line)
        e = s
        while e < len(self.data) and self.data[e:e + 1] in (b" ", b"\t"):
            e += 1
        return self.data[s:e]

    def alone_before(self, off):
        """Only indentation precedes off on its line."""
        s = self.data.rfind(b"\n", 0, off) + 1
        return self.data[s:off].strip(b" \t\f") == b""

    def alone_after(self, off):
        """Only blanks or a comment follow off on its line."""
        e = self.data.find(b"\n", off)
        rest = self.data[off:] if e < 0 else self.data[off:e]
        rest = rest.strip(b" \t\f\r")
        return rest == b"" or rest.startswith(b"#")


def skip_trivia(data, i, end):
    """Skips blanks, line continuations, comments and parentheses."""
    while i < end:
        c = data[i:i + 1]
        if c in (b" ", b"\t", b"\n", b"\r", b"\f", b"(", b")"):
            i += 1
        elif c == b"\\":
            i += 1
        elif c == b"#":
            j = data.find(b"\n", i, end)
            i = end if j < 0 else j
        else:
            break
    return i


def find_token(data, start, end, tokens):
    """Finds the first of tokens between start and end, past trivia.

    Returns (offset, length, token) or None.
    """
    i = skip_trivia(data, start, end)
    for tok in sorted(tokens, key=len, reverse=True):
        pat = TOKEN_RE.get(tok)
        if pat is not None:
            m = re.compile(pat).match(data, i, end)
            if m:
                return i, m.end() - i, tok
        elif data.startswith(tok.encode(), i):
            # "<" must not be the start of "<=" or "<<".
            nxt = data[i + len(tok):i + len(tok) + 1]
            if nxt in (b"=", b"<", b">", b"/", b"*") and tok + nxt.decode() in ALL_SYMBOLS:
                continue
            return i, len(tok), tok
    return None


ALL_SYMBOLS = {s for s, _ in BINOPS.values()} | {s for s, _ in CMPOPS.values()} | {
    s + "=" for s, _ in BINOPS.values()
}


def docstring_of(body):
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        return body[0]
    return None


def stmt_first_line(stmt):
    decos = getattr(stmt, "decorator_list", None)
    if decos:
        return min(d.lineno for d in decos)
    return stmt.lineno


def own_nodes(func):
    """Nodes of func's body that belong to its scope: nested functions and
    classes are functions of their own, lambdas and comprehensions are not."""
    out = []
    stack = [n for n in reversed(func.body) if not isinstance(n, SCOPES)]
    while stack:
        n = stack.pop()
        out.append(n)
        kids = [c for c in ast.iter_child_nodes(n) if not isinstance(c, SCOPES)]
        stack.extend(reversed(kids))
    return out


def blocks_of(func):
    """Every statement list inside func's scope (its body first)."""
    out = [func.body]
    for n in own_nodes(func):
        if isinstance(n, SCOPES):
            continue
        # Handlers and match cases are nodes with a body of their own.
        for field in ("body", "orelse", "finalbody"):
            b = getattr(n, field, None)
            if isinstance(b, list) and b and isinstance(b[0], ast.stmt):
                out.append(b)
    return out


class Mutator:
    def __init__(self, path, rel, data, seed, per_operator, families):
        self.path = path
        self.rel = rel
        self.src = Source(data)
        self.tree = ast.parse(data, filename=path)
        self.seed = seed
        self.per_operator = per_operator
        self.families = families
        self.mutants = []
        self.stats = {f: {"sites": 0, "identical": 0, "syntax": 0} for f in FAMILIES}
        self.executed = set()
        self.functions = []  # (qualname, node, in_class)
        self._index(self.tree, "", False)

    def _index(self, node, prefix, in_class):
        """Records every function with the qualified name CPython gives
        its code object (co_qualname), which is what coverage reports."""
        for child in ast.iter_child_nodes(node):
            if isinstance(child, FUNCS):
                q = prefix + child.name
                self.functions.append((q, child, in_class))
                self._index(child, q + ".<locals>.", False)
            elif isinstance(child, ast.ClassDef):
                self._index(child, prefix + child.name + ".", True)
            else:
                self._index(child, prefix, in_class)

    def find(self, name, line):
        hits = [(q, n, c) for q, n, c in self.functions if q == name]
        for q, n, c in hits:
            if line in (n.lineno, stmt_first_line(n)):
                return n, c
        if len(hits) == 1 and line == 0:
            return hits[0][1], hits[0][2]
        return None, False

    # -- emitting ---------------------------------------------------------

    def rng(self, func_name, operator):
        return random.Random("%s\0%s\0%s\0%s" % (self.seed, self.rel, func_name, operator))

    def sample(self, sites, func_name, operator):
        if len(sites) <= self.per_operator:
            return sites
        picked = self.rng(func_name, operator).sample(range(len(sites)), self.per_operator)
        return [sites[i] for i in sorted(picked)]

    def emit(self, fref, family, operator, desc, edits, lines, executed=None, affects=None):
        st = self.stats[family]
        st["sites"] += 1
        data = self.src.data
        edits = sorted(edits)
        prev = 0
        for s, e, _ in edits:
            if s < prev or e < s:
                return  # overlapping edits: not a well-formed site
            prev = e
        parts, pos = [], 0
        for s, e, t in edits:
            parts.append(data[pos:s])
            parts.append(t)
            pos = e
        parts.append(data[pos:])
        new = b"".join(parts)
        if new == data:
            st["identical"] += 1
            return
        try:
            compile(new, self.path, "exec", dont_inherit=True)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            st["syntax"] += 1
            return
        if executed is None:
            executed = any(l in self.executed for l in range(lines[0], lines[1] + 1))
        self.mutants.append({
            "file": self.rel, "function": fref[0], "line": fref[1],
            "family": family, "operator": operator, "desc": desc,
            "edits": [[s, e, t.decode("utf-8", "surrogateescape")] for s, e, t in edits],
            "lines": list(lines), "executed": bool(executed),
            "affects": [list(a) for a in (affects or [fref])],
        })

    # -- helpers for statement removal ------------------------------------

    def delete_stmts(self, block, i, j):
        """Edits that remove block[i..j]; a block left empty gets pass.
        None when the statements share lines with other code."""
        src = self.src
        first, last = block[i], block[j]
        fl = stmt_first_line(first)
        s = src.start(first) if fl == first.lineno else src.line_start(fl) + len(src.indent_of(fl))
        e = src.end(last)
        whole = i == 0 and j == len(block) - 1
        if src.alone_before(s) and src.alone_after(e):
            ls, le = src.line_start(fl), src.line_end(last.end_lineno)
            if not whole:
                return [(ls, le, b"")]
            eol = b"\r\n" if src.data[le - 2:le] == b"\r\n" else b"\n" if src.data[le - 1:le] == b"\n" else b""
            return [(ls, le, src.indent_of(fl) + b"pass" + eol)]
        if whole and src.alone_after(e):
            # A one-line block after its header: "if x: return y".
            return [(s, e, b"pass")]
        return None

    # -- families ---------------------------------------------------------

    def mutate_function(self, fref, func, in_class):
        name = fref[0]
        fam = self.families
        if "functions" in fam:
            self.op_remove_body(fref, func)
            self.op_remove_part(fref, func)
        if "arguments" in fam:
            self.op_remove_parameter(fref, func, in_class)
            self.op_reorder_call(fref, func)
        if "variables" in fam:
            self.op_swap_variables(fref, func, in_class)
        if "statements" in fam:
            self.op_remove_return(fref, func)
            self.op_remove_local_import(fref, func)
        if "operators" in fam:
            self.op_operators(fref, func)

    def op_remove_body(self, fref, func):
        body = func.body
        doc = docstring_of(body)
        start = 1 if doc is not None else 0
        if start >= len(body):
            return
        src = self.src
        if doc is not None:
            # Keep the docstring as the whole body.
            first = body[1]
            if not (src.alone_before(src.start(first)) and src.alone_after(src.end(body[-1]))):
                return
            edits = [(src.line_start(stmt_first_line(first)), src.line_end(body[-1].end_lineno), b"")]
        else:
            edits = self.delete_stmts(body, 0, len(body) - 1)
            if edits is None:
                return
        lines = (stmt_first_line(body[start]), body[-1].end_lineno)
        self.emit(fref, "functions", "remove_body", "remove the body of %s" % fref[0], edits, lines)

    def op_remove_part(self, fref, func):
        sites = []
        for bi, block in enumerate(blocks_of(func)):
            lo = 1 if bi == 0 and docstring_of(block) is not None else 0
            n = len(block)
            for i in range(lo, n):
                for j in range(i, min(n, i + 3)):
                    if bi == 0 and i == lo and j == n - 1:
                        continue  # the whole body: remove_body
                    if i == j and isinstance(block[i], (ast.Return, ast.Import, ast.ImportFrom)):
                        continue  # the statements family's
                    sites.append((block, i, j))
        for block, i, j in self.sample(sites, fref[0], "remove_part"):
            edits = self.delete_stmts(block, i, j)
            if edits is None:
                continue
            lines = (stmt_first_line(block[i]), block[j].end_lineno)
            what = "line %d" % lines[0] if lines[0] == lines[1] else "lines %d-%d" % lines
            self.emit(fref, "functions", "remove_part", "remove %s of %s" % (what, fref[0]), edits, lines)

    def param_items(self, func):
        """Parameters in source order with their full spans (name,
        annotation, default, and the stars of *args/**kwargs)."""
        a = func.args
        src = self.src
        positional = a.posonlyargs + a.args
        defaults = [None] * (len(positional) - len(a.defaults)) + list(a.defaults)
        items = []
        for arg, d in zip(positional, defaults):
            items.append((arg, d))
        if a.vararg:
            items.append((a.vararg, None))
        for arg, d in zip(a.kwonlyargs, a.kw_defaults):
            items.append((arg, d))
        if a.kwarg:
            items.append((a.kwarg, None))
        out = []
        for arg, d in items:
            s, e = src.start(arg), src.end(arg)
            if arg is a.vararg or arg is a.kwarg:
                # The name's node starts after the stars ("* args" is legal).
                while s > 0 and src.data[s - 1:s] in (b"*", b" "):
                    s -= 1
                while src.data[s:s + 1] == b" ":
                    s += 1
            if d is not None:
                e = max(e, src.end(d))
            out.append((arg, s, e))
        out.sort(key=lambda x: x[1])
        return out

    def op_remove_parameter(self, fref, func, in_class):
        items = self.param_items(func)
        skip_first = in_class and not any(
            isinstance(d, ast.Name) and d.id == "staticmethod" for d in func.decorator_list)
        data = self.src.data
        sites = []
        for k, (arg, s, e) in enumerate(items):
            if k == 0 and skip_first and arg in (func.args.posonlyargs + func.args.args)[:1]:
                continue
            sites.append(k)
        for k in self.sample(sites, fref[0], "remove_parameter"):
            arg, s, e = items[k]
            edit = self.remove_list_item(s, e)
            if edit is None:
                continue
            self.emit(fref, "arguments", "remove_parameter",
                      "remove parameter %s of %s" % (arg.arg, fref[0]), [edit],
                      (func.lineno, func.lineno), executed=True)

    def remove_list_item(self, s, e):
        """The edit removing a comma-separated item spanning [s, e) together
        with one adjacent comma; whole lines when the item has its own."""
        src, data = self.src, self.src.data
        i = e
        while i < len(data) and data[i:i + 1] in (b" ", b"\t"):
            i += 1
        if data[i:i + 1] == b",":
            after = i + 1
            if src.alone_before(s) and src.alone_after(after):
                ls = data.rfind(b"\n", 0, s) + 1
                le = data.find(b"\n", after)
                return (ls, len(data) if le < 0 else le + 1, b"")
            while after < len(data) and data[after:after + 1] in (b" ", b"\t"):
                after += 1
            return (s, after, b"")
        j = s
        while j > 0 and data[j - 1:j] in (b" ", b"\t", b"\n", b"\r"):
            j -= 1
        if data[j - 1:j] == b",":
            return (j - 1, e, b"")
        return (s, e, b"")

    def op_reorder_call(self, fref, func):
        src = self.src
        sites = []
        for n in own_nodes(func):
            if not isinstance(n, ast.Call) or len(n.args) < 2:
                continue
            if any(isinstance(a, ast.Starred) for a in n.args):
                continue
            for i in range(len(n.args) - 1):
                a, b = n.args[i], n.args[i + 1]
                # Arguments that differ only in spelling would make a mutant
                # identical to the original; no other operator can produce one.
                if ast.dump(a) != ast.dump(b):
                    sites.append((n, a, b))
        for call, a, b in self.sample(sites, fref[0], "reorder_call_arguments"):
            edits = [(src.start(a), src.end(a), src.text(b)), (src.start(b), src.end(b), src.text(a))]
            callee = src.text(call.func).decode("utf-8", "replace")
            self.emit(fref, "arguments", "reorder_call_arguments",
                      "swap arguments %d and %d of %s() at line %d" % (
                          call.args.index(a) + 1, call.args.index(a) + 2, callee, a.lineno),
                      edits, (call.lineno, call.end_lineno))

    def op_swap_variables(self, fref, func, in_class):
        params = [a.arg for a in func.args.posonlyargs + func.args.args + func.args.kwonlyargs]
        if func.args.vararg:
            params.append(func.args.vararg.arg)
        if func.args.kwarg:
            params.append(func.args.kwarg.arg)
        if in_class and params and params[0] in ("self", "cls"):
            params = params[1:]
        nodes = own_nodes(func)
        declared = set()
        for n in nodes:
            if isinstance(n, (ast.Global, ast.Nonlocal)):
                declared.update(n.names)
        names = {}
        stored = set()
        for n in nodes:
            if isinstance(n, ast.Name):
                names.setdefault(n.id, []).append(n)
                if not isinstance(n.ctx, ast.Load):
                    stored.add(n.id)
        # Renaming two pure locals into each other is alpha-equivalence,
        # never a bug: one of the pair must be a parameter.
        cands = [v for v in names if v not in declared and v not in ("self", "cls")
                 and (v in params or v in stored)]
        cands.sort(key=lambda v: (names[v][0].lineno, names[v][0].col_offset))
        sites = []
        for i, x in enumerate(cands):
            for y in cands[i + 1:]:
                if x in params or y in params:
                    sites.append((x, y))
        src = self.src
        for x, y in self.sample(sites, fref[0], "swap_variables"):
            edits = []
            ok = True
            for v, other in ((x, y), (y, x)):
                for n in names[v]:
                    s, e = src.start(n), src.end(n)
                    if src.data[s:e] != v.encode():
                        ok = False  # positions we cannot trust (f-strings)
                    edits.append((s, e, other.encode()))
            if not ok:
                continue
            lines = (min(n.lineno for v in (x, y) for n in names[v]),
                     max(n.end_lineno for v in (x, y) for n in names[v]))
            self.emit(fref, "variables", "swap_variables",
                      "swap %s and %s in %s" % (x, y, fref[0]), edits, lines)

    def op_remove_return(self, fref, func):
        sites = []
        for block in blocks_of(func):
            for i, st in enumerate(block):
                if isinstance(st, ast.Return):
                    sites.append((block, i))
        for block, i in self.sample(sites, fref[0], "remove_return"):
            edits = self.delete_stmts(block, i, i)
            if edits is None:
                continue
            st = block[i]
            self.emit(fref, "statements", "remove_return",
                      "remove the return at line %d of %s" % (st.lineno, fref[0]), edits,
                      (st.lineno, st.end_lineno))

    def op_remove_local_import(self, fref, func):
        for block in blocks_of(func):
            for i, st in enumerate(block):
                if isinstance(st, (ast.Import, ast.ImportFrom)):
                    self.import_mutants(fref, block, i, [fref], uses=None)

    def import_mutants(self, fref, block, i, affects, uses):
        """remove_import (the statement) and remove_import_name (one of its
        names). uses, for module-level imports, maps each bound name to
        the executed lines that read it; None means the import runs in the
        function itself."""
        st = block[i]
        if isinstance(st, ast.ImportFrom) and st.module == "__future__":
            return
        bound = []
        for al in st.names:
            if al.name == "*":
                return
            bound.append((al, al.asname or al.name.split(".")[0]))
        used = [b for b in bound if uses is None or b[1] in uses]
        if not used:
            return
        lines = (st.lineno, st.end_lineno)

        def executed(names):
            if uses is None:
                return None
            return any(uses.get(n) for n in names)

        edits = self.delete_stmts(block, i, i)
        if edits is not None:
            self.emit(fref, "statements", "remove_import",
                      "remove the import at line %d" % st.lineno, edits, lines,
                      executed=executed([b[1] for b in used]), affects=affects)
        if len(st.names) > 1:
            for al, name in used:
                edit = self.remove_list_item(self.src.start(al), self.src.end(al))
                if edit is None:
                    continue
                self.emit(fref, "statements", "remove_import_name",
                          "remove %s from the import at line %d" % (name, st.lineno), [edit],
                          lines, executed=executed([name]), affects=affects)

    def module_imports(self, covered):
        """Module-level imports whose names covered functions read: the
        mutant belongs to the first such function and is tested by all."""
        if "statements" not in self.families:
            return
        reads = {}  # name -> [(fref, node)]
        for fref, func, _ in covered:
            for n in own_nodes(func):
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
                    reads.setdefault(n.id, []).append((fref, n))
        for block in self.module_blocks():
            for i, st in enumerate(block):
                if not isinstance(st, (ast.Import, ast.ImportFrom)):
                    continue
                names = [al.asname or al.name.split(".")[0] for al in st.names]
                users = []
                uses = {}
                for nm in names:
                    for fref, n in reads.get(nm, []):
                        if fref not in users:
                            users.append(fref)
                        if n.lineno in self.executed:
                            uses.setdefault(nm, []).append(n.lineno)
                        else:
                            uses.setdefault(nm, [])
                if not users:
                    continue
                users.sort(key=lambda f: (f[1], f[0]))
                self.import_mutants(users[0], block, i, users, uses)

    def module_blocks(self):
        """Statement lists at module level (including under if/try)."""
        out = [self.tree.body]
        for st in self.tree.body:
            if isinstance(st, (ast.If, ast.Try)) or type(st).__name__ == "TryStar":
                for f in ("body", "orelse", "finalbody"):
                    b = getattr(st, f, None)
                    if b:
                        out.append(b)
                for h in getattr(st, "handlers", []):
                    out.append(h.body)
        return out

    def op_operators(self, fref, func):
        src = self.src
        data = src.data
        sites = {"binary_operator": [], "unary_operator": [], "comparison_operator": [],
                 "boolean_operator": []}
        for n in own_nodes(func):
            if isinstance(n, ast.BinOp) and type(n.op) in BINOPS:
                sym, alts = BINOPS[type(n.op)]
                hit = find_token(data, src.end(n.left), src.start(n.right), [sym])
                if hit:
                    for alt in alts:
                        sites["binary_operator"].append((n, [(hit[0], hit[0] + hit[1], alt.encode())],
                                                         "replace %s with %s" % (sym, alt)))
            elif isinstance(n, ast.AugAssign) and type(n.op) in BINOPS:
                sym, alts = BINOPS[type(n.op)]
                hit = find_token(data, src.end(n.target), src.start(n.value), [sym + "="])
                if hit:
                    for alt in alts:
                        sites["binary_operator"].append((n, [(hit[0], hit[0] + hit[1], (alt + "=").encode())],
                                                         "replace %s= with %s=" % (sym, alt)))
            elif isinstance(n, ast.UnaryOp):
                s = src.start(n)
                o = src.start(n.operand)
                if isinstance(n.op, ast.Not):
                    if data.startswith(b"not", s):
                        sites["unary_operator"].append((n, [(s, o, b"")] if data[s + 3:o].strip(b" \t") == b""
                                                        else [(s, s + 3, b"")], "remove not"))
                else:
                    sym = {ast.USub: b"-", ast.UAdd: b"+", ast.Invert: b"~"}[type(n.op)]
                    alt = {ast.USub: b"+", ast.UAdd: b"-", ast.Invert: b"-"}[type(n.op)]
                    if data[s:s + 1] == sym:
                        sites["unary_operator"].append((n, [(s, s + 1, alt)], "replace unary %s with %s" % (
                            sym.decode(), alt.decode())))
            elif isinstance(n, ast.Compare):
                prev = n.left
                for op, right in zip(n.ops, n.comparators):
                    sym, alts = CMPOPS[type(op)]
                    hit = find_token(data, src.end(prev), src.start(right), [sym])
                    if hit:
                        for alt in alts:
                            sites["comparison_operator"].append((n, [(hit[0], hit[0] + hit[1], alt.encode())],
                                                                 "replace %s with %s" % (sym, alt)))
                    prev = right
            elif isinstance(n, ast.BoolOp):
                sym, alt = ("and", "or") if isinstance(n.op, ast.And) else ("or", "and")
                edits = []
                for a, b in zip(n.values, n.values[1:]):
                    hit = find_token(data, src.end(a), src.start(b), [sym])
                    if not hit:
                        edits = None
                        break
                    edits.append((hit[0], hit[0] + hit[1], alt.encode()))
                if edits:
                    sites["boolean_operator"].append((n, edits, "replace %s with %s" % (sym, alt)))
        for op, lst in sites.items():
            for node, edits, what in self.sample(lst, fref[0], op):
                self.emit(fref, "operators", op, "%s at line %d of %s" % (what, node.lineno, fref[0]),
                          edits, (node.lineno, node.end_lineno))


def main(argv):
    with open(argv[1]) as f:
        req = json.load(f)
    root = req.get("root", "/repo").rstrip("/")
    families = [f for f in req.get("families") or FAMILIES if f in FAMILIES]
    seed = req.get("seed", 0)
    per_op = int(req.get("per_operator") or 8)
    out = {"mutants": [], "stats": {f: {"sites": 0, "identical": 0, "syntax": 0} for f in FAMILIES},
           "unmatched": [], "errors": []}
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10000))
    for rel in sorted(req.get("files", {})):
        spec = req["files"][rel]
        path = root + "/" + rel
        try:
            with open(path, "rb") as f:
                data = f.read()
            data.decode("utf-8")
            if b"\r" in data.replace(b"\r\n", b""):
                raise ValueError("lone carriage returns")
            m = Mutator(path, rel, data, seed, per_op, families)
        except (OSError, SyntaxError, ValueError, UnicodeDecodeError, RecursionError) as e:
            out["errors"].append("%s: %s" % (rel, e))
            continue
        m.executed = set(spec.get("executed") or [])
        covered = []
        for name, line in spec.get("functions", []):
            node, in_class = m.find(name, line)
            if node is None:
                out["unmatched"].append("%s:%d %s" % (rel, line, name))
                continue
            covered.append(((name, line), node, in_class))
        covered.sort(key=lambda c: (c[0][1], c[0][0]))
        for fref, node, in_class in covered:
            m.mutate_function(fref, node, in_class)
        m.module_imports(covered)
        out["mutants"].extend(m.mutants)
        for fam, st in m.stats.items():
            for k, v in st.items():
                out["stats"][fam][k] += v
    tmp = argv[2] + ".tmp"
    with open(tmp, "w") as f:
        json.dump(out, f)
    import os
    os.replace(tmp, argv[2])


if __name__ == "__main__":
    main(sys.argv)
