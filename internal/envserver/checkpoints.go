package envserver

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"time"
)

// CodeCheckpointLimit is a checkpoint refused because the episode holds
// MaxCheckpoints of them, or their frozen layers hold more than
// CheckpointBytes: HTTP 413.
const CodeCheckpointLimit = "CHECKPOINT_LIMIT"

// checkpointLimitError is a checkpoint past an episode's caps.
type checkpointLimitError struct{ msg string }

func (e *checkpointLimitError) Error() string { return e.msg }

// checkpointer is an episode kind that can be checkpointed: its state
// (files, session, record so far) frozen, to roll back or branch to.
type checkpointer interface {
	checkpoint(ctx context.Context) (snapshot, error)
	rollback(ctx context.Context, snap snapshot) error
	branchFrom(ctx context.Context, snap snapshot) (episodeImpl, error)
}

// snapshot is what a checkpointer keeps of one checkpoint.
type snapshot interface {
	bytes() int64
	depth() int
	layers() []string
	layerBytes() []int64
	release()
}

// checkpoint is one of an entry's checkpoints.
type checkpoint struct {
	id      string
	created time.Time
	steps   int
	snap    snapshot
}

func (c *checkpoint) info(episodeID string) map[string]any {
	return map[string]any{"checkpoint_id": c.id, "episode_id": episodeID, "step_count": c.steps,
		"created_at": float64(c.created.UnixNano()) / 1e9, "depth": c.snap.depth(), "bytes": c.snap.bytes(),
		"layers": c.snap.layers()}
}

// checkpointBytes is the memory an entry's checkpoints hold: each frozen
// layer counted once, however many checkpoints stand on it. e.mu held.
func checkpointBytes(cs []*checkpoint) int64 {
	seen := map[string]bool{}
	var n int64
	for _, c := range cs {
		sizes := c.snap.layerBytes()
		for i, l := range c.snap.layers() {
			if !seen[l] {
				seen[l] = true
				n += sizes[i]
			}
		}
	}
	return n
}

// withCheckpointer runs f on the entry's episode under its lock, if its
// kind can be checkpointed.
func (s *Server) withCheckpointer(e *entry, f func(cp checkpointer) error) error {
	if err := s.begin(); err != nil {
		return err
	}
	defer s.inflight.Done()
	if !e.mu.TryLock() {
		return errBusy(e.id)
	}
	defer e.mu.Unlock()
	if e.closing.Load() {
		return errNoEpisode(e.id)
	}
	cp, ok := e.ep.(checkpointer)
	if !ok {
		return &sessionError{http.StatusBadRequest, fmt.Sprintf("episodes of kind %s have no checkpoints: they need a sandbox (swe, shell)", e.kind)}
	}
	e.touch()
	return f(cp)
}

// checkpointEntry freezes the entry's episode as a new checkpoint.
func (s *Server) checkpointEntry(ctx context.Context, e *entry) (map[string]any, error) {
	var info map[string]any
	err := s.withCheckpointer(e, func(cp checkpointer) error {
		if len(e.ckpts) >= s.opts.MaxCheckpoints {
			return &checkpointLimitError{fmt.Sprintf("episode %s holds %d checkpoints, the most --max-checkpoints allows: release one (DELETE or release_checkpoint) first", e.id, len(e.ckpts))}
		}
		ctx, cancel := mergeCancel(ctx, e.ctx)
		defer cancel()
		snap, err := cp.checkpoint(ctx)
		if err != nil {
			return err
		}
		c := &checkpoint{id: newID(), created: time.Now(), steps: e.steps, snap: snap}
		all := append(slices.Clone(e.ckpts), c)
		if n := checkpointBytes(all); n > s.opts.CheckpointBytes {
			snap.release()
			return &checkpointLimitError{fmt.Sprintf("episode %s's checkpoints would hold %d bytes of frozen layers, over --checkpoint-bytes %d: release one (DELETE or release_checkpoint) first", e.id, n, s.opts.CheckpointBytes)}
		}
		e.ckpts = all
		s.metrics.checkpointed(e.kind)
		info = c.info(e.id)
		return nil
	})
	return info, err
}

