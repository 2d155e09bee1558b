#!/usr/bin/python3
"""Generates similarity.json, the expected values of the Go similarity.

Regenerate (from the repository root) with:

    /usr/bin/python3 internal/reward/testdata/gen_similarity.py

and review the diff of internal/reward/testdata/similarity.json. The Go tests
only read the JSON; they never run Python. Only the standard library is used:
cwm_similarity.py beside this file re-implements unidiff's parsing.

ratio_cases, line_cases: pairs with difflib.SequenceMatcher(None, a, b,
autojunk=False).ratio() and get_matching_blocks().

patch_cases: pairs of unified diffs with CWM's normalized per-file texts
(null and an error kind when the patch does not parse) and CWM's similarity
with ignore_non_oracle_files=True: every oracle file scores the ratio of the
normalized texts (prediction as a, oracle as b), 0 when either is empty;
predicted-only files are dropped; the mean is summed in sorted path order.

normalize_cases: random patches (real ones cut, doubled and sprinkled with
header-like lines) with their normalization or error kind ("parse": CWM
treats the patch as changing nothing; "other": an exception CWM does not
catch, after which it records no similarity).
"""

import difflib
import io
import json
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cwm_similarity as cs  # noqa: E402


def matcher(a, b, autojunk=False):
    return difflib.SequenceMatcher(None, a, b, autojunk=autojunk)


def ratio_case(name, a, b):
    m = matcher(a, b)
    return {
        "name": name,
        "a": a,
        "b": b,
        "ratio": m.ratio(),
        "blocks": [list(x) for x in m.get_matching_blocks()],
    }


def ratio_cases():
    cases = [
        ratio_case("both empty", "", ""),
        ratio_case("a empty", "", "abc"),
        ratio_case("b empty", "abc", ""),
        ratio_case("identical", "hello world", "hello world"),
        ratio_case("disjoint", "abc", "xyz"),
        ratio_case("shifted", "abcd", "bcde"),
        ratio_case("difflib doc", "qabxcd", "abycdf"),
        ratio_case("tie earliest in a", "xaxbx", "ab"),
        ratio_case("tie earliest in b", "ab", "xaxbx"),
        ratio_case("repeats", "aaaaabaaaa", "aaaabaaaaa"),
        ratio_case("unicode accents", "naïve café", "naive cafe"),
        ratio_case("astral plane", "a😀b😀c", "a😀c😁"),
        ratio_case("combining marks", "e\u0301te\u0301", "\u00e9t\u00e9"),
        ratio_case("cjk", "差分の比率を計算する", "比率を計算しない差分"),
        ratio_case("newlines and tabs", "@@\n-\told\n+\tnew\n", "@@\n-\told\n+\tnewer\n"),
    ]
    # Long sequences: autojunk=True would treat characters that fill more
    # than 1% of a b of 200+ elements as popular; these cases make sure the
    # port does not.
    rng = random.Random(20251130)
    long_pairs = [
        ("long repeated a", "a" * 300, "a" * 150 + "b" + "a" * 200),
        ("long two letters", "".join(rng.choice("ab") for _ in range(400)), "".join(rng.choice("ab") for _ in range(450))),
    ]
    code = (
        "def f(x):\n    return x + 1\n\n" * 20
        + "class Thing:\n    def __init__(self):\n        self.items = []\n" * 10
    )
    edited = code.replace("x + 1", "x + 2", 7).replace("self.items", "self._items", 4)
    long_pairs.append(("long code", code, edited))
    for i in range(6):
        alphabet = "abc \n" if i % 2 else "abcdefghijklmnopqrstuvwxyz _\n()"
        a = "".join(rng.choice(alphabet) for _ in range(rng.randint(200, 1200)))
        b = list(a)
        for _ in range(rng.randint(5, 200)):
            op = rng.randrange(3)
            pos = rng.randrange(len(b) + 1)
            if op == 0 and pos < len(b):
                del b[pos]
            elif op == 1:
                b.insert(pos, rng.choice(alphabet))
            elif pos < len(b):
                b[pos] = rng.choice(alphabet)
        long_pairs.append(("long random %d" % i, a, "".join(b)))
    differs = 0
    for name, a, b in long_pairs:
        cases.append(ratio_case(name, a, b))
        if matcher(a, b).ratio() != matcher(a, b, autojunk=True).ratio():
            differs += 1
    assert differs >= 3, "long cases must exercise autojunk=False"
    # Short random pairs over small alphabets exercise tie-breaking.
    for i in range(60):
        alphabet = "ab" if i % 3 == 0 else "abcd\n"
        a = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
        b = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
        cases.append(ratio_case("short random %d" % i, a, b))
    # Asymmetry: difflib's ratio depends on which side is b.
    asym = [(a, b) for a, b in ((c["a"], c["b"]) for c in cases) if matcher(a, b).ratio() != matcher(b, a).ratio()]
    assert asym, "no asymmetric pair"
    a, b = asym[0]
    cases.append(ratio_case("asymmetric reversed", b, a))
    return cases


