#!/bin/bash
set -uo pipefail
mkdir -p /logs/verifier
echo 0 > /logs/verifier/reward.txt
cat > /tmp/cwm-eval.sh <<'EOF_dc2d11d673fa'
cd /repo
export PATH=/venv/bin:$PATH VIRTUAL_ENV=/venv PYTHONDONTWRITEBYTECODE=1
: '>>>>> Start Test Output'
(cd src && python -m pytest -q tests -rA --color=no -p no:cacheprovider)
: '>>>>> End Test Output'
EOF_dc2d11d673fa
bash -ux /tmp/cwm-eval.sh > /logs/verifier/test-output.txt 2>&1 < /dev/null
python3 - /logs/verifier/test-output.txt > /logs/verifier/reward.txt <<'EOF_CWM_GRADE'
import sys
want = {"FAIL_TO_PASS":["tests/test_a.py::test_y"],"PASS_TO_PASS":[]}
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
