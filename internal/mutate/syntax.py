"""Where things are in Python source: ast positions as byte offsets, the
tokens between operands, and the statement lists of a function. Part of
cwm's mutation operators (see mutate.py)."""

import ast
import re

# CWM's five families, the default; "procedural" holds SWE-smith's
# procedural modifications, applied only when asked for.
CWM_FAMILIES = ("functions", "arguments", "variables", "statements", "operators")
FAMILIES = CWM_FAMILIES + ("procedural",)

# Operators whose operands do not commute, for swap_operands.
NONCOMMUTATIVE = {ast.Sub: "-", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%", ast.Pow: "**",
                  ast.LShift: "<<", ast.RShift: ">>"}

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
