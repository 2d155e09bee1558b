#!/bin/bash
set -uxo pipefail
cd /repo
export PATH=/venv/bin:$PATH VIRTUAL_ENV=/venv PYTHONDONTWRITEBYTECODE=1
: '>>>>> Start Test Output'
(cd src && python -m pytest -q tests -rA --color=no -p no:cacheprovider)
: '>>>>> End Test Output'
