#!/usr/bin/python3
"""Generates similarity.json, the expected values of the Go port of difflib.

Regenerate (from the repository root) with:

    /usr/bin/python3 internal/reward/testdata/gen_similarity.py

and review the diff of internal/reward/testdata/similarity.json. The Go tests
only read the JSON; they never run Python.

ratio_cases: string pairs with difflib.SequenceMatcher(None, a, b,
autojunk=False).ratio() and get_matching_blocks().

patch_cases: pairs of unified diffs, the normalized per-file texts that
Normalize must produce (written by hand below: they are the specification of
the normalization), and the similarity computed from those texts the way
SWE-RL's compute_change_similarities does (union of files, 0 for a file on
one side only, prediction as a, oracle as b), summed in sorted path order as
the Go code does.
"""

import difflib
import json
import os
import random
import sys


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


# Patches. Each case gives the normalized text of every file, per side.
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

PRED_SAME_OTHER_LINES = """\
diff --git a/src/calc.py b/src/calc.py
index 1111111..2222222 100644
--- a/src/calc.py
+++ b/src/calc.py
@@ -12,7 +12,7 @@ class Calc:
 
 def div(a, b):
     if b == 0:
-        return 0
+        raise ZeroDivisionError("b is zero")
     return a / b
 
 
"""

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

CALC_NORM = (
    "@@\n \n def div(a, b):\n     if b == 0:\n-        return 0\n"
    '+        raise ZeroDivisionError("b is zero")\n     return a / b\n \n '
)
CALC_OTHER_NORM = (
    "@@\n \n def div(a, b):\n     if b == 0:\n-        return 0\n"
    '+        return float("nan")\n     return a / b\n \n '
)

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

TEST_NORM = (
    "@@\n+import pytest\n+from src.calc import div\n+\n+def test_div_zero():\n"
    "+    pytest.raises(ZeroDivisionError, div, 1, 0)"
)

# Lines that look like headers inside a hunk: the removed SQL comment
# "-- old" shows as "--- old", the added "++ x" as "+++ x"; a multi-hunk
# file; a missing newline at the end; an empty context line without its
# space.
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

TRICKY_ORACLE_NORM = (
    "@@\n--- old comment\n+++ new comment\n CREATE TABLE t (\n   id INTEGER\n );\n"
    "@@\n   name TEXT\n \n );\n+CREATE INDEX u_name ON u(name);"
)
TRICKY_PRED_NORM = "@@\n   name TEXT\n \n );\n+CREATE INDEX u_name ON u (name);"

# Renames, deletions, mode changes, quoted unicode names, plain diff -u.
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

PRED_RENAME = """\
--- lib/new_name.py\t2025-01-01 00:00:00.000000000 +0000
+++ lib/new_name.py\t2025-01-02 00:00:00.000000000 +0000
@@ -1,3 +1,3 @@
-VERSION = 1
+VERSION = 3
 
 def run():
diff --git a/bin/tool b/bin/tool
old mode 100644
new mode 100755
diff --git a/docs/résumé.md b/docs/résumé.md
--- a/docs/résumé.md
+++ b/docs/résumé.md
@@ -1 +1 @@
-Résumé
+Résumé des modifications
"""

RENAME_ORACLE_NORM = {
    "lib/new_name.py": "@@\n-VERSION = 1\n+VERSION = 2\n \n def run():",
    "lib/gone.py": "@@\n-def gone():\n-    pass",
    "bin/tool": "old mode 100644\nnew mode 100755",
    "docs/résumé.md": "@@\n-Résumé\n+Résumé des changements",
    "docs/with space.txt": "@@\n-a\n+b",
}
RENAME_PRED_NORM = {
    "lib/new_name.py": "@@\n-VERSION = 1\n+VERSION = 3\n \n def run():",
    "bin/tool": "old mode 100644\nnew mode 100755",
    "docs/résumé.md": "@@\n-Résumé\n+Résumé des modifications",
}

PATCHES = [
    ("same change, other line numbers and index", PRED_SAME_OTHER_LINES, ORACLE_FIX,
     {"src/calc.py": CALC_NORM}, {"src/calc.py": CALC_NORM}),
    ("different fix of the same lines", PRED_OTHER_FIX, ORACLE_FIX,
     {"src/calc.py": CALC_OTHER_NORM}, {"src/calc.py": CALC_NORM}),
    ("extra file in the prediction", PRED_EXTRA_FILE, ORACLE_FIX,
     {"src/calc.py": CALC_OTHER_NORM, "README.md": "@@\n-# calc\n+# calc, now safer"}, {"src/calc.py": CALC_NORM}),
    ("oracle file missing from the prediction", PRED_SAME_OTHER_LINES, ORACLE_TWO_FILES,
     {"src/calc.py": CALC_NORM}, {"src/calc.py": CALC_NORM, "tests/test_calc.py": TEST_NORM}),
    ("empty prediction", "", ORACLE_TWO_FILES,
     {}, {"src/calc.py": CALC_NORM, "tests/test_calc.py": TEST_NORM}),
    ("header look-alikes, no-newline marker, mail around the diff", PRED_TRICKY, ORACLE_TRICKY,
     {"db/schema.sql": TRICKY_PRED_NORM}, {"db/schema.sql": TRICKY_ORACLE_NORM}),
    ("renames, deletions, modes, quoted and spaced names, plain diff -u", PRED_RENAME, ORACLE_RENAME,
     RENAME_PRED_NORM, RENAME_ORACLE_NORM),
]


def similarity(pred, oracle):
    # SWE-RL compute_change_similarities, summed in sorted order.
    per_file = {}
    for path in sorted(set(pred) | set(oracle)):
        p, o = pred.get(path, ""), oracle.get(path, "")
        per_file[path] = 0.0 if p == "" or o == "" else matcher(p, o).ratio()
    total = 0.0
    for path in sorted(per_file):
        total += per_file[path]
    return total / len(per_file), per_file


def patch_cases():
    cases = []
    for name, pred, oracle, pred_norm, oracle_norm in PATCHES:
        score, per_file = similarity(pred_norm, oracle_norm)
        cases.append({
            "name": name,
            "predicted": pred,
            "oracle": oracle,
            "predicted_normalized": pred_norm,
            "oracle_normalized": oracle_norm,
            "score": score,
            "per_file": per_file,
        })
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
    }
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "similarity.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(out, f, indent=1, ensure_ascii=True)
        f.write("\n")


if __name__ == "__main__":
    main()