# Patches. The expected values come from cwm_similarity.py, the standard
# library re-implementation of CWM's similarity (unidiff 0.7.5 parsing and
# CWM's normalization); a few normalized texts are also written out by hand
# below, to pin down how that module reads unidiff.
ORACLE_FIX = """\
diff --git a/src/calc.py b/src/calc.py
index 3b18e51..a1c2d3f 100644
--- a/src/calc.py
+++ b/src/calc.py
@@ -10,7 +10,7 @@ def add(a, b):
 
 def div(a, b):
     if b == 0:
-        return 0
+        raise ZeroDivisionError("b is zero")
     return a / b
 
 
"""

CALC_NORM = (
    "@@ -10,7 +10,7 @@ def add(a, b):\n \n def div(a, b):\n     if b == 0:\n-        return 0\n"
    '+        raise ZeroDivisionError("b is zero")\n     return a / b'
)

PRED_SAME_OTHER_LINES = ORACLE_FIX.replace("index 3b18e51..a1c2d3f", "index 1111111..2222222").replace(
    "@@ -10,7 +10,7 @@ def add(a, b):", "@@ -12,7 +12,7 @@ class Calc:")

PRED_OTHER_FIX = """\
diff --git a/src/calc.py b/src/calc.py
--- a/src/calc.py
+++ b/src/calc.py
@@ -10,7 +10,7 @@
 
 def div(a, b):
     if b == 0:
-        return 0
+        return float("nan")
     return a / b
 
 
"""

PRED_EXTRA_FILE = PRED_OTHER_FIX + """\
diff --git a/README.md b/README.md
--- a/README.md
+++ b/README.md
@@ -1 +1 @@
-# calc
+# calc, now safer
"""

ORACLE_TWO_FILES = ORACLE_FIX + """\
diff --git a/tests/test_calc.py b/tests/test_calc.py
new file mode 100644
index 0000000..e69de29
--- /dev/null
+++ b/tests/test_calc.py
@@ -0,0 +1,5 @@
+import pytest
+from src.calc import div
+
+def test_div_zero():
+    pytest.raises(ZeroDivisionError, div, 1, 0)
"""

# Lines that look like headers inside a hunk ("-- old" removed shows as
# "--- old"), two hunks, a missing newline at the end, an empty context
# line without its space, and a mail around the diff.
ORACLE_TRICKY = """\
diff --git a/db/schema.sql b/db/schema.sql
index 0123456..789abcd 100644
--- a/db/schema.sql
+++ b/db/schema.sql
@@ -1,4 +1,4 @@
--- old comment
+++ new comment
 CREATE TABLE t (
   id INTEGER
 );
@@ -20,3 +20,4 @@ CREATE TABLE u (
   name TEXT

 );
+CREATE INDEX u_name ON u(name);
\\ No newline at end of file
"""

TRICKY_NORM = (
    "@@ -1,4 +1,4 @@\n--- old comment\n+++ new comment\n CREATE TABLE t (\n   id INTEGER\n );\n"
    "@@ -20,3 +20,4 @@ CREATE TABLE u (\n   name TEXT\n \n );\n+CREATE INDEX u_name ON u(name);\n"
    "\\ No newline at end of file"
)

