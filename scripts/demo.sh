#!/usr/bin/env bash
# make demo: shows cwm's sandbox at work until the pipeline's main job exists.
set -euo pipefail
cd "$(dirname "$0")/.."
CWM=./bin/cwm
export CWM_HOME="${CWM_HOME:-$(mktemp -d)}"
step() { printf '\n== %s\n$ %s\n' "$1" "${*:2}"; }
run() { local t0=$(date +%s%N); "$@" || echo "(exit status $?)"; echo "[$(( ($(date +%s%N) - t0) / 1000000 )) ms]"; }

step "isolation: a fresh root, no host processes, only loopback" "$CWM sandbox run --shell -- 'id; hostname; ps -e | wc -l; ls /proc | grep -c ^[0-9]; cat /proc/net/dev | tail -n +3 | cut -d: -f1'"
run $CWM sandbox run --shell -- 'id; hostname; echo processes: $(ls /proc | grep -c "^[0-9]"); echo interfaces: $(tail -n +3 /proc/net/dev | cut -d: -f1)'
step "writes to /usr fail; writes elsewhere vanish with the sandbox" "$CWM sandbox run --shell -- 'touch /usr/x; echo hi > /etc/x; echo kept > /tmp/x'"
run $CWM sandbox run --shell -- 'touch /usr/x; echo hi > /etc/x; echo kept > /tmp/x && cat /tmp/x'
step "time limit" "$CWM sandbox run --timeout 1s -- sleep 10"
run $CWM sandbox run --timeout 1s -- sleep 10
step "memory limit" "$CWM sandbox run --memory 64M -- python3 -c 'x = bytearray(1 << 30)'"
run $CWM sandbox run --memory 64M -- /usr/bin/python3 -c 'x = bytearray(1 << 30)'
step "process limit (a fork bomb)" "$CWM sandbox run --pids 64 --timeout 10s --shell -- 'b() { b | b & }; b'"
run $CWM sandbox run --pids 64 --timeout 10s --shell -- 'b() { b | b & }; b; sleep 5'
step "no network" "$CWM sandbox run -- python3 -c 'import socket; socket.create_connection((\"10.0.0.1\", 80), 2)'"
run $CWM sandbox run -- /usr/bin/python3 -c 'import socket; socket.create_connection(("10.0.0.1", 80), 2)'
