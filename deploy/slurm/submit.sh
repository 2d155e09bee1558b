#!/bin/bash
# submit.sh STAGE N [CWM FLAGS...]
#
# Submits cwm's STAGE (trace-func, trace-repo, tasks-mutate, tasks-commits,
# tasks-validate, reward, forage) as an array of N tasks, shard i of N
# each, and a merge job that runs when they are all over; prints the two
# job ids. The stage's settings are environment variables (see its
# template and cwm-job.sh: OUT_DIR, CWM_ENVS, IN, ENV, TASKS...); sbatch's
# own options come from its SBATCH_* variables (SBATCH_PARTITION,
# SBATCH_ACCOUNT, SBATCH_TIMELIMIT...) or the templates' #SBATCH lines.
# Extra arguments go to cwm. See docs/scale.md.
set -euo pipefail
if [ $# -lt 2 ] || ! [[ $2 =~ ^[1-9][0-9]*$ ]]; then
	sed -n '2,13p' "$0" >&2
	exit 2
fi
stage=$1 n=$2
shift 2
dir=$(cd "$(dirname "$0")" && pwd)
[ -f "$dir/$stage.sbatch" ] || { echo "submit.sh: no stage $stage in $dir" >&2; exit 2; }
export CWM_DEPLOY=$dir
array=$(sbatch --parsable --array="0-$((n - 1))" --export=ALL "$dir/$stage.sbatch" "$@")
array=${array%%;*}
name=$(sed -n 's/^: "${NAME:=\(.*\)}"$/\1/p' "$dir/$stage.sbatch")
merge=$(NAME=${NAME:-$name} sbatch --parsable --dependency="afterany:$array" --export=ALL "$dir/merge.sbatch")
echo "$array ${merge%%;*}"
