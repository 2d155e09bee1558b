package tracer

import (
	"context"
	_ "embed"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"cwm/internal/lazyre"
	"cwm/internal/model"
)

// The prompt that asks a model for a function's input generator, and the
// harness the generator runs in (trace func --input-model).
var (
	//go:embed inputgen.txt
	inputGenPrompt string
	//go:embed inputgen.py
	inputGenHarness string
)

// Generator is how a function's model-written input generator ended: the
// function's own line carries it (the zero value when no model was asked).
type Generator struct {
	// Status is ok (it gave usable inputs), or why not: no_code (the reply
	// has no fenced code), syntax_error, no_generator (no
	// generate_inputs()), crashed (it raised), timeout (it ran past
	// --timeout: a loop, a flood of output), memory, not_tuples (it did not
	// return a list of tuples), empty, or the commonest reason its tuples
	// were rejected: not_tuple, unpicklable, not_literal (the repr does not
	// read back as the same literal), too_large; no_entry when the call's
	// function has no name to ask about; error when the harness could not
	// run it; duplicates when every input it gave is the function's own.
	Status string `json:"status"`
	Detail string `json:"detail"`
	// Inputs is how many distinct new inputs it gave; Kept how many were
	// traced (at most the model's share of --fuzz).
	Inputs int `json:"inputs"`
	Kept   int `json:"kept"`
	// Rejected counts the tuples the harness rejected, by reason.
	Rejected Rejected `json:"rejected"`
}

// Rejected counts a generator's rejected tuples by reason, as fixed
// fields so that every line has the same schema: not a tuple, not
// picklable, a repr that does not read back as the same literal, past
// --max-repr or the 40,000 characters of all its inputs.
type Rejected struct {
	NotTuple    int `json:"not_tuple"`
	Unpicklable int `json:"unpicklable"`
	NotLiteral  int `json:"not_literal"`
	TooLarge    int `json:"too_large"`
}

// The generator's statuses Go decides itself; the others are the
// harness's (inputgen.py).
const (
	GenOK      = "ok"
	GenNoCode  = "no_code"
	GenNoEntry = "no_entry"
	GenTimeout = "timeout"
	GenMemory  = "memory"
	GenError   = "error"
	// GenDuplicates: it ran, but every input it gave was the function's
	// own.
	GenDuplicates = "duplicates"
)

// genOutputBudget bounds the argument texts a generator returns (in
// characters): base64 of their JSON stays within MaxOutput's default.
const genOutputBudget = 40000

var (
	// fenced is a fenced code block; a python one is preferred.
	fenced = lazyre.New("(?s)```[ \\t]*([A-Za-z0-9_+-]*)[^\\n]*\\n(.*?)```")
	// entryName is the called function's name in a call expression.
	entryName = lazyre.New(`^\s*([A-Za-z_][A-Za-z0-9_]*)\s*\(`)
)

// extractCode is the first python (or py, or untagged) fenced block of a
// reply, else its first fenced block, "" when it has none.
func extractCode(reply string) string {
	blocks := fenced().FindAllStringSubmatch(reply, -1)
	for _, b := range blocks {
		if lang := strings.ToLower(b[1]); lang == "python" || lang == "py" || lang == "python3" || lang == "" {
			return b[2]
		}
	}
	if len(blocks) > 0 {
		return blocks[0][2]
	}
	return ""
}

// inputGenPromptFor is the prompt asking for f's generator of at most n
// inputs; entry is the called function's name.
func inputGenPromptFor(f *FuncLine, entry string, n int) string {
	return strings.NewReplacer("{entry}", entry, "{n}", strconv.Itoa(n), "{call}", f.CallExpr(),
		"{code}", strings.TrimRight(f.Code, "\n")).Replace(inputGenPrompt)
}

// entryOf is the name of the function f's call calls, "" when the call is
// not NAME(...).
func entryOf(f *FuncLine) string {
	if f.Call == nil {
		if f.Entry != "" {
			return f.Entry
		}
		return "f"
	}
	m := entryName().FindStringSubmatch(*f.Call)
	if m == nil {
		return ""
	}
	return m[1]
}

// AskInputs asks c for f's input generator of n inputs and runs it in
// the pool's sandbox: the argument texts it gives, in its order, at most
// 4n (so that duplicates still leave n), and how it ended. A model server failing after its retries is the error;
// everything the model or its code does wrong is the Generator's status.
func (p *Pool) AskInputs(ctx context.Context, c *model.Client, f *FuncLine, n int) ([]string, Generator, error) {
	entry := entryOf(f)
	if entry == "" {
		return nil, Generator{Status: GenNoEntry, Detail: "the call is not NAME(...): " + Truncate(f.CallExpr(), 200)}, nil
	}
	rep, err := c.Complete(ctx, model.Request{Messages: []model.Message{{Role: "user", Content: inputGenPromptFor(f, entry, n)}}})
	if err != nil {
		return nil, Generator{}, fmt.Errorf("ask for the input generator of %s: %w", f.ID, err)
	}
	src := extractCode(rep.Message.Content)
	if strings.TrimSpace(src) == "" {
		return nil, Generator{Status: GenNoCode, Detail: "the reply has no fenced code block"}, nil
	}
	texts, g := p.RunGenerator(ctx, f.ID, src, 4*n)
	return texts, g, nil
}

// RunGenerator runs a generator's source in the harness (inputgen.py) on
// a worker, under the pool's timeout and memory limits: up to limit
// argument texts, each at most MaxRepr characters.
func (p *Pool) RunGenerator(ctx context.Context, id, src string, limit int) ([]string, Generator) {
	lit, _ := json.Marshal(src) // a JSON string is a Python string literal
	prog := strings.NewReplacer("__CWM_SRC__", string(lit), "__CWM_LIMIT__", strconv.Itoa(limit),
		"__CWM_MAXLEN__", strconv.Itoa(p.opts.MaxRepr), "__CWM_BUDGET__", strconv.Itoa(genOutputBudget)).Replace(inputGenHarness)
	res := p.Trace(ctx, Func{ID: id + "/generator", Code: prog, Call: "__cwm_result"})
	switch res.Status {
	case Timeout:
		return nil, Generator{Status: GenTimeout, Detail: res.Error}
	case Memory:
		return nil, Generator{Status: GenMemory, Detail: res.Error}
	case OK:
	default:
		return nil, Generator{Status: GenError, Detail: string(res.Status) + ": " + res.Error}
	}
	var doc struct {
		Status   string   `json:"status"`
		Detail   string   `json:"detail"`
		Inputs   []string `json:"inputs"`
		Rejected Rejected `json:"rejected"`
	}
	raw, err := base64.StdEncoding.DecodeString(strings.Trim(res.Output, "'"))
	if err == nil {
		err = json.Unmarshal(raw, &doc)
	}
	if err != nil {
		return nil, Generator{Status: GenError, Detail: fmt.Sprintf("unreadable harness result (a cwm bug): %v", err)}
	}
	g := Generator{Status: doc.Status, Detail: doc.Detail, Rejected: doc.Rejected}
	return doc.Inputs, g
}