PRED_TRICKY = """\
From 1234abcd Mon Sep 17 00:00:00 2001
Subject: [PATCH] index the names

This commit message mentions --- and @@ but is not part of the diff.
---
 db/schema.sql | 3 ++-
diff --git a/db/schema.sql b/db/schema.sql
--- a/db/schema.sql
+++ b/db/schema.sql
@@ -20,3 +20,4 @@
   name TEXT
 
 );
+CREATE INDEX u_name ON u (name);
-- 
2.40.0
"""

# Renames (keyed by the old name, with a rename header), a deletion, a mode
# change (a file with an empty change), a binary file (skipped), a quoted
# name and a name with a space.
ORACLE_RENAME = """\
diff --git a/lib/old_name.py b/lib/new_name.py
similarity index 90%
rename from lib/old_name.py
rename to lib/new_name.py
index 1234567..89abcde 100644
--- a/lib/old_name.py
+++ b/lib/new_name.py
@@ -1,3 +1,3 @@
-VERSION = 1
+VERSION = 2
 
 def run():
diff --git a/lib/gone.py b/lib/gone.py
deleted file mode 100644
index 1234567..0000000
--- a/lib/gone.py
+++ /dev/null
@@ -1,2 +0,0 @@
-def gone():
-    pass
diff --git a/bin/tool b/bin/tool
old mode 100644
new mode 100755
diff --git a/img/logo.png b/img/logo.png
index 1234567..89abcde 100644
GIT binary patch
literal 5
McmZ?wbaG+

literal 3
KcmZ?w

diff --git "a/docs/r\\303\\251sum\\303\\251.md" "b/docs/r\\303\\251sum\\303\\251.md"
index 1234567..89abcde 100644
--- "a/docs/r\\303\\251sum\\303\\251.md"
+++ "b/docs/r\\303\\251sum\\303\\251.md"
@@ -1 +1 @@
-Résumé
+Résumé des changements
diff --git a/docs/with space.txt b/docs/with space.txt
index 1234567..89abcde 100644
--- a/docs/with space.txt\t
+++ b/docs/with space.txt\t
@@ -1 +1 @@
-a
+b
"""

RENAME_NORM = {
    "lib/old_name.py": "rename from lib/old_name.py to lib/new_name.py\n"
                       "@@ -1,3 +1,3 @@\n-VERSION = 1\n+VERSION = 2\n \n def run():",
    "lib/gone.py": "@@ -1,2 +0,0 @@\n-def gone():\n-    pass",
    "bin/tool": "",
    '"a/docs/r\\303\\251sum\\303\\251.md"': "@@ -1,1 +1,1 @@\n-Résumé\n+Résumé des changements",
    "docs/with space.txt": "@@ -1,1 +1,1 @@\n-a\n+b",
}

# Plain diff -u output: a/ and b/ prefixes missing, timestamps, and names
# that differ (a backup file), which unidiff takes for a rename.
PRED_RENAME = """\
--- lib/new_name.py\t2025-01-01 00:00:00.000000000 +0000
+++ lib/new_name.py\t2025-01-02 00:00:00.000000000 +0000
@@ -1,3 +1,3 @@
-VERSION = 1
+VERSION = 3
 
 def run():
--- lib/old_name.py.orig
+++ lib/old_name.py
@@ -1 +1 @@
-VERSION = 1
+VERSION = 3
diff --git a/bin/tool b/bin/tool
old mode 100644
new mode 100755
diff --git "a/docs/r\\303\\251sum\\303\\251.md" "b/docs/r\\303\\251sum\\303\\251.md"
--- "a/docs/r\\303\\251sum\\303\\251.md"
+++ "b/docs/r\\303\\251sum\\303\\251.md"
@@ -1 +1 @@
-Résumé
+Résumé des modifications
"""

# A quoted git header with a space in the name: unidiff splits it at the
# wrong space and keeps a bogus hunkless entry besides the real file.
QUOTED_SPACE = """\
diff --git "a/my file.txt" "b/my file.txt"
index 1234567..89abcde 100644
--- "a/my file.txt"
+++ "b/my file.txt"
@@ -1 +1 @@
-old
+new
"""

