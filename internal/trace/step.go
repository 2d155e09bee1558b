package trace

// Stepper follows a trace one frame at a time, for a caller that is given
// the frames in order and must read a predicted frame against the state
// so far: an environment that teacher-forces a trace, where the model
// predicts frame i after seeing frames 0..i-1. It resolves ".." exactly as
// Expand does.
type Stepper struct{ x expander }

// Resolve returns f with its Unchanged values resolved against the frames
// taken so far, without taking f. What cannot be resolved stays
// Unchanged.
func (s *Stepper) Resolve(f Frame) Frame {
	f.Locals = cloneLocals(f.Locals)
	if f.Event != Line || len(s.x.known) == 0 {
		return f
	}
	top := s.x.known[len(s.x.known)-1]
	for j := range f.Locals {
		l := &f.Locals[j]
		if l.Value != Unchanged {
			continue
		}
		if k := indexLocal(top, l.Name, j); k >= 0 {
			l.Value = top[k].Value
		}
	}
	return f
}

// Take takes f, the next frame of the trace, and returns it resolved.
func (s *Stepper) Take(f Frame) Frame {
	f.Locals, _ = s.x.step(&f)
	return f
}

// Clone returns a Stepper that goes on from the same state independently.
func (s *Stepper) Clone() *Stepper {
	c := &Stepper{}
	c.x.known = make([][]Local, len(s.x.known))
	for i, k := range s.x.known {
		c.x.known[i] = append(make([]Local, 0, len(k)), k...)
	}
	return c
}

// MatchFrame compares a predicted frame with the true one, both resolved
// (Stepper.Resolve): state is the event, the locals as a mapping and the
// arg, action the source line, as Compare counts them; diff names the
// first difference ("" when both match).
func MatchFrame(pred, truth Frame) (state, action bool, diff string) {
	state = pred.Event == truth.Event && pred.Arg == truth.Arg && sameLocals(pred.Locals, truth.Locals)
	action = pred.Source == truth.Source
	if !state || !action {
		diff = frameDiff(&pred, &truth)
	}
	return state, action, diff
}
