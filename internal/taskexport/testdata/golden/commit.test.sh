#!/bin/bash
set -uo pipefail
mkdir -p /logs/verifier
echo 0 > /logs/verifier/reward.txt
cat > /tmp/cwm-eval.sh <<'EOF_d0cb180bb953'
cd /repo
export PATH=/venv/bin:$PATH VIRTUAL_ENV=/venv PYTHONDONTWRITEBYTECODE=1
git checkout ba5e000000000000000000000000000000000000 -- 'src/tests/test_a.py'
git apply -v - <<'EOF_49aab0ea3500'
diff --git a/src/tests/test_a.py b/src/tests/test_a.py
--- a/src/tests/test_a.py
+++ b/src/tests/test_a.py
@@ -1 +1,2 @@
 x = 1
+y = 2
diff --git a/src/tests/test_new.py b/src/tests/test_new.py
new file mode 100644
--- /dev/null
+++ b/src/tests/test_new.py
@@ -0,0 +1 @@
+def test_new(): pass
EOF_49aab0ea3500
: '>>>>> Start Test Output'
(cd src && python -m pytest -q tests -rA --color=no -p no:cacheprovider)
: '>>>>> End Test Output'
git checkout ba5e000000000000000000000000000000000000 -- 'src/tests/test_a.py'
EOF_d0cb180bb953
bash -ux /tmp/cwm-eval.sh > /logs/verifier/test-output.txt 2>&1 < /dev/null
python3 - /logs/verifier/test-output.txt > /logs/verifier/reward.txt <<'EOF_CWM_GRADE'
import sys
want = {"FAIL_TO_PASS":["tests/test_new.py::test_new"],"PASS_TO_PASS":["tests/test_a.py::test_y"]}
status = {}
for line in open(sys.argv[1], errors="replace").read().split("\n"):
    if not line.startswith(("FAILED", "PASSED", "SKIPPED", "ERROR", "XFAIL")):
        continue
    if line.startswith("FAILED"):
        line = line.replace(" - ", " ")
    w = line.split()
    if len(w) > 1:
        status[w[1]] = w[0]
ok = all(status.get(t) in ("PASSED", "XFAIL") for t in want["FAIL_TO_PASS"])
ok = ok and all(status.get(t) in ("PASSED", "XFAIL", "SKIPPED") for t in want["PASS_TO_PASS"])
print(1 if ok else 0)
EOF_CWM_GRADE
