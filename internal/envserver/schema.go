package envserver

import (
	"net/http"
	"strings"
)

// The JSON Schemas of /schema, written as pydantic writes its models'
// (model_json_schema): title, type, properties, required.

func prop(typ, desc string) map[string]any {
	return map[string]any{"type": typ, "description": desc}
}

func nullable(typ, desc string) map[string]any {
	return map[string]any{"anyOf": []any{map[string]any{"type": typ}, map[string]any{"type": "null"}}, "default": nil, "description": desc}
}

func objectSchema(title, desc string, required []string, props map[string]any, extra bool) map[string]any {
	m := map[string]any{"title": title, "description": desc, "type": "object", "properties": props, "additionalProperties": extra}
	if len(required) > 0 {
		m["required"] = required
	}
	return m
}

var metadataProp = map[string]any{"type": "object", "additionalProperties": true, "description": "Additional metadata"}

// stateSchema is OpenEnv's State with what every cwm kind adds.
func stateSchema(title string, props map[string]any) map[string]any {
	all := map[string]any{
		"episode_id":       nullable("string", "Unique identifier for the current episode"),
		"step_count":       map[string]any{"type": "integer", "minimum": 0, "default": 0, "description": "Number of steps taken in the current episode"},
		"kind":             prop("string", "swe, trace or shell"),
		"done":             prop("boolean", "Whether the episode has ended"),
		"created_at":       prop("number", "Unix time the episode started"),
		"last_activity_at": prop("number", "Unix time of its last message"),
	}
	for k, v := range props {
		all[k] = v
	}
	return objectSchema(title, "Episode state (OpenEnv's State and cwm's fields).", nil, all, true)
}

var messageSchema = map[string]any{"type": "object", "description": "A chat message in OpenAI's format (role, content, tool_calls, tool_call_id)"}

func toolSchemas(kind string) map[string]any {
	action := objectSchema("ToolAction", "One model reply: exactly one of text (the cwm protocol's raw reply), message (an assistant message) or tool with arguments.", nil, map[string]any{
		"text":         prop("string", "The model's reply as text; the cwm protocol parses its <tool: NAME> block"),
		"message":      messageSchema,
		"tool":         prop("string", "One tool call: bash, edit, create, submit (and view in the openai protocol)"),
		"arguments":    map[string]any{"description": "The call's arguments: a JSON object (openai) or the tool's input text (cwm)"},
		"tool_call_id": prop("string", "The call's id (openai); one is made up when absent"),
		"usage": objectSchema("Usage", "The model call's token usage, for the context budget (default: the conversation's bytes / 4)", nil, map[string]any{
			"prompt_tokens": prop("integer", ""), "completion_tokens": prop("integer", "")}, false),
		"metadata": metadataProp,
	}, false)
	obs := objectSchema("ToolObservation", "The next messages of the conversation and what the tool did.", []string{"messages"}, map[string]any{
		"messages":        map[string]any{"type": "array", "items": messageSchema, "description": "The prompt at reset; the tool results or the format error after a step, as cwm forage sends them"},
		"tools":           map[string]any{"type": "array", "items": map[string]any{"type": "object"}, "description": "OpenAI function schemas of the openai protocol (reset only)"},
		"output":          prop("string", "What the (first) tool printed"),
		"tool":            prop("string", "The tool run"),
		"ok":              prop("boolean", "The tool did what was asked"),
		"exit_code":       nullable("integer", "A bash command's status; -1 when its session restarted (timeout, too much output)"),
		"format_error":    prop("boolean", "The reply held no runnable tool call"),
		"turn":            prop("integer", "Steps taken"),
		"remaining_turns": prop("integer", "Steps left"),
		"exit_reason":     prop("string", "Why the episode ended: submitted, max_turns, context, timeout, format_errors"),
		"context_switch":  prop("boolean", "CWM's Transition.context_switch (always false)"),
		"done":            map[string]any{"type": "boolean", "default": false},
		"reward":          map[string]any{"anyOf": []any{map[string]any{"type": "number"}, map[string]any{"type": "null"}}, "default": nil},
		"metadata":        metadataProp,
	}, false)
	state := stateSchema("ToolState", map[string]any{
		"task_id": prop("string", "The task (swe) or shell/ENV"), "env_id": prop("string", ""), "protocol": prop("string", "cwm or openai"),
		"turn": prop("integer", ""), "remaining_turns": prop("integer", ""), "submitted": prop("boolean", ""),
		"exit_reason": prop("string", ""), "reward": nullable("number", "The episode's reward once graded"),
	})
	reset := objectSchema(titleOf(kind)+"Reset", "The data of a reset message (and the body of POST /v1/episodes).", nil, resetProps(kind), false)
	return map[string]any{"action": action, "observation": obs, "state": state, "reset": reset}
}

