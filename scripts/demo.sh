#!/usr/bin/env bash
# make demo: cwm's main job on the example repository shipped in the repo
# (examples/textkit): an executable environment, then what is made from it.
# CWM_HOME defaults to a fresh directory so the demo starts from nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
CWM=./bin/cwm
export CWM_HOME="${CWM_HOME:-$(mktemp -d /tmp/cwm-demo.XXXXXX)}"
step() { printf '\n\033[1m== %s\033[0m\n$ %s\n' "$1" "$2"; }
timed() { local t0=$(date +%s%N); "$@"; local rc=$?; echo "[$(( ($(date +%s%N) - t0) / 1000000 )) ms]"; return $rc; }

echo "CWM_HOME=$CWM_HOME"

step "The sandbox: a fresh root, its own processes, only loopback, limits" \
     "cwm sandbox run --timeout 1s -- sleep 10"
timed $CWM sandbox run --shell -- 'echo "uid=$(id -u) host=$(hostname) procs=$(ls /proc | grep -c "^[0-9]") net=$(tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d " ")"; touch /usr/x 2>&1 | head -1'
timed $CWM sandbox run --timeout 1s -- sleep 10 || true

step "An executable environment from the example repository" \
     "cwm env build examples/textkit"
timed $CWM env build examples/textkit
ENV=$($CWM env ls --json | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["id"])' 2>/dev/null || $CWM env ls | awk 'NR==2{print $1}')
$CWM env ls

step "Its tests, run again in a fresh sandbox" "cwm env test $ENV"
timed $CWM env test "$ENV" | tail -3

step "Which functions each test executes (the test-to-code map)" "cwm env coverage $ENV"
$CWM env coverage "$ENV" | head -12