# Windows line endings, odd whitespace at the ends (\\x1c is whitespace to
# Python's strip, not to Go's strings.TrimSpace), a section header with
# trailing blanks, an empty hunk header count, and a file twice.
ODD = (
    "diff --git a/w.txt b/w.txt\r\n"
    "--- a/w.txt\r\n"
    "+++ b/w.txt\r\n"
    "@@ -3,2 +3,2 @@ \tsection  \r\n"
    "-\x1cold\r\n"
    "+new\u00a0\r\n"
    " ctx\x1c\u2003\r\n"
    "--- a/twice.txt\n"
    "+++ b/twice.txt\n"
    "@@ -1 +1 @@\n"
    "-first\n"
    "+1st\n"
    "--- a/twice.txt\n"
    "+++ b/twice.txt\n"
    "@@ -9 +9 @@\n"
    "-second\n"
    "+2nd\n"
)

BROKEN_SHORT = "--- a/x\n+++ b/x\n@@ -1,3 +1,3 @@\n-a\n+b\n"
BROKEN_LONG = "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n-b\n+c\n"
TARGET_WITHOUT_SOURCE = "+++ b/x\n@@ -1 +1 @@\n-a\n+b\n"
BLANK_AFTER_HUNKLESS = "diff --git a/e b/e\nnew file mode 100644\nindex 0000000..e69de29\n\n" + BROKEN_LONG
BINARY_OUTSIDE_FILE = "GIT binary patch\nliteral 0\n"
BINARY_DIFFER = (
    "diff --git a/b.bin b/b.bin\nindex 1..2 100644\nBinary files a/b.bin and b/b.bin differ\n"
    "Binary files old.bin and new.bin differ\n"
)

PATCHES = [
    ("same change, other line numbers and index", PRED_SAME_OTHER_LINES, ORACLE_FIX),
    ("different fix of the same lines", PRED_OTHER_FIX, ORACLE_FIX),
    ("extra file in the prediction is ignored", PRED_EXTRA_FILE, ORACLE_FIX),
    ("oracle file missing from the prediction", PRED_SAME_OTHER_LINES, ORACLE_TWO_FILES),
    ("empty prediction", "", ORACLE_TWO_FILES),
    ("identical", ORACLE_TWO_FILES, ORACLE_TWO_FILES),
    ("header look-alikes, no-newline marker, mail around the diff", PRED_TRICKY, ORACLE_TRICKY),
    ("renames, deletions, modes, binary, quoted and spaced names, plain diff -u", PRED_RENAME, ORACLE_RENAME),
    ("quoted name with a space", QUOTED_SPACE, QUOTED_SPACE.replace("+new", "+newer")),
    ("CRLF, odd whitespace, a file twice", ODD, ODD.replace("+2nd", "+second!")),
    ("prediction with a short hunk", BROKEN_SHORT, ORACLE_FIX),
    ("prediction with a long hunk", BROKEN_LONG, "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+c\n"),
    ("prediction with a target line first", TARGET_WITHOUT_SOURCE, "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n"),
    ("blank line after a hunkless file", BLANK_AFTER_HUNKLESS, ORACLE_FIX),
    ("binary patch outside a file", BINARY_OUTSIDE_FILE, ORACLE_FIX),
    ("binary files only in the prediction", BINARY_DIFFER, ORACLE_FIX),
]

# Hand-written expectations: the normalized texts as read from unidiff's
# and CWM's code.
HAND = [
    (ORACLE_FIX, {"src/calc.py": CALC_NORM}),
    (ORACLE_TRICKY, {"db/schema.sql": TRICKY_NORM}),
    (ORACLE_RENAME, RENAME_NORM),
    (QUOTED_SPACE, {
        '"a/my file.txt" "b/my': 'rename from "a/my file.txt" "b/my to file.txt"',
        '"a/my file.txt"': "@@ -1,1 +1,1 @@\n-old\n+new",
    }),
]