func traceSchemas() map[string]any {
	action := objectSchema("TraceAction", "A predicted frame.", []string{"frame"}, map[string]any{
		"frame":    prop("string", "The next frame in CWM's text: <|line_sep|>{locals}<|action_sep|>SOURCE\\n<|frame_sep|> and the like"),
		"metadata": metadataProp,
	}, false)
	obs := objectSchema("TraceObservation", "The prompt at reset; the true frame and how the prediction fared after a step.", nil, map[string]any{
		"text":         prop("string", "Reset: the trace's opening, <|begin_of_text|><|trace_context_start|>CONTEXT<|frame_sep|>"),
		"frame":        prop("string", "The true frame just predicted (the last ends with <|end_of_text|>)"),
		"step":         prop("integer", "Frames predicted"),
		"valid_format": prop("boolean", "The prediction was one well-formed frame"),
		"state_match":  prop("boolean", "Event, locals (as a mapping, after resolving \"..\") and value were right"),
		"action_match": prop("boolean", "The source line was right"),
		"diff":         prop("string", "The first difference"),
		"exit_reason":  prop("string", "end_of_trace on the last frame"),
		"done":         map[string]any{"type": "boolean", "default": false},
		"reward":       map[string]any{"anyOf": []any{map[string]any{"type": "number"}, map[string]any{"type": "null"}}, "default": nil},
		"metadata":     metadataProp,
	}, false)
	state := stateSchema("TraceState", map[string]any{"trace_id": prop("string", ""), "frames_predicted": prop("integer", ""),
		"reward": prop("string", "partial or exact")})
	reset := objectSchema("TraceReset", "The data of a reset message (and the body of POST /v1/episodes).", nil, resetProps(KindTrace), false)
	return map[string]any{"action": action, "observation": obs, "state": state, "reset": reset}
}

func titleOf(kind string) string {
	switch kind {
	case KindSWE:
		return "SWE"
	case KindShell:
		return "Shell"
	}
	return "Trace"
}

func resetProps(kind string) map[string]any {
	all := map[string]any{
		"kind":        prop("string", "swe, trace or shell (default: the server's --kind)"),
		"episode_id":  map[string]any{"type": "string", "maxLength": 255, "description": "The episode's id (default: a random one)"},
		"seed":        map[string]any{"type": "integer", "minimum": 0, "description": "Recorded; episodes are deterministic given their actions"},
		"task_id":     prop("string", "A task of the server's --tasks"),
		"split":       prop("string", "A split of the Task API (GET /{env}/splits); with index, names the task"),
		"index":       map[string]any{"type": "integer", "minimum": 0, "description": "The task's index in split"},
		"instance_id": prop("string", "The same as task_id"),
		"task":        map[string]any{"type": "object", "description": "A task record (cwm's task schema), instead of task_id"},
		"protocol":    prop("string", "cwm or openai (default: the server's --protocol)"),
		"model":       prop("string", "The model, for the trajectory record"),
		"sample":      prop("integer", "The sample number of the trajectory record (default: the next unused)"),
		"backend":     prop("string", "real or sim: a world model answers the commands that execute code (default: the server's --backend; docs/sim.md)"),
		"env":         prop("string", "The environment (id or name) of a shell episode"),
		"instruction": prop("string", "A first user message for a shell episode"),
		"trace_id":    prop("string", "A trace of the server's --traces"),
		"trace":       map[string]any{"type": "object", "description": "A trace: {context, frames} or {text}"},
		"code":        prop("string", "Code defining the function to trace now"),
		"call":        prop("string", "The call to trace, e.g. f(1, 3)"),
		"reward":      prop("string", "partial (default) or exact"),
	}
	out := map[string]any{}
	for _, k := range append([]string{"kind", "episode_id", "seed"}, kindFields[kind]...) {
		out[k] = all[k]
	}
	return out
}

