package eval

import (
	"embed"
	"encoding/json"
	"fmt"
	"strings"

	"cwm/internal/errkind"
	"cwm/internal/model"
	"cwm/internal/trace"
	"cwm/internal/tracer"
)

//go:embed prompts/*.txt
var promptFiles embed.FS

func promptFile(name string) string {
	b, err := promptFiles.ReadFile("prompts/" + name)
	if err != nil {
		panic(err) // embedded; the tests read every one
	}
	return string(b)
}

// Mode is a way of answering: how a problem becomes a prompt, where the
// model stops, and how its answer is read from the completion.
type Mode string

const (
	// Direct is CruxEval's output-prediction prompt: two few-shot
	// [PYTHON]...[/PYTHON][ANSWER]...[/ANSWER] examples, stop at [/ANSWER].
	Direct Mode = "direct"
	// DirectCoT is CruxEval's chain-of-thought variant ([THOUGHT] first).
	DirectCoT Mode = "direct-cot"
	// TraceFinal is CWM's trace prompt with the entry point's first
	// frames and its return frame opened: the model writes main's
	// returned value only.
	TraceFinal Mode = "trace-final"
	// TraceFull is CWM's trace prompt: the model writes the whole trace,
	// and the answer is the value main returns in it.
	TraceFull Mode = "trace-full"
	// Reasoning lets the model reason (CWM's reasoning system prompt and
	// its <think> opening), then answer in [ANSWER] tags.
	Reasoning Mode = "reasoning"
)

// Modes lists the modes in the order they are documented.
var Modes = []Mode{Direct, DirectCoT, TraceFinal, TraceFull, Reasoning}

// ParseMode checks a mode's name.
func ParseMode(s string) (Mode, error) {
	for _, m := range Modes {
		if string(m) == s {
			return m, nil
		}
	}
	return "", errkind.Errorf(errkind.Usage, "unknown mode %q: want one of %s", s, joinModes())
}

func joinModes() string {
	s := make([]string, len(Modes))
	for i, m := range Modes {
		s[i] = string(m)
	}
	return strings.Join(s, ", ")
}

// API is the endpoint a run talks to.
type API string

const (
	// Completions is /v1/completions: the prompt is sent as raw text
	// (CWM's special tokens included; reasoning renders CWM's chat
	// template).
	Completions API = "completions"
	// Chat is /v1/chat/completions: the prompt is a user message
	// (reasoning: with the system prompt); the server applies its
	// template. The trace modes need raw text and do not run on it.
	Chat API = "chat"
)

// Prompt is what is sent for one problem.
type Prompt struct {
	// Text is the raw prompt (Completions).
	Text string `json:"text,omitempty"`
	// Messages is the conversation (Chat).
	Messages []model.Message `json:"messages,omitempty"`
	// Stop are the stop sequences.
	Stop []string `json:"stop,omitempty"`
}

// fill replaces the {name} placeholders of a template; nothing else in it
// is special (trace prompts hold "{}" literally).
func fill(tmpl string, kv ...string) string { return strings.NewReplacer(kv...).Replace(tmpl) }

// TraceContext is the context of p's trace, as cwm's tracer writes it.
func (p *Problem) TraceContext() string { return tracer.Context(p.Code, p.Call()) }

// Think is how a reasoning model's thinking opens (injected at the end of
// a completions prompt) and closes (the answer is read after it).
type Think struct {
	Open  string `json:"open"`
	Close string `json:"close"`
}

// DefaultThink is CWM's, from its prompting guide: "<think>\n" ...
// "</think>".
var DefaultThink = Think{Open: "<think>\n", Close: "</think>"}

func (t Think) orDefault() Think {
	if t.Open == "" && t.Close == "" {
		return DefaultThink
	}
	return t
}

// cwmChat renders CWM's chat template for a system and a user message,
// the assistant's turn opened with think.Open.
func cwmChat(system, user string, think Think) Prompt {
	return Prompt{Text: fill(promptFile("cwm-chat.txt"), "{system}", system, "{user}", user, "{think}", think.orDefault().Open),
		Stop: []string{"<|eot_id|>"}}
}

// afterThinking is what follows the last closing of the thinking, or all
// of text when it has none.
func afterThinking(text string, think Think) string {
	c := think.orDefault().Close
	if i := strings.LastIndex(text, c); c != "" && i >= 0 {
		return text[i+len(c):]
	}
	return text
}

// BuildPrompt renders p's prompt for mode on api, with CWM's thinking
// tokens.
func BuildPrompt(mode Mode, api API, p *Problem) (Prompt, error) {
	return BuildPromptThink(mode, api, p, DefaultThink)
}

