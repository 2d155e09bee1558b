#!/usr/bin/env bash
# swebench-native-forage.sh runs `cwm forage` on tasks that `cwm tasks
# import --native` kept, with a scripted model (the one fake: a local
# OpenAI-compatible server replaying scripted replies), to show they serve
# like any other task: an agent whose replies apply the gold patch and
# submit it must resolve its task, one whose replies submit an unrelated
# edit must not.
#
# usage: scripts/swebench-native-forage.sh TASKS OUT
#   TASKS  kept tasks (JSONL, as `cwm tasks import --out` writes them;
#          several files may be concatenated)
#   OUT    where the scripts, trajectories (gold.jsonl, wrong.jsonl) and
#          OUT/summary.txt go
#
# Variables: CWM (the binary, default cwm on PATH), CWM_HOME (the store
# holding the tasks' environments), CONCURRENCY (episodes at once,
# default 1). Resumable as forage is: a re-run skips the episodes already
# in OUT/*.jsonl.
set -euo pipefail
if [ $# -ne 2 ]; then
	sed -n '2,/^set -/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
	exit 2
fi
tasks=$1
cwm=${CWM:-cwm}
here=$(cd "$(dirname "$0")/.." && pwd)
[ -f "$tasks" ] || { echo "swebench-native-forage: $tasks: no such file" >&2; exit 2; }
mkdir -p "$2"
out=$(cd "$2" && pwd)
(cd "$here" && go build -o "$out/modelreplay" ./internal/model/modeltest/modelreplay)

# Two scripts from the tasks: each episode is matched by the first line
# of its statement; the agent writes a patch with bash, then submits it.
python3 - "$tasks" "$out" <<'PY'
import json, sys
tasks, out = sys.argv[1], sys.argv[2]
def tool(name, text):
    return {"content": f"<tool: {name}>\n{text}\n</tool>"}
def heredoc(body):
    tag = "CWM_PATCH"
    while tag in body:
        tag += "_"
    return f"cat > /tmp/agent.diff <<'{tag}'\n{body}{tag}"
scripts = {"gold": [], "wrong": []}
seen = set()
for line in open(tasks, encoding="utf-8"):
    if not line.strip():
        continue
    t = json.loads(line)
    key = next((l.strip() for l in t["problem_statement"].splitlines() if l.strip()), "")[:200]
    if not key or key in seen:
        print(f"swebench-native-forage: {t['instance_id']}: statement's first line is empty or shared; skipped", file=sys.stderr)
        continue
    seen.add(key)
    target = next(l[6:] for l in t["patch"].splitlines() if l.startswith("+++ b/"))
    gold = heredoc(t["patch"]) + "\ngit apply /tmp/agent.diff && git diff > /tmp/agent.patch && git status --short"
    wrong = f"printf '\\n# not the fix\\n' >> {target} && git diff > /tmp/agent.patch && git status --short"
    for name, cmd in (("gold", gold), ("wrong", wrong)):
        scripts[name].append({"issue": key, "replies": [tool("bash", cmd), tool("submit", "/tmp/agent.patch"), {"content": "Submitted."}]})
for name, eps in scripts.items():
    with open(f"{out}/{name}.script.json", "w") as f:
        json.dump({"episodes": eps, "fallback": {"content": "done"}}, f)
PY

pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true' EXIT
for name in gold wrong; do
	"$out/modelreplay" "$out/$name.script.json" >"$out/$name.url" 2>"$out/$name.server.err" &
	pids+=($!)
	for _ in $(seq 100); do [ -s "$out/$name.url" ] && break; sleep 0.1; done
	url=$(head -1 "$out/$name.url")
	[ -n "$url" ] || { echo "swebench-native-forage: the scripted model did not start (see $out/$name.server.err)" >&2; exit 1; }
	echo "swebench-native-forage: $name agent on $(wc -l <"$tasks") tasks" >&2
	OPENAI_API_KEY=scripted "$cwm" forage --tasks "$tasks" --model scripted --base-url "$url" \
		--concurrency "${CONCURRENCY:-1}" --max-turns 6 --out "$out/$name.jsonl" --json >"$out/$name.summary.json" 2>"$out/$name.log" || true
done

python3 - "$out" <<'PY' | tee "$out/summary.txt"
import json, sys
out = sys.argv[1]
for name, want in (("gold", True), ("wrong", False)):
    rows = []
    try:
        rows = [json.loads(l) for l in open(f"{out}/{name}.jsonl") if l.strip()]
    except FileNotFoundError:
        pass
    try:
        failed = json.load(open(f"{out}/{name}.summary.json")).get("failed", 0)
    except (FileNotFoundError, ValueError):
        failed = "?"
    ok = [r["task_id"] for r in rows if r.get("resolved") is want]
    bad = [(r["task_id"], r.get("reward"), r.get("exit_reason")) for r in rows if r.get("resolved") is not want]
    print(f"{name}: {len(rows)} episodes, {len(ok)} {'resolved' if want else 'not resolved'}, {failed} could not run (see {name}.log)" + (f"; others: {bad}" if bad else ""))
PY
