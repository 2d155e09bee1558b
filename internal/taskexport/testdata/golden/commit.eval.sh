#!/bin/bash
set -uxo pipefail
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
