package tracer

import (
	"encoding/base64"
	"encoding/binary"
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
	// StopAtCap ends the run when a cap stops the recording, rather than
	// running the program on untraced (fuzzing candidates).
	StopAtCap bool `json:"stop_at_cap,omitempty"`
	// Stdin is a whole program's input (op "prog", prog.py).
	Stdin string `json:"stdin,omitempty"`
	// mutate
	Code string `json:"code,omitempty"`
	Call string `json:"call,omitempty"`
	Seed int64  `json:"seed,omitempty"`
	N    int    `json:"n,omitempty"`
}

// response is one result line of a worker.
type response struct {
	ID          string      `json:"id"`
	Test        string      `json:"test"` // repository tracing (repotrace.py)
	Status      string      `json:"status"`
	Error       string      `json:"error"`
	Output      *string     `json:"output"`
	Codes       []wireCode  `json:"codes"`
	Table       []wireFrame `json:"table"`
	Seq         string      `json:"seq"`
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

// frames expands the response's table and sequence (see tracer.encode):
// frame i is Table[seq[i]], seq being little-endian int32s in base64.
func (r *response) frames() ([]wireFrame, error) {
	raw, err := base64.StdEncoding.DecodeString(r.Seq)
	if err != nil || len(raw)%4 != 0 {
		return nil, fmt.Errorf("bad frame sequence: %v", err)
	}
	out := make([]wireFrame, len(raw)/4)
	for i := range out {
		k := int(int32(binary.LittleEndian.Uint32(raw[4*i:])))
		if k < 0 || k >= len(r.Table) {
			return nil, fmt.Errorf("frame %d refers to record %d of %d", i, k, len(r.Table))
		}
		out[i] = r.Table[k]
	}
	return out, nil
}

// wireFrame is one frame record of tracer.py, a flat JSON array:
//
//	call [1, lineno, code, name, value, name, value, ...]
//	line [2, lineno, name, value, ...]
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
	if len(parts) < 2 {
		return fmt.Errorf("frame record %s: too short", b)
	}
	var ev int
	if err := json.Unmarshal(parts[0], &ev); err != nil {
		return err
	}
	if err := json.Unmarshal(parts[1], &f.lineno); err != nil {
		return err
	}
	f.event = trace.Event(ev)
	rest := parts[2:]
	switch f.event {
	case trace.Call:
		if len(rest) == 0 {
			return fmt.Errorf("call record %s without a code index", b)
		}
		if err := json.Unmarshal(rest[0], &f.code); err != nil {
			return err
		}
		rest = rest[1:]
	case trace.Line:
	case trace.Return, trace.Exception:
		if len(rest) != 1 {
			return fmt.Errorf("%s record %s: want one value", f.event, b)
		}
		return json.Unmarshal(rest[0], &f.arg)
	default:
		return fmt.Errorf("frame record %s: unknown event", b)
	}
	if len(rest)%2 != 0 {
		return fmt.Errorf("frame record %s: odd number of name/value fields", b)
	}
	f.locals = make([]string, len(rest))
	for i, r := range rest {
		if err := json.Unmarshal(r, &f.locals[i]); err != nil {
			return err
		}
	}
	return nil
}

// limits are the caps that apply on the Go side too.
type limits struct {
	maxBytes int
}

// buildFrames turns a worker's response into a Result up to its frames:
// the depth and code of every frame follow from the call/return nesting,
// sources from the context. finish then makes the text; a whole
// program's trace (prog.go) adjusts the frames in between.
func buildFrames(ctx string, resp *response) (Result, error) {
	wframes, err := resp.frames()
	if err != nil {
		return Result{ID: resp.ID, Status: Error, Context: ctx,
			Error: fmt.Sprintf("unreadable worker response (a cwm bug): %v", err)}, err
	}
	res := Result{
		ID: resp.ID, Status: Status(resp.Status), Context: ctx, Error: resp.Error,
		Leak: resp.Leak, Stdout: resp.Stdout, Stderr: resp.Stderr,
		Codes: make([]Code, len(resp.Codes)), Frames: make([]Frame, len(wframes)),
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
	for i, w := range wframes {
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
	return res, nil
}

// finish cuts an incomplete result's frames to the text cap, and makes
// a complete one's text with trace.Encode. A complete trace is validated
// first, so that a tracer bug shows up as an error result rather than as
// a bad dataset line.
func finish(res Result, lim limits) Result {
	if !res.Status.Complete() {
		keepFrames(&res, lim.maxBytes)
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
		keepFrames(&res, lim.maxBytes)
		return res
	}
	res.Text, res.Stats.Bytes = text, len(text)
	return res
}
