package trace

import (
	"encoding/json"
	"strconv"
	"testing"
)

// benchTrace is a trace of about 1,000 frames shaped like real ones: a
// loop calling a helper, a handful of locals, most of them unchanged.
func benchTrace() Trace {
	ctx := "def g(x):\n    return x * 2\n\ndef main(): # << START_OF_TRACE\n    acc = []\n    for i in range(250):\n        acc.append(g(i))\n    return len(acc)\n"
	frames := []Frame{call(0, mainDef), line(0, "    acc = []")}
	acc := "[]"
	for i := range 198 {
		is := strconv.Itoa(i)
		frames = append(frames,
			line(0, "    for i in range(250):", "acc", acc, "name", "'caf\u00e9 \"x\"'"),
			line(0, "        acc.append(g(i))", "acc", acc, "name", "'caf\u00e9 \"x\"'", "i", is),
			call(1, "def g(x):", "x", is),
			line(1, "    return x * 2", "x", is),
			ret(1, "    return x * 2", strconv.Itoa(2*i)),
		)
		acc = acc[:len(acc)-1] + strconv.Itoa(2*i) + ", ]"
	}
	frames = append(frames, ret(0, "    return len(acc)", "250"))
	return Trace{Context: ctx, Frames: Compress(frames)}
}

// BenchmarkEncode compares AppendText into a reused buffer and Encode with
// a baseline that builds the same text with encoding/json (which escapes
// differently, so it is a cost reference only).
func BenchmarkEncode(b *testing.B) {
	tr := benchTrace()
	size := int64(len(Encode(tr)))
	b.Run("AppendText", func(b *testing.B) {
		b.SetBytes(size)
		b.ReportAllocs()
		var buf []byte
		for b.Loop() {
			buf = AppendText(buf[:0], tr)
		}
	})
	b.Run("Encode", func(b *testing.B) {
		b.SetBytes(size)
		b.ReportAllocs()
		for b.Loop() {
			_ = Encode(tr)
		}
	})
	b.Run("baseline-encoding-json", func(b *testing.B) {
		b.SetBytes(size)
		b.ReportAllocs()
		for b.Loop() {
			_ = encodeWithEncodingJSON(tr)
		}
	})
}

func BenchmarkParse(b *testing.B) {
	text := Encode(benchTrace())
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(text); err != nil {
			b.Fatal(err)
		}
	}
}

func encodeWithEncodingJSON(t Trace) string {
	var buf []byte
	buf = append(buf, TokBeginOfText+TokTraceContextStart+t.Context+TokFrameSep...)
	for _, f := range t.Frames {
		buf = append(buf, f.Event.token()...)
		if f.Event.hasLocals() {
			buf = append(buf, '{')
			for i, l := range f.Locals {
				if i > 0 {
					buf = append(buf, ", "...)
				}
				k, _ := json.Marshal(l.Name)
				v, _ := json.Marshal(l.Value)
				buf = append(append(append(buf, k...), ": "...), v...)
			}
			buf = append(buf, '}')
		}
		buf = append(buf, TokActionSep+f.Source+"\n"...)
		if !f.Event.hasLocals() {
			a, _ := json.Marshal(f.Arg)
			buf = append(append(buf, TokArgSep...), a...)
		}
		buf = append(buf, TokFrameSep...)
	}
	return string(append(buf, TokEndOfText...))
}

func TestBenchTraceIsValid(t *testing.T) {
	tr := benchTrace()
	if err := Validate(tr); err != nil {
		t.Fatalf("Validate(benchTrace()) = %v", err)
	}
	if n := len(tr.Frames); n < 900 || n > 1100 {
		t.Errorf("benchTrace() has %d frames, want about 1,000", n)
	}
}
