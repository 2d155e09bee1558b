package eval

import (
	"context"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"cwm/internal/batch"
	"cwm/internal/errkind"
	"cwm/internal/jsonl"
	"cwm/internal/lazyre"
	"cwm/internal/model"
	"cwm/internal/reward"
	"cwm/internal/shard"
	"cwm/internal/trajectory"
)

// Observation is one action of a trajectory whose observation is to be
// predicted: the conversation up to and including the assistant message
// that acted, the tool it called, and the message the environment
// returned.
type Observation struct {
	// ID is "TASK#SAMPLE"; Message the index of the acting assistant
	// message.
	ID      string
	Message int
	Tool    string
	History []model.Message
	Truth   string
}

// Observations lists the predictable actions of a trajectory: each
// assistant message followed by a tool result (a tool message, or a user
// message in the cwm protocol with --tool-role user) whose turn ran a
// tool. Format errors, whose feedback is the harness's and not the
// environment's, are left out.
func Observations(tr *trajectory.Trajectory) []Observation {
	tools := map[int]string{}
	for _, s := range tr.Steps {
		if !s.FormatError && s.Tool != "" {
			if _, ok := tools[s.Turn]; !ok {
				tools[s.Turn] = s.Tool
			}
		}
	}
	var obs []Observation
	turn := 0
	for i, m := range tr.Messages {
		if m.Role != model.RoleAssistant {
			continue
		}
		turn++
		tool, ok := tools[turn]
		if !ok || i+1 >= len(tr.Messages) {
			continue
		}
		next := tr.Messages[i+1]
		if next.Role != model.RoleTool && next.Role != model.RoleUser {
			continue
		}
		obs = append(obs, Observation{ID: tr.TaskID + "#" + strconv.Itoa(tr.Sample), Message: i, Tool: tool,
			History: tr.Messages[:i+1], Truth: next.Content})
	}
	return obs
}

// BuildObservePrompt renders the prompt of o: on completions, CWM's chat
// template of the history with the tool's reply opened
// (`<|start_header_id|>tool: NAME<|end_header_id|>\n\n`, stop
// <|eot_id|>); on chat, the history flattened to text roles (native calls
// written as CWM's tool blocks, tool results as user messages) and the
// instruction of prompts/observe-user.txt.
func BuildObservePrompt(api API, o *Observation) Prompt {
	if api == Chat {
		var msgs []model.Message
		for _, m := range o.History {
			role := m.Role
			if role == model.RoleTool {
				role = model.RoleUser
			}
			msgs = append(msgs, model.Message{Role: role, Content: messageText(m)})
		}
		msgs = append(msgs, model.Message{Role: model.RoleUser, Content: fill(promptFile("observe-user.txt"), "{tool}", o.Tool)})
		return Prompt{Messages: mergeRoles(msgs)}
	}
	var b strings.Builder
	b.WriteString("<|begin_of_text|>")
	for _, m := range o.History {
		role := m.Role
		if role == model.RoleTool {
			role = "tool: " + o.toolOf(m)
		}
		fmt.Fprintf(&b, "<|start_header_id|>%s<|end_header_id|>\n\n%s<|eot_id|>", role, messageText(m))
	}
	fmt.Fprintf(&b, "<|start_header_id|>tool: %s<|end_header_id|>\n\n", o.Tool)
	return Prompt{Text: b.String(), Stop: []string{"<|eot_id|>"}}
}

// toolOf names the tool of an earlier tool message: the call it answers,
// else the observation's own tool.
func (o *Observation) toolOf(m model.Message) string {
	for _, h := range o.History {
		for _, tc := range h.ToolCalls {
			if tc.ID == m.ToolCallID && m.ToolCallID != "" {
				return tc.Function.Name
			}
		}
	}
	return o.Tool
}

// messageText is a message's content with its native calls written as
// CWM's tool blocks.
func messageText(m model.Message) string {
	s := m.Content
	for _, tc := range m.ToolCalls {
		if s != "" {
			s += "\n"
		}
		s += "<tool: " + tc.Function.Name + ">\n" + tc.Function.Arguments + "\n</tool>"
	}
	return s
}

// mergeRoles joins consecutive messages of one role, which some chat
// templates refuse.
func mergeRoles(msgs []model.Message) []model.Message {
	var out []model.Message
	for _, m := range msgs {
		if n := len(out); n > 0 && out[n-1].Role == m.Role {
			out[n-1].Content += "\n\n" + m.Content
			continue
		}
		out = append(out, m)
	}
	return out
}

// normalizers replace what an observation holds that no model can
// predict: durations, clock times and dates, temporary paths, memory
// addresses, process ids, commit hashes.
var normalizers = []struct {
	re  func() *regexp.Regexp
	rep string
}{
	{lazyre.New(`\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}(:\d{2}(\.\d+)?)?([+-]\d{2}:?\d{2}|Z)?`), "<DATE>"},
	{lazyre.New(`\b\d{1,2}:\d{2}:\d{2}(\.\d+)?\b`), "<TIME>"},
	{lazyre.New(`\b\d+(\.\d+)?\s?(ms|us|µs|ns|s|sec|secs|seconds|m|min|minutes)\b`), "<DURATION>"},
	{lazyre.New(`/tmp/[^\s'":)\]]+`), "/tmp/<PATH>"},
	{lazyre.New(`\b0x[0-9a-fA-F]{4,}\b`), "0x<ADDR>"},
	{lazyre.New(`\b(pid|PID|process) \d+`), "$1 <PID>"},
	{lazyre.New(`[ \t]+\n`), "\n"},
}