// findCheckpoint is the entry's checkpoint id. e.mu held.
func findCheckpoint(e *entry, id string) (int, error) {
	i := slices.IndexFunc(e.ckpts, func(c *checkpoint) bool { return c.id == id })
	if i < 0 {
		return 0, &sessionError{http.StatusNotFound, fmt.Sprintf("episode %s has no checkpoint %q: it was released, or never taken", e.id, id)}
	}
	return i, nil
}

// rollbackEntry brings the entry's episode back to one of its checkpoints.
func (s *Server) rollbackEntry(ctx context.Context, e *entry, id string) error {
	return s.withCheckpointer(e, func(cp checkpointer) error {
		i, err := findCheckpoint(e, id)
		if err != nil {
			return err
		}
		ctx, cancel := mergeCancel(ctx, e.ctx)
		defer cancel()
		if err := cp.rollback(ctx, e.ckpts[i].snap); err != nil {
			return err
		}
		e.steps = e.ckpts[i].steps
		s.metrics.rolledBack(e.kind)
		return nil
	})
}

// releaseCheckpoint drops one of the entry's checkpoints.
func (s *Server) releaseCheckpoint(e *entry, id string) error {
	return s.withCheckpointer(e, func(checkpointer) error {
		i, err := findCheckpoint(e, id)
		if err != nil {
			return err
		}
		e.ckpts[i].snap.release()
		e.ckpts = slices.Delete(e.ckpts, i, i+1)
		return nil
	})
}

// listCheckpoints describes the entry's checkpoints, oldest first.
func (s *Server) listCheckpoints(e *entry) (map[string]any, error) {
	var out map[string]any
	err := s.withCheckpointer(e, func(checkpointer) error {
		list := make([]map[string]any, 0, len(e.ckpts))
		for _, c := range e.ckpts {
			list = append(list, c.info(e.id))
		}
		out = map[string]any{"episode_id": e.id, "checkpoints": list, "bytes": checkpointBytes(e.ckpts),
			"max_checkpoints": s.opts.MaxCheckpoints, "max_bytes": s.opts.CheckpointBytes}
		return nil
	})
	return out, err
}

// branchEntry starts a new entry from one of e's checkpoints.
func (s *Server) branchEntry(ctx context.Context, e *entry, ckpt, id string, owner *wsConn) (*entry, error) {
	return s.forkEntry(ctx, e, id, owner, func(ctx context.Context) (episodeImpl, int, error) {
		cp, ok := e.ep.(checkpointer)
		if !ok {
			return nil, 0, &sessionError{http.StatusBadRequest, fmt.Sprintf("episodes of kind %s have no checkpoints", e.kind)}
		}
		i, err := findCheckpoint(e, ckpt)
		if err != nil {
			return nil, 0, err
		}
		ep, err := cp.branchFrom(ctx, e.ckpts[i].snap)
		return ep, e.ckpts[i].steps, err
	})
}

// releaseCheckpoints drops every checkpoint of a closing entry. e.mu held.
func releaseCheckpoints(e *entry) {
	for _, c := range e.ckpts {
		c.snap.release()
	}
	e.ckpts = nil
}

// The REST side: /v1/episodes/{id}/checkpoints.

// postCheckpoint is POST /v1/episodes/{id}/checkpoints.
func (s *Server) postCheckpoint(w http.ResponseWriter, r *http.Request) {
	e, err := s.lookup(r.PathValue("id"))
	var info map[string]any
	if err == nil {
		if info, err = s.checkpointEntry(r.Context(), e); err == nil {
			writeJSON(w, http.StatusCreated, info)
			return
		}
	}
	s.writeError(w, err)
}

// getCheckpoints is GET /v1/episodes/{id}/checkpoints.
func (s *Server) getCheckpoints(w http.ResponseWriter, r *http.Request) {
	e, err := s.lookup(r.PathValue("id"))
	var out map[string]any
	if err == nil {
		if out, err = s.listCheckpoints(e); err == nil {
			writeJSON(w, http.StatusOK, out)
			return
		}
	}
	s.writeError(w, err)
}

