#!/bin/bash
set -euo pipefail
cd /repo
git apply -v - <<'EOF_2899381d09d1'
diff --git a/src/p.py b/src/p.py
--- a/src/p.py
+++ b/src/p.py
@@ -1 +1 @@
-a
+b
EOF_2899381d09d1