var hexID = lazyre.New(`\b[0-9a-f]{7,40}\b`)

// Normalize rewrites an observation for the normalised match: the
// patterns of normalizers replaced, trailing spaces of lines and trailing
// newlines dropped.
func Normalize(s string) string {
	for _, n := range normalizers {
		s = n.re().ReplaceAllString(s, n.rep)
	}
	// Commit hashes and other hex ids: 7 to 40 hex digits with a letter
	// and a digit among them (plain numbers and words stay).
	s = hexID().ReplaceAllStringFunc(s, func(m string) string {
		if strings.ContainsAny(m, "abcdef") && strings.ContainsAny(m, "0123456789") {
			return "<HASH>"
		}
		return m
	})
	return strings.TrimRight(s, "\n ")
}

// maxSimilarityRunes bounds the texts difflib's ratio compares (it is
// quadratic at worst).
const maxSimilarityRunes = 8000

// Similarity is difflib's SequenceMatcher ratio of the normalised texts,
// each cut to its first 8000 characters.
func Similarity(pred, truth string) float64 {
	a, b := []rune(Normalize(pred)), []rune(Normalize(truth))
	if len(a) > maxSimilarityRunes {
		a = a[:maxSimilarityRunes]
	}
	if len(b) > maxSimilarityRunes {
		b = b[:maxSimilarityRunes]
	}
	return reward.NewSequenceMatcher(a, b).Ratio()
}

// ObserveLine is one output line of cwm eval observe.
type ObserveLine struct {
	ID         string  `json:"id"`
	Message    int     `json:"message"`
	Tool       string  `json:"tool"`
	Model      string  `json:"model"`
	API        API     `json:"api"`
	Completion string  `json:"completion"`
	Truth      string  `json:"truth"`
	Exact      bool    `json:"exact"`
	Normalized bool    `json:"normalized"`
	Similarity float64 `json:"similarity"`

	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	Retries          int   `json:"retries"`
}

// ScoreObservation compares a predicted observation with the true one:
// exact (equal once a trailing newline is dropped from both), normalised,
// and their similarity.
func ScoreObservation(pred, truth string) (exact, normalized bool, sim float64) {
	exact = strings.TrimSuffix(pred, "\n") == strings.TrimSuffix(truth, "\n")
	normalized = exact || Normalize(pred) == Normalize(truth)
	return exact, normalized, Similarity(pred, truth)
}

// LoadObservations reads a trajectories file (forage's output, or
// reward's) and lists its observations, at most perTraj of each
// trajectory (0: all) spread over it.
func LoadObservations(path string, perTraj int) ([]Observation, error) {
	var obs []Observation
	err := jsonl.DecodeInput(path, func(_ int, tr trajectory.Trajectory) error {
		if tr.TaskID == "" {
			return errkind.New(errkind.Input, "trajectory without task_id")
		}
		o := Observations(&tr)
		if perTraj > 0 && len(o) > perTraj {
			picked := make([]Observation, perTraj)
			for i := range perTraj {
				picked[i] = o[i*len(o)/perTraj]
			}
			o = picked
		}
		obs = append(obs, o...)
		return nil
	})
	return obs, err
}

// ObserveOptions configure an observe run.
type ObserveOptions struct {
	Observations []Observation
	API          API
	Client       *model.Client
	Out          string
	Shard        shard.Shard
	// Input is the file the items were read from, which a shard's marker
	// records for cwm merge (empty: none).
	Input string
	// PerTrajectory is how many observations of a trajectory the items
	// were cut to, which a shard's marker records.
	PerTrajectory int
	Concurrency   int
	Progress      io.Writer
	OnModelError  func(key string, err error)
}

func observeKey(id string, msg int) string { return id + "@" + strconv.Itoa(msg) }

// ObserveLineKey is the resume (and shard) key of a line of cwm eval
// observe: "TASK#SAMPLE@MESSAGE".
func ObserveLineKey(line []byte) (string, error) {
	var l ObserveLine
	if err := jsonl.Unmarshal(line, &l); err != nil {
		return "", err
	}
	return observeKey(l.ID, l.Message), nil
}

