#!/usr/bin/env bash
# make demo: cwm's main job on the example repository shipped in the repo
# (examples/textkit): an executable environment, repository traces in CWM's
# format, verified bug-fix tasks, and their grading. CWM_HOME defaults to a
# fresh directory so the demo starts from nothing; outputs go to $OUT.
set -euo pipefail
cd "$(dirname "$0")/.."
CWM=./bin/cwm
PY=/usr/bin/python3
export CWM_HOME="${CWM_HOME:-$(mktemp -d /tmp/cwm-demo.XXXXXX)}"
OUT="${OUT:-$CWM_HOME/out}"
mkdir -p "$OUT"
step() { printf '\n\033[1m== %s\033[0m\n$ %s\n' "$1" "$2"; }

echo "CWM_HOME=$CWM_HOME  outputs in $OUT"

step "1. The sandbox: its own root, processes and network; limits that hold" \
     "cwm sandbox run --shell -- '...'; cwm sandbox run --timeout 1s -- sleep 10"
$CWM sandbox run --shell -- 'echo "uid=$(id -u) host=$(hostname) processes=$(ls /proc | grep -c "^[0-9]") interfaces=$(tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d " ")"; touch /usr/x 2>&1 | head -1'
$CWM sandbox run --timeout 1s -- sleep 10 || true

step "2. An executable environment from the example repository" \
     "cwm env build examples/textkit --name textkit"
$CWM env build examples/textkit --name textkit
$CWM env ls

step "3. Repository-level traces: function episodes cut from the traced test suite" \
     "cwm trace repo --env textkit --out $OUT/traces.jsonl"
$CWM trace repo --env textkit --out "$OUT/traces.jsonl"
$CWM trace check "$OUT/traces.jsonl"
ID=$($PY -c 'import json,sys; print(next(d["id"] for d in map(json.loads, open(sys.argv[1])) if d["function"]["qualname"] == "levenshtein"))' "$OUT/traces.jsonl")
echo
echo "one episode, step by step (cwm trace show $OUT/traces.jsonl '$ID'):"
$CWM trace show "$OUT/traces.jsonl" "$ID" | sed -n '/^ *1 call/,$p' | sed -n '1,24p'
echo "the same episode as CWM's token text (first 400 bytes):"
$PY -c 'import json,sys; print(next(d["text"] for d in map(json.loads, open(sys.argv[1])) if d["id"] == sys.argv[2]).split("<|frame_sep|>", 1)[1][:400])' "$OUT/traces.jsonl" "$ID"

step "4. Verified mutate-fix tasks (SWE-bench schema) across CWM's mutation families" \
     "cwm tasks mutate --env textkit --out $OUT/tasks.jsonl --max 10"
$CWM tasks mutate --env textkit --out "$OUT/tasks.jsonl" --max 10
$PY -c '
import json, sys
t = json.loads(open(sys.argv[1]).readline())
print("first task:", t["instance_id"], "family:", t["family"], "operator:", t["operator"])
print(t["problem_statement"][:600])
print("FAIL_TO_PASS:", len(t["FAIL_TO_PASS"]), "PASS_TO_PASS:", len(t["PASS_TO_PASS"]))' "$OUT/tasks.jsonl"

step "5. Every task re-verified: the bug fails its tests, the gold patch passes them" \
     "cwm tasks validate $OUT/tasks.jsonl"
$CWM tasks validate "$OUT/tasks.jsonl"

step "6. Grading: gold patches resolve every task, empty patches none" \
     "cwm reward --tasks $OUT/tasks.jsonl --in $OUT/predictions.jsonl --out $OUT/scored.jsonl"
$PY -c '
import json, sys
for line in open(sys.argv[1]):
    t = json.loads(line)
    print(json.dumps({"instance_id": t["instance_id"], "model_name_or_path": "gold", "model_patch": t["patch"]}))
    print(json.dumps({"instance_id": t["instance_id"], "model_name_or_path": "empty", "model_patch": ""}))' \
    "$OUT/tasks.jsonl" > "$OUT/predictions.jsonl"
$CWM reward --tasks "$OUT/tasks.jsonl" --in "$OUT/predictions.jsonl" --out "$OUT/scored.jsonl"

cat <<MSG

Next: trajectories from any OpenAI-compatible model server (vLLM, SGLang, Ollama, ...):
  $CWM forage --tasks $OUT/tasks.jsonl --model MODEL --base-url http://localhost:8000/v1 --out $OUT/traj.jsonl
See docs/forage.md.
MSG
