package trace

import (
	"errors"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// gen builds random valid traces: nested calls, loops of line frames with
// locals appearing, changing and disappearing, exceptions caught in the
// same scope and exceptions that unwind a callee, and values full of what
// JSON must escape.
type gen struct {
	r      *rand.Rand
	frames []Frame
	lines  []string // source lines used, for the context
}

// pieces are the fragments values, names and sources are built from.
var pieces = []string{
	"a", "b", "y", "0", "42", " ", "'", `"`, `\`, "/", "\n", "\t", "\r", "\b", "\f",
	"\x00", "\x1f", "\x7f", "é", "中", "😀", "\u2028", "\ufffd", "<", ">", "&", "<|frame_sep|>",
	"<|", "|>", "{", "}", ":", ",", ".", "..", "[1, 2]", "<list_iterator object>",
}

func (g *gen) text(n int, noNewline bool) string {
	var b strings.Builder
	for range g.r.IntN(n + 1) {
		p := pieces[g.r.IntN(len(pieces))]
		if noNewline && (p == "\n" || strings.Contains(p, "<|")) {
			continue
		}
		b.WriteString(p)
	}
	return b.String()
}

// value returns a full value; ".." would read as Unchanged.
func (g *gen) value() string {
	v := g.text(6, false)
	if v == Unchanged {
		v += "."
	}
	return v
}

// source returns a source line, unique so that the context holds it once.
func (g *gen) source(kind string) string {
	s := "    " + kind + strconv.Itoa(len(g.lines)) + " " + g.text(4, true)
	g.lines = append(g.lines, s)
	return s
}

func (g *gen) emit(f Frame) { g.frames = append(g.frames, f) }

// scope emits a call and what follows it up to the scope's return; it
// reports whether the scope ended by an uncaught exception.
func (g *gen) scope(depth int, def string) (raised bool) {
	locals := []Local{}
	for i := range g.r.IntN(3) {
		locals = append(locals, Local{Name: "arg" + strconv.Itoa(i), Value: g.value()})
	}
	g.emit(Frame{Event: Call, Locals: snapshot(locals), Source: def, Depth: depth})
	for range g.r.IntN(6) {
		src := g.source("line")
		g.emit(Frame{Event: Line, Locals: snapshot(locals), Source: src, Depth: depth})
		switch g.r.IntN(6) {
		case 0:
			if depth < 3 {
				def := "def f" + strconv.Itoa(len(g.lines)) + "(" + g.text(3, true) + "):"
				g.lines = append(g.lines, def)
				if g.scope(depth+1, def) {
					g.emit(Frame{Event: Exception, Source: src, Arg: g.value(), Depth: depth})
				}
			}
		case 1:
			g.emit(Frame{Event: Exception, Source: src, Arg: g.value(), Depth: depth})
		}
		locals = g.mutate(locals)
	}
	src := g.source("return")
	g.emit(Frame{Event: Line, Locals: snapshot(locals), Source: src, Depth: depth})
	if depth > 0 && g.r.IntN(4) == 0 {
		g.emit(Frame{Event: Exception, Source: src, Arg: g.value(), Depth: depth})
		g.emit(Frame{Event: Return, Source: src, Arg: "None", Depth: depth})
		return true
	}
	g.emit(Frame{Event: Return, Source: src, Arg: g.value(), Depth: depth})
	return false
}

// mutate changes, adds or deletes locals between two frames.
func (g *gen) mutate(locals []Local) []Local {
	out := snapshot(locals)
	for i := range out {
		if g.r.IntN(3) == 0 {
			out[i].Value = g.value()
		}
	}
	if g.r.IntN(3) == 0 {
		name := g.text(2, false)
		if indexName(out, name) >= 0 {
			return out
		}
		out = append(out, Local{Name: name, Value: g.value()})
	}
	if len(out) > 0 && g.r.IntN(5) == 0 {
		k := g.r.IntN(len(out))
		out = append(out[:k], out[k+1:]...)
	}
	return out
}

func indexName(locals []Local, name string) int { return indexLocal(locals, name, -1) }

func snapshot(locals []Local) []Local {
	if len(locals) == 0 {
		return nil
	}
	return append([]Local(nil), locals...)
}

// randomTrace returns a trace as a tracer records it (full values).
func randomTrace(seed uint64) Trace {
	g := &gen{r: rand.New(rand.NewPCG(seed, 1))}
	g.scope(0, mainDef)
	lines := append([]string{mainDef}, g.lines...)
	g.r.Shuffle(len(lines), func(i, j int) { lines[i], lines[j] = lines[j], lines[i] })
	return Trace{Context: strings.Join(lines, "\n") + "\n", Frames: g.frames}
}

func TestRoundTripProperty(t *testing.T) {
	// covered counts what the generator produced, so that a change to it
	// cannot quietly stop exercising a case.
	covered := map[string]int{}
	for seed := range uint64(500) {
		full := randomTrace(seed)
		tr := Trace{Context: full.Context, Frames: Compress(full.Frames)}
		for i, f := range tr.Frames {
			switch {
			case f.Depth >= 2:
				covered["depth 2"]++
			case f.Event == Exception && i+1 < len(tr.Frames) && tr.Frames[i+1].Event == Return:
				covered["unwinding exception"]++
			case f.Event == Exception:
				covered["caught exception"]++
			case f.Event == Line && len(f.Locals) > 0 && f.Locals[0].Value == Unchanged:
				covered[".."]++
			}
		}
		if err := Validate(tr); err != nil {
			t.Fatalf("seed %d: Validate(random trace) = %v", seed, err)
		}
		if diff := cmp.Diff(full.Frames, Expand(tr.Frames)); diff != "" {
			t.Fatalf("seed %d: Expand(Compress(f)) mismatch (-want +got):\n%s", seed, diff)
		}
		text := Encode(tr)
		got, err := Parse(text)
		if err != nil {
			t.Fatalf("seed %d: Parse(Encode(t)) error: %v", seed, err)
		}
		if diff := cmp.Diff(tr, got); diff != "" {
			t.Fatalf("seed %d: Parse(Encode(t)) mismatch (-want +got):\n%s", seed, diff)
		}
		lenient, st := ParseLenient(text)
		if diff := cmp.Diff(tr, lenient); diff != "" || st.FormatErrors+st.Repairs != 0 {
			t.Fatalf("seed %d: ParseLenient(Encode(t)) = %+v, mismatch (-want +got):\n%s", seed, st, diff)
		}
		if fd := Compare(got, full); fd.FirstDivergence != -1 || !fd.OutputMatch {
			t.Fatalf("seed %d: Compare(parsed, full) = %+v, want identical", seed, fd)
		}
	}
	for _, c := range []string{"depth 2", "unwinding exception", "caught exception", ".."} {
		if covered[c] < 20 {
			t.Errorf("random traces held %d frames of kind %q, want at least 20", covered[c], c)
		}
	}
}

// FuzzParse checks that no input panics, that Parse accepts only what
// Encode writes, and that ParseLenient agrees with Parse where Parse
// succeeds.
func FuzzParse(f *testing.F) {
	f.Add(Encode(paperTrace()))
	f.Add(Encode(excTrace()))
	f.Add(Encode(Trace{Context: randomTrace(7).Context, Frames: Compress(randomTrace(7).Frames)}))
	_, frames := paperFrames()
	f.Add(frames)
	f.Add("garbage" + frames[:len(frames)/2])
	f.Add(`<|line_sep|>{"a" : "\u00E9", "a": "\/"}<|action_sep|>x<|arg_sep|>"1"`)
	f.Fuzz(func(t *testing.T, text string) {
		tr, err := Parse(text)
		if err != nil {
			var se *SyntaxError
			if !errors.As(err, &se) || se.Offset < 0 || se.Offset > len(text) {
				t.Fatalf("Parse(%q) error = %v, want a *SyntaxError within the text", text, err)
			}
		} else if got := Encode(tr); got != text {
			t.Fatalf("Parse(%q) accepted text Encode writes as %q", text, got)
		}
		lt, st := ParseLenient(text)
		if err == nil {
			if diff := cmp.Diff(tr, lt); diff != "" || st.FormatErrors+st.Repairs != 0 || st.MissingEnd || st.MissingPrefix {
				t.Fatalf("ParseLenient(%q) = %+v, disagrees with Parse (-strict +lenient):\n%s", text, st, diff)
			}
		}
		if st.Frames != len(lt.Frames) || st.FormatErrors < len(st.Errors) {
			t.Fatalf("ParseLenient(%q) stats %+v inconsistent with %d frames", text, st, len(lt.Frames))
		}
		_ = Validate(lt)
		if diff := cmp.Diff(Expand(lt.Frames), Expand(Compress(lt.Frames))); diff != "" {
			t.Fatalf("Expand(Compress(f)) != Expand(f) for %q:\n%s", text, diff)
		}
		if fd := Compare(lt, lt); fd.FirstDivergence != -1 {
			t.Fatalf("Compare(t, t) diverges at %d: %s", fd.FirstDivergence, fd.Diff)
		}
		// A recovered trace encodes to text Parse accepts (when its
		// strings are valid UTF-8, which Encode otherwise replaces).
		if again, err := Parse(Encode(lt)); err == nil {
			if diff := cmp.Diff(lt, again); diff != "" && Validate(lt) == nil {
				t.Fatalf("Parse(Encode(lenient)) mismatch for valid trace:\n%s", diff)
			}
		}
	})
}
