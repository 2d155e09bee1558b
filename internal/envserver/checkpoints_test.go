package envserver

import (
	"testing"
)

// A checkpoint over /ws keeps the files, the session and the record;
// rollback returns to all three, a branch starts a new episode from them,
// and the caps refuse with CHECKPOINT_LIMIT.
func TestCheckpointOverWS(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.MaxCheckpoints = 2 })
	w := f.dial("")
	w.call(`{"type": "reset", "data": {"task_id": "calc-1"}}`)
	w.call(bash("echo one > /repo/one.txt; cd /tmp; export MARK=one"))
	r := w.call(`{"type": "checkpoint"}`)
	if r["type"] != "checkpoint" {
		t.Fatalf("checkpoint = %v", r)
	}
	cp := r["data"].(map[string]any)
	id := cp["checkpoint_id"].(string)
	if cp["step_count"] != 1.0 || cp["depth"] != 1.0 || cp["bytes"].(float64) <= 0 {
		t.Errorf("checkpoint = %v, want step 1, depth 1, some bytes", cp)
	}
	if o := obs(w.call(bash("pwd; echo $MARK; cat /repo/one.txt"))); o["output"] != "/tmp\none\none" {
		t.Errorf("after the checkpoint: %v, want the session and files as they were", o)
	}
	w.call(bash("rm /repo/one.txt; echo two > /repo/two.txt; export MARK=two"))

	r = w.call(map[string]any{"type": "branch", "data": map[string]any{"checkpoint_id": id, "episode_id": "the-branch"}})
	if r["type"] != "branch" || r["data"].(map[string]any)["episode_id"] != "the-branch" || r["data"].(map[string]any)["step_count"] != 1.0 {
		t.Fatalf("branch = %v", r)
	}
	r = w.call(map[string]any{"type": "rollback", "data": map[string]any{"checkpoint_id": id}})
	if r["type"] != "rollback" || r["data"].(map[string]any)["step_count"] != 1.0 {
		t.Fatalf("rollback = %v", r)
	}
	if o := obs(w.call(bash("pwd; echo $MARK; cat /repo/one.txt; ls /repo/two.txt 2>&1 | grep -c 'No such'"))); o["output"] != "/tmp\none\none\n1" || o["turn"] != 2.0 {
		t.Errorf("after the rollback: %v, want the checkpoint's session, files and turn", o)
	}
	w2 := f.dial("?episode_id=the-branch")
	if o := obs(w2.call(bash("pwd; echo $MARK; cat /repo/one.txt"))); o["output"] != "/tmp\none\none" || o["turn"] != 2.0 {
		t.Errorf("in the branch: %v, want the checkpoint's session, files and turn", o)
	}

	// Listing, the cap, release.
	w.call(bash("echo three > /repo/three.txt"))
	if r := w.call(`{"type": "checkpoint"}`); r["type"] != "checkpoint" {
		t.Fatalf("second checkpoint = %v", r)
	}
	if c := errorCode(w.call(`{"type": "checkpoint"}`)); c != CodeCheckpointLimit {
		t.Errorf("third checkpoint with --max-checkpoints 2: code %q, want %s", c, CodeCheckpointLimit)
	}
	r = w.call(`{"type": "checkpoints"}`)
	list := r["data"].(map[string]any)["checkpoints"].([]any)
	if len(list) != 2 || r["data"].(map[string]any)["max_checkpoints"] != 2.0 {
		t.Errorf("checkpoints = %v, want 2 of at most 2", r)
	}
	if r := w.call(map[string]any{"type": "release_checkpoint", "data": map[string]any{"checkpoint_id": id}}); r["type"] != "release_checkpoint" {
		t.Errorf("release = %v", r)
	}
	if c := errorCode(w.call(map[string]any{"type": "rollback", "data": map[string]any{"checkpoint_id": id}})); c != CodeSessionError {
		t.Errorf("rollback to a released checkpoint: code %q, want %s", c, CodeSessionError)
	}
	if c := errorCode(w.call(`{"type": "rollback", "data": {}}`)); c != CodeValidationError {
		t.Errorf("rollback without checkpoint_id: code %q, want %s", c, CodeValidationError)
	}
	// The branch lives on after its checkpoint is released.
	if o := obs(w2.call(bash("cat /repo/one.txt"))); o["output"] != "one" {
		t.Errorf("branch after its checkpoint's release: %v", o)
	}
}

// REST has the same operations under /v1/episodes/{id}/checkpoints, and
// the byte cap refuses a checkpoint whose layers would pass it.
func TestCheckpointREST(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.CheckpointBytes = 1 << 20 })
	code, body, _ := f.do("POST", "/v1/episodes", map[string]any{"task_id": "calc-1", "episode_id": "ep"}, "")
	if code != 200 && code != 201 {
		t.Fatalf("create = %d %v", code, body)
	}
	step := func(id, cmd string) map[string]any {
		_, body, _ := f.do("POST", "/v1/episodes/"+id+"/step", map[string]any{"action": map[string]any{"text": "<tool: bash>\n" + cmd + "\n</tool>"}}, "")
		return obs(body)
	}
	step("ep", "echo one > /repo/one.txt")
	code, body, _ = f.do("POST", "/v1/episodes/ep/checkpoints", nil, "")
	if code != 201 {
		t.Fatalf("POST checkpoints = %d %v", code, body)
	}
	id := body["checkpoint_id"].(string)
	step("ep", "echo changed > /repo/one.txt")
	if code, body, _ = f.do("POST", "/v1/episodes/ep/checkpoints/"+id+"/rollback", nil, ""); code != 200 {
		t.Fatalf("rollback = %d %v", code, body)
	}
	if o := step("ep", "cat /repo/one.txt"); o["output"] != "one" {
		t.Errorf("after REST rollback: %v", o)
	}
	if code, body, _ = f.do("POST", "/v1/episodes/ep/checkpoints/"+id+"/branch", map[string]any{"episode_id": "br"}, ""); code != 201 || body["episode_id"] != "br" {
		t.Fatalf("branch = %d %v", code, body)
	}
	if o := step("br", "cat /repo/one.txt"); o["output"] != "one" {
		t.Errorf("in the REST branch: %v", o)
	}
	if code, body, _ = f.do("GET", "/v1/episodes/ep/checkpoints", nil, ""); code != 200 || len(body["checkpoints"].([]any)) != 1 {
		t.Errorf("GET checkpoints = %d %v", code, body)
	}
	// Two MiB written: the next checkpoint's layer passes the 1 MiB cap.
	step("ep", "head -c 2097152 /dev/zero > /repo/big")
	code, body, _ = f.do("POST", "/v1/episodes/ep/checkpoints", nil, "")
	if code != 413 || body["code"] != CodeCheckpointLimit {
		t.Errorf("checkpoint past --checkpoint-bytes = %d %v, want 413 %s", code, body, CodeCheckpointLimit)
	}
	if code, body, _ = f.do("DELETE", "/v1/episodes/ep/checkpoints/"+id, nil, ""); code != 200 {
		t.Errorf("DELETE checkpoint = %d %v", code, body)
	}
	if code, _, _ = f.do("DELETE", "/v1/episodes/ep/checkpoints/"+id, nil, ""); code != 404 {
		t.Errorf("DELETE released checkpoint = %d, want 404", code)
	}
}
