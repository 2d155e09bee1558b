# Sourced by every template of deploy/slurm at the start of a job: the
# settings a cwm job shares, and the environments it needs put into this
# node's store before the stage runs.
#
#   CWM        the cwm binary (default: cwm on PATH)
#   CWM_HOME   the node's store and sandbox state: node-local disk, never a
#              shared file system (default: $TMPDIR/cwm-$USER)
#   CWM_ENVS   environments the job needs, space-separated: registry
#              references (registry.example.com/team/envs:ID) are pulled,
#              files cwm env export wrote (on a shared directory) imported;
#              already in the store, they cost one request or nothing
#   OUT_DIR    the shared directory the shards write to
#   NAME       the outputs' name: shard i writes $OUT_DIR/$NAME.<task id>.jsonl
#
# cwm takes its shard from SLURM_ARRAY_TASK_ID, _MIN, _MAX, _STEP and
# _COUNT itself (--shard defaults to it), so a template passes none.
set -euo pipefail
: "${CWM:=cwm}"
: "${OUT_DIR:?set OUT_DIR to the shared directory of the shard outputs}"
export CWM_HOME="${CWM_HOME:-${TMPDIR:-/tmp}/cwm-${USER:-$(id -un)}}"
mkdir -p "$CWM_HOME" "$OUT_DIR"
for ref in ${CWM_ENVS:-}; do
	if [ -f "$ref" ]; then
		"$CWM" env import "$ref" >/dev/null
	else
		"$CWM" env pull "$ref" >/dev/null
	fi
done
# The output of this task's shard (of the merged run, with no array).
shard_out() {
	echo "$OUT_DIR/$NAME.${SLURM_ARRAY_TASK_ID:-all}.jsonl"
}
