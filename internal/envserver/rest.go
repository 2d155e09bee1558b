package envserver

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"strconv"
	"time"
)

// writeJSON answers v with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false) // observations are full of <tool: ...> tags
	enc.Encode(v)
}

// retryAfter is what a refused new episode is told to wait, in seconds.
const retryAfter = 2

// writeError answers err as its class says (classify), FastAPI's
// {"detail": ...} with OpenEnv's code beside it.
func (s *Server) writeError(w http.ResponseWriter, err error) {
	status, code := classify(err)
	s.metrics.failed(code)
	body := errorDetails(err)
	body["detail"], body["code"] = err.Error(), code
	if status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", strconv.Itoa(retryAfter))
	}
	writeJSON(w, status, body)
}

// bodyDeadline sets the read deadline of a request that has a body to
// BodyTimeout from now; readBody lifts it once the body is in (the
// connection's read then watches for the client going away, which a
// deadline would take for it), and the WebSocket upgrade lifts it too
// (guardWriter). A body a handler does not read stays bounded by it.
func (s *Server) bodyDeadline(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength != 0 {
			http.NewResponseController(w).SetReadDeadline(time.Now().Add(s.opts.BodyTimeout))
		}
		h.ServeHTTP(w, r)
	})
}

// readBody reads a request body of at most MaxMessageBytes, within
// BodyTimeout.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.opts.MaxMessageBytes))
	if err == nil {
		http.NewResponseController(w).SetReadDeadline(time.Time{})
	}
	var mb *http.MaxBytesError
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return nil, &sessionError{http.StatusRequestTimeout, "the request body did not arrive within " + s.opts.BodyTimeout.String() + " (--body-timeout)"}
	}
	if errors.As(err, &mb) {
		return nil, &sessionError{http.StatusRequestEntityTooLarge, "request body larger than " + strconv.FormatInt(mb.Limit, 10) + " bytes (--max-message-bytes)"}
	}
	if err != nil {
		return nil, &sessionError{http.StatusBadRequest, "read request body: " + err.Error()}
	}
	if len(b) > 0 && !json.Valid(b) {
		return nil, &sessionError{http.StatusBadRequest, "the body is not valid JSON"}
	}
	return b, nil
}

// createEpisode is POST /v1/episodes: a reset's data in, a new episode
// (its id and first observation) out. It is owned by nobody: it closes on
// DELETE or when idle past the timeout.
func (s *Server) createEpisode(w http.ResponseWriter, r *http.Request) {
	b, err := s.readBody(w, r)
	if err == nil {
		var e *entry
		var res Result
		e, res, err = s.create(r, b)
		if err == nil {
			writeJSON(w, http.StatusCreated, map[string]any{"episode_id": e.id, "observation": res.Observation,
				"reward": res.Reward, "done": res.Done})
			return
		}
	}
	s.writeError(w, err)
}

func (s *Server) create(r *http.Request, data []byte) (*entry, Result, error) {
	if err := s.begin(); err != nil {
		return nil, Result{}, err
	}
	defer s.inflight.Done()
	plan, err := s.planReset(data)
	if err != nil {
		return nil, Result{}, err
	}
	if err := s.acquire(); err != nil {
		return nil, Result{}, err
	}
	ep, res, err := s.startEpisode(r.Context(), plan)
	if err != nil {
		s.release()
		return nil, Result{}, err
	}
	e, err := s.register(plan.episodeID, plan.kind, ep, nil)
	if err != nil {
		ep.close()
		s.release()
		return nil, Result{}, err
	}
	e.mu.Lock()
	e.seed = plan.data.Seed
	e.mu.Unlock()
	return e, res, nil
}

// stepRequest is OpenEnv's StepRequest: the action, an optional timeout
// (ignored: steps are bounded by the server's step timeout) and request
// id.
type stepRequest struct {
	Action    json.RawMessage `json:"action"`
	TimeoutS  *float64        `json:"timeout_s"`
	RequestID string          `json:"request_id"`
}

// stepEpisode is POST /v1/episodes/{id}/step. A client that disconnects
// does not cancel its step: the episode is not the connection's, and the
// step's outcome is in the episode's state.
func (s *Server) stepEpisode(w http.ResponseWriter, r *http.Request) {
	b, err := s.readBody(w, r)
	var e *entry
	if err == nil {
		e, err = s.lookup(r.PathValue("id"))
	}
	var req stepRequest
	if err == nil {
		err = decodeObject(b, &req)
	}
	if err == nil && (len(req.Action) == 0 || string(req.Action) == "null") {
		err = invalid("missing", "Field required", "action")
	}
	s.answerStep(w, e, req.Action, err)
}

// answerStep runs action on e, unless reading the request failed (err),
// and answers the step's result or the error.
func (s *Server) answerStep(w http.ResponseWriter, e *entry, action json.RawMessage, err error) {
	if err == nil {
		var res Result
		if res, err = s.stepEntry(e.ctx, e, action); err == nil {
			writeJSON(w, http.StatusOK, res)
			return
		}
	}
	s.writeError(w, err)
}

// cloneEpisode is POST /v1/episodes/{id}/clone: the body may name the
// clone's id ({"episode_id": ...}).
func (s *Server) cloneEpisode(w http.ResponseWriter, r *http.Request) {
	s.forkREST(w, r, func(e *entry, id string) (*entry, error) { return s.cloneEntry(r.Context(), e, id, nil) })
}

// forkREST answers a request that makes a new episode from the one its
// path names (a clone, a branch): the body may name the new one's id
// ({"episode_id": ...}); the answer is its state.
func (s *Server) forkREST(w http.ResponseWriter, r *http.Request, fork func(e *entry, id string) (*entry, error)) {
	b, err := s.readBody(w, r)
	var e *entry
	if err == nil {
		e, err = s.lookup(r.PathValue("id"))
	}
	var d struct {
		EpisodeID string `json:"episode_id"`
	}
	if err == nil {
		err = decodeObject(b, &d)
	}
	if err == nil {
		var c *entry
		if c, err = fork(e, d.EpisodeID); err == nil {
			writeJSON(w, http.StatusCreated, s.stateOf(c))
			return
		}
	}
	s.writeError(w, err)
}

// getEpisode is GET /v1/episodes/{id}: the episode's state.
func (s *Server) getEpisode(w http.ResponseWriter, r *http.Request) {
	e, err := s.lookup(r.PathValue("id"))
	if err != nil {
		s.writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, s.stateOf(e))
}

// deleteEpisode is DELETE /v1/episodes/{id}: the episode closes, a step
// in flight on it is cancelled.
func (s *Server) deleteEpisode(w http.ResponseWriter, r *http.Request) {
	e, err := s.lookup(r.PathValue("id"))
	if err != nil {
		s.writeError(w, err)
		return
	}
	s.closeEntry(e, "deleted")
	writeJSON(w, http.StatusOK, map[string]any{"episode_id": e.id, "closed": true})
}

// listEpisodes is GET /v1/episodes: the open episodes' states.
func (s *Server) listEpisodes(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	entries := make([]*entry, 0, len(s.entries))
	for _, e := range s.entries {
		entries = append(entries, e)
	}
	active, max := s.slots, s.opts.MaxSessions
	s.mu.Unlock()
	states := make([]map[string]any, 0, len(entries))
	for _, e := range entries {
		states = append(states, s.stateOf(e))
	}
	writeJSON(w, http.StatusOK, map[string]any{"episodes": states, "active_sessions": active, "max_sessions": max,
		"time": float64(time.Now().UnixNano()) / 1e9})
}