// deleteCheckpoint is DELETE /v1/episodes/{id}/checkpoints/{cp}.
func (s *Server) deleteCheckpoint(w http.ResponseWriter, r *http.Request) {
	e, err := s.lookup(r.PathValue("id"))
	if err == nil {
		if err = s.releaseCheckpoint(e, r.PathValue("cp")); err == nil {
			writeJSON(w, http.StatusOK, map[string]any{"episode_id": e.id, "checkpoint_id": r.PathValue("cp"), "released": true})
			return
		}
	}
	s.writeError(w, err)
}

// postRollback is POST /v1/episodes/{id}/checkpoints/{cp}/rollback: the
// episode's state after it.
func (s *Server) postRollback(w http.ResponseWriter, r *http.Request) {
	e, err := s.lookup(r.PathValue("id"))
	if err == nil {
		if err = s.rollbackEntry(r.Context(), e, r.PathValue("cp")); err == nil {
			writeJSON(w, http.StatusOK, s.stateOf(e))
			return
		}
	}
	s.writeError(w, err)
}

// postBranch is POST /v1/episodes/{id}/checkpoints/{cp}/branch: the body
// may name the new episode's id ({"episode_id": ...}); the answer is its
// state.
func (s *Server) postBranch(w http.ResponseWriter, r *http.Request) {
	s.forkREST(w, r, func(e *entry, id string) (*entry, error) {
		return s.branchEntry(r.Context(), e, r.PathValue("cp"), id, nil)
	})
}

// checkpointMessages are the types of the /ws checkpoint messages, which
// /metadata's description names too.
var checkpointMessages = []string{"checkpoint", "checkpoints", "rollback", "branch", "release_checkpoint"}

// checkpointMessage answers the /ws checkpoint messages (checkpoint,
// checkpoints, rollback, branch, release_checkpoint); ok is false for any
// other type.
func (c *wsConn) checkpointMessage(typ string, fields map[string]json.RawMessage) (_ wsReply, ok bool, _ error) {
	s := c.s
	if !slices.Contains(checkpointMessages, typ) {
		return wsReply{}, false, nil
	}
	if err := onlyFields(fields, "data"); err != nil {
		return wsReply{}, true, err
	}
	var d struct {
		CheckpointID string `json:"checkpoint_id"`
		EpisodeID    string `json:"episode_id"`
	}
	if err := decodeObject(fields["data"], &d, "data"); err != nil {
		return wsReply{}, true, err
	}
	if c.entry == nil {
		return wsReply{}, true, errNoReset
	}
	if typ != "checkpoint" && typ != "checkpoints" && d.CheckpointID == "" {
		return wsReply{}, true, invalid("missing", "Field required", "data", "checkpoint_id")
	}
	switch typ {
	case "checkpoint":
		info, err := s.checkpointEntry(c.ctx, c.entry)
		return wsReply{Type: typ, Data: info}, true, err
	case "checkpoints":
		list, err := s.listCheckpoints(c.entry)
		return wsReply{Type: typ, Data: list}, true, err
	case "rollback":
		if err := s.rollbackEntry(c.ctx, c.entry, d.CheckpointID); err != nil {
			return wsReply{}, true, err
		}
		return wsReply{Type: typ, Data: s.stateOf(c.entry)}, true, nil
	case "branch":
		b, err := s.branchEntry(c.ctx, c.entry, d.CheckpointID, d.EpisodeID, c)
		if err != nil {
			return wsReply{}, true, err
		}
		return wsReply{Type: typ, Data: s.stateOf(b)}, true, nil
	default:
		err := s.releaseCheckpoint(c.entry, d.CheckpointID)
		return wsReply{Type: typ, Data: map[string]any{"episode_id": c.entry.id, "checkpoint_id": d.CheckpointID, "released": true}}, true, err
	}
}