// BuildPromptThink is BuildPrompt with the thinking tokens of a reasoning
// prompt given.
func BuildPromptThink(mode Mode, api API, p *Problem, think Think) (Prompt, error) {
	user := ""
	switch mode {
	case Direct:
		user = fill(promptFile("direct.txt"), "{code}", p.Code, "{input}", p.Input)
		return chatOrText(api, "", user, []string{"[/ANSWER]"}), nil
	case DirectCoT:
		user = fill(promptFile("direct-cot.txt"), "{code}", p.Code, "{input}", p.Input)
		return chatOrText(api, "", user, []string{"[/ANSWER]"}), nil
	case Reasoning:
		sys := promptFile("reasoning-system.txt")
		user = fill(promptFile("reasoning-user.txt"), "{code}", p.Code, "{input}", p.Input)
		if api == Chat {
			return chatOrText(api, sys, user, nil), nil
		}
		return cwmChat(sys, user, think), nil
	case TraceFinal, TraceFull:
		if api == Chat {
			return Prompt{}, errkind.Errorf(errkind.Usage, "mode %s writes CWM's special tokens and needs --api completions", mode)
		}
		ctx := p.TraceContext()
		if tok := trace.SpecialToken(ctx); tok != "" {
			return Prompt{}, errkind.Errorf(errkind.Input, "problem %s: its code holds CWM's special token %s", p.ID, tok)
		}
		if mode == TraceFull {
			return Prompt{Text: fill(promptFile("trace-full.txt"), "{context}", ctx), Stop: []string{trace.TokEndOfText}}, nil
		}
		return Prompt{Text: fill(promptFile("trace-final.txt"), "{context}", ctx, "{call}", p.Call()), Stop: []string{trace.TokFrameSep}}, nil
	}
	return Prompt{}, errkind.Errorf(errkind.Usage, "unknown mode %q", mode)
}

func chatOrText(api API, system, user string, stop []string) Prompt {
	if api == Completions {
		return Prompt{Text: user, Stop: stop}
	}
	var msgs []model.Message
	if system != "" {
		msgs = append(msgs, model.Message{Role: model.RoleSystem, Content: system})
	}
	return Prompt{Messages: append(msgs, model.Message{Role: model.RoleUser, Content: user}), Stop: stop}
}

// Extracted is the answer read from a completion.
type Extracted struct {
	// Answer is the expression to compare with the output.
	Answer string
	// FormatError, when set, says why no answer could be read (the trace
	// modes: a completion that is not CWM's format).
	FormatError string
	// Frames is the number of frames a trace-full completion holds.
	Frames int `json:",omitempty"`
}

// ExtractAnswer reads the answer from a completion of mode as CruxEval's
// pipeline does for direct and direct-cot (and reasoning, after its
// thinking): the text up to the first [/ANSWER] (the stop the server
// applies; again here, for a server that ignored it); with chain of
// thought, if it holds [ANSWER], the text between the first [ANSWER] and
// the next one (Python's split("[ANSWER]")[1]), stripped; then, if it
// holds "==", what lies between the first and the second "==", stripped;
// stripped again. Stripping is Python's str.strip (pyStrip). The trace
// modes read main's returned value: a JSON string, the value's repr.
func ExtractAnswer(mode Mode, completion string) Extracted {
	return ExtractAnswerThink(mode, completion, DefaultThink)
}

// ExtractAnswerThink is ExtractAnswer with the thinking tokens given.
func ExtractAnswerThink(mode Mode, completion string, think Think) Extracted {
	switch mode {
	case Direct, DirectCoT, Reasoning:
		g := completion
		if mode == Reasoning {
			g = afterThinking(g, think)
		}
		g, _, _ = strings.Cut(g, "[/ANSWER]")
		if mode != Direct && strings.Contains(g, "[ANSWER]") {
			g = pyStrip(strings.Split(g, "[ANSWER]")[1])
		}
		if strings.Contains(g, "==") {
			g = pyStrip(strings.Split(g, "==")[1])
		}
		return Extracted{Answer: pyStrip(g)}
	case TraceFinal:
		// The completion continues `<|arg_sep|>`: a JSON string, then
		// (unless the server stripped the stop) <|frame_sep|>.
		text, _, _ := strings.Cut(completion, trace.TokFrameSep)
		text = strings.TrimRight(text, " \n")
		var v string
		if err := json.Unmarshal([]byte(text), &v); err != nil {
			return Extracted{FormatError: fmt.Sprintf("the return value is not a JSON string: %.80q", text)}
		}
		return Extracted{Answer: v}
	case TraceFull:
		t, st := trace.ParseLenient(completion)
		ex := Extracted{Frames: len(t.Frames)}
		if !st.ValidFormat() {
			ex.FormatError = fmt.Sprintf("%d format errors, the first: %v", st.FormatErrors, st.Errors[0].Error())
			return ex
		}
		v, raised, ok := trace.EntryOutput(t.Frames)
		switch {
		case !ok:
			ex.FormatError = "the trace never returns from main"
		case raised:
			ex.FormatError = "the trace raises out of main: " + v
		default:
			ex.Answer = v
		}
		return ex
	}
	return Extracted{FormatError: "unknown mode " + string(mode)}
}
