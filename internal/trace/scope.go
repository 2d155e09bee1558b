package trace

// Scopes are tracked by call depth: a call frame opens a scope and the
// return frame of that scope closes it. An exception frame does not close
// a scope, because the function may catch the exception; when it does not,
// CPython reports the unwinding as a return frame with arg None in the same
// scope (CWM-SPEC 1.2), and that return closes it.

// scopeWalker follows the nesting of a frame sequence.
type scopeWalker struct{ open int }

// step returns the depth of the scope f belongs to (0 for the entry point)
// and advances past it. Frames outside any open scope (a return with
// nothing open, a line after the entry scope exited) get depth -1. Frames of
// an invalid event count as line frames.
func (w *scopeWalker) step(e Event) int {
	switch e {
	case Call:
		w.open++
		return w.open - 1
	case Return:
		if w.open == 0 {
			return -1
		}
		w.open--
		return w.open
	}
	return w.open - 1
}

// setDepths sets Depth on every frame from the nesting.
func setDepths(frames []Frame) {
	var w scopeWalker
	for i := range frames {
		frames[i].Depth = w.step(frames[i].Event)
	}
}

// Compress writes Unchanged for each local of a line frame whose value is
// the one it had in the previous frame of the same scope (CWM-SPEC 1.2).
// Call frames keep every value (they show the arguments in full), and after
// a nested call returns, the caller's next frame restates every value: the
// reference consumer resolves ".." only back to the last call or return
// frame. Frames are copied; the input is not modified. Values already
// Unchanged in the input stay so, which makes Compress idempotent.
func Compress(frames []Frame) []Frame {
	out := make([]Frame, len(frames))
	// prev holds, per open scope, the full locals of its previous call or
	// line frame, nil when the next frame must restate everything.
	var prev [][]Local
	for i := range frames {
		f := frames[i]
		switch f.Event {
		case Call:
			prev = append(prev, f.Locals)
		case Line:
			if len(prev) == 0 {
				break
			}
			top := len(prev) - 1
			// full is this frame's locals with Unchanged resolved; it
			// shares the input's array until a value must be resolved.
			full, owned := f.Locals, false
			compressed := cloneLocals(f.Locals) // nil stays nil
			for j, l := range f.Locals {
				pv, ok := lookup(prev[top], l.Name, j)
				switch {
				case l.Value == Unchanged:
					if !owned {
						full, owned = cloneLocals(f.Locals), true
					}
					if ok {
						full[j].Value = pv
					}
				case ok && pv == l.Value:
					l.Value = Unchanged
				}
				compressed[j] = l
			}
			prev[top] = full
			f.Locals = compressed
			out[i] = f
			continue
		case Return:
			if len(prev) > 0 {
				prev = prev[:len(prev)-1]
			}
			if len(prev) > 0 {
				prev[len(prev)-1] = nil
			}
		}
		f.Locals = cloneLocals(f.Locals)
		out[i] = f
	}
	return out
}

// Expand replaces each Unchanged value by the value the local last had in
// its scope since the scope's last boundary (its call frame, or the return
// of a call it made), which is how the reference consumer resolves them.
// An Unchanged value with nothing to resolve to stays Unchanged; Validate
// reports it. Frames are copied; the input is not modified.
func Expand(frames []Frame) []Frame {
	out := make([]Frame, len(frames))
	var x expander
	for i := range frames {
		out[i] = frames[i]
		out[i].Locals, _ = x.step(&frames[i])
	}
	return out
}

// expander resolves Unchanged values frame by frame.
type expander struct {
	// known holds, per open scope, the last value of every local seen
	// since the scope's last boundary.
	known [][]Local
}

// step returns f's locals with Unchanged values resolved, as a new slice,
// and how many could not be resolved.
func (x *expander) step(f *Frame) ([]Local, int) {
	locals := cloneLocals(f.Locals)
	switch f.Event {
	case Call:
		x.known = append(x.known, cloneLocals(f.Locals))
	case Return:
		if len(x.known) > 0 {
			x.known = x.known[:len(x.known)-1]
		}
		if len(x.known) > 0 {
			x.known[len(x.known)-1] = x.known[len(x.known)-1][:0]
		}
	case Line:
		if len(x.known) == 0 {
			break
		}
		top := len(x.known) - 1
		unresolved := 0
		for j := range locals {
			l := &locals[j]
			k := indexLocal(x.known[top], l.Name, j)
			switch {
			case l.Value != Unchanged:
				if k >= 0 {
					x.known[top][k].Value = l.Value
				} else {
					x.known[top] = append(x.known[top], *l)
				}
			case k >= 0:
				l.Value = x.known[top][k].Value
			default:
				unresolved++
			}
		}
		return locals, unresolved
	}
	return locals, 0
}

// lookup returns the value of the local called name; hint is where it
// probably is, since locals keep their order from frame to frame.
func lookup(locals []Local, name string, hint int) (string, bool) {
	if k := indexLocal(locals, name, hint); k >= 0 {
		return locals[k].Value, true
	}
	return "", false
}

func indexLocal(locals []Local, name string, hint int) int {
	if hint >= 0 && hint < len(locals) && locals[hint].Name == name {
		return hint
	}
	for k := range locals {
		if locals[k].Name == name {
			return k
		}
	}
	return -1
}

func cloneLocals(locals []Local) []Local {
	if locals == nil {
		return nil
	}
	return append(make([]Local, 0, len(locals)), locals...)
}
