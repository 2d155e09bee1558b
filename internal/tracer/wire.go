package tracer

import (
	"encoding/json"
	"fmt"
	"strings"

	"cwm/internal/trace"
)

// request is one line sent to a worker (see server.py and tracer.trace_one).
type request struct {
	Op         string   `json:"op,omitempty"`
	ID         string   `json:"id,omitempty"`
	Source     string   `json:"source,omitempty"`
	Filename   string   `json:"filename,omitempty"`
	Roots      []string `json:"roots,omitempty"`
	Timeout    float64  `json:"timeout,omitempty"`
	MaxEvents  int      `json:"max_events,omitempty"`
	MaxBytes   int      `json:"max_bytes,omitempty"`
	MaxRepr    int      `json:"max_repr,omitempty"`
	MaxOutput  int      `json:"max_output,omitempty"`
	MaxCapture int      `json:"max_capture,omitempty"`
	// mutate
	Call string `json:"call,omitempty"`
	Seed int64  `json:"seed,omitempty"`
	N    int    `json:"n,omitempty"`
}

// response is one result line of a worker.
type response struct {
	ID          string      `json:"id"`
	Status      string      `json:"status"`
	Error       string      `json:"error"`
	Output      *string     `json:"output"`
	Codes       []wireCode  `json:"codes"`
	Frames      []wireFrame `json:"frames"`
	Lines       int         `json:"lines"`
	Bytes       int         `json:"bytes"`
	Seconds     float64     `json:"seconds"`
	Stdout      string      `json:"stdout"`
	Stderr      string      `json:"stderr"`
	StdoutChars int         `json:"stdout_chars"`
	StderrChars int         `json:"stderr_chars"`
	Leak        string      `json:"leak"`
	Calls       []Mutation  `json:"calls"`
}

// wireCode is [file, qualname, firstlineno].
type wireCode Code

func (c *wireCode) UnmarshalJSON(b []byte) error {
	var parts []json.RawMessage
	if err := json.Unmarshal(b, &parts); err != nil {
		return err
	}
	if len(parts) != 3 {
		return fmt.Errorf("code entry with %d fields, want 3", len(parts))
	}
	for i, dst := range []any{&c.File, &c.Qualname, &c.Firstlineno} {
		if err := json.Unmarshal(parts[i], dst); err != nil {
			return err
		}
	}
	return nil
}

// wireFrame is one frame record of tracer.py:
//
//	call [1, lineno, code, [name, value, ...]]
//	line [2, lineno, [name, value, ...]]
//	return [3, lineno, value], exception [4, lineno, value]
type wireFrame struct {
	event  trace.Event
	lineno int
	code   int
	locals []string
	arg    string
}

func (f *wireFrame) UnmarshalJSON(b []byte) error {
	var parts []json.RawMessage
	if err := json.Unmarshal(b, &parts); err != nil {
		return err
	}
	if len(parts) < 3 {
		return fmt.Errorf("frame record with %d fields", len(parts))
	}
	var ev int
	if err := json.Unmarshal(parts[0], &ev); err != nil {
		return err
	}
	if err := json.Unmarshal(parts[1], &f.lineno); err != nil {
		return err
	}
	f.event = trace.Event(ev)
	switch {
	case f.event == trace.Call && len(parts) == 4:
		if err := json.Unmarshal(parts[2], &f.code); err != nil {
			return err
		}
		return json.Unmarshal(parts[3], &f.locals)
	case f.event == trace.Line:
		return json.Unmarshal(parts[2], &f.locals)
	case f.event == trace.Return || f.event == trace.Exception:
		return json.Unmarshal(parts[2], &f.arg)
	}
	return fmt.Errorf("frame record of unknown shape %s", b)
}

// limits are the caps that apply on the Go side too.
type limits struct {
	maxBytes int
}

// build turns a worker's response into a Result: the depth and code of
// every frame follow from the call/return nesting, sources from the context,
// and the text from trace.Encode. A complete trace is validated, so that a
// tracer bug shows up as an error result rather than as a bad dataset line.
func build(ctx string, resp *response, lim limits) Result {
	res := Result{
		ID: resp.ID, Status: Status(resp.Status), Context: ctx, Error: resp.Error,
		Leak: resp.Leak, Stdout: resp.Stdout, Stderr: resp.Stderr,
		Codes: make([]Code, len(resp.Codes)), Frames: make([]Frame, len(resp.Frames)),
		Stats: Stats{LineEvents: resp.Lines, Bytes: resp.Bytes, Seconds: resp.Seconds,
			StdoutChars: resp.StdoutChars, StderrChars: resp.StderrChars},
	}
	if resp.Output != nil {
		res.Output = *resp.Output
	}
	for i, c := range resp.Codes {
		res.Codes[i] = Code(c)
	}
	lines := strings.Split(ctx, "\n")
	var stack []int // code indices of the open scopes
	for i, w := range resp.Frames {
		f := &res.Frames[i]
		f.Event, f.Lineno, f.Arg = w.event, w.lineno, w.arg
		if w.event == trace.Call {
			stack = append(stack, w.code)
		}
		f.Depth, f.Code = len(stack)-1, -1
		if len(stack) > 0 {
			f.Code = stack[len(stack)-1]
		}
		if w.event == trace.Return && len(stack) > 0 {
			stack = stack[:len(stack)-1]
		}
		if f.Code >= 0 && f.Code < len(res.Codes) && res.Codes[f.Code].File == Filename &&
			w.lineno >= 1 && w.lineno <= len(lines) {
			f.Source = lines[w.lineno-1]
		}
		if len(w.locals) > 0 {
			f.Locals = make([]trace.Local, len(w.locals)/2)
			for j := range f.Locals {
				f.Locals[j] = trace.Local{Name: w.locals[2*j], Value: w.locals[2*j+1]}
			}
		}
	}
	res.Stats.Frames = len(res.Frames)
	if !res.Status.Complete() {
		return res
	}
	t := res.Trace()
	if err := trace.Validate(t); err != nil {
		res.Status, res.Error = Error, fmt.Sprintf("the tracer produced an invalid trace (a cwm bug): %v", err)
		return res
	}
	text := trace.Encode(t)
	if lim.maxBytes > 0 && len(text) > lim.maxBytes {
		res.Status = TooLong
		res.Error = fmt.Sprintf("trace text of %d bytes is over the limit of %d", len(text), lim.maxBytes)
		res.Stats.Bytes = len(text)
		return res
	}
	res.Text, res.Stats.Bytes = text, len(text)
	return res
}
