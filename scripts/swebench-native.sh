#!/usr/bin/env bash
# swebench-native.sh builds a SWE-bench dataset's instances from source
# with `cwm tasks import --native`, one version group at a time, and
# writes the table of docs/tasks.md ("SWE-bench from source"): per
# repository and version, the instances tried and validated, the Python
# the specification names and the one used, the time, and the cause of
# every failure.
#
# usage: scripts/swebench-native.sh DATASET CLONES OUT
#   DATASET  the rows (JSONL, as SWE-bench publishes them)
#   CLONES   a directory holding a clone of each repository, as owner/name
#            or owner+name (bare or not); nothing is downloaded but the
#            packages the install steps fetch through cwm's relay
#   OUT      where each group's rows, tasks, report and log go, and
#            OUT/table.md; the environments are built in $CWM_HOME
#            (default OUT/home), which must hold the Debian bases to build
#            on (cwm base build --debian bullseye|bookworm|trixie
#            --packages build-essential,python3-dev,pkg-config)
#
# Variables: CWM (the binary, default cwm on PATH), SWEBENCH_PYTHON (the
# Python whose swebench 4.x gives the specifications), RUNS (gradings per
# instance and patch, default 3), REPOS (the repositories in the order
# they are run, default the smaller first), MAX_PER_GROUP (instances
# tried per version group, default all), TIMEOUT (per test run, default
# 30m), UPLOADED_PRIOR_TO (the index as of that date, default 2025-07-01:
# the harness's images of SWE-bench Lite were built before then, and
# newer releases break older versions, as docutils 0.22 does sphinx 3.x;
# none for the newest).
#
# Resumable: a group whose report is in OUT is not run again, so a killed
# run started again goes on where it stopped. One group runs at a time.
set -euo pipefail
if [ $# -ne 3 ]; then
	sed -n '2,/^set -/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
	exit 2
fi
dataset=$1 clones=$2 out=$3
cwm=${CWM:-cwm}
runs=${RUNS:-3}
export CWM_HOME=${CWM_HOME:-$out/home}
order=${REPOS:-psf/requests pallets/flask mwaskom/seaborn pydata/xarray pylint-dev/pylint pytest-dev/pytest sphinx-doc/sphinx astropy/astropy sympy/sympy django/django matplotlib/matplotlib scikit-learn/scikit-learn}
[ -f "$dataset" ] || { echo "swebench-native: $dataset: no such file" >&2; exit 2; }
[ -d "$clones" ] || { echo "swebench-native: $clones: no such directory" >&2; exit 2; }
mkdir -p "$out/groups"
pyflag=()
[ -n "${SWEBENCH_PYTHON:-}" ] && pyflag=(--swebench-python "$SWEBENCH_PYTHON")

# The groups, in order: one rows file per (repository, version), at most
# MAX_PER_GROUP rows each, named after both.
python3 - "$dataset" "$out/groups" "${MAX_PER_GROUP:-0}" $order <<'PY'
import json, os, sys
dataset, dst, most, order = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
groups = {}
for line in open(dataset, encoding="utf-8"):
    if line.strip():
        r = json.loads(line)
        groups.setdefault((r["repo"], r["version"]), []).append(line)
rank = {r: i for i, r in enumerate(order)}
keys = sorted(groups, key=lambda k: (rank.get(k[0], len(order)), k[0], [int(x) if x.isdigit() else x for x in k[1].split(".")]))
with open(os.path.join(dst, "order.txt"), "w") as f:
    for i, (repo, ver) in enumerate(keys):
        name = f"{i:03d}-{repo.replace('/', '+')}-{ver}"
        rows = groups[(repo, ver)][: most or None]
        with open(os.path.join(dst, name + ".jsonl"), "w", encoding="utf-8") as g:
            g.writelines(rows)
        f.write(name + "\n")
PY

while read -r name; do
	g=$out/groups/$name
	[ -f "$g.report.json" ] && continue
	echo "swebench-native: $name ($(wc -l <"$g.jsonl") instances)" >&2
	t0=$(date +%s)
	"$cwm" tasks import --format swebench --native --repos "$clones" "${pyflag[@]}" --runs "$runs" \
		--timeout "${TIMEOUT:-30m}" --uploaded-prior-to "${UPLOADED_PRIOR_TO:-2025-07-01}" --out "$g.tasks.jsonl" --report "$g.report.part" "$g.jsonl" >"$g.log" 2>&1 || true
	if [ -f "$g.report.part" ]; then
		echo $(($(date +%s) - t0)) >"$g.seconds"
		mv "$g.report.part" "$g.report.json"
	else
		echo "swebench-native: $name: no report (see $g.log)" >&2
	fi
done <"$out/groups/order.txt"

# The table, from every report so far.
python3 - "$out/groups" >"$out/table.md" <<'PY'
import glob, json, os, sys
d = sys.argv[1]
tot = [0, 0, 0]
print("| repository | version | tried | validated | Python specified | Python used | seconds | causes |")
print("|---|---|---|---|---|---|---|---|")
for name in open(os.path.join(d, "order.txt")).read().split():
    p = os.path.join(d, name + ".report.json")
    if not os.path.exists(p):
        continue
    rep = json.load(open(p))
    secs = open(os.path.join(d, name + ".seconds")).read().strip()
    causes = {}
    for l in rep.get("left") or []:
        c = l["class"] + ": " + l["reason"].split(" (on Python")[0][:160]
        causes.setdefault(c, []).append(l["instance_id"])
    cs = "; ".join(f"{len(v)}× {c}" for c, v in causes.items()).replace("|", "\\|")
    for g in rep.get("groups") or [{"repo": "?", "version": "?", "python": "", "python_used": ""}]:
        print(f"| {g['repo']} | {g['version']} | {rep['rows']} | {rep['kept']} | {g['python']} | {g['python_used'] or 'none'} | {secs} | {cs or '-'} |")
    tot[0] += rep["rows"]; tot[1] += rep["kept"]; tot[2] += int(secs)
pct = 100 * tot[1] / tot[0] if tot[0] else 0
print(f"| **total** | | **{tot[0]}** | **{tot[1]}** ({pct:.0f}%) | | | {tot[2]} | |")
PY
cat "$out/table.md"
