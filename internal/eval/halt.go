package eval

import (
	"context"
	"embed"
	"fmt"
	"io"
	"path"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"cwm/internal/batch"
	"cwm/internal/errkind"
	"cwm/internal/jsonl"
	"cwm/internal/model"
	"cwm/internal/shard"
	"cwm/internal/tracer"
)

//go:embed data/halt/*.py
var haltFiles embed.FS

// Halting labels.
const (
	Terminates = "terminates"
	Diverges   = "diverges"
)

// HaltTimeout is CWM's rule: a program still running after 5 s does not
// terminate.
const HaltTimeout = 5 * time.Second

// HaltProgram is one program of the halting set.
type HaltProgram struct {
	ID string `json:"id"`
	// Code is the program as shown to the model (without the label).
	Code string `json:"code"`
	// Label is Terminates or Diverges; Why argues it.
	Label string `json:"label"`
	Why   string `json:"why"`
}

// HaltPrograms returns cwm's starter set (data/halt, CC0): 32 terminating
// and 32 diverging programs, by id.
func HaltPrograms() []HaltProgram {
	ents, err := haltFiles.ReadDir("data/halt")
	if err != nil {
		panic(err)
	}
	var ps []HaltProgram
	for _, e := range ents {
		b, err := haltFiles.ReadFile(path.Join("data/halt", e.Name()))
		if err != nil {
			panic(err)
		}
		p, err := parseHaltProgram(strings.TrimSuffix(e.Name(), ".py"), string(b))
		if err != nil {
			panic(err) // embedded; TestHaltLabels reads every one
		}
		ps = append(ps, p)
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i].ID < ps[j].ID })
	return ps
}

// parseHaltProgram reads a program file: "# halt: LABEL", "# why: ...",
// then the code.
func parseHaltProgram(id, text string) (HaltProgram, error) {
	p := HaltProgram{ID: id}
	lines := strings.SplitAfter(text, "\n")
	if len(lines) < 3 {
		return p, fmt.Errorf("%s: want a halt and a why line, then code", id)
	}
	label, ok1 := strings.CutPrefix(strings.TrimSpace(lines[0]), "# halt: ")
	why, ok2 := strings.CutPrefix(strings.TrimSpace(lines[1]), "# why: ")
	if !ok1 || !ok2 || (label != Terminates && label != Diverges) {
		return p, fmt.Errorf("%s: the first lines must be \"# halt: terminates|diverges\" and \"# why: ...\"", id)
	}
	p.Label, p.Why, p.Code = label, why, strings.Join(lines[2:], "")
	return p, nil
}

// LoadHaltPrograms reads programs from a JSONL file of {"id", "code",
// "label"} (label terminates or diverges).
func LoadHaltPrograms(file string) ([]HaltProgram, error) {
	var ps []HaltProgram
	seen := map[string]bool{}
	err := jsonl.ScanInput(file, func(_ int, line []byte) error {
		var p HaltProgram
		if err := jsonl.Unmarshal(line, &p); err != nil {
			return errkind.Wrap(errkind.Input, err)
		}
		switch {
		case p.ID == "" || p.Code == "":
			return errkind.New(errkind.Input, "want an id and a code")
		case p.Label != Terminates && p.Label != Diverges:
			return errkind.New(errkind.Input, fmt.Sprintf("%s: label %q: want terminates or diverges", p.ID, p.Label))
		case seen[p.ID]:
			return errkind.New(errkind.Input, fmt.Sprintf("duplicate id %q", p.ID))
		case tracer.Unrepresentable(p.Code) != "":
			return errkind.New(errkind.Input, fmt.Sprintf("%s cannot be run in cwm's sandbox: %s", p.ID, tracer.Unrepresentable(p.Code)))
		}
		seen[p.ID] = true
		ps = append(ps, p)
		return nil
	})
	if err == nil && len(ps) == 0 {
		err = errkind.New(errkind.Input, file+": no programs")
	}
	return ps, err
}

// BuildHaltPrompt renders the halting prompt (prompts/halt-user.txt) for
// mode Direct (answer at once) or Reasoning (CWM's reasoning system
// prompt first).
func BuildHaltPrompt(mode Mode, api API, p *HaltProgram, think Think) (Prompt, error) {
	user := fill(promptFile("halt-user.txt"), "{code}", strings.TrimRight(p.Code, "\n"))
	switch mode {
	case Direct:
		return chatOrText(api, "", user+promptFile("halt-direct.txt"), []string{"[/ANSWER]"}), nil
	case Reasoning:
		sys := promptFile("reasoning-system.txt")
		if api == Chat {
			return chatOrText(api, sys, user, nil), nil
		}
		return cwmChat(sys, user, think), nil
	}
	return Prompt{}, fmt.Errorf("mode %s: cwm eval halt takes direct or reasoning", mode)
}

// ExtractHalt reads the verdict in [ANSWER] tags (after the thinking):
// "terminates" or "diverges" (also yes/no, halts/loops); "" when there is
// none.
func ExtractHalt(completion string, think Think) string {
	g := afterThinking(completion, think)
	if _, after, ok := strings.Cut(g, "[ANSWER]"); ok {
		g = after
	}
	g, _, _ = strings.Cut(g, "[/ANSWER]")
	switch strings.ToLower(strings.Trim(strings.TrimSpace(g), ".")) {
	case "terminates", "halts", "yes":
		return Terminates
	case "diverges", "does not terminate", "loops", "no":
		return Diverges
	}
	return ""
}

