"""SWE-smith's procedural modifications, a sixth family beside CWM's five
(used only when asked for): invert an if/else, change a constant, swap
the operands of a non-commutative operator or a comparison. A mixin of
mutate.Mutator, like operators.py."""

import ast

from syntax import CMPOPS, NONCOMMUTATIVE, own_nodes


class Procedural:
    def op_invert_if(self, fref, func):
        """if c: A else: B becomes if c: B else: A (the bodies' lines
        trade places; elif chains are left alone)."""
        src = self.src
        sites = []
        for n in own_nodes(func):
            if not isinstance(n, ast.If) or not n.orelse:
                continue
            first_else = n.orelse[0]
            if isinstance(first_else, ast.If) and src.data.startswith(b"elif", src.line_start(first_else.lineno) + len(src.indent_of(first_else.lineno))):
                continue
            a, b = n.body, n.orelse
            ok = all(src.alone_before(src.start(blk[0])) and src.alone_after(src.end(blk[-1])) for blk in (a, b))
            if ok and src.indent_of(a[0].lineno) == src.indent_of(b[0].lineno):
                sites.append(n)
        for n in self.sample(sites, fref[0], "invert_if"):
            a, b = n.body, n.orelse
            sa, ea = src.line_start(a[0].lineno), src.line_end(a[-1].end_lineno)
            sb, eb = src.line_start(b[0].lineno), src.line_end(b[-1].end_lineno)
            ta, tb = src.data[sa:ea], src.data[sb:eb]
            if not ta.endswith(b"\n") or not tb.endswith(b"\n"):
                continue
            self.emit(fref, "procedural", "invert_if", "swap the branches of the if at line %d of %s" % (n.lineno, fref[0]),
                      [(sa, ea, tb), (sb, eb, ta)], (n.lineno, n.end_lineno))

    def op_change_constant(self, fref, func):
        """An integer literal n becomes n + 1 or n - 1."""
        src = self.src
        sites = []
        for n in own_nodes(func):
            if isinstance(n, ast.Constant) and type(n.value) is int:
                text = src.text(n)
                if text.isdigit() and (len(text) == 1 or not text.startswith(b"0")):
                    for alt in (n.value + 1, n.value - 1):
                        if alt >= 0:
                            sites.append((n, alt))
        for n, alt in self.sample(sites, fref[0], "change_constant"):
            self.emit(fref, "procedural", "change_constant", "change %d to %d at line %d of %s" % (n.value, alt, n.lineno, fref[0]),
                      [(src.start(n), src.end(n), str(alt).encode())], (n.lineno, n.end_lineno))

    def op_swap_operands(self, fref, func):
        """a - b becomes b - a (operators that do not commute); a < b
        becomes b < a (comparisons with one operator)."""
        src = self.src
        sites = []
        for n in own_nodes(func):
            if isinstance(n, ast.BinOp) and type(n.op) in NONCOMMUTATIVE:
                pair, sym = (n.left, n.right), NONCOMMUTATIVE[type(n.op)]
            elif isinstance(n, ast.Compare) and len(n.ops) == 1:
                pair, sym = (n.left, n.comparators[0]), CMPOPS[type(n.ops[0])][0]
            else:
                continue
            if ast.dump(pair[0]) != ast.dump(pair[1]):
                sites.append((n, pair, sym))
        for n, (a, b), sym in self.sample(sites, fref[0], "swap_operands"):
            edits = [(src.start(a), src.end(a), src.text(b)), (src.start(b), src.end(b), src.text(a))]
            self.emit(fref, "procedural", "swap_operands", "swap the operands of %s at line %d of %s" % (sym, n.lineno, fref[0]),
                      edits, (n.lineno, n.end_lineno))
