package tracer

// Caps bound what one trace or recording keeps. Zero fields take the
// defaults of the options they are part of: TraceCaps for a function's
// trace and an episode, TestCaps for a test's recording.
type Caps struct {
	// MaxEvents caps the line events; past it the trace is too_long.
	MaxEvents int
	// MaxBytes caps the trace text in bytes; past it the trace is
	// too_long.
	MaxBytes int
	// MaxRepr caps one value's text in characters; longer ones are cut.
	MaxRepr int
}

// TraceCaps are the caps of one trace, as CWM's data has them: 10,000
// line events, 1 MiB of text, 4096 characters of one value.
var TraceCaps = Caps{MaxEvents: 10000, MaxBytes: 1 << 20, MaxRepr: 4096}

// TestCaps are the caps of a test's recording, which episodes (each
// within TraceCaps) are cut from: 1,000,000 line events, at least 256 MiB
// of text, values as in TraceCaps.
var TestCaps = Caps{MaxEvents: 1000000, MaxBytes: 256 << 20, MaxRepr: TraceCaps.MaxRepr}

// or fills the zero (or negative) fields of c from d.
func (c Caps) or(d Caps) Caps {
	if c.MaxEvents <= 0 {
		c.MaxEvents = d.MaxEvents
	}
	if c.MaxBytes <= 0 {
		c.MaxBytes = d.MaxBytes
	}
	if c.MaxRepr <= 0 {
		c.MaxRepr = d.MaxRepr
	}
	return c
}