// HaltOptions configure a halting run.
type HaltOptions struct {
	Programs []HaltProgram
	Mode     Mode
	API      API
	Samples  int
	Seed     *int64
	// Think are the reasoning mode's thinking tokens (DefaultThink when
	// zero).
	Think  Think
	Client *model.Client
	// Runner runs a program with HaltTimeout (a Scorer made with it).
	Runner *Scorer
	Out    string
	Shard  shard.Shard
	// Input is the file the items were read from, which a shard's marker
	// records for cwm merge (empty: none).
	Input       string
	Concurrency int
	Progress    io.Writer
	// OnModelError is told of each sample the model server failed.
	OnModelError func(id string, sample int, err error)
}

// HaltLine is one output line of cwm eval halt.
type HaltLine struct {
	ID         string `json:"id"`
	Sample     int    `json:"sample"`
	Mode       Mode   `json:"mode"`
	API        API    `json:"api"`
	Model      string `json:"model"`
	Label      string `json:"label"`
	Completion string `json:"completion"`
	Reasoning  string `json:"reasoning,omitempty"`
	// Answer is terminates, diverges, or "" (none could be read).
	Answer string `json:"answer"`
	// Ran, for a "diverges" answer, is how the program ran: "timeout"
	// (still running at 5 s) or "ended".
	Ran              string `json:"ran,omitempty"`
	Correct          bool   `json:"correct"`
	PromptTokens     int64  `json:"prompt_tokens"`
	CompletionTokens int64  `json:"completion_tokens"`
	Retries          int    `json:"retries"`
}

// RunHalt asks the model about each program and scores it by CWM's rule:
// "terminates" is right for a terminating program; "diverges" is right
// only for a diverging one that, run in a sandbox, is still running at
// the timeout (each program runs at most once per run).
func RunHalt(ctx context.Context, opts HaltOptions) (*HaltSummary, error) {
	if opts.Samples < 1 {
		opts.Samples = 1
	}
	if _, err := BuildHaltPrompt(opts.Mode, opts.API, &HaltProgram{Code: "pass"}, opts.Think); err != nil {
		return nil, errkind.Wrap(errkind.Usage, err)
	}
	type hitem struct {
		p      *HaltProgram
		sample int
	}
	var items []hitem
	for i := range opts.Programs {
		for s := range opts.Samples {
			items = append(items, hitem{&opts.Programs[i], s})
		}
	}
	runs := map[string]*runOnce{}
	for i := range opts.Programs {
		runs[opts.Programs[i].ID] = &runOnce{}
	}
	itemKey := func(it hitem) string { return key(it.p.ID, it.sample) }
	run, err := batch.RunStage(ctx, batch.Job[hitem, HaltLine]{Stage: &HaltStage, Label: "eval halt", Items: items,
		Key: itemKey, Out: opts.Out, Shard: opts.Shard, Order: batch.UnfinishedLast,
		Inputs: inputs(opts.Input), Params: []string{"mode", string(opts.Mode), "samples", strconv.Itoa(opts.Samples)},
		Workers: opts.Concurrency, Progress: opts.Progress,
		Do: func(ctx context.Context, _ int, it hitem) (HaltLine, error) {
			pr, err := BuildHaltPrompt(opts.Mode, opts.API, it.p, opts.Think)
			if err != nil {
				return HaltLine{}, err
			}
			rep, err := ask(ctx, opts.Client, opts.API, pr, opts.Seed, it.sample)
			if err != nil {
				return HaltLine{}, err
			}
			l := HaltLine{ID: it.p.ID, Sample: it.sample, Mode: opts.Mode, API: opts.API, Model: opts.Client.Model(),
				Label: it.p.Label, Completion: rep.Message.Content, Reasoning: rep.Reasoning,
				PromptTokens: rep.Usage.PromptTokens, CompletionTokens: rep.Usage.CompletionTokens, Retries: rep.Retries.Total()}
			l.Answer = ExtractHalt(l.Completion, opts.Think)
			switch l.Answer {
			case Terminates:
				l.Correct = it.p.Label == Terminates
			case Diverges:
				if it.p.Label == Diverges {
					l.Ran = runs[it.p.ID].do(func() string {
						if v, _ := opts.Runner.Run(ctx, it.p.ID, it.p.Code); v == Timeout {
							return "timeout"
						}
						return "ended"
					})
					if ctx.Err() != nil {
						return HaltLine{}, ctx.Err()
					}
					l.Correct = l.Ran == "timeout"
				}
			}
			return l, nil
		},
		Outcome: func(l HaltLine) string { return map[bool]string{true: "right", false: "wrong"}[l.Correct] },
		Aside: modelErrorsAside(func(it hitem, err error) {
			if opts.OnModelError != nil {
				opts.OnModelError(it.p.ID, it.sample, err)
			}
		})})
	if err != nil {
		return nil, err
	}
	sum, err := SummarizeHalt(opts.Out, run.Want(itemKey))
	if err != nil {
		return nil, err
	}
	sum.ModelErrors, sum.Resumed, sum.Seconds = run.SetAside, run.Plan.Resumed(), run.Seconds
	sum.Model, sum.Mode = opts.Client.Model(), opts.Mode
	return sum, nil
}

// runOnce runs a program once per run and remembers how it ran.
type runOnce struct {
	once sync.Once
	ran  string
}

func (r *runOnce) do(f func() string) string {
	r.once.Do(func() { r.ran = f() })
	return r.ran
}
