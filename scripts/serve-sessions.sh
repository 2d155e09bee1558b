#!/usr/bin/env bash
# A benchmark, not a test: N concurrent shell sessions (default 4096) held
# open against one cwm serve, each stepping commands through OpenEnv's own
# client (openenv 0.10, async GenericEnvClient over /ws), the server's PSS
# per session and its memory and descriptors back at the end
# (scripts/serve-sessions.py measures; docs/benchmarks.md has the figures).
#
#   scripts/serve-sessions.sh [N]
#
# CWM_HOME (default: a fresh directory under /tmp) gets the example
# environment (examples/textkit) unless it has one named textkit. The
# client runs in the venv of internal/envserver/testdata/pyreq/openenv.txt
# that the tests make ($CWM_TESTVENV_DIR, as internal/pytestenv keys it),
# made here the same way if the cache has none. Descriptor limits are
# raised to the hard limit for the server and the client, and the idle
# timeout to an hour: sessions wait, idle, while thousands of others open
# (with the default 10 min, 262 of 4,096 were reaped that way).
set -euo pipefail
cd "$(dirname "$0")/.."
N="${1:-4096}"
PY=/usr/bin/python3
export CWM_HOME="${CWM_HOME:-$(mktemp -d /tmp/cwm-sessions.XXXXXX)}"
WORK=$(mktemp -d /tmp/cwm-sessions-run.XXXXXX)
trap 'if [ -n "${SERVER:-}" ]; then kill "$SERVER" 2>/dev/null; wait "$SERVER" 2>/dev/null; fi; rm -rf "$WORK"' EXIT

go build -o "$WORK/cwm" ./cmd/cwm
CWM="$WORK/cwm"
if ! "$CWM" env ls 2>/dev/null | grep -qw textkit; then
    "$CWM" env build examples/textkit --name textkit >&2
fi

# The openenv venv, where internal/pytestenv keeps it (the same key: the
# interpreter's real path and the requirements file).
REQ=internal/envserver/testdata/pyreq/openenv.txt
CACHE="${CWM_TESTVENV_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/cwm-testvenv}"
KEY=$($PY -c 'import hashlib, os, sys
h = hashlib.sha256(os.path.realpath("/usr/bin/python3").encode() + b"\0" + open(sys.argv[1], "rb").read())
print(h.hexdigest()[:16])' "$REQ")
VENV="$CACHE/openenv-$KEY"
if [ ! -e "$VENV/.cwm-complete" ]; then
    mkdir -p "$CACHE"
    (
        flock 9
        if [ ! -e "$VENV/.cwm-complete" ]; then
            rm -rf "$VENV"
            $PY -m venv "$VENV"
            "$VENV/bin/python" -m pip install --quiet --no-input --disable-pip-version-check \
                --require-hashes --no-deps --only-binary :all: -r "$REQ"
            realpath "$REQ" > "$VENV/.cwm-complete"
        fi
    ) 9>"$VENV.lock"
fi

# Root may raise the hard limit too (to fs.nr_open): an episode holds
# five of the server's descriptors and the client's.
ulimit -Hn "$(cat /proc/sys/fs/nr_open)" 2>/dev/null || true
ulimit -n "$(ulimit -Hn)"
"$CWM" serve --kind shell --env textkit --listen 127.0.0.1:0 --addr-file "$WORK/addr" \
    --max-sessions "$N" --idle-timeout 1h --log-level warn 2> "$WORK/serve.log" &
SERVER=$!
for _ in $(seq 600); do [ -s "$WORK/addr" ] && break; sleep 0.1; done
[ -s "$WORK/addr" ] || { cat "$WORK/serve.log" >&2; echo "cwm serve did not start" >&2; exit 1; }
URL=$(cat "$WORK/addr")
echo "cwm serve $URL (pid $SERVER), $N sessions" >&2
# Opening thousands takes minutes on two cores: half a second a session
# is allowed to hold them all (at least 600 s).
TIMEOUT=$(( N / 2 > 600 ? N / 2 : 600 ))
echo "kernel.pid_max $(cat /proc/sys/kernel/pid_max), tasks in use $(cut -d' ' -f4 /proc/loadavg | cut -d/ -f2)" >&2
"$VENV/bin/python" scripts/serve-sessions.py "$(printf '{"url": "%s", "pid": %d, "env": "textkit", "sessions": %d, "timeout": %d}' "$URL" "$SERVER" "$N" "$TIMEOUT")"
echo "server log's last lines:" >&2
tail -5 "$WORK/serve.log" >&2