def normalized_or_error(text):
    try:
        return cs.normalized_file_patch(text), ""
    except cs.ParseError:
        return None, "parse"
    except cs.OtherError:
        return None, "other"


def patch_cases():
    for text, want in HAND:
        got = cs.normalized_file_patch(text)
        assert got == want, "normalization of %r:\n got %r\nwant %r" % (text[:40], got, want)
    cases = []
    for name, pred, oracle in PATCHES:
        score, per_file, pred_error = cs.similarity(pred, oracle)
        pred_norm, pred_kind = normalized_or_error(pred)
        assert pred_kind or not pred_error
        cases.append({
            "name": name,
            "predicted": pred,
            "oracle": oracle,
            "predicted_normalized": pred_norm,
            "predicted_error": pred_kind,
            "oracle_normalized": cs.normalized_file_patch(oracle),
            "score": score,
            "per_file": per_file,
        })
    scores = [c["score"] for c in cases]
    assert any(0 < s < 0.5 for s in scores) and any(0.5 <= s < 1 for s in scores), scores
    return cases


# Random patches: real ones cut, doubled and sprinkled with lines that
# look like headers, so that the parser's every branch meets odd input.
FUZZ_LINES = [
    "\n", "\r\n", " \n", "-\n", "+\n", "\\ No newline at end of file\n", "--- a/x\n", "+++ b/x\n",
    "--- a/src/calc.py\n", "+++ b/src/calc.py\n", "@@ -1 +1 @@\n", "@@ -1,2 +1 @@ f\n", "@@ -0,0 +1 @@\n",
    "diff --git a/y b/y\n", "diff --git a/x b/z\n", "new file mode 100644\n", "deleted file mode 100644\n",
    "GIT binary patch\n", "Binary files a/x and b/x differ\n", "index 1..2\n", "rename from x\n",
    "\x1c\n", "+\u00e9\u2028\n", "random words\n", "\rodd\n", "-- \n",
]


def fuzz_cases(n):
    rng = random.Random(20260301)
    sources = [ORACLE_FIX, ORACLE_TWO_FILES, ORACLE_TRICKY, PRED_TRICKY, ORACLE_RENAME, PRED_RENAME,
               QUOTED_SPACE, ODD, BINARY_DIFFER, PRED_EXTRA_FILE]
    cases, kinds = [], set()
    for i in range(n):
        lines = io.StringIO(rng.choice(sources) + rng.choice(sources)).readlines()
        for _ in range(rng.randint(0, 4)):
            op, pos = rng.randrange(3), rng.randrange(len(lines) + 1)
            if op == 0 and pos < len(lines):
                del lines[pos]
            elif op == 1:
                lines.insert(pos, rng.choice(FUZZ_LINES))
            elif pos < len(lines):
                lines.insert(pos, lines[pos])
        text = "".join(lines)
        if rng.randrange(4) == 0:
            text = text.rstrip("\n")
        norm, kind = normalized_or_error(text)
        kinds.add(kind)
        cases.append({"name": "fuzz %d" % i, "patch": text, "normalized": norm, "error": kind})
    assert {"", "parse"} <= kinds, kinds
    return cases


def line_cases():
    # The matcher is generic; lines of text are the other common element.
    a = ["def f(x):", "    y = x", "    return y", "", "def g():", "    pass"]
    b = ["def f(x):", "    return x", "", "def g():", "    pass", "    pass"]
    cases = []
    for name, x, y in (("lines", a, b), ("lines reversed", b, a), ("no lines", [], a)):
        m = matcher(x, y)
        cases.append({"name": name, "a": x, "b": y, "ratio": m.ratio(),
                      "blocks": [list(t) for t in m.get_matching_blocks()]})
    return cases


def main():
    out = {
        "python": sys.version.split()[0],
        "ratio_cases": ratio_cases(),
        "line_cases": line_cases(),
        "patch_cases": patch_cases(),
        "normalize_cases": fuzz_cases(150),
    }
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "similarity.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(out, f, indent=1, ensure_ascii=True)
        f.write("\n")


if __name__ == "__main__":
    main()
