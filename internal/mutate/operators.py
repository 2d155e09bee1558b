"""The mutation operators of CWM's five families, as a mixin of
mutate.Mutator: each finds its sites in one function with ast and emits
byte-range edits (see mutate.py)."""

import ast

from syntax import BINOPS, CMPOPS, SCOPES, blocks_of, docstring_of, find_token, own_nodes, stmt_first_line


class Operators:
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