// schemas are the schemas of a kind.
func schemas(kind string) map[string]any {
	if kind == KindTrace {
		return traceSchemas()
	}
	return toolSchemas(kind)
}

// schema is GET /schema: OpenEnv's {action, observation, state} (plus
// cwm's reset) of the default kind, or of ?kind=.
func (s *Server) schema(w http.ResponseWriter, r *http.Request) {
	kind := r.URL.Query().Get("kind")
	if kind == "" {
		kind = s.opts.Kind
	}
	if _, ok := kindFields[kind]; !ok {
		s.writeError(w, invalid("enum", "kind "+kind+": want swe, trace or shell", "query", "kind"))
		return
	}
	writeJSON(w, http.StatusOK, schemas(kind))
}

// sessionTimeout is the idle timeout in seconds, as OpenEnv's
// ConcurrencyConfig gives it (null: none).
func (s *Server) sessionTimeout() any {
	if s.opts.IdleTimeout < 0 {
		return nil
	}
	return s.opts.IdleTimeout.Seconds()
}

// health is GET /health: OpenEnv's {"status": "healthy"}; "degraded"
// while every slot is taken; 503 "unhealthy" while the server drains. It
// needs no token, for probes.
func (s *Server) health(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	draining, full := s.draining, s.slots >= s.opts.MaxSessions
	s.mu.Unlock()
	switch {
	case draining:
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "unhealthy"})
	case full:
		writeJSON(w, http.StatusOK, map[string]string{"status": "degraded"})
	default:
		writeJSON(w, http.StatusOK, map[string]string{"status": "healthy"})
	}
}

// metadata is GET /metadata: OpenEnv's EnvironmentMetadata.
func (s *Server) metadata(w http.ResponseWriter, _ *http.Request) {
	version := s.opts.Version
	// OpenEnv's EnvironmentMetadata, and what its ConcurrencyConfig says
	// of a server: how many sessions it holds at once. (OpenEnv 0.10's
	// clients read none of it; a trainer that starts one server per
	// episode unless told otherwise can.)
	writeJSON(w, http.StatusOK, map[string]any{
		"max_concurrent_envs":          s.opts.MaxSessions,
		"supports_concurrent_sessions": true,
		"session_timeout":              s.sessionTimeout(),
		"env_name":                     s.opts.EnvName,
		"name":                         "cwm",
		"description": "cwm's executable environments: swe (a task's repository, the SWE tools, a submitted patch graded by its hidden tests), " +
			"trace (predict the next frame of a CWM execution trace, teacher forced), shell (a sandbox on an environment with the SWE tools). " +
			"Default kind: " + s.opts.Kind + ". Extensions: a clone message; checkpoints to roll back to and branch from (the " +
			strings.Join(checkpointMessages, ", ") + " messages); REST at /v1/episodes, checkpoints under /v1/episodes/ID/checkpoints; " +
			"/metrics; NeMo Gym's resources-server API.",
		"readme_content":    nil,
		"version":           version,
		"author":            "cwm",
		"documentation_url": "docs/serve.md",
	})
}
