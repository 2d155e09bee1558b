"""cwm's mutation operators: where a bug can be put into a Python function.

Run inside a sandbox on the environment's own interpreter (standard library
only), so that "the mutant compiles" means it compiles under the Python the
tests run on:

    python mutate.py REQUEST.json OUT.json

REQUEST names the functions to mutate (those the passing tests execute) and
the lines the tests execute, per file:

    {"root": "/repo", "seed": 1, "families": ["operators", ...],  (default: CWM's five)
     "per_operator": 8,
     "files": {"pkg/mod.py": {"functions": [["Cls.meth", 12], ...],
                              "executed": [13, 14, ...]}}}

OUT receives every mutant as a set of byte-range edits of the file, so the
caller's diff touches only the mutated span and keeps formatting and
comments everywhere else:

    {"mutants": [{"file", "function", "line", "family", "operator", "desc",
                  "edits": [[START, END, TEXT], ...], "lines": [FIRST, LAST],
                  "executed": BOOL, "affects": [[NAME, LINE], ...]}],
     "stats": [{"file", "function", "line", "family",
                "sites": N, "identical": N, "syntax": N}, ...],
     "unmatched": ["pkg/mod.py:12 name", ...], "errors": ["...", ...]}

Python's ast decides where an operator applies (node positions are UTF-8
byte columns, which is why all offsets here are in bytes). A site becomes a
mutant only if the edited file still compiles (compile(), which also runs
the symbol table checks ast.parse skips) and differs from the original (in
text; reordered arguments, in their trees too); everything is deterministic
for a seed.

This file holds the entry point and what every operator shares (matching
covered functions, sampling, emitting, removing statements and list
items); operators.py holds the operators of CWM's five families,
procedural.py three of SWE-smith's procedural modifications (a sixth
family, used only when asked for), syntax.py the positions and tokens
they work with.
"""

import ast
import json
import os
import random
import sys

from operators import Operators
from procedural import Procedural
from syntax import CWM_FAMILIES, FAMILIES, FUNCS, Source, stmt_first_line


class Mutator(Operators, Procedural):
    def __init__(self, path, rel, data, seed, per_operator, families):
        self.path = path
        self.rel = rel
        self.src = Source(data)
        self.tree = ast.parse(data, filename=path)
        self.seed = seed
        self.per_operator = per_operator
        self.families = families
        self.mutants = []
        self.stats = {}  # (function, line, family) -> counts
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
        st = self.stats.setdefault((fref[0], fref[1], family), {"sites": 0, "identical": 0, "syntax": 0})
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

    def mutate_function(self, fref, func, in_class):
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
        if "procedural" in fam:
            self.op_invert_if(fref, func)
            self.op_change_constant(fref, func)
            self.op_swap_operands(fref, func)


def main(argv):
    with open(argv[1]) as f:
        req = json.load(f)
    root = req.get("root", "/repo").rstrip("/")
    families = [f for f in req.get("families") or CWM_FAMILIES if f in FAMILIES]
    seed = req.get("seed", 0)
    per_op = int(req.get("per_operator") or 8)
    out = {"mutants": [], "stats": [], "unmatched": [], "errors": []}
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
        for (name, line, fam), st in sorted(m.stats.items()):
            out["stats"].append(dict(st, file=rel, function=name, line=line, family=fam))
    tmp = argv[2] + ".tmp"
    with open(tmp, "w") as f:
        json.dump(out, f)
    os.replace(tmp, argv[2])


if __name__ == "__main__":
    main(sys.argv)
