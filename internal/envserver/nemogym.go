package envserver

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"slices"
	"sort"

	"cwm/internal/agent"
	"cwm/internal/model"
	"cwm/internal/trajectory"
)

// NeMo Gym's resources-server API (nemo_gym/base_resources_server.py's
// SimpleResourcesServer): POST /seed_session starts a rollout's session,
// the tools are POST /{tool} with the call's arguments as the body,
// POST /verify grades the rollout, POST /aggregate_metrics sums up
// verify responses. NeMo Gym ties the calls of one rollout together with
// a cookie its agents carry from /seed_session's answer to the tools and
// /verify: here the cookie names the swe episode.

// nemoCookie is the cookie that names a NeMo Gym session's episode.
const nemoCookie = "cwm_episode"

// nemoResetKeys are the fields of a NeMo Gym row (the body of
// /seed_session: responses_create_params and the dataset's own fields)
// that make the episode's reset; the rest is NeMo Gym's.
var nemoResetKeys = []string{"task_id", "instance_id", "split", "index", "model", "sample"}

// NeMo Gym's names of a rollout's task and rollout index
// (nemo_gym/global_config.py).
const (
	nemoTaskIndex    = "_ng_task_index"
	nemoRolloutIndex = "_ng_rollout_index"
)

// nemoGym adds NeMo Gym's routes to mux: one per tool of the openai
// protocol, which the episodes it starts speak (NeMo Gym's agents call
// tools as functions).
func (s *Server) nemoGym(mux *http.ServeMux) {
	mux.HandleFunc("POST /seed_session", s.auth(s.seedSession))
	mux.HandleFunc("POST /verify", s.auth(s.verify))
	mux.HandleFunc("POST /aggregate_metrics", s.auth(s.aggregateMetrics))
	mux.HandleFunc("GET /reverify_mode", s.auth(func(w http.ResponseWriter, _ *http.Request) {
		// A verify grades an episode's sandbox, which is gone afterwards.
		writeJSON(w, http.StatusOK, "unsupported")
	}))
	for _, tool := range new(agent.FunctionProtocol).Tools() {
		mux.HandleFunc("POST /"+tool.Name, s.auth(s.nemoTool(tool.Name)))
	}
}

// nemoBody reads a NeMo Gym request's body, a JSON object.
func (s *Server) nemoBody(w http.ResponseWriter, r *http.Request) (map[string]json.RawMessage, error) {
	b, err := s.readBody(w, r)
	if err != nil {
		return nil, err
	}
	body := map[string]json.RawMessage{}
	if len(b) > 0 && json.Unmarshal(b, &body) != nil {
		return nil, invalid("dict_type", "Input should be a valid dictionary", "body")
	}
	return body, nil
}

// seedSession is POST /seed_session: a swe episode of the row's task
// (task_id or instance_id, or split and index of the Task API) in the
// openai protocol; the answer sets the cookie that names it and holds its
// id and its first observation (the prompt and the tools).
func (s *Server) seedSession(w http.ResponseWriter, r *http.Request) {
	body, err := s.nemoBody(w, r)
	if err != nil {
		s.writeError(w, err)
		return
	}
	reset := map[string]json.RawMessage{"kind": json.RawMessage(`"swe"`), "protocol": json.RawMessage(`"openai"`)}
	for _, k := range nemoResetKeys {
		if v, ok := body[k]; ok {
			reset[k] = v
		}
	}
	data, _ := json.Marshal(reset)
	e, res, err := s.create(r, data)
	if err != nil {
		s.writeError(w, err)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: nemoCookie, Value: e.id, Path: "/", HttpOnly: true, SameSite: http.SameSiteLaxMode})
	writeJSON(w, http.StatusOK, map[string]any{"episode_id": e.id, "observation": res.Observation})
}

// nemoEntry is the episode a request's cookie names.
func (s *Server) nemoEntry(r *http.Request) (*entry, error) {
	c, err := r.Cookie(nemoCookie)
	if err != nil || c.Value == "" {
		return nil, &sessionError{http.StatusBadRequest, "no " + nemoCookie + " cookie: POST /seed_session first and send back the cookie it sets"}
	}
	return s.lookup(c.Value)
}

// nemoTool is POST /{tool}: one call of tool with the body as its
// arguments, answered as a REST step is ({"observation", "reward",
// "done"}), which NeMo Gym's agent hands the model as the tool's output.
func (s *Server) nemoTool(tool string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		b, err := s.readBody(w, r)
		var e *entry
		if err == nil {
			e, err = s.nemoEntry(r)
		}
		if len(b) == 0 {
			b = []byte("{}")
		}
		action, _ := json.Marshal(map[string]any{"tool": tool, "arguments": json.RawMessage(b)})
		s.answerStep(w, e, action, err)
	}
}

