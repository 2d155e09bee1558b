#!/usr/bin/env bash
# envbench.sh: the install phase of an online `cwm env build` against the
# floor, a plain `python3 -m venv` + `pip install` of the same lock on the
# same machine outside any sandbox, and a warm `--locked` rebuild against
# the cold build (docs/benchmarks.md, "Installing from the index").
#
#   scripts/envbench.sh OUT REPO...
#
# For each round (ROUNDS, default 3) and each REPO: a cold build into an
# empty CWM_HOME (only cwm's pip wheel copied in: it is a tool, not part of
# the install), its lock written out by `cwm env lock`, the floor (the venv,
# the lock's packages with hashes, then the project editable, pip's cache
# off) on a fresh copy of the repository (a clone of a bare one), and two
# rebuilds from that lock in the cold build's CWM_HOME (warm: the first,
# which unpacks the cached wheels; warm2: the next, every cache warm). Cold build and floor alternate in order from
# round to round. One line per measurement goes to OUT/rounds.tsv; the
# medians and ratios to stdout. The install phase of a build is the sum of
# its install steps' seconds (env.json's install[].seconds: the venv, the
# recipe's steps, the test runner); its wall clock is the whole command,
# baseline run included; the phases column is the build's own timing of
# its parts (build.log's last line: source, tools, recipe, install, deps,
# snapshot, bytecode, layer, baseline), whose medians are printed too.
# CWM (default bin/cwm) is the binary measured.
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 OUT REPO..." >&2; exit 2; }
OUT=$1; shift
CWM=$(realpath "${CWM:-bin/cwm}")
ROUNDS=${ROUNDS:-3}
PY=/usr/bin/python3
mkdir -p "$OUT"
OUT=$(realpath "$OUT")
WORK=$(mktemp -d "${TMPDIR:-/tmp}/envbench.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

# cwm's pip wheel, fetched once (with the host's pip) and copied into every
# empty CWM_HOME.
TOOLS="$WORK/tools-home"
"$PY" -m pip download --disable-pip-version-check -q --no-deps --only-binary=:all: -d "$TOOLS/tools" pip==26.0.1
# The floor runs the same pip, unpacked with its bytecode as cwm runs it:
# the venv's own (ensurepip's) would measure another pip.
"$PY" -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' "$TOOLS/tools/pip-26.0.1-py3-none-any.whl" "$WORK/pip"
"$PY" -m compileall -q "$WORK/pip" >/dev/null

now() { date +%s.%N; }
installSecs() { "$PY" -c 'import json,sys; e=json.load(open(sys.argv[1])); print(round(sum(s.get("seconds",0) for s in e["install"]),2))' "$1"; }
field() { "$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2"; }
phases() { grep '^phases: ' "$1/envs/$(field "$2" id)/build.log" | tail -1 | cut -d' ' -f2-; }

printf 'repo\tround\tkind\tinstall_s\twall_s\tusable\tphases\n' >"$OUT/rounds.tsv"
for r in $(seq 1 "$ROUNDS"); do
  for repo in "$@"; do
    name=$(basename "$(dirname "$(realpath "$repo")")")
    [ "$(basename "$repo")" = repo ] || name=$(basename "$repo")
    d="$WORK/$name-$r"; mkdir -p "$d"
    home="$d/home"; mkdir -p "$home"; cp -r "$TOOLS/tools" "$home/"
    cold() {
      local t0; t0=$(now)
      CWM_HOME="$home" "$CWM" env build --quiet --runs 1 --no-coverage --json "$repo" >"$d/cold.json" 2>"$d/cold.err"
      local wall; wall=$("$PY" -c "print(round($(now)-$t0,2))")
      printf '%s\t%s\tcold\t%s\t%s\t%s\t%s\n' "$name" "$r" "$(installSecs "$d/cold.json")" "$wall" "$(field "$d/cold.json" usable)" "$(phases "$home" "$d/cold.json")" >>"$OUT/rounds.tsv"
      CWM_HOME="$home" "$CWM" env lock "$(field "$d/cold.json" id)" >"$d/lock.txt"
    }
    floor() {
      # Needs the cold build's lock: in the first order it runs second.
      rm -rf "$d/src" "$d/venv"
      if [ "$(git -C "$repo" rev-parse --is-bare-repository 2>/dev/null)" = true ]; then
        git clone -q "$repo" "$d/src"
      else
        cp -r "$(realpath "$repo")" "$d/src"
      fi
      local t0; t0=$(now)
      "$PY" -m venv --without-pip "$d/venv"
      PYTHONPATH="$WORK/pip" "$d/venv/bin/python" -m pip install --disable-pip-version-check --no-cache-dir -q --require-hashes --no-deps -r "$d/lock.txt"
      (cd "$d/src" && PYTHONPATH="$WORK/pip" "$d/venv/bin/python" -m pip install --disable-pip-version-check --no-cache-dir -q --no-deps -e .)
      local s; s=$("$PY" -c "print(round($(now)-$t0,2))")
      printf '%s\t%s\tfloor\t%s\t%s\t-\t-\n' "$name" "$r" "$s" "$s" >>"$OUT/rounds.tsv"
    }
    if [ $((r % 2)) -eq 1 ] || [ ! -s "$OUT/$name.lock.txt" ]; then
      cold; floor
    else
      cp "$OUT/$name.lock.txt" "$d/lock.txt"; floor; cold
    fi
    cp "$d/lock.txt" "$OUT/$name.lock.txt"
    # warm: the first rebuild from the lock (the wheel cache filled by the
    # cold build; it unpacks the wheels into cache/unpacked); warm2 the
    # next one (--force: the same id), every cache warm.
    for kind in warm warm2; do
      t0=$(now)
      CWM_HOME="$home" "$CWM" env build --quiet --runs 1 --no-coverage --json --force --locked "$d/lock.txt" "$repo" >"$d/$kind.json" 2>"$d/$kind.err"
      wall=$("$PY" -c "print(round($(now)-$t0,2))")
      printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$r" "$kind" "$(installSecs "$d/$kind.json")" "$wall" "$(field "$d/$kind.json" usable)" "$(phases "$home" "$d/$kind.json")" >>"$OUT/rounds.tsv"
    done
    du -sb "$home/envs/$(field "$d/cold.json" id)/layer" | cut -f1 >"$OUT/$name.layer-bytes"
    for kind in cold warm warm2; do cp "$d/$kind.json" "$OUT/$name-$r-$kind.json"; done
    rm -rf "$d"
  done
done

"$PY" - "$OUT/rounds.tsv" <<'EOF'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
for repo in dict.fromkeys(r["repo"] for r in rows):
    med = {}
    for kind in ("cold", "floor", "warm", "warm2"):
        got = [r for r in rows if r["repo"] == repo and r["kind"] == kind]
        med[kind] = (statistics.median(float(r["install_s"]) for r in got), statistics.median(float(r["wall_s"]) for r in got))
    print(f"{repo}: install phase median cold {med['cold'][0]:.2f} s, floor {med['floor'][0]:.2f} s, warm --locked {med['warm'][0]:.2f} s, again {med['warm2'][0]:.2f} s")
    print(f"  cold / floor {med['cold'][0] / med['floor'][0]:.2f}x (target <= 1.3)")
    for kind in ("warm", "warm2"):
        ratios = [float(w["install_s"]) / float(c["install_s"]) for c in rows for w in rows
                  if c["repo"] == w["repo"] == repo and c["round"] == w["round"] and c["kind"] == "cold" and w["kind"] == kind]
        print(f"  {kind} / cold install {med[kind][0] / med['cold'][0]:.2f}x of the medians, per round " + " ".join(f"{x:.2f}" for x in ratios) +
              f" (target <= 0.2); wall {med[kind][1] / med['cold'][1]:.2f}x ({med[kind][1]:.1f} / {med['cold'][1]:.1f} s)")
    for kind in ("cold", "warm", "warm2"):
        per = {}
        for r in rows:
            if r["repo"] == repo and r["kind"] == kind:
                for kv in r["phases"].split():
                    k, _, v = kv.partition("=")
                    per.setdefault(k, []).append(float(v))
        print(f"  {kind} phases (median s): " + " ".join(f"{k}={statistics.median(v):.2f}" for k, v in per.items()))
EOF