// RunObserve asks the model for each observation and scores it.
func RunObserve(ctx context.Context, opts ObserveOptions) (*ObserveSummary, error) {
	key := func(o *Observation) string { return observeKey(o.ID, o.Message) }
	items := make([]*Observation, len(opts.Observations))
	for i := range opts.Observations {
		items[i] = &opts.Observations[i]
	}
	run, err := batch.RunStage(ctx, batch.Job[*Observation, ObserveLine]{Stage: &ObserveStage, Label: "eval observe", Items: items,
		Key: key, Out: opts.Out, Shard: opts.Shard, Order: batch.UnfinishedLast,
		Inputs: inputs(opts.Input), Params: []string{"per-trajectory", strconv.Itoa(opts.PerTrajectory)},
		Workers: opts.Concurrency, Progress: opts.Progress,
		Do: func(ctx context.Context, _ int, o *Observation) (ObserveLine, error) {
			rep, err := ask(ctx, opts.Client, opts.API, BuildObservePrompt(opts.API, o), nil, 0)
			if err != nil {
				return ObserveLine{}, err
			}
			l := ObserveLine{ID: o.ID, Message: o.Message, Tool: o.Tool, Model: opts.Client.Model(), API: opts.API,
				Completion: rep.Message.Content, Truth: o.Truth, PromptTokens: rep.Usage.PromptTokens,
				CompletionTokens: rep.Usage.CompletionTokens, Retries: rep.Retries.Total()}
			l.Exact, l.Normalized, l.Similarity = ScoreObservation(l.Completion, o.Truth)
			return l, nil
		},
		Outcome: func(l ObserveLine) string { return l.Tool },
		Aside: modelErrorsAside(func(o *Observation, err error) {
			if opts.OnModelError != nil {
				opts.OnModelError(key(o), err)
			}
		})})
	if err != nil {
		return nil, err
	}
	sum, err := SummarizeObserve(opts.Out, run.Want(key))
	if err != nil {
		return nil, err
	}
	sum.ModelErrors, sum.Resumed, sum.Seconds = run.SetAside, run.Plan.Resumed(), run.Seconds
	return sum, nil
}

// ObserveStats are the rates of a set of predictions.
type ObserveStats struct {
	N          int     `json:"n"`
	Exact      float64 `json:"exact"`
	Normalized float64 `json:"normalized"`
	Similarity float64 `json:"similarity"`
}

// ObserveSummary is an observe run's result, overall and per tool.
type ObserveSummary struct {
	Model       string                  `json:"model"`
	All         ObserveStats            `json:"all"`
	Tools       map[string]ObserveStats `json:"tools"`
	MeanTokens  float64                 `json:"mean_completion_tokens"`
	Missing     int                     `json:"missing"`
	ModelErrors int                     `json:"model_errors"`
	Resumed     int                     `json:"resumed"`
	Seconds     float64                 `json:"seconds"`
}

// SummarizeObserve computes the summary of the lines of out whose keys are
// in want (all when want is nil).
func SummarizeObserve(out string, want map[string]bool) (*ObserveSummary, error) {
	s := &ObserveSummary{Tools: map[string]ObserveStats{}}
	seen := map[string]bool{}
	var tokens int64
	add := func(st *ObserveStats, l *ObserveLine) {
		st.N++
		if l.Exact {
			st.Exact++
		}
		if l.Normalized {
			st.Normalized++
		}
		st.Similarity += l.Similarity
	}
	err := jsonl.Decode(out, func(_ int, l ObserveLine) error {
		k := observeKey(l.ID, l.Message)
		if want != nil && !want[k] || seen[k] {
			return nil
		}
		seen[k] = true
		s.Model = l.Model
		tokens += l.CompletionTokens
		add(&s.All, &l)
		t := s.Tools[l.Tool]
		add(&t, &l)
		s.Tools[l.Tool] = t
		return nil
	})
	if err != nil {
		return nil, err
	}
	if want != nil {
		s.Missing = len(want) - len(seen)
	}
	norm := func(st *ObserveStats) {
		if st.N > 0 {
			n := float64(st.N)
			st.Exact, st.Normalized, st.Similarity = st.Exact/n, st.Normalized/n, st.Similarity/n
		}
	}
	if s.All.N > 0 {
		s.MeanTokens = float64(tokens) / float64(s.All.N)
	}
	norm(&s.All)
	for k, t := range s.Tools {
		norm(&t)
		s.Tools[k] = t
	}
	return s, nil
}

// Write prints the summary for people.
func (s *ObserveSummary) Write(w io.Writer) {
	line := func(name string, st ObserveStats) {
		fmt.Fprintf(w, "  %-8s %5d  exact %s  normalised %s  similarity %.3f\n", name, st.N, pct(st.Exact), pct(st.Normalized), st.Similarity)
	}
	fmt.Fprintf(w, "observe (%s): %d observations predicted, tokens per prediction %.1f\n", s.Model, s.All.N, s.MeanTokens)
	line("all", s.All)
	tools := make([]string, 0, len(s.Tools))
	for t := range s.Tools {
		tools = append(tools, t)
	}
	sort.Strings(tools)
	for _, t := range tools {
		line(t, s.Tools[t])
	}
	if s.Missing > 0 || s.ModelErrors > 0 || s.Resumed > 0 {
		fmt.Fprintf(w, "resumed %d, missing %d, model errors %d\n", s.Resumed, s.Missing, s.ModelErrors)
	}
}