// verify is POST /verify: the cookie's episode ends (an episode not yet
// submitted has its final diff graded, exit reason "stopped"), and the
// answer is NeMo Gym's BaseVerifyResponse, the request with "reward",
// and BaseMultiRewardVerifyResponse's "reward_components" (resolved,
// and similarity when there is one) beside cwm's grade. The episode
// closes and the cookie is cleared.
func (s *Server) verify(w http.ResponseWriter, r *http.Request) {
	body, err := s.nemoBody(w, r)
	var e *entry
	if err == nil {
		e, err = s.nemoEntry(r)
	}
	var meta map[string]any
	if err == nil {
		// A verify refused (the episode busy with a step) leaves it open.
		if meta, err = s.endEntry(r.Context(), e); err == nil {
			s.closeEntry(e, "verified")
		}
	}
	if err != nil {
		s.writeError(w, err)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: nemoCookie, Value: "", Path: "/", MaxAge: -1})
	rw, ok := meta["reward"].(float64)
	if !ok {
		why, _ := meta["grade_error"].(string)
		s.writeError(w, &sessionError{http.StatusInternalServerError, "the episode could not be graded: " + why})
		return
	}
	out := map[string]any{}
	for k, v := range body {
		out[k] = v
	}
	resolved, _ := meta["resolved"].(bool)
	components := map[string]float64{"resolved": map[bool]float64{true: 1, false: 0}[resolved]}
	if sim, ok := meta["similarity"].(*float64); ok && sim != nil {
		components["similarity"] = *sim
	}
	out["reward"], out["reward_components"], out["resolved"] = rw, components, resolved
	out["episode_id"], out["exit_reason"], out["tests"] = e.id, meta["exit_reason"], meta["tests"]
	writeJSON(w, http.StatusOK, out)
}

// endEntry ends a swe entry's episode, grading it unless it has ended
// already, and returns its final metadata.
func (s *Server) endEntry(ctx context.Context, e *entry) (map[string]any, error) {
	if err := s.begin(); err != nil {
		return nil, err
	}
	defer s.inflight.Done()
	if !e.mu.TryLock() {
		return nil, errBusy(e.id)
	}
	defer e.mu.Unlock()
	t, ok := e.ep.(*toolEpisode)
	if !ok || t.task == nil {
		return nil, invalid("value_error", "only a swe episode is verified; episode "+e.id+" is "+e.kind, "cookie", nemoCookie)
	}
	if !t.done {
		ctx, cancel := mergeCancel(ctx, e.ctx)
		defer cancel()
		if _, err := t.finish(ctx, trajectory.ExitStopped, toolObservation{Messages: []model.Message{}, Metadata: map[string]any{}}); err != nil {
			return nil, err
		}
	}
	return t.final, nil
}

// aggregateMetrics is POST /aggregate_metrics: NeMo Gym's AggregateMetrics
// of verify responses as its RewardProfiler computes them (without the
// histograms): per task (_ng_task_index) and over all, the mean, max,
// min, median and sample standard deviation of every numeric field
// (booleans as 0 and 1) named "STAT/FIELD"; key_metrics are the means.
func (s *Server) aggregateMetrics(w http.ResponseWriter, r *http.Request) {
	b, err := s.readBody(w, r)
	var req struct {
		VerifyResponses []map[string]any `json:"verify_responses"`
	}
	if err == nil {
		err = decodeObject(b, &req)
	}
	if err == nil && req.VerifyResponses == nil {
		err = invalid("missing", "Field required", "body", "verify_responses")
	}
	if err != nil {
		s.writeError(w, err)
		return
	}
	groups := map[float64][]map[string]float64{}
	var all []map[string]float64
	for _, vr := range req.VerifyResponses {
		row := map[string]float64{}
		for k, v := range vr {
			switch x := v.(type) {
			case float64:
				row[k] = x
			case bool:
				row[k] = map[bool]float64{true: 1, false: 0}[x]
			}
		}
		task := row[nemoTaskIndex]
		delete(row, nemoTaskIndex)
		delete(row, nemoRolloutIndex)
		groups[task] = append(groups[task], row)
		all = append(all, row)
	}
	tasks := make([]float64, 0, len(groups))
	for k := range groups {
		tasks = append(tasks, k)
	}
	slices.Sort(tasks)
	groupMetrics := []map[string]any{}
	for _, k := range tasks {
		m := describe(groups[k])
		m[nemoTaskIndex] = k
		m["num_rollouts"] = len(groups[k])
		groupMetrics = append(groupMetrics, m)
	}
	agentMetrics := map[string]any{}
	keyMetrics := map[string]any{}
	if len(all) > 0 {
		agentMetrics = describe(all)
		for k, v := range agentMetrics {
			if len(k) > 5 && k[:5] == "mean/" {
				keyMetrics[k] = v
			}
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"group_level_metrics": groupMetrics, "agent_metrics": agentMetrics, "key_metrics": keyMetrics})
}

// describe is pandas' describe of rows' columns as NeMo Gym's
// RewardProfiler keeps it: mean, max, min, median, std (ddof 1; 0 for
// a single value) of each column, over the rows that have it.
func describe(rows []map[string]float64) map[string]any {
	cols := map[string][]float64{}
	for _, r := range rows {
		for k, v := range r {
			cols[k] = append(cols[k], v)
		}
	}
	out := map[string]any{}
	for k, xs := range cols {
		sort.Float64s(xs)
		n := float64(len(xs))
		sum := 0.0
		for _, x := range xs {
			sum += x
		}
		mean := sum / n
		ss := 0.0
		for _, x := range xs {
			ss += (x - mean) * (x - mean)
		}
		std := 0.0
		if len(xs) > 1 {
			std = math.Sqrt(ss / (n - 1))
		}
		median := xs[len(xs)/2]
		if len(xs)%2 == 0 {
			median = (xs[len(xs)/2-1] + xs[len(xs)/2]) / 2
		}
		out["mean/"+k], out["max/"+k], out["min/"+k], out["median/"+k], out["std/"+k] = mean, xs[len(xs)-1], xs[0], median, std
	}
	return out
}
